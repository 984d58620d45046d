package caps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// repairWord declares fs.remove over roots (rotated logs and package files, a day old), journal.vacuum
// with a 64 MiB floor and systemd.enable for one unit, as the built-in repair words do.
func repairWord(t *testing.T, sd systemd.Manager, roots ...string) *Dispatcher {
	t.Helper()
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": "repair", "kind": "word", "version": "1.0.0", "class": "change",
		"summary": "repair", "params": json.RawMessage(`{"type":"object","additionalProperties":false}`),
		"output": json.RawMessage(`{"type":"object"}`), "module": map[string]any{"file": "r.wasm"},
		"capabilities": []map[string]any{
			{"cap": "fs.remove", "paths": roots, "patterns": []string{"*.gz", "*.[0-9]", "*.deb"}, "min_age_s": 86400},
			{"cap": "journal.vacuum", "min_bytes": 64 << 20},
			{"cap": "systemd.enable", "units": []string{"lexicon-agent.service"}},
		},
	}
	b, _ := json.Marshal(doc)
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Prepare(m, &Env{Systemd: sd})
	if err != nil {
		t.Fatal(err)
	}
	return w.Invocation()
}

// aged writes p with data and a modification time age ago.
func aged(t *testing.T, p, data string, age time.Duration) {
	t.Helper()
	mkfile(t, p, data)
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestRemove(t *testing.T) {
	root := filepath.Join(testkit.SafeDir(t), "log")
	old := filepath.Join(root, "nginx", "access.log.2.gz")
	aged(t, old, "rotated", 48*time.Hour)
	d := repairWord(t, nil, root)
	res, e := call(t, d, map[string]any{"cap": "fs.remove", "path": old})
	if e != nil {
		t.Fatalf("%s %s", e.Code, e.Message)
	}
	var got struct{ Size int64 }
	_ = json.Unmarshal(res, &got)
	if got.Size != int64(len("rotated")) {
		t.Fatalf("result %s", res)
	}
	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", old, err)
	}
	if _, e := call(t, d, map[string]any{"cap": "fs.remove", "path": old}); e == nil || e.Code != errcode.CapabilityNotFound {
		t.Fatalf("removing it again: %+v", e)
	}
}

// TestRemoveContainment: every way of asking fs.remove for something it was not given is refused with
// its code, and nothing is removed, inside the root or out of it.
func TestRemoveContainment(t *testing.T) {
	base := testkit.SafeDir(t)
	root := filepath.Join(base, "log")
	outside := filepath.Join(base, "home", "alice", "thesis.gz")
	aged(t, outside, "user data", 48*time.Hour)
	young := filepath.Join(root, "syslog.1")
	aged(t, young, "just rotated", time.Hour)
	current := filepath.Join(root, "syslog")
	aged(t, current, "live", 48*time.Hour)
	folder := filepath.Join(root, "old.1")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(root, "keep.gz")
	aged(t, keep, "kept", 48*time.Hour)
	// A link named like a rotated log, pointing at the user's file; and a folder link leading out.
	if err := os.Symlink(outside, filepath.Join(root, "link.gz")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	d := repairWord(t, nil, root)
	cases := []struct {
		name, path, code string
	}{
		{"outside the root", outside, errcode.CapabilityDenied},
		{"dot-dot out of the root", root + "/../home/alice/thesis.gz", errcode.CapabilityDenied},
		{"through a link leading out", filepath.Join(root, "out", "thesis.gz"), errcode.CapabilityDenied},
		{"a final link", filepath.Join(root, "link.gz"), errcode.CapabilityDenied},
		{"a name no pattern matches", current, errcode.CapabilityDenied},
		{"a young file", young, errcode.CapabilityDenied},
		{"a folder", folder, errcode.CapabilityDenied},
		{"the root itself", root, errcode.CapabilityDenied},
		{"relative", "log/keep.gz", errcode.CapabilityInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, e := call(t, d, map[string]any{"cap": "fs.remove", "path": tc.path})
			if e == nil || e.Code != tc.code {
				t.Fatalf("got %+v, want %s", e, tc.code)
			}
		})
	}
	for _, p := range []string{outside, young, current, folder, keep, filepath.Join(root, "link.gz")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was touched: %v", p, err)
		}
	}
	if _, e := call(t, d, map[string]any{"cap": "fs.remove", "path": keep, "recursive": true}); e == nil || e.Code != errcode.CapabilityInvalid {
		t.Fatalf("unknown argument: %+v", e)
	}
	for _, c := range d.Calls() {
		if c.Allowed {
			t.Errorf("a refused call is recorded as allowed: %s %s", c.Cap, c.Args)
		}
	}
}

