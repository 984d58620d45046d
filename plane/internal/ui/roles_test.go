package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
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

// TestRoleForms: an admin creates a role from a pasted file (a bad file is refused with role.invalid,
// the field at fault, and the file kept; a second role of the name with role.exists), edits it (a base
// made stale by another edit is refused with role.stale, the file kept), assigns it by selector (one
// that picks no node is refused with role.no_match, the selector kept) and unassigns it behind the
// confirm step; a viewer sees none of the forms and is refused each post.
func TestRoleForms(t *testing.T) {
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
	admin, _ := p.token(store.RoleAdmin)
	a := p.browser()
	a.signIn(admin)
	if page := a.get("/ui/roles", http.StatusOK); !strings.Contains(page, `id="role-create-form"`) || !strings.Contains(page, `<label for="role-create-file">`) {
		t.Fatalf("the admin's roles page has no create form:\n%s", page)
	}

	bad := "name: web\npackages:\n  - name: nginx\n    state: maybe\n"
	page := a.post("/ui/roles", url.Values{"file": {bad}}, http.StatusBadRequest)
	for _, want := range []string{errcode.RoleInvalid, "/packages/0/state", `id="role-error-field"`, "state: maybe"} {
		if !strings.Contains(page, want) {
			t.Fatalf("a bad role file: the page lacks %q:\n%s", want, page)
		}
	}
	good := "name: web\ndescription: the web servers\npackages:\n  - name: nginx\n"
	a.post("/ui/roles", url.Values{"file": {good}}, http.StatusSeeOther)
	if page := a.post("/ui/roles", url.Values{"file": {good}}, http.StatusConflict); !strings.Contains(page, errcode.RoleExists) || !strings.Contains(page, "the web servers") {
		t.Fatalf("a second role web:\n%s", page)
	}
	page = a.get("/ui/roles/web", http.StatusOK)
	for _, want := range []string{"package:nginx", `id="role-edit-form"`, `name="base" value="1"`, `<label for="role-edit-file">`, `id="role-assign-form"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the role page lacks %q:\n%s", want, page)
		}
	}

	// Edit from version 1 twice: the second is made from a stale base and is refused, its file kept.
	next := "name: web\npackages:\n  - name: nginx\n  - name: curl\n"
	a.post("/ui/roles/web/edit", url.Values{"file": {next}, "base": {"1"}}, http.StatusSeeOther)
	page = a.post("/ui/roles/web/edit", url.Values{"file": {next + "  - name: jq\n"}, "base": {"1"}}, http.StatusConflict)
	if !strings.Contains(page, errcode.RoleStale) || !strings.Contains(page, `id="role-edit-error"`) || !strings.Contains(page, "name: jq") {
		t.Fatalf("an edit from a stale version:\n%s", page)
	}
	page = a.post("/ui/roles/web/edit", url.Values{"file": {"name: db\n"}, "base": {"2"}}, http.StatusBadRequest)
	if !strings.Contains(page, errcode.RoleInvalid) || !strings.Contains(page, "Field: <code>/name</code>") {
		t.Fatalf("an edit that renames the role:\n%s", page)
	}
	if page := a.get("/ui/roles/web", http.StatusOK); !strings.Contains(page, "package:curl") || !strings.Contains(page, `name="base" value="2"`) {
		t.Fatalf("the edit did not make version 2:\n%s", page)
	}

	page = a.post("/ui/roles/web/assign", url.Values{"selector": {"tier=db"}}, http.StatusUnprocessableEntity)
	if !strings.Contains(page, errcode.RoleNoMatch) || !strings.Contains(page, `id="role-assign-error"`) || !strings.Contains(page, `value="tier=db"`) {
		t.Fatalf("an assignment that picks no node:\n%s", page)
	}
	a.post("/ui/roles/web/assign", url.Values{"selector": {"tier=web"}}, http.StatusSeeOther)
	page = a.get("/ui/roles/web", http.StatusOK)
	if !strings.Contains(page, `action="/ui/roles/web/unassign?selector=tier%3Dweb"`) || !strings.Contains(page, `class="danger role-unassign-confirm"`) ||
		!strings.Contains(page, `href="/ui/nodes/`+res.Node.ID+`/footprint"`) {
		t.Fatalf("the assigned role's page:\n%s", page)
	}

	viewer, _ := p.token(store.RoleViewer)
	v := p.browser()
	v.signIn(viewer)
	if page := v.get("/ui/roles", http.StatusOK); strings.Contains(page, `id="role-create-form"`) {
		t.Error("a viewer is offered the create form")
	}
	if page := v.get("/ui/roles/web", http.StatusOK); strings.Contains(page, `id="role-edit-form"`) || strings.Contains(page, `id="role-assign-form"`) || strings.Contains(page, "role-unassign") {
		t.Error("a viewer is offered edit, assign or unassign")
	}
	for path, form := range map[string]url.Values{
		"/ui/roles":                                {"file": {"name: other\n"}},
		"/ui/roles/web/edit":                       {"file": {good}, "base": {"2"}},
		"/ui/roles/web/assign":                     {"selector": {"tier=web"}},
		"/ui/roles/web/unassign?selector=tier=web": {},
	} {
		if page := v.post(path, form, http.StatusForbidden); !strings.Contains(page, errcode.AuthForbidden) {
			t.Errorf("a viewer's post to %s:\n%s", path, page)
		}
	}

	a.post("/ui/roles/web/unassign?selector="+url.QueryEscape("tier=web"), nil, http.StatusSeeOther)
	if page := a.get("/ui/roles/web", http.StatusOK); strings.Contains(page, "role-unassign") || !strings.Contains(page, "No node carries it.") {
		t.Fatalf("unassigned, still carried:\n%s", page)
	}
	if page := a.get("/ui/roles", http.StatusOK); !strings.Contains(page, `href="/ui/roles/web"`) || strings.Contains(page, `href="/ui/roles/other"`) {
		t.Fatalf("the roles list after the forms:\n%s", page)
	}
}
