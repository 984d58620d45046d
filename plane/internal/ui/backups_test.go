package ui_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestBackupsPages: an admin adds a target from the form (probed on versitygw; a wrong secret is
// refused naming the list step, and no page ever shows a secret), checks it, sets the fleet's policy,
// records a node's off and clears it; the fleet page shows every node's health and the node page its
// policy; a viewer reads and is offered no form.
func TestBackupsPages(t *testing.T) {
	dir := t.TempDir()
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	key, err := seal.LoadOrCreate(filepath.Join(dir, "master.key"))
	must(t, err)
	srv := backuptest.Start(t)
	bucket := srv.Bucket(t, "backups")
	recovery, _ := age.GenerateX25519Identity()
	p := newPlaneOn(t, st, wire.Config{Key: key})
	p.secrets = append(p.secrets, srv.SecretKey)
	admin, _ := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)
	n := storetest.Node(t, st, "db-1", "1.0.0", time.Now())

	b := p.browser()
	b.signIn(admin)
	page := b.get("/ui/backups", http.StatusOK)
	if !strings.Contains(page, `id="target-add"`) || !strings.Contains(page, `id="backup-db-1"`) {
		t.Fatalf("the backups page:\n%s", page)
	}
	form := url.Values{"name": {"main"}, "endpoint": {srv.Endpoint}, "region": {backuptest.Region}, "bucket": {bucket}, "prefix": {"fleet"},
		"access_key_id": {srv.AccessKey}, "secret_access_key": {"wrong-" + srv.SecretKey[:8]}, "recovery": {recovery.Recipient().String()}}
	refused := b.post("/ui/backups/targets", form, http.StatusBadGateway)
	if !strings.Contains(refused, errcode.BackupCredentialsInvalid) || !strings.Contains(refused, "the list step failed") {
		t.Fatalf("a wrong secret:\n%s", refused)
	}
	form.Set("secret_access_key", srv.SecretKey)
	b.post("/ui/backups/targets", form, http.StatusSeeOther)
	check := b.post("/ui/backups/targets/main/check", nil, http.StatusOK)
	if !strings.Contains(check, "every step passed") || strings.Count(check, ": ok") != 4 {
		t.Fatalf("the check:\n%s", check)
	}
	b.post("/ui/backups/policy", url.Values{"target": {"main"}, "paths": {"/srv/app\n/etc/app"}, "databases": {"app"}}, http.StatusSeeOther)
	page = b.get("/ui/backups", http.StatusOK)
	if !strings.Contains(page, `id="target-main"`) || !strings.Contains(page, "<code>/etc/app</code>") || !strings.Contains(page, "keep 14 days") {
		t.Fatalf("after the target and the fleet policy:\n%s", page)
	}
	b.post("/ui/backups/nodes/"+n.ID+"/policy", url.Values{"enabled": {"false"}}, http.StatusSeeOther)
	node := b.get("/ui/backups/nodes/"+n.ID, http.StatusOK)
	if !strings.Contains(node, "off (recorded)") || !strings.Contains(node, `id="node-clear"`) {
		t.Fatalf("a node recorded off:\n%s", node)
	}
	if np := b.get("/ui/nodes/"+n.ID, http.StatusOK); !strings.Contains(np, `id="node-backup"`) || !strings.Contains(np, "policy off") {
		t.Fatalf("the node page's backup health:\n%s", np)
	}
	b.post("/ui/backups/nodes/"+n.ID+"/policy/clear", nil, http.StatusSeeOther)
	node = b.get("/ui/backups/nodes/"+n.ID, http.StatusOK)
	if !strings.Contains(node, "on (fleet)") || !strings.Contains(node, `id="node-restore"`) || !strings.Contains(node, `action="/ui/backups/nodes/`+n.ID+`/restore"`) {
		t.Fatalf("a node following the fleet again:\n%s", node)
	}
	// The restore form asks for files or a database, and only a witnessed run restores.
	if bad := b.post("/ui/backups/nodes/"+n.ID+"/restore", url.Values{"into": {"/srv/r"}, "database": {"app"}}, http.StatusBadRequest); !strings.Contains(bad, errcode.UsageInvalid) {
		t.Fatalf("a restore of files and a database:\n%s", bad)
	}
	if none := b.post("/ui/backups/nodes/"+n.ID+"/restore", url.Values{"into": {"/srv/r"}}, http.StatusNotFound); !strings.Contains(none, errcode.BackupRunNotFound) {
		t.Fatalf("a restore of a node with no witnessed run:\n%s", none)
	}
	low := b.post("/ui/backups/policy", url.Values{"target": {"main"}, "paths": {"/srv"}, "keep_days": {"2"}}, http.StatusBadRequest)
	if !strings.Contains(low, errcode.BackupKeepBelowFloor) {
		t.Fatalf("a keep below the floor:\n%s", low)
	}

	v := p.browser()
	v.signIn(viewer)
	for _, path := range []string{"/ui/backups", "/ui/backups/nodes/" + n.ID} {
		body := v.get(path, http.StatusOK)
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/ui/signout" {
				t.Errorf("%s offers a viewer the form %s", path, m[1])
			}
		}
	}
	v.post("/ui/backups/targets/main/remove", nil, http.StatusForbidden)
	v.post("/ui/backups/nodes/"+n.ID+"/restore", url.Values{"into": {"/srv/r"}}, http.StatusForbidden)
	for _, br := range []*browser{b, v} {
		for page, body := range br.pages {
			for _, s := range p.secrets {
				if strings.Contains(body, s) {
					t.Errorf("%s shows a secret", page)
				}
			}
		}
	}
}
