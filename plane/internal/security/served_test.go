package security_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// roleReads counts the roles room's reads of the roles and of the nodes.
type roleReads struct {
	store.Store
	roles, nodes int
}

func (n *roleReads) RoleList(ctx context.Context, p store.RoleListParams) ([]store.RoleVersion, error) {
	n.roles++
	return n.Store.RoleList(ctx, p)
}

func (n *roleReads) NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error) {
	n.nodes++
	return n.Store.NodeList(ctx, p)
}

// selectable records whether the view's query read the nodes' labels and facts.
type selectable struct {
	security.Store
	asked []bool
}

func (s *selectable) PackageReportList(ctx context.Context, p store.PackageReportListParams) ([]store.PackageReport, error) {
	s.asked = append(s.asked, p.Selectable)
	return s.Store.PackageReportList(ctx, p)
}

// TestServedByRoles: on each store, with the roles room wired in, a node carrying a role with package
// nginx and unit nginx.service is red when nginx's security fix waits and nginx.service runs replaced
// code, naming the role, while a node without the role is amber for the same report; the detectors'
// thresholds carry the served package, so plane:critical_fix_waiting opens on the serving node alone
// once the fix has waited a day. Before any assignment, no role and no node's labels are read; after,
// the labels come with the view's one query and the roles room reads no node itself.
func TestServedByRoles(t *testing.T) {
	for backend, open := range map[string]func(testing.TB) storetest.Env{"sqlite": storetest.SQLiteOpener, "postgres": storetest.PostgresOpener} {
		t.Run(backend, func(t *testing.T) {
			st := open(t).Store
			ctx := t.Context()
			now := time.Now().UTC().Truncate(time.Second)
			vocab := []store.WordRef{{Name: security.Word, Version: "1.0.0", Digest: "sha256:pr", Class: "look"}}
			web := storetest.NodeWords(t, st, "web-1", "1.0.0", now.Add(-31*time.Hour), vocab)
			plain := storetest.NodeWords(t, st, "plain-1", "1.0.0", now.Add(-31*time.Hour), vocab)
			if _, err := st.NodeLabel(ctx, store.NodeLabelParams{ID: web.ID, Set: map[string]string{"tier": "web"}, By: "test"}); err != nil {
				t.Fatal(err)
			}
			report := json.RawMessage(`{"known": true, "unknown": [], "half_configured": [],
				"security_upgrades": [{"name": "nginx", "installed": "1.22.1-9", "candidate": "1.22.1-9+deb12u1", "origin": "Debian-Security:bookworm-security"}],
				"stale_services": [{"unit": "nginx.service"}], "reboot": {"owed": false}, "os": {"pretty_name": "Debian GNU/Linux 12 (bookworm)"}}`)
			for _, n := range []store.Node{web, plain} {
				storetest.Completed(t, st, n.ID, security.Word, report, now.Add(-30*time.Hour))
				storetest.Completed(t, st, n.ID, security.Word, report, now.Add(-10*time.Minute))
			}
			reads := &roleReads{Store: st}
			rs := roles.NewRoom(roles.RoomConfig{Store: reads})
			lists := &selectable{Store: st}
			room := security.NewRoom(security.RoomConfig{Store: lists, Roles: rs, Now: func() time.Time { return now }})

			levels := func() map[string]api.SecurityRow {
				t.Helper()
				v, err := room.View(ctx, viewer)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]api.SecurityRow{}
				for _, r := range v.Rows {
					out[r.Node] = r
				}
				return out
			}
			// No role exists yet: both nodes are amber, and nothing was read to say so but the assignments.
			for name, r := range levels() {
				if r.Level != api.SecurityAmber {
					t.Fatalf("before any role, %s is %s: %+v", name, r.Level, r.Reasons)
				}
			}
			if reads.roles != 0 || reads.nodes != 0 || !slices.Equal(lists.asked, []bool{false}) {
				t.Fatalf("with no assignment: %d role and %d node reads, labels asked %v", reads.roles, reads.nodes, lists.asked)
			}

			admin := api.Token{Name: "admin", Role: api.RoleAdmin}
			if _, err := rs.Create(ctx, admin, api.RoleFile{File: "name: web\npackages: [{name: nginx}]\nunits: [{name: nginx.service}]\n"}); err != nil {
				t.Fatal(err)
			}
			if _, err := rs.Assign(ctx, admin, "web", api.RoleAssignRequest{Selector: "tier=web"}); err != nil {
				t.Fatal(err)
			}
			reads.nodes, lists.asked = 0, nil
			rows := levels()
			if reads.nodes != 0 || !slices.Equal(lists.asked, []bool{true}) {
				t.Fatalf("with a role assigned: %d node reads by the roles room, labels asked %v", reads.nodes, lists.asked)
			}
			kinds := func(r api.SecurityRow) (out []string) {
				for _, x := range r.Reasons {
					out = append(out, x.Kind)
				}
				return out
			}
			w, p := rows["web-1"], rows["plain-1"]
			if w.Level != api.SecurityRed || !slices.Equal(kinds(w), []string{"critical_fix", "critical_old_code"}) ||
				w.Reasons[0].Text != "critical fix waiting: nginx 1.22.1-9 → 1.22.1-9+deb12u1 (Debian-Security:bookworm-security), served by role web" ||
				!strings.Contains(w.Reasons[1].Text, "nginx.service") || !strings.HasSuffix(w.Reasons[1].Text, "served by role web") {
				t.Fatalf("the serving node: %s %+v", w.Level, w.Reasons)
			}
			if p.Level != api.SecurityAmber || !slices.Equal(kinds(p), []string{"fix", "old_code"}) {
				t.Fatalf("the node without the role: %s %+v", p.Level, p.Reasons)
			}

			th, err := room.Thresholds(ctx)
			if err != nil || !slices.Equal(th.Served[web.ID], []string{"nginx"}) || len(th.Served) != 1 {
				t.Fatalf("thresholds %+v, %v", th, err)
			}
			res, err := st.IncidentReconcile(ctx, store.IncidentReconcileParams{Now: now, Up: now.Add(-31 * time.Hour), Packages: th})
			if err != nil {
				t.Fatal(err)
			}
			var opened []string
			for _, c := range res.Changes {
				if c.Incident.Source == store.DetectorCriticalFixWaiting {
					opened = append(opened, c.Incident.NodeID)
					if !strings.Contains(c.Incident.Summary, "nginx") {
						t.Errorf("summary %q", c.Incident.Summary)
					}
				}
			}
			if !slices.Equal(opened, []string{web.ID}) {
				t.Fatalf("plane:critical_fix_waiting opened on %v, want the serving node %s alone", opened, web.ID)
			}
		})
	}
}
