package sqlstore

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkRef(field, s string) error {
	if len(s) > MaxRefLen || !ValidText(s) {
		return invalid(field, "%s must be at most %d bytes of UTF-8 without NUL", field, MaxRefLen)
	}
	return nil
}

func (s *sqlStore) BackupTargetCreate(ctx context.Context, p BackupTargetCreateParams) (BackupTarget, error) {
	t := p.Target
	for _, f := range [][2]string{{"name", t.Name}, {"endpoint", t.Endpoint}, {"region", t.Region}, {"bucket", t.Bucket},
		{"access_key_id", t.AccessKeyID}, {"recovery", t.Recovery}, {"key_id", t.KeyID}} {
		if f[1] == "" {
			return BackupTarget{}, invalid(f[0], "%s is required", f[0])
		}
		if err := checkRef(f[0], f[1]); err != nil {
			return BackupTarget{}, err
		}
	}
	if err := checkRef("prefix", t.Prefix); err != nil {
		return BackupTarget{}, err
	}
	if len(t.Sealed) == 0 || len(t.Sealed) > 4096 {
		return BackupTarget{}, invalid("sealed", "a target holds its sealed secret")
	}
	if err := checkActor(t.CreatedBy); err != nil {
		return BackupTarget{}, err
	}
	t.CreatedAt = now(p.Now)
	err := s.tx(ctx, "create backup target", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.BackupTargetInsert, t.Name, t.Endpoint, t.Region, t.Bucket, t.Prefix, t.AccessKeyID, t.VirtualHosted,
			t.Recovery, t.Sealed, t.KeyID, t.CreatedBy, t.CreatedAt)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return errcode.New(errcode.BackupTargetExists, "a backup target named %s exists", t.Name).With(errcode.DetailName, t.Name)
		}
		return err
	})
	if err != nil {
		return BackupTarget{}, err
	}
	return t, nil
}

func (s *sqlStore) BackupTargetGet(ctx context.Context, p BackupTargetGetParams) (BackupTarget, error) {
	if err := checkRef("name", p.Name); err != nil {
		return BackupTarget{}, err
	}
	var t BackupTarget
	err := s.read(ctx, "get backup target", func(ex sqldb.Execer) error {
		var err error
		t, err = scanBackupTarget(ex.QueryRow(ctx, s.q.BackupTargetGet, p.Name))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.BackupTargetNotFound, "no backup target named %s", p.Name).With(errcode.DetailName, p.Name)
		}
		return err
	})
	return t, err
}

func (s *sqlStore) BackupTargetList(ctx context.Context, _ BackupTargetListParams) ([]BackupTarget, error) {
	out := []BackupTarget{}
	err := s.read(ctx, "list backup targets", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BackupTargetList)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			t, err := scanBackupTarget(rs)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) BackupTargetDelete(ctx context.Context, p BackupTargetDeleteParams) error {
	if err := checkRef("name", p.Name); err != nil {
		return err
	}
	return s.tx(ctx, "delete backup target", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.BackupTargetDelete, p.Name)
		if err == nil && n == 0 {
			return errcode.New(errcode.BackupTargetNotFound, "no backup target named %s", p.Name).With(errcode.DetailName, p.Name)
		}
		return err
	})
}

func scanBackupTarget(r sqldb.Row) (BackupTarget, error) {
	var t BackupTarget
	err := r.Scan(&t.Name, &t.Endpoint, &t.Region, &t.Bucket, &t.Prefix, &t.AccessKeyID, &t.VirtualHosted, &t.Recovery, &t.Sealed,
		&t.KeyID, &t.CreatedBy, stamp{&t.CreatedAt})
	return t, err
}

func checkBackupList(field string, items []string) error {
	if len(items) > MaxBackupItems {
		return invalid(field, "at most %d %s", MaxBackupItems, field)
	}
	for _, it := range items {
		if it == "" || len(it) > MaxBackupPath || !ValidText(it) {
			return invalid(field, "each of %s is 1 to %d bytes of UTF-8 without NUL", field, MaxBackupPath)
		}
	}
	return nil
}

