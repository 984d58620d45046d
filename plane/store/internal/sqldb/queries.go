package sqldb

import (
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Each dialect embeds its SQL as a folder sql/: queries.sql for the statements the rules run (and
// queries_<area>.sql for an area kept apart, read after it in name order), and migrations/NNNN_name.sql
// for the schema.

// Queries holds one database's statements, by the name of their block in queries.sql. Loading fails
// unless every field has a block and every block a field, so the two dialects cannot drift apart
// silently. An empty statement means the database needs nothing there (SQLite's lock blocks).
type Queries struct {
	DriverQueries    // queries_drivers.sql
	HealthQueries    // queries_health.sql
	RolloutQueries   // queries_rollouts.sql
	ProvisionQueries // queries_provision.sql
	UIQueries        // queries_ui.sql
	LogViewQueries   // queries_logviews.sql
	MachineQueries   // queries_machines.sql
	ScheduleQueries  // queries_schedules.sql
	BatchQueries     // queries_batches.sql
	RoleQueries      // queries_roles.sql
	BackupQueries    // queries_backups.sql
	AuditQueries     // queries_audit.sql
	SealQueries      // queries_seal.sql

	MigrationLock, MigrationTable, MigrationList, MigrationInsert string

	JoinLock, JoinCount, JoinPendingByKey, JoinInsert, JoinSetExpires, JoinSetStatus      string
	JoinGet, JoinGetForUpdate, JoinList, JoinDecide, JoinExpireAll, KeyRetired, KeyRetire string

	NodeInsert, NodeGet, NodeGetByName, NodeGetByKey, NodeList, NodeReport, NodeLockShared  string
	NodeLock, NodeEndLockJobs, NodeEnd, NodeRefusalAdd, RelaxCommit, NodeSeen, NodeReachGet string

	NonceUse, NoncePurge string

	JobInsert, JobClaimLose, JobClaimLock, JobClaim, JobGet, JobFinish, JobFinishClaim, JobFinishRefusal, JobFinishNonce, JobFinishSeen string
	JobLoseRunning, JobCancelQueuedForNode, JobExpire                                                                                   string
	JobCancel, JobMarkFailed, JobList                                                                                                   string

	TokenInsert, TokenGetByHash, TokenList, TokenGet, TokenRevoke string

	ReleaseLock, ReleaseMaxSequence, ReleaseInsert, ReleaseArtifactInsert, ReleaseCurrent string
	ReleaseGet, ReleaseList, ReleaseArtifacts, ArtifactInsert, ArtifactGet, ArtifactHas   string

	CaseGet, CaseOpenForRecipe, CaseNewest, CaseOpenCount, CaseInsert, CaseClose, CaseSetBody, CaseTouch string
	CaseNoteCount, CaseNoteInsert, CaseNotes, CaseList, CaseNodeState, CaseNodeNoteSeqs                  string

	IncidentOpenFor, IncidentLatestFor, IncidentInsert, IncidentReopen, IncidentClear, IncidentSetTriage string
	IncidentSetCase, IncidentEventNext, IncidentEventInsert, IncidentGet, IncidentGetForUpdate           string
	IncidentList, IncidentEvents, IncidentReconcileLock, IncidentOpenOfEndedNodes, IncidentOpenBySource  string
	DetectSilent, DetectJobs, DetectUntrusted                                                            string
	IncidentCount                                                                                        string
	DetectUpdateRefused                                                                                  string

	NotificationInsert, NotificationExhaust, NotificationClaim, NotificationAttemptInsert string
	NotificationRecord, NotificationAttemptUpdate, NotificationGet, NotificationList      string
	NotificationAttempts                                                                  string
}

var (
	blockRE    = regexp.MustCompile(`^-- (name|fragment): ([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	fragmentRE = regexp.MustCompile(`\{\{(\w+)\}\}`)
)

// DriverQueries are the statements of queries_drivers.sql.
type DriverQueries struct {
	DriverUpsert, DriverGet, DriverList             string
	AccountInsert, AccountGet, AccountList          string
	AccountDelete, DriverCallInsert, DriverCallList string
	AccountSetTest, DriverCallFinish                string
}

// HealthQueries are the statements of queries_health.sql: replicas, their route counts, and the
// detectors of the plane's own health.
type HealthQueries struct {
	ReplicaUpsert, ReplicaList, ReplicaGetForUpdate, ReplicaDelete string
	RouteCountUpsert, RouteCountPrune, DetectRoutes, DetectDrivers string
}

// RolloutQueries are the statements of queries_rollouts.sql: labels, targets, leases and rollouts.
type RolloutQueries struct {
	NodeSetLabels, NodeLockLabels, NodeTargetLock, NodeSetTarget                  string
	FleetTargetGet, FleetTargetSet, FleetTargetFirstNodes, FleetTargetFirst       string
	LeaseAcquire, LeaseGet, LeaseRenew, LeaseRelease, LeaseList                   string
	RolloutInsert, RolloutStepInsert, RolloutEventInsert, RolloutGet, RolloutList string
	RolloutSteps, RolloutEvents, RolloutSetState, RolloutMiss, RolloutStepUpdate  string
	RolloutStepGet, RolloutStepsSkip, RolloutStepsRetry, RolloutListJudging       string
}

// ProvisionQueries are the statements of queries_provision.sql: provisionings and their joins.
type ProvisionQueries struct {
	ProvisioningInsert, ProvisioningLiveName, ProvisioningGet, ProvisioningByToken, ProvisioningList                                     string
	ProvisioningSet, ProvisioningEventInsert, ProvisioningEvents, ProvisioningAdoptInsert                                                string
	ProvisioningTokenHash, JoinSetHold, DetectProvisioningOrphans, DetectReleaseExpiring, ProvisioningTransferSet, DetectMachineTransfer string
}

// UIQueries are the statements of queries_ui.sql: what the web UI's overview and node filters read.
type UIQueries struct {
	NodeCount, NodeCountVersions, NodeListFiltered                      string
	UISessionInsert, UISessionSweep, UISessionGet, UISessionDelete      string
	SSOSessionInsert, SSOSessionSweep, SSOSessionGet, SSOSessionRefresh string
	SSOSessionDelete                                                    string
}

// ScheduleQueries are the statements of queries_schedules.sql: schedules and their firings, and the
// fleet security view's reports (what the default schedule gathers).
type ScheduleQueries struct {
	ScheduleInsert, ScheduleGet, ScheduleGetByName, ScheduleList, ScheduleListDue       string
	ScheduleUpdate, ScheduleFire, ScheduleRunRecord, ScheduleDelete                     string
	PackageReportList, SecuritySettingsGet, SecuritySettingsPut, SecuritySettingsDelete string
}

// LogViewQueries are the statements of queries_logviews.sql: the log checkpoints nodes hold and the
// plane's verdicts on pairs of them.
type LogViewQueries struct {
	NodeCheckpointsClear, NodeCheckpointsInsert, NodeCheckpointList string
	LogConsistencyUpsert, LogConsistencyPrune, LogConsistencyList   string
	DetectLogSplit                                                  string
}

// MachineQueries are the statements of queries_machines.sql: the machines written down by hand, and
// the nodes' newest reports the inventory reads.
type MachineQueries struct {
	MachineInsert, MachineUpdate, MachineConfirm, MachineGet, MachineList, MachineDelete string
	JobNewestOutputs                                                                     string
}

// BatchQueries are the statements of queries_batches.sql: batches of jobs.
type BatchQueries struct {
	BatchInsert, BatchNodes, BatchJobsInsert, BatchSkipsInsert, BatchGet, BatchLock, BatchList string
	BatchCounts, BatchFailures, BatchActive, BatchRelease, BatchStop, BatchCancelQueued        string
	BatchJobList, BatchGroups, BatchSkipList                                                   string
	BatchPruneJobs, BatchPruneSkips, BatchPrune, BatchStalledList                              string
}

// RoleQueries are the statements of queries_roles.sql: roles, their versions and assignments, and
// whether a release pins an artifact (the artifact route serves a node the rest only by its roles).
type RoleQueries struct {
	RoleInsert, RoleVersionForUpdate, RoleSetVersion, RoleVersionInsert, RoleVersionArtifactInsert string
	RoleGet, RoleList, RoleHistory, RoleExists, RoleAssignInsert, RoleAssignmentGet                string
	RoleAssignmentDelete, RoleAssignmentList, ArtifactReleased                                     string
	RolloutStepParamsInsert, RolloutStepParamsGet                                                  string
}

// BackupQueries are the statements of queries_backups.sql: targets, policies, the jobs the plane
// dispatched and the findings the backup detectors read.
type BackupQueries struct {
	BackupTargetInsert, BackupTargetGet, BackupTargetList, BackupTargetDelete   string
	BackupPolicyUpsert, BackupPolicyList, BackupPolicyDelete                    string
	BackupJobInsert, BackupJobGet, BackupJobList, BackupJobListRecent           string
	BackupJobSetRun, BackupJobJudge                                             string
	BackupFindingsClear, BackupFindingsInsert, BackupFindingsList, DetectBackup string
}

// AuditQueries are the statements of queries_audit.sql: the audit trail of changes, and the enrolments
// (install commands) whose use it records.
type AuditQueries struct {
	AuditEventInsert, AuditEventFinish, AuditEventList string
	EnrolmentInsert, EnrolmentGetByToken, EnrolmentUse string
	AuditEventPrune, DriverCallPrune                   string
	JobPrune, IncidentPruneLock, IncidentPruneAttempts string
	IncidentPruneNotifications, IncidentPruneEvents    string
	IncidentPrune                                      string
}

// SealQueries are the statements of queries_seal.sql: the sealed values a master key rotation pages
// through and re-seals, compare-and-set on the sealed bytes.
type SealQueries struct {
	SealedAccountList, SealedAccountReseal string
	SealedTargetList, SealedTargetReseal   string
	SealedSessionList, SealedSessionReseal string
}

// Load reads a dialect's SQL folder (sql/ in files): its queries, with {{fragment}}s expanded and
// comment lines dropped, and its migrations in version order.
func Load(files fs.FS) (*Queries, []Migration, error) {
	text, err := QueryText(files)
	if err != nil {
		return nil, nil, err
	}
	q, err := ParseQueries("sql/queries*.sql", text)
	if err != nil {
		return nil, nil, err
	}
	ms, err := loadMigrations(files)
	if err != nil {
		return nil, nil, err
	}
	return q, ms, nil
}

// QueryText is sql/queries.sql followed by every sql/queries_<area>.sql in name order, so that an
// area's file can use the main file's fragments.
func QueryText(files fs.FS) (string, error) {
	dir := "sql"
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return "", err
	}
	names := []string{"queries.sql"}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "queries_") && strings.HasSuffix(n, ".sql") {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	var text strings.Builder
	for _, f := range names {
		raw, err := fs.ReadFile(files, path.Join(dir, f))
		if err != nil {
			return "", err
		}
		text.Write(raw)
		text.WriteString("\n")
	}
	return text.String(), nil
}

// ParseQueries fills a Queries from text, refusing a field without a block and a block without a field.
func ParseQueries(file, text string) (*Queries, error) {
	fragments := map[string]string{}
	named := map[string]string{}
	var kind, name string
	var body []string
	flush := func() error {
		if kind == "" {
			return nil
		}
		sql := strings.TrimSpace(strings.Join(body, "\n"))
		if kind == "fragment" {
			fragments[name] = sql
			return nil
		}
		if _, dup := named[name]; dup {
			return fmt.Errorf("%s: query %s is defined twice", file, name)
		}
		var missing error
		sql = fragmentRE.ReplaceAllStringFunc(sql, func(ref string) string {
			f, ok := fragments[ref[2:len(ref)-2]]
			if !ok {
				missing = fmt.Errorf("%s: query %s uses unknown fragment %s", file, name, ref)
			}
			return f
		})
		named[name] = sql
		return missing
	}
	for _, line := range strings.Split(text, "\n") {
		if m := blockRE.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			kind, name, body = m[1], m[2], nil
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		body = append(body, line)
	}
	if err := flush(); err != nil {
		return nil, err
	}

	q := &Queries{}
	v := reflect.ValueOf(q).Elem()
	for _, sf := range reflect.VisibleFields(v.Type()) {
		if sf.Type.Kind() != reflect.String { // an embedded struct of an area's queries
			continue
		}
		f := sf.Name
		sql, ok := named[f]
		if !ok {
			return nil, fmt.Errorf("%s: no query %s", file, f)
		}
		v.FieldByIndex(sf.Index).SetString(sql)
		delete(named, f)
	}
	if len(named) > 0 {
		extra := make([]string, 0, len(named))
		for n := range named {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		return nil, fmt.Errorf("%s: queries no code runs: %s", file, strings.Join(extra, ", "))
	}
	return q, nil
}

// Migration is one numbered schema change of one dialect.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationRE = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads sql/migrations in version order. Versions start at 1 and have no gaps, so a
// missing file cannot pass unnoticed.
func loadMigrations(files fs.FS) ([]Migration, error) {
	dir := "sql/migrations"
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := migrationRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("%s/%s: a migration is named NNNN_name.sql", dir, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("%s: two migrations are numbered %04d (%s and %s)", dir, out[i].Version, out[i-1].Name, out[i].Name)
		}
	}
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("%s: migration %04d is missing", dir, i+1)
		}
	}
	return out, nil
}
