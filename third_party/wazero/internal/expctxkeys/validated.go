package expctxkeys

// ValidatedModule is the context.Context Value key of experimental.WithValidatedModule. It is a string
// rather than a type of this module, so that a caller that must also build against the unpatched
// release, which ignores it, can set it by its value.
const ValidatedModule = "github.com/tetratelabs/wazero/experimental.ValidatedModule"