func (s *sqlStore) BackupPolicySet(ctx context.Context, p BackupPolicySetParams) (BackupPolicy, error) {
	b := p.Policy
	switch {
	case len(b.NodeID) > 64:
		return BackupPolicy{}, invalid("node_id", "node_id must be an id, or empty for the fleet")
	case b.Every < time.Second || b.VerifyEvery < time.Second:
		return BackupPolicy{}, invalid("every", "intervals are at least a second")
	case b.KeepDays < 1:
		return BackupPolicy{}, invalid("keep_days", "runs are kept at least a day")
	}
	if err := checkRef("target", b.Target); err != nil {
		return BackupPolicy{}, err
	}
	if err := checkBackupList("paths", b.Paths); err != nil {
		return BackupPolicy{}, err
	}
	if err := checkBackupList("databases", b.Databases); err != nil {
		return BackupPolicy{}, err
	}
	if err := checkActor(b.UpdatedBy); err != nil {
		return BackupPolicy{}, err
	}
	b.Paths, b.Databases = nonNil(b.Paths), nonNil(b.Databases)
	b.UpdatedAt = now(p.Now)
	paths, _ := json.Marshal(b.Paths)
	dbs, _ := json.Marshal(b.Databases)
	err := s.pipeline(ctx, "set backup policy", sqldb.Step{Query: s.q.BackupPolicyUpsert, Args: []any{b.NodeID, b.Enabled, b.Target,
		int64(b.Every / time.Second), b.KeepDays, int64(b.VerifyEvery / time.Second), string(paths), string(dbs), b.UpdatedBy, b.UpdatedAt}})
	if err != nil {
		return BackupPolicy{}, err
	}
	b.Every, b.VerifyEvery = b.Every.Truncate(time.Second), b.VerifyEvery.Truncate(time.Second)
	return b, nil
}

func (s *sqlStore) BackupPolicyList(ctx context.Context, _ BackupPolicyListParams) ([]BackupPolicy, error) {
	out := []BackupPolicy{}
	err := s.read(ctx, "list backup policies", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BackupPolicyList)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var b BackupPolicy
			var every, verify int64
			var paths, dbs string
			if err := rs.Scan(&b.NodeID, &b.Enabled, &b.Target, &every, &b.KeepDays, &verify, &paths, &dbs, &b.UpdatedBy,
				stamp{&b.UpdatedAt}); err != nil {
				return err
			}
			b.Every, b.VerifyEvery = time.Duration(every)*time.Second, time.Duration(verify)*time.Second
			if err := json.Unmarshal([]byte(paths), &b.Paths); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(dbs), &b.Databases); err != nil {
				return err
			}
			out = append(out, b)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) BackupPolicyDelete(ctx context.Context, p BackupPolicyDeleteParams) error {
	if err := checkID("node_id", p.NodeID); err != nil {
		return err
	}
	return s.pipeline(ctx, "delete backup policy", sqldb.Step{Query: s.q.BackupPolicyDelete, Args: []any{p.NodeID}})
}

func checkBackupJobState(st BackupJobState) error {
	switch st {
	case BackupFailed, BackupWitnessed, BackupIncomplete, BackupNotLanding, BackupVerified, BackupVerifyFailed, BackupRestored,
		BackupRestoreFailed:
		return nil
	}
	return invalid("state", "state %q is not a verdict", st)
}

// checkBackupJob checks what a backup job record holds besides its ids.
func checkBackupJob(j BackupJob) error {
	if j.Purpose != BackupPurposeRun && j.Purpose != BackupPurposeVerify && j.Purpose != BackupPurposeRestore {
		return invalid("purpose", "purpose is backup, verify or restore")
	}
	for _, f := range [][2]string{{"target", j.Target}, {"run", j.Run}, {"parent", j.Parent}} {
		if err := checkRef(f[0], f[1]); err != nil {
			return err
		}
	}
	if err := checkBackupList("chain", j.Chain); err != nil {
		return err
	}
	if j.Objects < 0 {
		return invalid("objects", "objects cannot be negative")
	}
	return nil
}

