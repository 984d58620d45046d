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

	v := p.browser()
	v.signIn(viewer)
	if page := v.get("/ui/machines", http.StatusOK); strings.Contains(page, `id="machine-form"`) || !strings.Contains(page, ">backup-nas<") {
		t.Fatalf("the viewer's machines page:\n%s", page)
	}
	v.post("/ui/machines/"+row[1]+"/remove", nil, http.StatusForbidden)
	o.post("/ui/machines/"+row[1]+"/remove", nil, http.StatusSeeOther)
	if page := o.get("/ui/machines", http.StatusOK); strings.Contains(page, ">backup-nas<") {
		t.Fatalf("removed, still listed:\n%s", page)
	}
}
