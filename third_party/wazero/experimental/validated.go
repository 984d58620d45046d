package experimental

import (
	"context"

	"github.com/tetratelabs/wazero/internal/expctxkeys"
)

// WithValidatedModule returns a context for Runtime.CompileModule saying that the caller has its own
// proof (a check stronger than the cache's checksum, such as a MAC it keeps) that this exact module
// binary was validated and compiled by this build of wazero before, and that the compilation cache
// entry it will find is the one written then. When the cache then holds the module's compiled code,
// CompileModule does not validate the function bodies again and does not checksum the entry. When the
// cache does not hold it, the module is validated in full before it is compiled, as always.
func WithValidatedModule(ctx context.Context) context.Context {
	return context.WithValue(ctx, ValidatedModuleKey, true)
}

// ValidatedModuleKey is the key WithValidatedModule sets, to true. A caller that must also build against
// the unpatched release (a program importing a module that replaces wazero with this copy gets the
// release) sets it by its value instead of calling WithValidatedModule; the release ignores it.
const ValidatedModuleKey = expctxkeys.ValidatedModule
