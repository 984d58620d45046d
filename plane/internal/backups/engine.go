package backups

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The words the schedule dispatches.
const (
	WordBackup = "backup"
	WordVerify = "backup_verify"
)

// FullEvery is how often a node's run is a full one: a chain spans at most this long, so retention,
// which removes whole chains, holds at most this much more than the policy keeps.
const FullEvery = 7 * 24 * time.Hour

// MinGrantObjects is the fewest fresh keys a backup grant holds: a run of 8 MiB segments up to 2 GiB.
// A node's grant grows with what its runs stored (grantObjects).
const MinGrantObjects = 256

// grantObjects sizes a write grant from the largest run the node stored lately (its bytes as stored, in
// 8 MiB segments): twice that and some, so that a tree that grew still fits. A run that outgrows its
// grant fails with backup.grant_exhausted and commits nothing; the format caps the count.
func grantObjects(largest int64) int {
	const segment = 8 << 20
	n := int(2*(largest/segment+1)) + 16
	return min(max(n, MinGrantObjects), backup.MaxObjects)
}

// LeaseSchedule is the lease, on the subject "backups", of the replica running the schedule.
const LeaseSchedule = "schedule"

// EngineStore is what the engine needs besides the room's store: its lease.
type EngineStore interface {
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
}

// Engine is the backups' schedule and witness, run by every replica and advanced by the one holding
// its lease. Each pass judges the jobs that ended (the witness checks a reported run against the
// plane's own listing, and then retention prunes the node's prefix), records each node's findings,
// and dispatches what is due.
type Engine struct {
	services.EngineBase
	Room  *Room
	Lease EngineStore
}

// Service runs the engine on every tick of every and on every Wake.
func (e *Engine) Service(every time.Duration) *services.Periodic {
	return e.EngineBase.Service("backups", every, e.Pass)
}

// Pass runs once, if this replica holds the schedule's lease.
func (e *Engine) Pass(ctx context.Context) error {
	if e.Lease != nil {
		_, err := e.Lease.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: "backups", Name: LeaseSchedule, Holder: e.Holder,
			Purpose: "backup schedule", TTL: e.TTL(), Now: e.Time()})
		if errcode.Has(err, errcode.LeaseHeld) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	r := e.Room
	if err := r.JudgeEnded(ctx); err != nil {
		return err
	}
	pol, err := r.policies(ctx)
	if err != nil {
		return err
	}
	nodes, recent, err := r.activeNodes(ctx)
	if err != nil {
		return err
	}
	findings, err := r.c.Store.BackupFindingsList(ctx, store.BackupFindingsListParams{})
	if err != nil {
		return err
	}
	held := map[string][]store.BackupFinding{}
	for _, f := range findings {
		held[f.NodeID] = append(held[f.NodeID], f.BackupFinding)
	}
	for _, n := range nodes {
		b, _ := pol.For(n.ID)
		jobs := recent[n.ID]
		h := r.health(n, b, jobs)
		if !slices.Equal(h.findings, held[n.ID]) {
			if err := r.c.Store.BackupFindingsSet(ctx, store.BackupFindingsSetParams{NodeID: n.ID, Findings: h.findings, Now: r.now()}); err != nil {
				return err
			}
		}
		if r.c.Jobs != nil && b.Enabled && b.Target != "" {
			if err := r.dispatch(ctx, n, b, jobs); err != nil {
				r.log.Warn("backup not dispatched", "node", n.ID, "err", err)
			}
		}
	}
	return nil
}

// recentJobs is how many of a node's newest jobs its health is judged by.
const recentJobs = 50

// activeNodes returns every active node and the newest recentJobs jobs of each, in two statements for
// each thousand nodes: a statement per node made a pass over 10,000 nodes 10,000 round trips.
func (r *Room) activeNodes(ctx context.Context) ([]store.Node, map[string][]store.BackupJob, error) {
	var out []store.Node
	jobs := map[string][]store.BackupJob{}
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		ids := make([]string, len(res.Nodes))
		for i, n := range res.Nodes {
			ids[i] = n.ID
		}
		page, err := r.c.Store.BackupJobListRecent(ctx, store.BackupJobListRecentParams{NodeIDs: ids, PerNode: recentJobs})
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(jobs, page)
		out = append(out, res.Nodes...)
		if res.NextCursor == "" {
			return out, jobs, nil
		}
		cursor = res.NextCursor
	}
}

