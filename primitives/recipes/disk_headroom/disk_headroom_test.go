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

// TestDeclaredThresholds checks the manifest declares 10% and 5 GiB on /, and that the check's verdict
// with that declaration is the one statfs predicts for this machine.
func TestDeclaredThresholds(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
	decl, err := w.Manifest().Declaration(nil)
	if err != nil || string(decl) != `{"min_free_gib":5,"min_percent":10,"path":"/"}` {
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
			if v.Verdict != tc.verdict || !strings.Contains(v.Detail, tc.detail) || v.Repair != nil {
				t.Fatalf("%+v", v)
			}
		})
	}
}

func TestOnlyTheDeclaredFilesystem(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.Paths("sys.disk", "/var"))
	res := w.Run(json.RawMessage(`{"path": "/"}`))
	if res.Code != errcode.CapabilityDenied {
		t.Fatalf("outside the declared roots: %s %s", res.Outcome, res.Code)
	}
}
