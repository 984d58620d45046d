package ui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestInstallCommandPage: the nodes page offers an admin the install command; its form shows the one
// line to paste once, refuses a label that is not key=value next to the form, and is an admin's only.
func TestInstallCommandPage(t *testing.T) {
	p := newPlaneWith(t, wire.Config{Bootstrap: &provision.Bootstrap{PlaneURL: "https://plane.example"}})
	sum := sha256.Sum256([]byte("agent"))
	if _, err := p.store.ReleasePut(context.Background(), store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: hex.EncodeToString(sum[:]), Data: []byte("agent")}}, By: "test"}); err != nil {
		t.Fatal(err)
	}
	admin, _ := p.token(store.RoleAdmin)
	operator, _ := p.token(store.RoleOperator)
	b := p.browser()
	b.signIn(admin)
	if nodes := b.get("/ui/nodes", http.StatusOK); !strings.Contains(nodes, `href="/ui/nodes/install-command"`) {
		t.Fatal("the nodes page offers no install command")
	}
	b.get("/ui/nodes/install-command", http.StatusOK)
	made := b.post("/ui/nodes/install-command", url.Values{"labels": {"tier=web"}, "expires": {"2h"}, "approve": {"true"}}, http.StatusCreated)
	if !strings.Contains(made, `<pre id="install-command">echo `) || !strings.Contains(made, "approved at once") {
		t.Fatalf("the command's page:\n%s", made)
	}
	bad := b.post("/ui/nodes/install-command", url.Values{"labels": {"tier"}}, http.StatusBadRequest)
	if !strings.Contains(bad, `id="install-error"`) || strings.Contains(bad, `id="install-command"`) {
		t.Fatalf("a bad label:\n%s", bad)
	}
	long := b.post("/ui/nodes/install-command", url.Values{"expires": {"9999h"}}, http.StatusBadRequest)
	if !strings.Contains(long, errcode.UsageInvalid) {
		t.Fatalf("a long expiry:\n%s", long)
	}
	o := p.browser()
	o.signIn(operator)
	if nodes := o.get("/ui/nodes", http.StatusOK); strings.Contains(nodes, `href="/ui/nodes/install-command"`) {
		t.Fatal("the nodes page offers an operator the install command")
	}
	o.get("/ui/nodes/install-command", http.StatusForbidden)
}
