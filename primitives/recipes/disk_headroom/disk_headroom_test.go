package main_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../../build/wasm/recipes/disk_headroom.wasm"

// TestDeclaredThresholds checks the manifest declares 10% and 5 GiB on /, with free_disk looking in
// /var/log, apt's cache and the journal down to 256 MiB, and that the check's verdict
// with that declaration is the one statfs predicts for this machine.
func TestDeclaredThresholds(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
	decl, err := w.Manifest().Declaration(nil)
	if err != nil || string(decl) != `{"journal_bytes":268435456,"log_roots":["/var/log"],"min_free_gib":5,"min_percent":10,"package_cache":"/var/cache/apt/archives","path":"/"}` {
		t.Fatalf("declaration %s %v", decl, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/", &st); err != nil {
		t.Fatal(err)
	}
	avail, total := float64(st.Bavail)*float64(st.Frsize), float64(st.Blocks)*float64(st.Frsize)
	want := "pass"
	if avail/total*100 < 10 || avail < 5<<30 {
		want = "fail"
	}
	// Another process may write between statfs and the check; a machine right at the line is rare.
	if v := w.Check(nil); v.Verdict != want || !strings.HasPrefix(v.Detail, "/ (/) has ") {
		t.Fatalf("verdict %+v, statfs predicts %s", v, want)
	}
}

func TestVerdicts(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
	cases := []struct {
		name, verdict, detail string
		decl                  map[string]any
	}{
		{"room", "pass", "GiB free", map[string]any{"path": "/", "min_percent": 0, "min_free_gib": 0}},
		{"too few GiB", "fail", "wants at least 0% and 1.048576e+06 GiB", map[string]any{"path": "/", "min_percent": 0, "min_free_gib": 1048576}},
		{"too small a share", "fail", "wants at least 100%", map[string]any{"path": "/", "min_percent": 100, "min_free_gib": 0}},
		{"missing path", "unknown", "does not exist", map[string]any{"path": "/no/such/filesystem", "min_percent": 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := w.Check(tc.decl)
			if v.Verdict != tc.verdict || !strings.Contains(v.Detail, tc.detail) || (v.Repair != nil) != (tc.verdict == "fail") {
				t.Fatalf("%+v", v)
			}
		})
	}
}

// TestRepairParams: a failing verdict hands free_disk the declared places to look, and nothing else.
func TestRepairParams(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
	v := w.Check(map[string]any{"path": "/", "min_percent": 100, "log_roots": []string{"/var/log", "/srv/app/log"},
		"package_cache": "/var/cache/apt/archives", "journal_bytes": 1 << 30})
	got, _ := json.Marshal(v.Repair)
	if v.Verdict != "fail" || string(got) != `{"log_roots":["/var/log","/srv/app/log"],"package_cache":"/var/cache/apt/archives","journal_bytes":1073741824}` {
		t.Fatalf("%s %s", v.Verdict, got)
	}
}

func TestOnlyTheDeclaredFilesystem(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.Paths("sys.disk", "/var"))
	res := w.Run(json.RawMessage(`{"path": "/"}`))
	if res.Code != errcode.CapabilityDenied {
		t.Fatalf("outside the declared roots: %s %s", res.Outcome, res.Code)
	}
}
