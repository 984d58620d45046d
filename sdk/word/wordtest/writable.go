//go:build !wasip1

package wordtest

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// WritableDir returns a new empty folder, removed when the test ends, that fs.write and fs.remove accept
// as a root: the host refuses to write beneath a folder that someone other than root or this user could
// swap, and t.TempDir is under /tmp, which anyone may write. Point a word's fs.write roots (Paths) here.
// The test fails, rather than skips, when no safe folder can be made.
func WritableDir(t testing.TB) string {
	t.Helper()
	return testkit.SafeDir(t)
}
