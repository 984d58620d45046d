//go:build !wasip1

package wordtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WritableDir returns a new empty folder, removed when the test ends, that fs.write accepts as a root:
// the host refuses to write beneath a folder that someone other than root or this user could swap, and
// t.TempDir is under /tmp, which anyone may write. Point a word's fs.write roots (Paths) here. The
// folder is made in the user's cache folder, else in the test's working folder; the test fails, rather
// than skips, when neither is safe.
func WritableDir(t testing.TB) string {
	t.Helper()
	var tried []string
	var candidates []string
	if c, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, c)
	}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, wd)
	}
	for _, c := range candidates {
		if err := os.MkdirAll(c, 0o700); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		c, err := filepath.EvalSymlinks(c) // a declared root may not lead through a link
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if why := unsafeChain(c); why != "" {
			tried = append(tried, why)
			continue
		}
		dir, err := os.MkdirTemp(c, "lexicon-wordtest-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Fatalf("wordtest: no folder whose ancestors only root or this user can write: %v", tried)
	return ""
}

// unsafeChain says why dir or a folder above it could be changed by another user; "" when none can.
func unsafeChain(dir string) string {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err.Error()
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return p + ": its owner cannot be read"
		}
		if st.Uid != 0 && int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
			return p + " can be written by another user"
		}
		if p == "/" {
			return ""
		}
	}
}
