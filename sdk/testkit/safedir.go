package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// SafeDir returns a new empty folder, removed when the test ends, whose every ancestor from "/" is owned
// by root or the running user and writable by neither group nor others: a root the word host's fs
// capabilities accept (it refuses to write beneath a folder another user could swap) and a folder a
// restore may write into. t.TempDir is under /tmp, which anyone may write, so it will not do. The
// folder is made in the user's cache folder (the Go build cache's parent, /root/.cache when tests run as
// root), else in the test's working folder; the test fails, rather than skips, when neither is safe.
func SafeDir(t testing.TB) string {
	t.Helper()
	var tried, candidates []string
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
		dir, err := os.MkdirTemp(c, "lexicon-test-")
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
	t.Fatalf("testkit: no folder whose ancestors only root or this user can write: %v", tried)
	return ""
}

// unsafeChain says why dir or a folder above it could be changed by another user; "" when none can.
func unsafeChain(dir string) string {
	uid := uint32(os.Geteuid())
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err.Error()
		}
		owner, known := ownerOf(fi)
		if !known || owner != 0 && owner != uid || fi.Mode().Perm()&0o022 != 0 || fi.Mode()&os.ModeSticky != 0 {
			return p + " can be written by another user"
		}
		if p == "/" {
			return ""
		}
	}
}
