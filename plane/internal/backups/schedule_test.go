package backups_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// queued records the jobs the schedule queues, as real jobs in the store.
type queued struct {
	e    *env
	reqs []api.JobRequest
}

func (q *queued) CreateBackup(ctx context.Context, who api.Token, req api.JobRequest, b store.BackupJob) (api.Job, error) {
	q.reqs = append(q.reqs, req)
	j, err := q.e.s.JobCreate(ctx, store.JobCreateParams{NodeID: req.Node, Word: req.Word, Class: "change", Params: req.Params,
		CreatedBy: who.Name, Now: q.e.now, Backup: &b})
	return api.Job{ID: j.ID}, err
}

func (e *env) backupNode(name string) store.Node {
	e.t.Helper()
	n := storetest.Node(e.t, e.s, name, "1.0.0", e.now)
	var vocab []store.WordRef
	for _, w := range []string{backups.WordBackup, backups.WordVerify, backups.WordRestore} {
		vocab = append(vocab, store.WordRef{Name: w, Version: "1.0.0", Digest: strings.Repeat("ab", 32), Class: "change"})
	}
	n, err := e.s.NodeReport(e.ctx, store.NodeReportParams{ID: n.ID, Now: e.now, AgentVersion: "1.0.0", Idle: true, Vocabulary: vocab})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestScheduleFollowsTheFleetDefault: with a fleet policy, every node (one that joined after it too)
// gets one backup job; nothing more while it runs; the next is due an interval after the last one
// STARTED, whether or not it succeeded; a node's recorded off gets none; a verify follows a witnessed
// run on the verify interval; and no policy keeps fewer days than the floor.
func TestScheduleFollowsTheFleetDefault(t *testing.T) {
	e := newEnv(t)
	q := &queued{e: e}
	e.room = backups.New(backups.Config{Store: e.s, Key: testKey(t), Jobs: q, Now: func() time.Time { return e.now }})
	if _, err := e.room.AddTarget(e.ctx, admin, e.request("main")); err != nil {
		t.Fatal(err)
	}
	_, err := e.room.SetPolicy(e.ctx, admin, "", api.BackupPolicy{Enabled: true, Target: "main", Databases: []string{"app"}, KeepDays: 3})
	testkit.WantCode(t, err, errcode.BackupKeepBelowFloor)
	fleet, err := e.room.SetPolicy(e.ctx, admin, "", api.BackupPolicy{Enabled: true, Target: "main", Databases: []string{"app"}})
	if err != nil || fleet.Every != "24h0m0s" || fleet.KeepDays != 14 || fleet.VerifyEvery != "168h0m0s" || fleet.Source != "fleet" {
		t.Fatalf("fleet policy %+v %v", fleet, err)
	}
	a, b, off := e.backupNode("a"), e.backupNode("b"), e.backupNode("off")
	if _, err := e.room.SetPolicy(e.ctx, admin, off.ID, api.BackupPolicy{Enabled: false}); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if len(q.reqs) != 2 {
		t.Fatalf("queued %+v, want one job for a and one for b", q.reqs)
	}
	for _, r := range q.reqs {
		var p map[string]any
		_ = json.Unmarshal(r.Params, &p)
		if r.Word != backups.WordBackup || !r.Exclusive || p["mode"] != "full" || r.Node == off.ID {
			t.Fatalf("queued %+v (%s)", r, r.Params)
		}
	}
	e.pass()
	if len(q.reqs) != 2 {
		t.Fatalf("a second job while the first runs: %+v", q.reqs)
	}

	// a's run fails; b's lands. Neither is due again before a day from their start.
	jobs := map[string]store.BackupJob{}
	list, _ := e.s.BackupJobList(e.ctx, store.BackupJobListParams{})
	for _, j := range list {
		jobs[j.NodeID] = j
	}
	if _, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: a.ID, Now: e.now}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.JobFinish(e.ctx, store.JobFinishParams{ID: jobs[a.ID].JobID, NodeID: a.ID, Outcome: store.JobFailed,
		Code: errcode.BackupDumpFailed, Message: "pg_dump failed", Now: e.now}); err != nil {
		t.Fatal(err)
	}
	jb, _ := e.s.JobGet(e.ctx, store.JobGetParams{ID: jobs[b.ID].JobID})
	if _, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: b.ID, Now: e.now}); err != nil {
		t.Fatal(err)
	}
	g, err := e.room.Grant(e.ctx, jb)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.writeRun(g, nil, e.now)
	e.reported(b, jb, m.Run)
	e.now = e.now.Add(23 * time.Hour)
	e.pass()
	if bj := e.state(jb); bj.State != store.BackupWitnessed {
		t.Fatalf("b's run %+v", bj)
	}
	// b's first witnessed run is verified at once: no verify before it; a waits for its interval.
	if len(q.reqs) != 3 || q.reqs[2].Node != b.ID || q.reqs[2].Word != backups.WordVerify {
		t.Fatalf("queued before the interval, or no verify of b: %+v", q.reqs[2:])
	}
	vj, _ := e.s.BackupJobList(e.ctx, store.BackupJobListParams{NodeID: b.ID, Limit: 1})
	if vj[0].Run != m.Run || len(vj[0].Chain) != 1 {
		t.Fatalf("verify %+v", vj[0])
	}
	job, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: b.ID, Now: e.now})
	if err != nil || job == nil {
		t.Fatal(err)
	}
	rg, err := e.room.Grant(e.ctx, *job)
	if err != nil || len(rg.Runs) != 1 || rg.Runs[0].Run != m.Run || len(rg.Runs[0].Objects) != len(m.Objects) {
		t.Fatalf("read grant %+v %v", rg, err)
	}
	if _, err := e.s.JobFinish(e.ctx, store.JobFinishParams{ID: job.ID, NodeID: b.ID, Outcome: store.JobCompleted, Now: e.now}); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Hour)
	e.pass()
	if len(q.reqs) != 5 {
		t.Fatalf("queued %d jobs a day on, want a's and b's next", len(q.reqs))
	}
	var bp map[string]any
	_ = json.Unmarshal(q.reqs[4].Params, &bp)
	if q.reqs[4].Node != b.ID || bp["mode"] != "incremental" {
		t.Fatalf("b's next %+v %s, want an incremental on its witnessed run", q.reqs[4], q.reqs[4].Params)
	}
	bj, _ := e.s.BackupJobList(e.ctx, store.BackupJobListParams{NodeID: b.ID, Limit: 1})
	if bj[0].Parent != m.Run {
		t.Fatalf("b's next builds on %q, want %s", bj[0].Parent, m.Run)
	}
	health, err := e.room.Fleet(e.ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range health.Nodes {
		switch h.NodeID {
		case off.ID:
			if h.Policy != "off" || !h.Green {
				t.Errorf("off node %+v", h)
			}
		case a.ID:
			if h.Green {
				t.Errorf("a, whose run failed, is green: %+v", h)
			}
		case b.ID:
			if h.LastVerified.IsZero() || h.LastFull.IsZero() || h.Bytes == 0 {
				t.Errorf("b %+v", h)
			}
		}
	}
	pol, err := e.room.ShowPolicy(e.ctx, admin, off.ID)
	if err != nil || pol.Source != "node" || pol.Enabled {
		t.Fatalf("off's policy %+v %v", pol, err)
	}
	pol, err = e.room.ClearPolicy(e.ctx, admin, off.ID)
	if err != nil || pol.Source != "fleet" || !pol.Enabled {
		t.Fatalf("off's policy once cleared %+v %v", pol, err)
	}
}

