// Package wasmtest gives tests outside host/wasm (the words' and recipes' own tests) the folders the
// capability host accepts as write roots. It forwards to capstest, which only host/wasm may import.
package wasmtest

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/internal/caps/capstest"
)

// SafeDir returns a new empty folder, removed when the test ends, that fs.write and fs.remove accept as
// a declared root: every folder above it is root's or the running user's and writable by no one else.
// t.TempDir is under /tmp, which the host refuses as such a root.
func SafeDir(t testing.TB) string {
	t.Helper()
	return capstest.SafeDir(t)
}
