package secretfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/secretfile"
)

// TestRead: a private regular file is read; one others may read or write, a FIFO, a folder and a file
// over the limit are each refused, saying why.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := secretfile.Read(write("ok", 0o600, "secret"), 64); err != nil || string(got) != "secret" {
		t.Fatalf("a private file: %q %v", got, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		path, why string
	}{
		"world-readable": {write("r", 0o604, "x"), "readable by everyone"},
		"group-writable": {write("w", 0o620, "x"), "writable by group"},
		"too big":        {write("big", 0o600, strings.Repeat("x", 65)), "over 64 bytes"},
		"fifo":           {fifo, "not a regular file"},
		"folder":         {dir, "not a regular file"},
		"missing":        {filepath.Join(dir, "none"), "cannot read"},
	} {
		if _, err := secretfile.Read(c.path, 64); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.why)
		}
	}
}
