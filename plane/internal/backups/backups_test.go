package backups_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/archive"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var admin = api.Token{Name: "admin", Role: api.RoleAdmin}

type env struct {
	t        *testing.T
	ctx      context.Context
	s        store.Store
	srv      *backuptest.Server
	bucket   string
	room     *backups.Room
	recovery *age.X25519Identity
	nodeKey  *age.X25519Identity
	now      time.Time
}

func newEnv(t *testing.T) *env {
	key := testKey(t)
	e := &env{t: t, ctx: context.Background(), s: storetest.Open(t, filepath.Join(t.TempDir(), "plane.db")), srv: backuptest.Start(t),
		now: time.Now().UTC()}
	e.bucket = e.srv.Bucket(t, "backups")
	e.recovery, _ = age.GenerateX25519Identity()
	e.nodeKey, _ = age.GenerateX25519Identity()
	e.room = backups.New(backups.Config{Store: e.s, Key: key, Now: func() time.Time { return e.now }})
	return e
}

func (e *env) request(name string) api.BackupTargetRequest {
	return api.BackupTargetRequest{Name: name, Endpoint: e.srv.Endpoint, Region: backuptest.Region, Bucket: e.bucket, Prefix: "fleet",
		AccessKeyID: e.srv.AccessKey, SecretAccessKey: e.srv.SecretKey, Recovery: e.recovery.Recipient().String()}
}

func (e *env) target() presign.Target { return e.srv.Target(e.bucket, "fleet") }

// TestAddTargetNamesTheStepThatFailed: a target is stored only when list, put, get and delete of a
// probe all pass; wrong credentials fail the list, a read-only service the put, a closed port the
// list, each with its code and step, and nothing is stored.
func TestAddTargetNamesTheStepThatFailed(t *testing.T) {
	e := newEnv(t)
	got, err := e.room.AddTarget(e.ctx, admin, e.request("main"))
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	if got.Bucket != e.bucket || got.Prefix != "fleet" {
		t.Fatalf("added %+v", got)
	}
	row, err := e.s.BackupTargetGet(e.ctx, store.BackupTargetGetParams{Name: "main"})
	if err != nil || bytes.Contains(row.Sealed, []byte(e.srv.SecretKey)) {
		t.Fatalf("stored secret not sealed (%v)", err)
	}
	if keys := e.srv.Keys(t, e.bucket, "fleet/"); len(keys) != 0 {
		t.Fatalf("the probe left %v", keys)
	}
	_, err = e.room.AddTarget(e.ctx, admin, e.request("main"))
	testkit.WantCode(t, err, errcode.BackupTargetExists)

	wrong := e.request("wrong")
	wrong.SecretAccessKey = "not-the-secret"
	ro := backuptest.Start(t, backuptest.ReadOnly(), backuptest.Over(e.srv.Dir))
	readonly := e.request("readonly")
	readonly.Endpoint = ro.Endpoint
	readonly.SecretAccessKey, readonly.AccessKeyID = ro.SecretKey, ro.AccessKey
	closed := e.request("closed")
	closed.Endpoint = "http://127.0.0.1:1"
	missing := e.request("missing")
	missing.Bucket = "no-such-bucket"
	for _, c := range []struct {
		req        api.BackupTargetRequest
		code, step string
	}{
		{wrong, errcode.BackupCredentialsInvalid, "list"},
		{readonly, errcode.BackupTargetRefused, "put"},
		{closed, errcode.BackupTargetUnreachable, "list"},
		{missing, errcode.BackupTargetRefused, "list"},
	} {
		_, err := e.room.AddTarget(e.ctx, admin, c.req)
		testkit.WantCode(t, err, c.code)
		var ee *errcode.Error
		if !errorsAs(err, &ee) || ee.Details[errcode.DetailOperation] != c.step {
			t.Errorf("%s: %v, want the %s step named", c.req.Name, err, c.step)
		}
		_, err = e.s.BackupTargetGet(e.ctx, store.BackupTargetGetParams{Name: c.req.Name})
		testkit.WantCode(t, err, errcode.BackupTargetNotFound)
	}
	check, err := e.room.CheckTarget(e.ctx, admin, "main")
	if err != nil || !check.OK || len(check.Steps) != 4 {
		t.Fatalf("check: %+v %v", check, err)
	}
}

// writeRun writes a real run of a database stream through grant g, as the node's archive writer does.
func (e *env) writeRun(g *channel.BackupGrant, parent *backup.Index, at time.Time) (*backup.Manifest, *backup.Index) {
	e.t.Helper()
	w, err := archive.NewWriter(archive.WriterConfig{Grant: g, NodeKey: e.nodeKey, Parent: parent, Incremental: parent != nil,
		Client: archive.NewClient(nil), Segment: 64 << 10, Parallel: 1, Now: func() time.Time { return at }})
	if err != nil {
		e.t.Fatal(err)
	}
	defer w.Close()
	dump := make([]byte, 200<<10)
	_, _ = rand.Read(dump)
	if _, err := w.Database(e.ctx, "app", bytes.NewReader(dump)); err != nil {
		e.t.Fatalf("database: %v", err)
	}
	m, x, err := w.Commit(e.ctx)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return m, x
}

