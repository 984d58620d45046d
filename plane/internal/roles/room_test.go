package roles_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var admin = api.Token{Name: "admin", Role: api.RoleAdmin}

func enrol(t *testing.T, st store.Store, name string, labels map[string]string) store.Node {
	t.Helper()
	ctx := context.Background()
	pub := keys.NewNode().Public()
	j, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{"192.0.2.1"}, SourceAddress: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: j.Join.Fingerprint, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) > 0 {
		if _, err := st.NodeLabel(ctx, store.NodeLabelParams{ID: res.Node.ID, Set: labels, By: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	return res.Node
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestAssignEditArtifact: on a real store, an assignment that picks no node or would make a node carry
// two roles that disagree is refused with both named, as is an edit that would; a node's footprint is
// its roles'; and the artifact route serves a node a role's content only when its footprint names it.
func TestAssignEditArtifact(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	web := enrol(t, st, "web-1", map[string]string{"tier": "web"})
	db := enrol(t, st, "db-1", map[string]string{"tier": "db"})
	room := roles.NewRoom(roles.RoomConfig{Store: st, Nodes: nodes.New(nodes.Config{Store: st})})

	_, err := room.Create(ctx, admin, api.RoleFile{File: "name: web\nfiles: [{path: /etc/motd, content: web}]\npackages: [{name: nginx}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = room.Create(ctx, admin, api.RoleFile{File: "name: base\nfiles: [{path: /etc/motd, content: base}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = room.Create(ctx, admin, api.RoleFile{File: "name: web\n"})
	testkit.WantCode(t, err, errcode.RoleExists)
	_, err = room.Create(ctx, admin, api.RoleFile{File: "name: x\nfiles: [{path: /etc/a, content: x, mode: 644}]"})
	testkit.WantCode(t, err, errcode.RoleInvalid)

	_, err = room.Assign(ctx, admin, "web", api.RoleAssignRequest{Selector: "tier=cache"})
	testkit.WantCode(t, err, errcode.RoleNoMatch)
	a, err := room.Assign(ctx, admin, "web", api.RoleAssignRequest{Selector: "tier=web"})
	if err != nil || len(a.Nodes) != 1 || a.Nodes[0] != "web-1" {
		t.Fatalf("assign = %+v, %v", a, err)
	}
	_, err = room.Assign(ctx, admin, "base", api.RoleAssignRequest{Selector: "all"})
	testkit.WantCode(t, err, errcode.RoleConflict)
	if d := errcode.From(err, "").Details; d[errcode.DetailItem] != "file:/etc/motd" || d[errcode.DetailNodeID] != web.ID {
		t.Errorf("conflict details = %v", d)
	}
	if _, err := room.Assign(ctx, admin, "base", api.RoleAssignRequest{Selector: "tier=db"}); err != nil {
		t.Fatal(err)
	}
	// An edit that makes base claim nginx absent is fine on db-1 alone; widening it then is not.
	if _, err := room.Edit(ctx, admin, "base", api.RoleFile{File: "name: base\nfiles: [{path: /etc/motd, content: base}]\npackages: [{name: nginx, state: absent}]\n", Base: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = room.Edit(ctx, admin, "base", api.RoleFile{File: "name: base\n", Base: 1})
	testkit.WantCode(t, err, errcode.RoleStale)
	_, err = room.Edit(ctx, admin, "web", api.RoleFile{File: "name: base\n"})
	testkit.WantCode(t, err, errcode.RoleInvalid)
	h, err := room.History(ctx, admin, "base")
	if err != nil || len(h.Versions) != 2 || h.Versions[0].Version != 2 {
		t.Fatalf("history = %+v, %v", h, err)
	}

	fp, err := room.Footprint(ctx, admin, "web-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Roles) != 1 || fp.Roles[0] != "web@1" || len(fp.Items) != 2 || fp.Items[0].ID != "package:nginx" || fp.Items[0].Role != "web" || fp.Items[0].State != "unknown" {
		t.Fatalf("footprint = %+v", fp)
	}

	data, err := room.Artifact(ctx, web.ID, sum("web"))
	if err != nil || string(data) != "web" {
		t.Fatalf("web-1's own content: %q, %v", data, err)
	}
	_, err = room.Artifact(ctx, web.ID, sum("base"))
	testkit.WantCode(t, err, errcode.ModuleNotFound) // stored, but not web-1's
	_, err = room.Artifact(ctx, db.ID, sum("web"))
	testkit.WantCode(t, err, errcode.ModuleNotFound)
	_, err = room.Artifact(ctx, db.ID, sum("never stored"))
	testkit.WantCode(t, err, errcode.ModuleNotFound)

	if _, err := room.Unassign(ctx, admin, "web", api.RoleAssignRequest{Selector: "tier=web"}); err != nil {
		t.Fatal(err)
	}
	_, err = room.Artifact(ctx, web.ID, sum("web"))
	testkit.WantCode(t, err, errcode.ModuleNotFound)
	_, err = room.Plan(ctx, admin, "web", api.RolesPlanRequest{})
	testkit.WantCode(t, err, errcode.RoleNoNodes)
}
