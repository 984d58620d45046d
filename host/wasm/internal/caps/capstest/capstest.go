// Package capstest gives tests of the capability host folders that fs.write accepts as roots.
package capstest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// SafeDir returns a new empty folder, removed when the test ends, whose every ancestor from "/" is owned
// by root or the running user and writable by neither group nor others: a root fs.write accepts.
// t.TempDir is under /tmp, which anyone may write, so fs.write refuses roots there. The folder is made
// in the user's cache folder (the Go build cache's parent, /root/.cache when tests run as root), else in
// the test's working folder; the test fails, rather than skips, when neither is safe.
func SafeDir(t testing.TB) string {
	t.Helper()
	var tried []string
	candidates := []string{}
	if c, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, c)
	}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, wd)
	}
	for _, c := range candidates {
		if err := os.MkdirAll(c, 0o700); err != nil {
			tried = append(tried, c+": "+err.Error())
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
		dir, err := os.MkdirTemp(c, "lexicon-caps-test-")
		if err != nil {
			tried = append(tried, c+": "+err.Error())
			continue
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Fatalf("capstest: no folder whose ancestors only root or this user can write: %v", tried)
	return ""
}

// unsafeChain says why dir or a folder above it could be changed by another user; "" when none can.
func unsafeChain(dir string) string {
	for p := dir; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err.Error()
		}
		if st.Uid != 0 && int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return p + " can be written by another user"
		}
		if p == "/" {
			return ""
		}
	}
}
