package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/renew_cert.wasm"

// renewal writes a renewal script that records its arguments in marker and exits with code, and
// returns it pinned as a node's policy would pin it.
func renewal(t *testing.T, marker string, code int) manifest.NodeProgram {
	t.Helper()
	script := "#!/bin/sh\necho \"$@\" > " + marker + "\necho renewing >&2\nexit " + string(rune('0'+code)) + "\n"
	path := filepath.Join(t.TempDir(), "renew.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	return manifest.NodeProgram{Path: path, SHA256: hex.EncodeToString(sum[:]), Args: []string{"renew", "--quiet"}}
}

func TestRenews(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithRenewal(renewal(t, marker, 0)))
	var out struct {
		ExitCode int    `json:"exit_code"`
		Output   string `json:"output"`
	}
	w.Must(map[string]any{}, &out)
	if got, _ := os.ReadFile(marker); string(got) != "renew --quiet\n" || out.ExitCode != 0 || !strings.Contains(out.Output, "renewing") {
		t.Fatalf("ran with %q: %+v", got, out)
	}
}

func TestRenewalFails(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithRenewal(renewal(t, marker, 3)))
	res := w.Run(map[string]any{})
	if res.Code != "renew_cert.failed" || !strings.Contains(res.Message, "exited 3") {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
}

// TestNotConfigured: with no renewal program in the node's policy, nothing runs and the word answers
// capability.unknown.
func TestNotConfigured(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
	if res := w.Run(map[string]any{}); res.Code != errcode.CapabilityUnknown {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
}

// TestContainment: a program whose bytes no longer hash to the pinned sha256 does not run, and the word
// has no way to name another program or add arguments.
func TestContainment(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	p := renewal(t, marker, 0)
	if err := os.WriteFile(p.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithRenewal(p))
	if res := w.Run(map[string]any{}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("swapped program: %s %s", res.Code, res.Message)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the swapped program ran")
	}
	if res := w.Run(map[string]any{"program": "/bin/sh"}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("params naming a program: %s", res.Code)
	}
}