func (s *sqlStore) BackupJobCreate(ctx context.Context, p BackupJobCreateParams) (BackupJob, error) {
	j := p.Job
	if err := checkID("job_id", j.JobID); err != nil {
		return BackupJob{}, err
	}
	if err := checkID("node_id", j.NodeID); err != nil {
		return BackupJob{}, err
	}
	if err := checkBackupJob(j); err != nil {
		return BackupJob{}, err
	}
	j.Chain = nonNil(j.Chain)
	j.StartedAt, j.State = now(p.Now), BackupDispatched
	chain, _ := json.Marshal(j.Chain)
	err := s.tx(ctx, "record backup job", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.BackupJobInsert, j.JobID, j.NodeID, string(j.Purpose), j.Target, j.Run, j.Parent, string(chain),
			j.Objects, j.StartedAt)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return invalid("job_id", "job %s is recorded already", j.JobID)
		}
		return err
	})
	if err != nil {
		return BackupJob{}, err
	}
	return j, nil
}

func (s *sqlStore) BackupJobGet(ctx context.Context, p BackupJobGetParams) (BackupJob, error) {
	if err := checkID("job_id", p.JobID); err != nil {
		return BackupJob{}, err
	}
	var j BackupJob
	err := s.read(ctx, "get backup job", func(ex sqldb.Execer) error {
		var err error
		j, err = scanBackupJob(ex.QueryRow(ctx, s.q.BackupJobGet, p.JobID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.JobNotFound, "job %s is not a backup job", p.JobID).With(errcode.DetailID, p.JobID)
		}
		return err
	})
	return j, err
}

