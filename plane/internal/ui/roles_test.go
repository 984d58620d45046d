package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestRolePages: the roles list, a role's page with its items and the nodes carrying it, and a node's
// footprint with each item's state (unknown until a converge reports); a viewer sees no plan or apply.
func TestRolePages(t *testing.T) {
	p := newPlane(t)
	ctx := context.Background()
	j := p.pending("web-1")
	res, err := p.store.JoinApprove(ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.NodeLabel(ctx, store.NodeLabelParams{ID: res.Node.ID, Set: map[string]string{"tier": "web"}, By: "test"}); err != nil {
		t.Fatal(err)
	}
	spec := `{"name":"web","footprint":{"schema":"lexicon/footprint/v1","packages":[{"name":"nginx","state":"present"}]}}`
	if _, err := p.store.RoleCreate(ctx, store.RolePutParams{Name: "web", Spec: []byte(spec), By: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.RoleAssign(ctx, store.RoleAssignParams{Role: "web", Selector: "tier=web", By: "admin"}); err != nil {
		t.Fatal(err)
	}

	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	if page := b.get("/ui/roles", http.StatusOK); !strings.Contains(page, `href="/ui/roles/web"`) {
		t.Fatalf("roles list lacks web: %s", page)
	}
	page := b.get("/ui/roles/web", http.StatusOK)
	for _, want := range []string{"package:nginx", "tier=web", `href="/ui/nodes/` + res.Node.ID + `/footprint"`, `id="role-plan"`, `class="danger role-apply"`, `class="danger role-apply-confirm"`} {
		if !strings.Contains(page, want) {
			t.Errorf("role page lacks %q", want)
		}
	}
	if page := b.get("/ui/nodes/web-1/footprint", http.StatusOK); !strings.Contains(page, "package:nginx") || !strings.Contains(page, "unknown") || !strings.Contains(page, "web@1") {
		t.Errorf("footprint page: %s", page)
	}
	// The node does not report converge: the plan answers with its code per node and the page shows
	// the role again.
	b.post("/ui/roles/web/plan", url.Values{}, http.StatusSeeOther)

	viewer, _ := p.token(store.RoleViewer)
	v := p.browser()
	v.signIn(viewer)
	if page := v.get("/ui/roles/web", http.StatusOK); strings.Contains(page, `role-apply`) || strings.Contains(page, `id="role-plan"`) {
		t.Error("a viewer is offered plan or apply")
	}
}
