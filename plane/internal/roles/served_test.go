package roles_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestServedBy: with no assignment nothing is served; a node serves the packages its roles keep
// present and the units they keep enabled or started, each with the roles naming it, and a node
// carrying none is absent; a node whose roles came to conflict (labelled after both were assigned)
// still serves what each of its roles names.
func TestServedBy(t *testing.T) {
	ctx := t.Context()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	web := enrol(t, st, "web-1", map[string]string{"tier": "web"})
	db := enrol(t, st, "db-1", map[string]string{"tier": "db"})
	room := roles.NewRoom(roles.RoomConfig{Store: st, Nodes: nodes.New(nodes.Config{Store: st})})
	if s, err := room.ServedBy(ctx); err != nil || s != nil {
		t.Fatalf("no assignment: %v", err)
	}
	for _, f := range []string{
		"name: web\npackages: [{name: nginx}, {name: apache2, state: absent}]\nunits: [{name: nginx.service}, {name: apache2.service, enabled: false, started: false}]\n",
		"name: proxy\npackages: [{name: nginx}]\nunits: [{name: haproxy.service, started: false}]\n",
		"name: db\nfiles: [{path: /etc/motd, content: db}]\npackages: [{name: postgresql}]\n",
		"name: edge\nfiles: [{path: /etc/motd, content: edge}]\npackages: [{name: varnish}]\n",
	} {
		if _, err := room.Create(ctx, admin, api.RoleFile{File: f}); err != nil {
			t.Fatal(err)
		}
	}
	for role, sel := range map[string]string{"web": "tier=web", "proxy": "tier=web", "db": "tier=db", "edge": "edge=yes"} {
		if role == "edge" {
			if _, err := st.NodeLabel(ctx, store.NodeLabelParams{ID: web.ID, Set: map[string]string{"edge": "yes"}, By: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := room.Assign(ctx, admin, role, api.RoleAssignRequest{Selector: sel}); err != nil {
			t.Fatal(role, err)
		}
	}
	// db-1 now takes the edge role too: its motd is claimed twice, differently.
	if _, err := st.NodeLabel(ctx, store.NodeLabelParams{ID: db.ID, Set: map[string]string{"edge": "yes"}, By: "test"}); err != nil {
		t.Fatal(err)
	}
	if fp, err := room.Footprint(ctx, admin, "db-1"); err != nil || fp.Code != errcode.RoleConflict {
		t.Fatalf("db-1's roles should conflict: %+v, %v", fp, err)
	}
	serving, err := room.ServedBy(ctx)
	if err != nil || serving == nil {
		t.Fatal(err)
	}
	nodes, err := st.NodeList(ctx, store.NodeListParams{State: store.NodeActive})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]security.Served{}
	for _, n := range nodes.Nodes {
		if s := serving(n); len(s.Packages)+len(s.Units) > 0 {
			got[n.ID] = s
		}
	}
	want := map[string]security.Served{
		web.ID: {Packages: map[string][]string{"nginx": {"proxy", "web"}, "varnish": {"edge"}},
			Units: map[string][]string{"nginx.service": {"web"}, "haproxy.service": {"proxy"}}},
		db.ID: {Packages: map[string][]string{"postgresql": {"db"}, "varnish": {"edge"}}, Units: map[string][]string{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("served %+v, want %+v", got, want)
	}
}
