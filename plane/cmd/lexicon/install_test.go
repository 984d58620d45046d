package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// TestNodesInstallCommand: the command prints the one line to paste last (comments before it), or the
// answer as JSON; a label that is not key=value is a usage error.
func TestNodesInstallCommand(t *testing.T) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	srv := httptest.NewServer(wire.New(wire.Config{Store: st, Bootstrap: &provision.Bootstrap{PlaneURL: "https://plane.example"}}).Handler())
	t.Cleanup(srv.Close)
	tok, hash := tokens.Mint()
	if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "root", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("agent"))
	if _, err := st.ReleasePut(t.Context(), store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: hex.EncodeToString(sum[:]), Data: []byte("agent")}}, By: "test"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEXICON_TOKEN", tok)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), "lexicon", "", commands(), append(args, "--plane", srv.URL), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run("nodes", "install-command", "--labels", "tier=web,zone=a", "--expires", "2h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "echo ") || !strings.HasPrefix(lines[0], "# ") {
		t.Fatalf("text: %d %q %s", code, out, errOut)
	}
	code, out, errOut = run("nodes", "install-command", "--approve=false", "-o", "json")
	var ic api.InstallCommand
	if err := json.Unmarshal([]byte(out), &ic); code != 0 || err != nil || ic.Approve || !strings.HasSuffix(ic.Command, "| sh") {
		t.Fatalf("json: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := run("nodes", "install-command", "--label", "tier"); code != 2 || !strings.Contains(errOut, "usage.invalid") {
		t.Fatalf("a bad label: %d %s", code, errOut)
	}
}