// dispatched records a backup job for n as the schedule does, and returns the grant the node gets
// when it claims it.
func (e *env) dispatched(n store.Node) (store.Job, *channel.BackupGrant) {
	e.t.Helper()
	job, err := e.s.JobCreate(e.ctx, store.JobCreateParams{NodeID: n.ID, Word: backups.WordBackup, Class: "change",
		Params: json.RawMessage(`{"databases":["app"]}`), CreatedBy: "plane:backups", Now: e.now})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.s.BackupJobCreate(e.ctx, store.BackupJobCreateParams{Job: store.BackupJob{JobID: job.ID, NodeID: n.ID,
		Purpose: store.BackupPurposeRun, Target: "main", Objects: 64}, Now: e.now}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: n.ID, Now: e.now}); err != nil {
		e.t.Fatal(err)
	}
	g, err := e.room.Grant(e.ctx, job)
	if err != nil || g == nil || g.Run == "" || len(g.Objects) != 64 {
		e.t.Fatalf("grant %+v: %v", g, err)
	}
	return job, g
}

// reported finishes the job as the node reports a committed run.
func (e *env) reported(n store.Node, job store.Job, run string) {
	e.t.Helper()
	out, _ := json.Marshal(map[string]any{"run": run})
	if _, err := e.s.JobFinish(e.ctx, store.JobFinishParams{ID: job.ID, NodeID: n.ID, Outcome: store.JobCompleted, Output: out, Now: e.now}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) pass() []store.IncidentChange {
	e.t.Helper()
	eng := &backups.Engine{Room: e.room}
	eng.Now = func() time.Time { return e.now }
	if err := eng.Pass(e.ctx); err != nil {
		e.t.Fatalf("pass: %v", err)
	}
	res, err := e.s.IncidentReconcile(e.ctx, store.IncidentReconcileParams{Now: e.now})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Changes
}

func opened(changes []store.IncidentChange, source string) bool {
	for _, c := range changes {
		if c.Incident.Source == source && c.Event.Kind == store.EventOpened {
			return true
		}
	}
	return false
}

func (e *env) state(job store.Job) store.BackupJob {
	e.t.Helper()
	bj, err := e.s.BackupJobGet(e.ctx, store.BackupJobGetParams{JobID: job.ID})
	if err != nil {
		e.t.Fatal(err)
	}
	return bj
}

// TestWitness: a run the node reported is checked against the plane's own listing. A run that landed
// is witnessed; one with an object deleted behind the plane's back raises plane:backup_incomplete; one
// whose uploads went to a proxy that answers 200 and stores nothing raises plane:backups_not_landing.
func TestWitness(t *testing.T) {
	e := newEnv(t)
	if _, err := e.room.AddTarget(e.ctx, admin, e.request("main")); err != nil {
		t.Fatal(err)
	}
	n := storetest.Node(t, e.s, "db-1", "1.0.0", e.now)
	n, err := e.s.NodeReport(e.ctx, store.NodeReportParams{ID: n.ID, Now: e.now, AgentVersion: "1.0.0", Idle: true,
		Vocabulary: []store.WordRef{{Name: backups.WordBackup, Version: "1.0.0", Digest: strings.Repeat("ab", 32), Class: "change"}}})
	if err != nil {
		t.Fatal(err)
	}

	job, g := e.dispatched(n)
	m, _ := e.writeRun(g, nil, e.now)
	e.reported(n, job, m.Run)
	e.pass()
	if bj := e.state(job); bj.State != store.BackupWitnessed || bj.Run != m.Run || bj.Kind != backup.KindFull || bj.Bytes == 0 {
		t.Fatalf("witnessed %+v", bj)
	}

	e.now = e.now.Add(time.Minute)
	job, g = e.dispatched(n)
	m, _ = e.writeRun(g, nil, e.now)
	e.srv.Corrupt(t, e.bucket, m.Objects[0].Key) // a change in place keeps the size: not the witness's to see
	gone := m.Objects[1].Key
	if _, err := e.srv.Client(t).DeleteObject(e.ctx, deleteInput(e.bucket, gone)); err != nil {
		t.Fatal(err)
	}
	e.reported(n, job, m.Run)
	if changes := e.pass(); !opened(changes, store.DetectorBackupIncomplete) {
		t.Fatalf("no backup_incomplete: %+v", changes)
	}
	if bj := e.state(job); bj.State != store.BackupIncomplete || !strings.Contains(bj.Detail, gone) {
		t.Fatalf("incomplete %+v", bj)
	}

	e.now = e.now.Add(time.Minute)
	job, g = e.dispatched(n)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer sink.Close()
	for i := range g.Objects {
		g.Objects[i].URL = strings.Replace(g.Objects[i].URL, e.srv.Endpoint, sink.URL, 1)
	}
	g.Manifest.URL = strings.Replace(g.Manifest.URL, e.srv.Endpoint, sink.URL, 1)
	m, _ = e.writeRun(g, nil, e.now)
	e.reported(n, job, m.Run)
	if changes := e.pass(); !opened(changes, store.DetectorBackupsNotLanding) {
		t.Fatalf("no backups_not_landing: %+v", changes)
	}
	if bj := e.state(job); bj.State != store.BackupNotLanding {
		t.Fatalf("not landing %+v", bj)
	}
	fleet, err := e.room.Fleet(e.ctx, admin)
	if err != nil || len(fleet.Nodes) != 1 || fleet.Nodes[0].Green || len(fleet.Nodes[0].Reasons) == 0 || fleet.Nodes[0].LastFull.IsZero() {
		t.Fatalf("fleet %+v %v", fleet, err)
	}
}
