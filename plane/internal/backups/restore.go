package backups

import (
	"context"
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// WordRestore is the destructive word a restore queued from the plane runs.
const WordRestore = "backup_restore"

// Restore queues a restore of one of the node's witnessed runs (the newest when req.Run is ""): a
// backup_restore job with the plane's record of it, whose read grant of the run's chain is made when
// the node claims the job, like a verify's. The chain's manifests are read now with the plane's own
// credential, so a run retention removed, or a bucket that lost a manifest, is refused before anything
// is queued. The jobs room checks the caller may run a destructive word (an admin) and the params
// against the word's schema; the word refuses a folder that is not empty and a database that exists.
func (r *Room) Restore(ctx context.Context, who api.Token, ref string, req api.BackupRestoreRequest) (api.Job, error) {
	if r.c.Nodes == nil || r.c.Jobs == nil {
		return api.Job{}, errcode.New(errcode.InternalError, "the backups room cannot queue jobs")
	}
	if err := checkRestore(req); err != nil {
		return api.Job{}, err
	}
	n, err := r.c.Nodes.Get(ctx, ref)
	if err != nil {
		return api.Job{}, err
	}
	jobs, err := r.c.Store.BackupJobList(ctx, store.BackupJobListParams{NodeID: n.ID, Limit: store.MaxListLimit})
	if err != nil {
		return api.Job{}, err
	}
	var run *store.BackupJob
	for i := range jobs {
		j := &jobs[i]
		if j.Purpose == store.BackupPurposeRun && j.State == store.BackupWitnessed && (req.Run == "" || j.Run == req.Run) {
			run = j
			break
		}
	}
	if run == nil {
		if req.Run == "" {
			return api.Job{}, errcode.New(errcode.BackupRunNotFound, "node %s has no witnessed backup run to restore", n.Name).
				With(errcode.DetailNodeID, n.ID)
		}
		return api.Job{}, errcode.New(errcode.BackupRunNotFound,
			"node %s has no witnessed backup run %s: lexicon backups show %s lists its runs", n.Name, req.Run, n.Name).
			With(errcode.DetailNodeID, n.ID).With(errcode.DetailName, req.Run)
	}
	chain := chainOf(jobs, run.Target, run.Run)
	t, err := r.target(ctx, run.Target)
	if err != nil {
		return api.Job{}, err
	}
	if _, err := r.chainManifests(ctx, t, n.ID, chain, run.Run); err != nil {
		return api.Job{}, err
	}
	params := map[string]string{}
	for k, v := range map[string]string{"into": req.Into, "path": req.Path, "database": req.Database, "into_database": req.IntoDatabase} {
		if v != "" {
			params[k] = v
		}
	}
	raw, _ := json.Marshal(params)
	job, err := r.c.Jobs.CreateBackup(ctx, who, api.JobRequest{Node: n.ID, Word: WordRestore, Params: raw, Exclusive: true},
		store.BackupJob{NodeID: n.ID, Purpose: store.BackupPurposeRestore, Target: run.Target, Run: run.Run, Chain: chain})
	if err != nil {
		return api.Job{}, err
	}
	r.log.Info("backup restore queued", "node", n.ID, "job", job.ID, "run", run.Run, "by", who.Name)
	return job, nil
}

// checkRestore refuses a request that is neither a files restore nor a database restore, or both.
func checkRestore(req api.BackupRestoreRequest) error {
	files, db := req.Into != "", req.Database != ""
	switch {
	case files && db:
		return errcode.New(errcode.UsageInvalid, "a restore is of files (into, path) or of a database (database, into_database), not both").
			With(errcode.DetailField, "database")
	case !files && !db:
		return errcode.New(errcode.UsageInvalid, "a restore names the folder to restore files into (into) or the database to restore (database)").
			With(errcode.DetailField, "into")
	case files && req.IntoDatabase != "":
		return errcode.New(errcode.UsageInvalid, "into_database goes with database, not with a files restore").With(errcode.DetailField, "into_database")
	case db && req.Path != "":
		return errcode.New(errcode.UsageInvalid, "path goes with a files restore (into), not with a database").With(errcode.DetailField, "path")
	}
	return nil
}

// chainOf is the chain of run among the node's jobs (newest first): the witnessed runs on target up to
// run, from the last full one, oldest first. A run's parent is always the newest witnessed run when it
// was granted, so the witnessed runs in id order are its chain.
func chainOf(jobs []store.BackupJob, target, run string) []string {
	chain := []string{}
	for i := len(jobs) - 1; i >= 0; i-- {
		j := jobs[i]
		if j.Purpose == store.BackupPurposeRun && j.State == store.BackupWitnessed && j.Target == target && j.Run <= run {
			if j.Kind == "full" {
				chain = chain[:0]
			}
			chain = append(chain, j.Run)
		}
	}
	return chain
}

// chainManifests reads the manifests of chain with the plane's own credential and answers run's
// chain as they say it (backup.ChainOf checks that each names its parent and that the first is full).
func (r *Room) chainManifests(ctx context.Context, t presign.Target, node string, chain []string, run string) ([]*backup.Manifest, error) {
	client, err := presign.Client(t)
	if err != nil {
		return nil, err
	}
	have := map[string]*backup.Manifest{}
	for _, id := range chain {
		m, err := readManifest(ctx, client, t, backup.ManifestKey(t.Prefix, node, id))
		if err != nil {
			return nil, err
		}
		have[id] = m
	}
	return backup.ChainOf(have, run)
}