// TestRemoveUnsafeRoot: fs.remove, like fs.write, refuses a root whose folders above could be swapped
// by someone else (here /tmp, which anyone may write), and removes nothing.
func TestRemoveUnsafeRoot(t *testing.T) {
	root := t.TempDir()
	if !strings.HasPrefix(root, os.TempDir()) {
		t.Skipf("t.TempDir %s is not under %s", root, os.TempDir())
	}
	p := filepath.Join(root, "log", "old.gz")
	aged(t, p, "x", 48*time.Hour)
	d := repairWord(t, nil, filepath.Join(root, "log"))
	_, e := call(t, d, map[string]any{"cap": "fs.remove", "path": p})
	if e == nil || e.Code != errcode.CapabilityRootUnsafe {
		t.Fatalf("got %+v, want %s", e, errcode.CapabilityRootUnsafe)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("%s was removed", p)
	}
}

func TestJournalVacuum(t *testing.T) {
	fake := systemdtest.New(nil)
	d := repairWord(t, fake, "/var/log")
	if _, e := call(t, d, map[string]any{"cap": "journal.vacuum", "size_bytes": 32 << 20}); e == nil || e.Code != errcode.CapabilityDenied {
		t.Fatalf("under the floor: %+v", e)
	}
	for _, n := range []int64{0, -1, 1 << 41} {
		if _, e := call(t, d, map[string]any{"cap": "journal.vacuum", "size_bytes": n}); e == nil || e.Code != errcode.CapabilityInvalid {
			t.Fatalf("size %d: %+v", n, e)
		}
	}
	if len(fake.Actions()) != 0 {
		t.Fatalf("refused calls acted: %v", fake.Actions())
	}
	if _, e := call(t, d, map[string]any{"cap": "journal.vacuum", "size_bytes": 256 << 20}); e != nil {
		t.Fatalf("%+v", e)
	}
	if got := strings.Join(fake.Actions(), ";"); got != "vacuum-size 268435456" {
		t.Fatalf("actions %q", got)
	}
	nosd := repairWord(t, systemd.Unavailable{Reason: "no journald here"}, "/var/log")
	if _, e := call(t, nosd, map[string]any{"cap": "journal.vacuum", "size_bytes": 256 << 20}); e == nil || e.Code != errcode.CapabilityUnknown {
		t.Fatalf("without journald: %+v", e)
	}
}

func TestSystemdEnable(t *testing.T) {
	dir := t.TempDir()
	fake := systemdtest.New(nil)
	fake.UnitDir = dir
	d := repairWord(t, fake, "/var/log")
	if _, e := call(t, d, map[string]any{"cap": "systemd.enable", "unit": "sshd.service"}); e == nil || e.Code != errcode.CapabilityDenied {
		t.Fatalf("undeclared unit: %+v", e)
	}
	if _, e := call(t, d, map[string]any{"cap": "systemd.enable", "unit": "lexicon-agent.service"}); e == nil || e.Code != errcode.CapabilityNotFound {
		t.Fatalf("no unit file: %+v", e)
	}
	mkfile(t, filepath.Join(dir, "lexicon-agent.service"), "[Service]\nRestart=on-failure\n")
	if _, e := call(t, d, map[string]any{"cap": "systemd.enable", "unit": "lexicon-agent.service"}); e != nil {
		t.Fatalf("%+v", e)
	}
	u, _ := fake.Unit(context.Background(), "lexicon-agent.service")
	if u.UnitFileState != "enabled" || u.Restart != "on-failure" || u.LoadState != "loaded" {
		t.Fatalf("%+v", u)
	}
}
