package caps

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// fsWord declares fs.read, fs.stat, fs.list, fs.write and sys.disk over root.
func fsWord(t *testing.T, root string) *Dispatcher {
	t.Helper()
	paths := []string{root}
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": "roots", "kind": "word", "version": "1.0.0", "class": "change",
		"summary": "roots", "params": json.RawMessage(`{"type":"object","additionalProperties":false}`),
		"output": json.RawMessage(`{"type":"object"}`), "module": map[string]any{"file": "r.wasm"},
		"capabilities": []map[string]any{
			{"cap": "fs.read", "paths": paths}, {"cap": "fs.stat", "paths": paths}, {"cap": "fs.list", "paths": paths},
			{"cap": "fs.write", "paths": paths}, {"cap": "sys.disk", "paths": paths},
		},
	}
	b, _ := json.Marshal(doc)
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Prepare(m, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	return w.Invocation()
}

// call sends req and returns the result, or the error body.
func call(t *testing.T, d *Dispatcher, req map[string]any) (json.RawMessage, *errcode.Body) {
	t.Helper()
	b, _ := json.Marshal(req)
	var r capv1.Response
	if err := json.Unmarshal(d.Call(context.Background(), b), &r); err != nil {
		t.Fatal(err)
	}
	return r.Result, r.Error
}

func mkfile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rootRequests are one request of each path capability against the declared root.
func rootRequests(root string) map[string]map[string]any {
	return map[string]map[string]any{
		"read":          {"cap": "fs.read", "path": filepath.Join(root, "file")},
		"write":         {"cap": "fs.write", "path": filepath.Join(root, "new"), "data": []byte("planted")},
		"list":          {"cap": "fs.list", "path": root},
		"stat":          {"cap": "fs.stat", "path": filepath.Join(root, "file")},
		"sys.disk":      {"cap": "sys.disk", "path": filepath.Join(root, "file")},
		"sys.disk, all": {"cap": "sys.disk"},
	}
}

// TestSwappedRoot: the declared root /…/a/b/root, its parent b or an ancestor a in the middle is
// replaced by a link to another folder shaped like the original. Every capability refuses with
// capability.denied naming the link, and nothing outside is read or written.
func TestSwappedRoot(t *testing.T) {
	for _, swap := range []struct{ name, link string }{
		{"the root", "a/b/root"}, {"its parent", "a/b"}, {"an ancestor in the middle", "a"},
	} {
		t.Run(swap.name, func(t *testing.T) {
			base := testkit.SafeDir(t)
			root := filepath.Join(base, "a", "b", "root")
			outside := filepath.Join(base, "outside")
			mkfile(t, filepath.Join(root, "file"), "inside")
			// The folder the link points at holds the same shape below it as the original did.
			below, _ := filepath.Rel(filepath.Join(base, swap.link), root)
			mkfile(t, filepath.Join(outside, below, "file"), "outside")

			d := fsWord(t, root)
			for name, req := range rootRequests(root) {
				if _, e := call(t, d, req); e != nil {
					t.Fatalf("%s before the swap: %+v", name, e)
				}
			}
			if err := os.Remove(filepath.Join(root, "new")); err != nil {
				t.Fatal(err)
			}

			link := filepath.Join(base, swap.link)
			if err := os.Rename(link, link+".orig"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			for name, req := range rootRequests(root) {
				t.Run(name, func(t *testing.T) {
					res, e := call(t, d, req)
					if e == nil {
						t.Fatalf("answered through the link: %s", res)
					}
					if e.Code != errcode.CapabilityDenied || e.Details["component"] != link {
						t.Fatalf("error %+v, want %s naming %s", e, errcode.CapabilityDenied, link)
					}
				})
			}
			filepath.WalkDir(outside, func(p string, de fs.DirEntry, err error) error {
				if err == nil && de.Name() == "new" {
					t.Errorf("a write landed outside: %s", p)
				}
				return nil
			})
			if b, _ := os.ReadFile(filepath.Join(outside, below, "file")); string(b) != "outside" {
				t.Fatalf("the file outside now holds %q", b)
			}
		})
	}
}

// TestWriteRootAncestors: fs.write refuses a root any folder above which someone other than root could
// change, with capability.root_unsafe naming that folder, and writes nothing; reads are unaffected.
func TestWriteRootAncestors(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"writable by others", func(t *testing.T, dir string) { chmod(t, dir, 0o757) }},
		{"writable by the group", func(t *testing.T, dir string) { chmod(t, dir, 0o775) }},
		{"sticky, as /tmp", func(t *testing.T, dir string) { chmod(t, dir, 0o1777) }},
		{"owned by another user", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a folder away")
			}
			if err := os.Chown(dir, 4321, 4321); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := testkit.SafeDir(t)
			root := filepath.Join(base, "a", "b", "root")
			mkfile(t, filepath.Join(root, "file"), "inside")
			unsafe := filepath.Join(base, "a")
			c.setup(t, unsafe)
			d := fsWord(t, root)
			_, e := call(t, d, map[string]any{"cap": "fs.write", "path": filepath.Join(root, "new"), "data": []byte("x")})
			if e == nil || e.Code != errcode.CapabilityRootUnsafe || e.Details["folder"] != unsafe {
				t.Fatalf("error %+v, want %s naming %s", e, errcode.CapabilityRootUnsafe, unsafe)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 1 {
				t.Fatalf("the root holds %v", entries)
			}
			if calls := d.Calls(); calls[len(calls)-1].Allowed {
				t.Fatal("the refused write is recorded as allowed")
			}
			if _, e := call(t, d, map[string]any{"cap": "fs.read", "path": filepath.Join(root, "file")}); e != nil {
				t.Fatalf("read beneath the same root: %+v", e)
			}
		})
	}
	// The folder that is the root itself may belong to anyone: swapping it needs its parent.
	base := testkit.SafeDir(t)
	root := filepath.Join(base, "root")
	mkfile(t, filepath.Join(root, "file"), "inside")
	chmod(t, root, 0o777)
	if _, e := call(t, fsWord(t, root), map[string]any{"cap": "fs.write", "path": filepath.Join(root, "new"), "data": []byte("x")}); e != nil {
		t.Fatalf("write beneath a root others may write: %+v", e)
	}
}

// TestWriteModeBits: fs.write refuses setuid, setgid and sticky bits and leaves no file behind; a file
// replaced keeps its permissions but not its setuid or setgid bit.
func TestWriteModeBits(t *testing.T) {
	root := testkit.SafeDir(t)
	d := fsWord(t, root)
	for _, mode := range []uint32{0o4755, 0o2755, 0o1644, 0o6777} {
		_, e := call(t, d, map[string]any{"cap": "fs.write", "path": filepath.Join(root, "prog"), "data": []byte("#!/bin/sh\n"), "mode": mode})
		if e == nil || e.Code != errcode.CapabilityInvalid || e.Details["field"] != "mode" {
			t.Fatalf("mode %o: error %+v, want %s", mode, e, errcode.CapabilityInvalid)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Fatalf("mode %o left %v", mode, entries)
		}
	}
	prog := filepath.Join(root, "helper")
	mkfile(t, prog, "old")
	chmod(t, prog, 0o4755)
	if _, e := call(t, d, map[string]any{"cap": "fs.write", "path": prog, "data": []byte("new")}); e != nil {
		t.Fatalf("replacing a setuid file: %+v", e)
	}
	if fi, err := os.Stat(prog); err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Fatalf("replaced file's mode %v (%v)", fi.Mode(), err)
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	// os.Chmod takes Go's mode bits, not the kernel's: map the sticky, setuid and setgid bits.
	m := mode.Perm()
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
