package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/disk_usage.wasm"

func fill(t *testing.T, p string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

type usage struct {
	TotalBytes int64 `json:"total_bytes"`
	Entries    []struct {
		Path  string
		Bytes int64
		Depth int
	}
	Truncated bool
}

func TestLargestDirectories(t *testing.T) {
	root := t.TempDir()
	fill(t, filepath.Join(root, "logs", "big.log"), 3<<20)
	fill(t, filepath.Join(root, "logs", "old", "older.log"), 2<<20)
	fill(t, filepath.Join(root, "cache", "c.bin"), 1<<20)
	fill(t, filepath.Join(root, "tiny", "t"), 10)
	if err := os.Symlink("/usr", filepath.Join(root, "usr-link")); err != nil {
		t.Fatal(err)
	}
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.Paths("fs.list", root))

	var u usage
	w.Must(map[string]any{"root": root, "top": 2}, &u)
	if len(u.Entries) != 2 || u.Entries[0].Path != filepath.Join(root, "logs") || u.Entries[1].Path != filepath.Join(root, "cache") {
		t.Fatalf("top 2: %+v", u.Entries)
	}
	if u.Entries[0].Bytes < 5<<20 || u.TotalBytes < 6<<20 || u.TotalBytes > 7<<20 {
		t.Fatalf("sizes: %+v total %d (the symlink to /usr must not be followed)", u.Entries, u.TotalBytes)
	}
	w.Must(map[string]any{"root": root, "top": 10, "depth": 2}, &u)
	found := false
	for _, e := range u.Entries {
		if e.Path == filepath.Join(root, "logs", "old") && e.Depth == 2 && e.Bytes >= 2<<20 {
			found = true
		}
	}
	if !found {
		t.Fatalf("depth 2 misses logs/old: %+v", u.Entries)
	}
}

func TestRootOutsideTheDeclaredOnes(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.Paths("fs.list", t.TempDir()))
	res := w.Run(map[string]any{"root": "/etc"})
	if res.Code != errcode.CapabilityDenied {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	if res := w.Run(map[string]any{"root": "/tmp", "top": 500}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("top 500: %s", res.Code)
	}
}