// TestVerifyIncidents: a failed verify raises plane:backup_verify, a passing one clears it, and a node
// whose runs land but are never verified within twice the verify interval raises it again.
func TestVerifyIncidents(t *testing.T) {
	e := newEnv(t)
	if _, err := e.room.AddTarget(e.ctx, admin, e.request("main")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.room.SetPolicy(e.ctx, admin, "", api.BackupPolicy{Enabled: true, Target: "main", Databases: []string{"app"}}); err != nil {
		t.Fatal(err)
	}
	n := e.backupNode("db-1")
	job, g := e.dispatched(n)
	m, _ := e.writeRun(g, nil, e.now)
	e.reported(n, job, m.Run)
	e.pass()

	verify := func(outcome store.JobState) []store.IncidentChange {
		t.Helper()
		j, err := e.s.JobCreate(e.ctx, store.JobCreateParams{NodeID: n.ID, Word: backups.WordVerify, Class: "change", Params: json.RawMessage(`{}`),
			CreatedBy: "plane:backups", Now: e.now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.BackupJobCreate(e.ctx, store.BackupJobCreateParams{Job: store.BackupJob{JobID: j.ID, NodeID: n.ID,
			Purpose: store.BackupPurposeVerify, Target: "main", Run: m.Run, Chain: []string{m.Run}}, Now: e.now}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.JobClaim(e.ctx, store.JobClaimParams{NodeID: n.ID, Now: e.now}); err != nil {
			t.Fatal(err)
		}
		fin := store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome, Now: e.now}
		if outcome == store.JobFailed {
			fin.Code, fin.Message = errcode.BackupVerifyFailed, "000002.age: sha256 differs"
		}
		if _, err := e.s.JobFinish(e.ctx, fin); err != nil {
			t.Fatal(err)
		}
		return e.pass()
	}
	if changes := verify(store.JobFailed); !opened(changes, store.DetectorBackupVerify) {
		t.Fatalf("a failed verify opened nothing: %+v", changes)
	}
	changes := verify(store.JobCompleted)
	if !cleared(changes, store.DetectorBackupVerify) {
		t.Fatalf("a passing verify cleared nothing: %+v", changes)
	}
	e.now = e.now.Add(15 * 24 * time.Hour)
	if changes := e.pass(); !reopenedOrOpened(changes, store.DetectorBackupVerify) {
		t.Fatalf("no verify in twice the interval raised nothing: %+v", changes)
	}
}

func cleared(changes []store.IncidentChange, source string) bool {
	for _, c := range changes {
		if c.Incident.Source == source && c.Event.Kind == store.EventCleared {
			return true
		}
	}
	return false
}

func reopenedOrOpened(changes []store.IncidentChange, source string) bool {
	for _, c := range changes {
		if c.Incident.Source == source && (c.Event.Kind == store.EventOpened || c.Event.Kind == store.EventReopened) {
			return true
		}
	}
	return false
}

// countingStore counts the room's reads of backup jobs: those of one node, and those of many.
type countingStore struct {
	backups.Store
	oneNode, recent int
}

func (c *countingStore) BackupJobList(ctx context.Context, p store.BackupJobListParams) ([]store.BackupJob, error) {
	if p.NodeID != "" {
		c.oneNode++
	}
	return c.Store.BackupJobList(ctx, p)
}

func (c *countingStore) BackupJobListRecent(ctx context.Context, p store.BackupJobListRecentParams) (map[string][]store.BackupJob, error) {
	c.recent++
	return c.Store.BackupJobListRecent(ctx, p)
}

// TestPassReadsJobsOnceAPage: a pass, and the fleet's health, read the nodes' jobs with one statement a
// page of nodes, never one a node, and judge each node by its own.
func TestPassReadsJobsOnceAPage(t *testing.T) {
	e := newEnv(t)
	c := &countingStore{Store: e.s}
	q := &queued{e: e}
	e.room = backups.New(backups.Config{Store: c, Key: testKey(t), Jobs: q, Now: func() time.Time { return e.now }})
	if _, err := e.room.AddTarget(e.ctx, admin, e.request("main")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.room.SetPolicy(e.ctx, admin, "", api.BackupPolicy{Enabled: true, Target: "main", Databases: []string{"app"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e.backupNode(fmt.Sprintf("n%d", i))
	}
	e.pass()
	e.pass() // each node's job is read back: none is queued a second
	if len(q.reqs) != 5 {
		t.Fatalf("queued %d jobs for 5 nodes over two passes", len(q.reqs))
	}
	health, err := e.room.Fleet(e.ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range health.Nodes {
		if h.LastRun.IsZero() || h.LastRunState != string(store.BackupDispatched) {
			t.Errorf("%s's health does not show its own job: %+v", h.Node, h)
		}
	}
	if c.oneNode != 0 || c.recent != 3 {
		t.Errorf("two passes and the fleet's health read jobs %d times a node and %d times a page, want 0 and 3", c.oneNode, c.recent)
	}
}
