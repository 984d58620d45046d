package expctxkeys

// ValidatedModule is a context.Context Value key. Its presence says the caller vouches for the module
// being compiled and for the compilation cache entry it has (experimental.WithValidatedModule).
type ValidatedModule struct{}
