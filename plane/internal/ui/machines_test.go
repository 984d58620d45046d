package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestMachinesPage: an operator writes a machine down from the form (a bad OS release is refused with
// its code and what was typed kept), sees it beside the node, confirms and removes it; a viewer sees
// the inventory but no form, and may not write.
func TestMachinesPage(t *testing.T) {
	p := newTrusted(t)
	operator, _ := p.token(store.RoleOperator)
	viewer, _ := p.token(store.RoleViewer)
	storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	o := p.browser()
	o.signIn(operator)
	page := o.get("/ui/machines", http.StatusOK)
	if !strings.Contains(page, `id="machine-form"`) || !strings.Contains(page, `class="color-grey">grey`) || !strings.Contains(page, "web-1") {
		t.Fatalf("the machines page:\n%s", page)
	}
	form := url.Values{"name": {"backup-nas"}, "purpose": {"nightly backups"}, "owner": {"ops"}, "os_release": {"bookworm"}, "retire_by": {"2020-01-31"}}
	bad := o.post("/ui/machines", form, http.StatusBadRequest)
	if !strings.Contains(bad, errcode.MachineOSReleaseInvalid) || !strings.Contains(bad, `value="backup-nas"`) {
		t.Fatalf("a bad OS release:\n%s", bad)
	}
	form.Set("os_release", "debian 12")
	o.post("/ui/machines", form, http.StatusSeeOther)
	page = o.get("/ui/machines", http.StatusOK)
	row := regexp.MustCompile(`(?s)<tr class="machine-red" data-source="written">.*?backup-nas.*?action="/ui/machines/([^/"]+)/confirm"`).FindStringSubmatch(page)
	if row == nil || !strings.Contains(page, "its retire-by day 2020-01-31 has passed") || !strings.Contains(page, "debian 12&#39;s standard support ended 2026-06-10") {
		t.Fatalf("the written machine is not red with its reasons:\n%s", page)
	}
	o.post("/ui/machines/"+row[1]+"/confirm", nil, http.StatusSeeOther)

	// Edit: the row's link fills the form with the machine as written; a bad field is refused with its
	// code, what was typed kept and the form still aimed at the same machine; a good one rewrites it.
	if !strings.Contains(page, `href="/ui/machines?edit=`+row[1]+`#machine-form"`) {
		t.Fatalf("no edit link on the written machine:\n%s", page)
	}
	edit := o.get("/ui/machines?edit="+row[1], http.StatusOK)
	if !strings.Contains(edit, `action="/ui/machines/`+row[1]+`/edit"`) || !strings.Contains(edit, `value="nightly backups"`) ||
		!strings.Contains(edit, `value="2020-01-31"`) || !strings.Contains(edit, `value="debian 12"`) {
		t.Fatalf("the edit form is not filled with the machine:\n%s", edit)
	}
	if nodeID := regexp.MustCompile(`href="/ui/nodes/([^"]+)"`).FindStringSubmatch(page); nodeID == nil {
		t.Fatalf("no node row:\n%s", page)
	} else if miss := o.get("/ui/machines?edit="+url.QueryEscape(nodeID[1]), http.StatusNotFound); !strings.Contains(miss, errcode.MachineNotFound) {
		t.Fatalf("editing a node, not a written machine:\n%s", miss)
	}
	form.Set("retire_by", "31/01/2030")
	bad = o.post("/ui/machines/"+row[1]+"/edit", form, http.StatusBadRequest)
	if !strings.Contains(bad, errcode.MachineRetireByInvalid) || !strings.Contains(bad, `value="31/01/2030"`) ||
		!strings.Contains(bad, `action="/ui/machines/`+row[1]+`/edit"`) {
		t.Fatalf("a bad retire-by on edit:\n%s", bad)
	}
	form.Set("retire_by", "2030-01-31")
	form.Set("owner", "platform")
	o.post("/ui/machines/"+row[1]+"/edit", form, http.StatusSeeOther)
	page = o.get("/ui/machines", http.StatusOK)
	if strings.Contains(page, "its retire-by day 2020-01-31 has passed") || !strings.Contains(page, "<td>platform</td><td>2030-01-31</td>") ||
		strings.Count(page, `data-source="written"`) != 1 {
		t.Fatalf("the edit did not rewrite the one machine:\n%s", page)
	}
	o.post("/ui/machines/nope/edit", form, http.StatusNotFound)

	v := p.browser()
	v.signIn(viewer)
	if page := v.get("/ui/machines", http.StatusOK); strings.Contains(page, `id="machine-form"`) || strings.Contains(page, `class="edit"`) ||
		!strings.Contains(page, ">backup-nas<") {
		t.Fatalf("the viewer's machines page:\n%s", page)
	}
	v.get("/ui/machines?edit="+row[1], http.StatusForbidden)
	v.post("/ui/machines/"+row[1]+"/edit", form, http.StatusForbidden)
	v.post("/ui/machines/"+row[1]+"/remove", nil, http.StatusForbidden)
	o.post("/ui/machines/"+row[1]+"/remove", nil, http.StatusSeeOther)
	if page := o.get("/ui/machines", http.StatusOK); strings.Contains(page, ">backup-nas<") {
		t.Fatalf("removed, still listed:\n%s", page)
	}
}
