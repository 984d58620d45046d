package backups_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestRestoreQueuedWithAReadGrant: a restore queued from the plane names one of the node's witnessed
// runs (the newest by default) and its chain; the node claiming it gets a read grant of that chain and
// nothing that writes; its outcome is judged restored without touching the backups' health. A request
// that is neither files nor a database, a run the node never had witnessed, and a run whose manifest is
// gone from the bucket are refused before anything is queued; a backup_restore queued by hand (no
// record) gets no grant.
func TestRestoreQueuedWithAReadGrant(t *testing.T) {
	e := newEnv(t)
	q := &queued{e: e}
	e.room = backups.New(backups.Config{Store: e.s, Key: testKey(t), Jobs: q, Nodes: nodes.New(nodes.Config{Store: e.s}),
		Now: func() time.Time { return e.now }})
	if _, err := e.room.AddTarget(e.ctx, admin, e.request("main")); err != nil {
		t.Fatal(err)
	}
	// No policy names the target: the schedule queues nothing, and the jobs here are the test's.
	n := e.backupNode("db-1")
	_, err := e.room.Restore(e.ctx, admin, n.Name, api.BackupRestoreRequest{Into: "/srv/restored"})
	testkit.WantCode(t, err, errcode.BackupRunNotFound)

	job, g := e.dispatched(n)
	old, _ := e.writeRun(g, nil, e.now)
	e.reported(n, job, old.Run)
	e.pass()
	e.now = e.now.Add(time.Minute)
	job, g = e.dispatched(n)
	m, _ := e.writeRun(g, nil, e.now)
	e.reported(n, job, m.Run)
	e.pass()
	before, err := e.room.Node(e.ctx, admin, n.ID)
	if err != nil || before.Health.LastRunState != string(store.BackupWitnessed) {
		t.Fatalf("before the restore %+v %v", before.Health, err)
	}

	for _, bad := range []api.BackupRestoreRequest{
		{},
		{Into: "/srv/x", Database: "app"},
		{Into: "/srv/x", IntoDatabase: "app2"},
		{Database: "app", Path: "/srv"},
	} {
		_, err := e.room.Restore(e.ctx, admin, n.Name, bad)
		testkit.WantCode(t, err, errcode.UsageInvalid)
	}
	_, err = e.room.Restore(e.ctx, admin, n.Name, api.BackupRestoreRequest{Run: "20200101T000000.000Z-00000000", Database: "app"})
	testkit.WantCode(t, err, errcode.BackupRunNotFound)
	if len(q.reqs) != 0 {
		t.Fatalf("queued on a refused request: %+v", q.reqs)
	}

	j, err := e.room.Restore(e.ctx, admin, n.Name, api.BackupRestoreRequest{Database: "app", IntoDatabase: "app_restored"})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]string
	_ = json.Unmarshal(q.reqs[0].Params, &p)
	if q.reqs[0].Word != backups.WordRestore || !q.reqs[0].Exclusive || p["database"] != "app" || p["into_database"] != "app_restored" || len(p) != 2 {
		t.Fatalf("queued %+v %s", q.reqs[0], q.reqs[0].Params)
	}
	bj, err := e.s.BackupJobGet(e.ctx, store.BackupJobGetParams{JobID: j.ID})
	if err != nil || bj.Purpose != store.BackupPurposeRestore || bj.Run != m.Run || len(bj.Chain) != 1 || bj.Chain[0] != m.Run {
		t.Fatalf("recorded %+v %v", bj, err)
	}
	e.pass()
	claimed, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: n.ID, Now: e.now})
	if err != nil || claimed == nil || claimed.ID != j.ID {
		t.Fatalf("claimed %+v %v", claimed, err)
	}
	rg, err := e.room.Grant(e.ctx, *claimed)
	if err != nil || rg == nil || len(rg.Runs) != 1 || rg.Runs[0].Run != m.Run || len(rg.Runs[0].Objects) != len(m.Objects) ||
		len(rg.Objects) != 0 || rg.Manifest != nil {
		t.Fatalf("read grant %+v %v", rg, err)
	}
	for _, o := range rg.Runs[0].Objects {
		if !strings.Contains(o.URL, "X-Amz-Signature") || o.Method != "GET" {
			t.Fatalf("granted %s %s", o.Method, o.Key)
		}
	}
	if _, err := e.s.JobFinish(e.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: e.now}); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if got := e.state(store.Job{ID: j.ID}); got.State != store.BackupRestored {
		t.Fatalf("judged %+v", got)
	}
	after, err := e.room.Node(e.ctx, admin, n.ID)
	if err != nil || after.Health.LastRunState != before.Health.LastRunState || after.Health.LastVerified != before.Health.LastVerified ||
		after.Runs[0].Purpose != "restore" || after.Runs[0].State != "restored" {
		t.Fatalf("after the restore %+v %+v %v", after.Health, after.Runs, err)
	}

	// The older run, named: its chain is its own.
	j, err = e.room.Restore(e.ctx, admin, n.ID, api.BackupRestoreRequest{Run: old.Run, Into: "/srv/restored", Path: "/srv/data"})
	if err != nil {
		t.Fatal(err)
	}
	if bj, _ := e.s.BackupJobGet(e.ctx, store.BackupJobGetParams{JobID: j.ID}); bj.Run != old.Run || len(bj.Chain) != 1 || bj.Chain[0] != old.Run {
		t.Fatalf("recorded %+v", bj)
	}
	if _, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: j.ID, Now: e.now}); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if got := e.state(store.Job{ID: j.ID}); got.State != store.BackupRestoreFailed {
		t.Fatalf("a cancelled restore judged %+v", got)
	}

	// A run whose manifest is gone from the bucket is refused before anything is queued.
	if _, err := e.srv.Client(t).DeleteObject(e.ctx, deleteInput(e.bucket, backup.ManifestKey("fleet", n.ID, old.Run))); err != nil {
		t.Fatal(err)
	}
	queuedBefore := len(q.reqs)
	_, err = e.room.Restore(e.ctx, admin, n.ID, api.BackupRestoreRequest{Run: old.Run, Into: "/srv/restored"})
	testkit.WantCode(t, err, errcode.BackupObjectMissing)
	if len(q.reqs) != queuedBefore {
		t.Fatal("queued a restore of a run without its manifest")
	}

	// A backup_restore queued by hand carries no record, and so no grant.
	hand, err := e.s.JobCreate(e.ctx, store.JobCreateParams{NodeID: n.ID, Word: backups.WordRestore, Class: "destructive",
		Params: json.RawMessage(`{"into":"/srv/x"}`), CreatedBy: "admin", Now: e.now})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := e.room.Grant(e.ctx, hand); g != nil || err != nil {
		t.Fatalf("a hand-queued restore got %+v %v", g, err)
	}
}
