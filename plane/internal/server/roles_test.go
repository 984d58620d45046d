package server_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestArtifactServesOnlyTheNodesRoles: a signed node is served by digest the content of a file its
// roles name, and not a role's content it does not carry, which reads as not stored at all.
func TestArtifactServesOnlyTheNodesRoles(t *testing.T) {
	p := newPlane(t, wire.Config{})
	ctx := context.Background()
	mine, theirs := []byte("worker_processes 2;\n"), []byte("db password\n")
	spec := func(name string, content []byte) []byte {
		return []byte(`{"name":"` + name + `","footprint":{"schema":"lexicon/footprint/v1","files":[{"path":"/etc/` + name + `.conf","sha256":"` +
			cas.Sum(content) + `","size":` + strconv.Itoa(len(content)) + `,"mode":"0644","owner":"root","group":"root"}]}}`)
	}
	for name, content := range map[string][]byte{"web": mine, "db": theirs} {
		if _, err := p.st.RoleCreate(ctx, store.RolePutParams{Name: name, Spec: spec(name, content), By: "admin",
			Contents: []store.RoleContent{{Digest: cas.Sum(content), Data: content}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.st.RoleAssign(ctx, store.RoleAssignParams{Role: "web", Selector: p.node.Name, By: "admin"}); err != nil {
		t.Fatal(err)
	}
	if status, _, data := p.artifact("sha256=" + cas.Sum(mine)); status != http.StatusOK || string(data) != string(mine) {
		t.Fatalf("own role's content: %d %q", status, data)
	}
	if status, code, _ := p.artifact("sha256=" + cas.Sum(theirs)); status != http.StatusNotFound || code != errcode.ModuleNotFound {
		t.Fatalf("another role's content: %d %s", status, code)
	}
}