func (s *sqlStore) BackupJobList(ctx context.Context, p BackupJobListParams) ([]BackupJob, error) {
	if len(p.NodeID) > 64 {
		return nil, invalid("node_id", "node_id must be an id")
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	return s.backupJobs(ctx, "list backup jobs", s.q.BackupJobList, p.NodeID, p.Dispatched, limit)
}

// backupJobs runs a query of backup jobs and returns them in its order.
func (s *sqlStore) backupJobs(ctx context.Context, what, query string, args ...any) ([]BackupJob, error) {
	out := []BackupJob{}
	err := s.read(ctx, what, func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			j, err := scanBackupJob(rs)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) BackupJobListRecent(ctx context.Context, p BackupJobListRecentParams) (map[string][]BackupJob, error) {
	if len(p.NodeIDs) > MaxListLimit {
		return nil, invalid("node_ids", "at most %d node ids", MaxListLimit)
	}
	for _, id := range p.NodeIDs {
		if err := checkID("node_ids", id); err != nil {
			return nil, err
		}
	}
	if p.PerNode < 1 || p.PerNode > MaxListLimit {
		return nil, invalid("per_node", "per_node must be 1 to %d", MaxListLimit)
	}
	out := map[string][]BackupJob{}
	if len(p.NodeIDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(p.NodeIDs)
	if err != nil {
		return nil, err
	}
	jobs, err := s.backupJobs(ctx, "list recent backup jobs", s.q.BackupJobListRecent, string(ids), p.PerNode)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		out[j.NodeID] = append(out[j.NodeID], j)
	}
	return out, nil
}

func (s *sqlStore) BackupJobSetRun(ctx context.Context, p BackupJobSetRunParams) error {
	if err := checkID("job_id", p.JobID); err != nil {
		return err
	}
	if p.Run == "" {
		return invalid("run", "run is required")
	}
	if err := checkRef("run", p.Run); err != nil {
		return err
	}
	return s.pipeline(ctx, "record backup run", sqldb.Step{Query: s.q.BackupJobSetRun, Args: []any{p.JobID, p.Run}})
}

func (s *sqlStore) BackupJobJudge(ctx context.Context, p BackupJobJudgeParams) (bool, error) {
	if err := checkID("job_id", p.JobID); err != nil {
		return false, err
	}
	if err := checkBackupJobState(p.State); err != nil {
		return false, err
	}
	if err := checkRef("kind", p.Kind); err != nil {
		return false, err
	}
	if err := checkRef("run", p.Run); err != nil {
		return false, err
	}
	if len(p.Detail) > MaxMessageLen || !ValidText(p.Detail) {
		return false, invalid("detail", "detail is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	if p.Bytes < 0 {
		return false, invalid("bytes", "bytes cannot be negative")
	}
	var moved bool
	err := s.tx(ctx, "judge backup job", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.BackupJobJudge, p.JobID, string(p.State), p.Kind, p.Run, p.Bytes, p.Detail, now(p.Now))
		moved = n == 1
		return err
	})
	return moved, err
}

func scanBackupJob(r sqldb.Row) (BackupJob, error) {
	var j BackupJob
	var purpose, state, chain string
	if err := r.Scan(&j.JobID, &j.NodeID, &purpose, &j.Target, &j.Run, &j.Parent, &chain, &j.Objects, stamp{&j.StartedAt}, &state,
		&j.Kind, &j.Bytes, &j.Detail, stamp{&j.JudgedAt}); err != nil {
		return BackupJob{}, err
	}
	j.Purpose, j.State = BackupJobPurpose(purpose), BackupJobState(state)
	if err := json.Unmarshal([]byte(chain), &j.Chain); err != nil {
		return BackupJob{}, err
	}
	return j, nil
}

func (s *sqlStore) BackupFindingsSet(ctx context.Context, p BackupFindingsSetParams) error {
	if err := checkID("node_id", p.NodeID); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, f := range p.Findings {
		if !slices.Contains(BackupDetectors, f.Source) || seen[f.Source] {
			return invalid("source", "a finding's source is one of the backup detectors, once")
		}
		if f.Summary == "" || len(f.Summary) > MaxMessageLen || !ValidText(f.Summary) {
			return invalid("summary", "a summary is 1 to %d bytes of UTF-8 without NUL", MaxMessageLen)
		}
		seen[f.Source] = true
	}
	data, _ := json.Marshal(p.Findings)
	if p.Findings == nil {
		data = []byte("[]")
	}
	return s.pipeline(ctx, "set backup findings",
		sqldb.Step{Query: s.q.BackupFindingsClear, Args: []any{p.NodeID}},
		sqldb.Step{Query: s.q.BackupFindingsInsert, Args: []any{p.NodeID, string(data), now(p.Now)}})
}

func (s *sqlStore) BackupFindingsList(ctx context.Context, p BackupFindingsListParams) ([]BackupNodeFinding, error) {
	if len(p.NodeID) > 64 {
		return nil, invalid("node_id", "node_id must be an id")
	}
	out := []BackupNodeFinding{}
	err := s.read(ctx, "list backup findings", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BackupFindingsList, p.NodeID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var f BackupNodeFinding
			if err := rs.Scan(&f.NodeID, &f.Source, &f.Summary, stamp{&f.FoundAt}); err != nil {
				return err
			}
			out = append(out, f)
		}
		return rs.Err()
	})
	return out, err
}

// backupDetectors read the findings the backups room keeps: one detector a source, each finding's
// summary the incident's.
func (s *sqlStore) backupDetectors() []detector {
	cleared := map[string]string{
		DetectorBackupsNotLanding: "the node's newest reported run is in the bucket",
		DetectorBackupIncomplete:  "every object of the node's newest run is in the bucket at its size",
		DetectorBackupVerify:      "the node's newest run was verified restorable",
	}
	out := make([]detector, 0, len(BackupDetectors))
	for _, src := range BackupDetectors {
		out = append(out, detector{
			source: src, severity: SeverityCritical, cleared: cleared[src],
			find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
				return collect(ctx, ex, s.q.DetectBackup, []any{src}, func(r sqldb.Row) (string, finding, error) {
					var id, summary string
					err := r.Scan(&id, &summary)
					return id, finding{summary: summary}, err
				})
			}),
		})
	}
	return out
}
