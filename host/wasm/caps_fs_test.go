package wasm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func writeFile(t *testing.T, p string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
}

func TestFilesystem(t *testing.T) {
	// The root is one fs.write accepts: no folder above it can be written by anyone but root.
	root, outside := testkit.SafeDir(t), t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 6400) // 100 KiB: over the SDK's first response buffer
	writeFile(t, filepath.Join(root, "a.txt"), []byte("hello\nworld\n"), 0o644)
	writeFile(t, filepath.Join(root, "sub", "b.txt"), []byte("bee"), 0o600)
	writeFile(t, filepath.Join(root, "big.bin"), big, 0o644)
	writeFile(t, filepath.Join(outside, "secret"), []byte("secret"), 0o600)
	for name, target := range map[string]string{
		"link-in":  "sub/b.txt",
		"abs-in":   filepath.Join(root, "sub", "b.txt"),
		"link-out": filepath.Join(outside, "secret"),
		"dir-out":  outside,
		"dotdot":   "../" + filepath.Base(outside) + "/secret",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, cached(wasm.Config{}))
	p := newProber(t, h, "change", []map[string]any{
		{"cap": "fs.read", "paths": []string{root}},
		{"cap": "fs.stat", "paths": []string{root}},
		{"cap": "fs.list", "paths": []string{root}},
		{"cap": "fs.write", "paths": []string{root}, "max_bytes": 1024},
	})
	read := func(path string) map[string]any { return map[string]any{"cap": "fs.read", "path": path} }

	t.Run("read", func(t *testing.T) {
		var r capv1.FSReadResult
		p.must(read(filepath.Join(root, "a.txt")), &r)
		if string(r.Data) != "hello\nworld\n" || !r.EOF || r.Size != 12 {
			t.Fatalf("%+v", r)
		}
		p.must(map[string]any{"cap": "fs.read", "path": filepath.Join(root, "a.txt"), "offset": 6, "length": 3}, &r)
		if string(r.Data) != "wor" || r.EOF {
			t.Fatalf("%+v", r)
		}
		p.must(read(filepath.Join(root, "big.bin")), &r)
		if !bytes.Equal(r.Data, big) {
			t.Fatalf("big read %d bytes", len(r.Data))
		}
	})
	t.Run("symlinks inside the root are followed", func(t *testing.T) {
		for _, name := range []string{"link-in", "abs-in"} {
			var r capv1.FSReadResult
			p.must(read(filepath.Join(root, name)), &r)
			if string(r.Data) != "bee" {
				t.Fatalf("%s: %q", name, r.Data)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		cases := []struct {
			name string
			req  map[string]any
			code string
		}{
			{"symlink out", read(filepath.Join(root, "link-out")), errcode.CapabilityDenied},
			{"relative symlink out", read(filepath.Join(root, "dotdot")), errcode.CapabilityDenied},
			{"directory symlink out", read(filepath.Join(root, "dir-out", "secret")), errcode.CapabilityDenied},
			{"dotdot", read(root + "/sub/../../" + filepath.Base(outside) + "/secret"), errcode.CapabilityDenied},
			{"outside", read(filepath.Join(outside, "secret")), errcode.CapabilityDenied},
			{"prefix is not a parent", read(root + "-evil/x"), errcode.CapabilityDenied},
			{"relative", read("a.txt"), errcode.CapabilityInvalid},
			{"directory", read(filepath.Join(root, "sub")), errcode.CapabilityDenied},
			{"fifo does not block", read(filepath.Join(root, "fifo")), errcode.CapabilityDenied},
			{"missing", read(filepath.Join(root, "nope")), errcode.CapabilityNotFound},
			{"unknown argument", map[string]any{"cap": "fs.read", "path": filepath.Join(root, "a.txt"), "follow": true}, errcode.CapabilityInvalid},
			{"write over max_bytes", map[string]any{"cap": "fs.write", "path": filepath.Join(root, "w"), "data": bytes.Repeat([]byte("x"), 2000)}, errcode.CapabilityDenied},
			{"write through a symlink", map[string]any{"cap": "fs.write", "path": filepath.Join(root, "link-out"), "data": []byte("x")}, errcode.CapabilityDenied},
			{"write through a directory symlink", map[string]any{"cap": "fs.write", "path": filepath.Join(root, "dir-out", "new"), "data": []byte("x")}, errcode.CapabilityDenied},
			{"write the root", map[string]any{"cap": "fs.write", "path": root, "data": []byte("x")}, errcode.CapabilityDenied},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if code := p.one(tc.req, nil); code != tc.code {
					t.Fatalf("code %q, want %q", code, tc.code)
				}
			})
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
			t.Fatal("a refused write changed the file outside")
		}
		if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
			t.Fatal("a refused write created a file outside")
		}
	})
	t.Run("stat does not follow a final symlink", func(t *testing.T) {
		var fi capv1.FileInfo
		p.must(map[string]any{"cap": "fs.stat", "path": filepath.Join(root, "link-out")}, &fi)
		if fi.Type != capv1.TypeSymlink || fi.Target != filepath.Join(outside, "secret") {
			t.Fatalf("%+v", fi)
		}
		p.must(map[string]any{"cap": "fs.stat", "path": filepath.Join(root, "sub", "b.txt")}, &fi)
		if fi.Type != capv1.TypeFile || fi.Mode != 0o600 || fi.Size != 3 {
			t.Fatalf("%+v", fi)
		}
	})
	t.Run("list", func(t *testing.T) {
		var l capv1.FSListResult
		p.must(map[string]any{"cap": "fs.list", "path": root}, &l)
		var names []string
		for _, e := range l.Entries {
			names = append(names, e.Name)
		}
		want := []string{"a.txt", "abs-in", "big.bin", "dir-out", "dotdot", "fifo", "link-in", "link-out", "sub"}
		if len(names) != len(want) || l.Truncated {
			t.Fatalf("names %v", names)
		}
		for i := range want {
			if names[i] != want[i] {
				t.Fatalf("names %v, want %v", names, want)
			}
		}
		p.must(map[string]any{"cap": "fs.list", "path": root, "limit": 2}, &l)
		if len(l.Entries) != 2 || !l.Truncated {
			t.Fatalf("limited: %+v", l)
		}
		p.must(map[string]any{"cap": "fs.list", "path": root, "sizes": true}, &l)
		for _, e := range l.Entries {
			if e.Name == "sub" && e.Size < 4096 {
				t.Fatalf("sub's size %d does not count b.txt", e.Size)
			}
		}
		if code := p.one(map[string]any{"cap": "fs.list", "path": filepath.Join(root, "dir-out")}, nil); code != errcode.CapabilityDenied {
			t.Fatalf("listing through a symlink out: %q", code)
		}
	})
	t.Run("write is atomic and keeps the mode", func(t *testing.T) {
		var w capv1.FSWriteResult
		target := filepath.Join(root, "sub", "b.txt")
		p.must(map[string]any{"cap": "fs.write", "path": target, "data": []byte("new content")}, &w)
		b, err := os.ReadFile(target)
		fi, _ := os.Stat(target)
		if err != nil || string(b) != "new content" || fi.Mode().Perm() != 0o600 || w.Size != 11 {
			t.Fatalf("%q %v %v %+v", b, err, fi.Mode(), w)
		}
		p.must(map[string]any{"cap": "fs.write", "path": filepath.Join(root, "fresh"), "data": []byte("x"), "mode": 0o640}, &w)
		if fi, _ := os.Stat(filepath.Join(root, "fresh")); fi.Mode().Perm() != 0o640 {
			t.Fatalf("new file mode %v", fi.Mode())
		}
		entries, _ := os.ReadDir(filepath.Join(root, "sub"))
		if len(entries) != 1 {
			t.Fatalf("temp files left: %v", entries)
		}
	})
}