// dispatch queues the node's next job when one is due: a backup when its interval has passed since
// the last backup STARTED (whether or not it succeeded: a node that fails every run is still asked
// once an interval, not in a loop), else a verify of the newest witnessed run when the verify interval
// has passed since the last verify started. Nothing while one of its jobs is still under way: one at a
// time per machine.
func (r *Room) dispatch(ctx context.Context, n store.Node, b store.BackupPolicy, jobs []store.BackupJob) error {
	now := r.now()
	var lastRun, lastVerify, lastFull *store.BackupJob
	var parent *store.BackupJob
	var largest int64
	for i := range jobs {
		j := &jobs[i]
		if j.State == store.BackupDispatched {
			return nil
		}
		switch {
		case j.Purpose == store.BackupPurposeRun && lastRun == nil:
			lastRun = j
		case j.Purpose == store.BackupPurposeVerify && lastVerify == nil:
			lastVerify = j
		}
		if j.Purpose == store.BackupPurposeRun && j.State == store.BackupWitnessed && j.Target == b.Target {
			largest = max(largest, j.Bytes)
			if parent == nil {
				parent = j
			}
			if lastFull == nil && j.Kind == "full" {
				lastFull = j
			}
		}
	}
	switch {
	case lastRun == nil || !now.Before(lastRun.StartedAt.Add(b.Every)):
		params := map[string]any{"mode": "incremental"}
		bj := store.BackupJob{NodeID: n.ID, Purpose: store.BackupPurposeRun, Target: b.Target, Objects: grantObjects(largest)}
		if parent == nil || lastFull == nil || now.Sub(lastFull.StartedAt) >= FullEvery {
			params["mode"] = "full"
		} else {
			bj.Parent = parent.Run
		}
		if len(b.Paths) > 0 {
			params["paths"] = b.Paths
		}
		if len(b.Databases) > 0 {
			params["databases"] = b.Databases
		}
		return r.queue(ctx, n, WordBackup, params, bj)
	case parent != nil && (lastVerify == nil || !now.Before(lastVerify.StartedAt.Add(b.VerifyEvery))):
		chain := chainOf(jobs, b.Target, parent.Run)
		return r.queue(ctx, n, WordVerify, map[string]any{}, store.BackupJob{NodeID: n.ID, Purpose: store.BackupPurposeVerify,
			Target: b.Target, Run: parent.Run, Chain: chain})
	}
	return nil
}

// planeToken is who the schedule's jobs are queued by.
var planeToken = api.Token{Name: "plane:backups", Role: api.RoleOperator}

func (r *Room) queue(ctx context.Context, n store.Node, word string, params map[string]any, bj store.BackupJob) error {
	raw, _ := json.Marshal(params)
	job, err := r.c.Jobs.CreateBackup(ctx, planeToken, api.JobRequest{Node: n.ID, Word: word, Params: raw, Exclusive: true}, bj)
	if err != nil {
		return err
	}
	r.log.Info("backup job dispatched", "node", n.ID, "job", job.ID, "word", word, "target", bj.Target, "parent", bj.Parent)
	return nil
}

// JudgeEnded judges every dispatched job whose job has ended: a backup the node reported committed
// is witnessed against the bucket (and the node's prefix then pruned), a failed one recorded failed;
// a verify or a restore is verified (restored) or failed as the node reported.
func (r *Room) JudgeEnded(ctx context.Context) error {
	list, err := r.c.Store.BackupJobList(ctx, store.BackupJobListParams{Dispatched: true, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	pol, err := r.policies(ctx)
	if err != nil {
		return err
	}
	for _, bj := range list {
		job, err := r.c.Store.JobGet(ctx, store.JobGetParams{ID: bj.JobID})
		if err != nil {
			return err
		}
		if !job.State.Final() {
			continue
		}
		if err := r.judge(ctx, bj, job, pol); err != nil {
			r.log.Warn("backup job not judged", "job", bj.JobID, "node", bj.NodeID, "err", err)
		}
	}
	return nil
}

func (r *Room) judge(ctx context.Context, bj store.BackupJob, job store.Job, pol Policies) error {
	p := store.BackupJobJudgeParams{JobID: bj.JobID, Now: r.now()}
	ok := job.State == channel.JobCompleted
	switch {
	case bj.Purpose == store.BackupPurposeVerify && ok:
		p.State, p.Detail = store.BackupVerified, "verified restorable"
	case bj.Purpose == store.BackupPurposeVerify:
		p.State, p.Detail = store.BackupVerifyFailed, outcome(job)
	case bj.Purpose == store.BackupPurposeRestore && ok:
		p.State, p.Detail = store.BackupRestored, "restored"
	case bj.Purpose == store.BackupPurposeRestore:
		p.State, p.Detail = store.BackupRestoreFailed, outcome(job)
	case !ok:
		p.State, p.Detail = store.BackupFailed, outcome(job)
	default:
		var out struct {
			Run string `json:"run"`
		}
		_ = json.Unmarshal(job.Output, &out)
		run := bj.Run
		if run == "" {
			run = out.Run
		}
		t, err := r.target(ctx, bj.Target)
		if err != nil {
			return err
		}
		client, err := presign.Client(t)
		if err != nil {
			return err
		}
		v, err := Witness(ctx, client, t, bj.NodeID, run)
		if err != nil {
			return err // the bucket could not be listed: judged on a later pass
		}
		p.State, p.Detail, p.Kind, p.Bytes, p.Run = v.State, v.Detail, v.Kind, v.Bytes, run
		if v.State == store.BackupWitnessed {
			b, _ := pol.For(bj.NodeID)
			keep := time.Duration(b.KeepDays) * 24 * time.Hour
			res, err := Prune(ctx, client, t, bj.NodeID, keep, FloorDays*24*time.Hour, r.now())
			if err != nil {
				r.log.Warn("backup retention failed", "node", bj.NodeID, "target", t.Name, "err", err)
			} else if len(res.Chains)+len(res.Orphans) > 0 {
				r.log.Info("backup retention pruned", "node", bj.NodeID, "target", t.Name, "chains", res.Chains, "orphans", res.Orphans, "objects", res.Objects)
			}
		}
	}
	moved, err := r.c.Store.BackupJobJudge(ctx, p)
	if err == nil && moved {
		r.log.Info("backup job judged", "job", bj.JobID, "node", bj.NodeID, "purpose", bj.Purpose, "state", p.State, "run", p.Run)
	}
	return err
}

func outcome(job store.Job) string {
	if job.OutcomeMessage == "" {
		return fmt.Sprintf("the job ended %s %s", job.State, job.OutcomeCode)
	}
	return fmt.Sprintf("the job ended %s %s: %s", job.State, job.OutcomeCode, job.OutcomeMessage)
}
