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
	return context.WithValue(ctx, expctxkeys.ValidatedModule{}, true)
}
