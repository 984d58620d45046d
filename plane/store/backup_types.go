package store

import "time"

// The backups room's incidents: what its witness and its health checks find, kept per node as
// findings (BackupFindingsSet) that these detectors read. Each is cleared when the finding is gone.
const (
	// DetectorBackupsNotLanding: the node reported a successful run, and the plane's own listing of
	// the node's prefix shows nothing new (a node that lies, or an upload path that swallows bytes).
	DetectorBackupsNotLanding = "plane:backups_not_landing"
	// DetectorBackupIncomplete: a run's manifest is in the bucket but an object it names is not, or is
	// not at its size.
	DetectorBackupIncomplete = "plane:backup_incomplete"
	// DetectorBackupVerify: the newest verification failed, or none succeeded within twice the
	// policy's verify interval.
	DetectorBackupVerify = "plane:backup_verify"
)

// BackupDetectors are the sources of the findings BackupFindingsSet keeps.
var BackupDetectors = []string{DetectorBackupsNotLanding, DetectorBackupIncomplete, DetectorBackupVerify}

// BackupTarget is an S3-compatible bucket the plane's nodes back up to. The secret is sealed by the
// caller (plane/internal/seal); the store never sees it in the clear.
type BackupTarget struct {
	Name          string `json:"name"`
	Endpoint      string `json:"endpoint"`
	Region        string `json:"region"`
	Bucket        string `json:"bucket"`
	Prefix        string `json:"prefix"`
	AccessKeyID   string `json:"access_key_id"`
	VirtualHosted bool   `json:"virtual_hosted"`
	// Recovery is the fleet's recovery recipient (age1...): every run is encrypted to it.
	Recovery  string    `json:"recovery"`
	Sealed    []byte    `json:"-"`
	KeyID     string    `json:"key_id"` // the master key the secret is sealed under
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

type BackupTargetCreateParams struct {
	Target BackupTarget // CreatedAt is set from Now
	Now    time.Time
}

type BackupTargetGetParams struct{ Name string }

type BackupTargetListParams struct{}

type BackupTargetDeleteParams struct{ Name string }

// BackupPolicy is how a node (or, NodeID "", the whole fleet) is backed up. A node without a policy
// of its own follows the fleet's; a node's policy with Enabled false is a recorded decision to back it
// up not at all.
type BackupPolicy struct {
	NodeID      string        `json:"node_id,omitempty"`
	Enabled     bool          `json:"enabled"`
	Target      string        `json:"target"`
	Every       time.Duration `json:"every"`
	KeepDays    int           `json:"keep_days"`
	VerifyEvery time.Duration `json:"verify_every"`
	Paths       []string      `json:"paths"`
	Databases   []string      `json:"databases"`
	UpdatedBy   string        `json:"updated_by"`
	UpdatedAt   time.Time     `json:"updated_at"`
}

// Backup policy limits.
const (
	MaxBackupItems = 64
	MaxBackupPath  = 4096
)

type BackupPolicySetParams struct {
	Policy BackupPolicy // UpdatedAt is set from Now
	Now    time.Time
}

type BackupPolicyListParams struct{}

type BackupPolicyDeleteParams struct{ NodeID string }

// BackupJobPurpose is what a backup job the plane dispatched is for.
type BackupJobPurpose string

const (
	BackupPurposeRun    BackupJobPurpose = "backup"
	BackupPurposeVerify BackupJobPurpose = "verify"
	// BackupPurposeRestore: a restore someone queued from the plane (never the schedule).
	BackupPurposeRestore BackupJobPurpose = "restore"
)

// BackupJobState is where the plane's judgement of a dispatched job stands.
type BackupJobState string

const (
	// BackupDispatched: the job is queued or running; nothing is judged yet.
	BackupDispatched BackupJobState = "dispatched"
	// BackupFailed: the node reported the job failed (or it was lost): no restore point.
	BackupFailed BackupJobState = "failed"
	// BackupWitnessed: the node reported success and the plane's listing holds every object of the
	// run's manifest at its size.
	BackupWitnessed BackupJobState = "witnessed"
	// BackupIncomplete: the manifest is there, an object it names is not (or not at its size).
	BackupIncomplete BackupJobState = "incomplete"
	// BackupNotLanding: the node reported success and the bucket holds nothing of the run.
	BackupNotLanding BackupJobState = "not_landing"
	// BackupVerified and BackupVerifyFailed: a verify job's verdict.
	BackupVerified     BackupJobState = "verified"
	BackupVerifyFailed BackupJobState = "verify_failed"
	// BackupRestored and BackupRestoreFailed: a restore job's verdict.
	BackupRestored      BackupJobState = "restored"
	BackupRestoreFailed BackupJobState = "restore_failed"
)

// BackupJob is one job the plane dispatched for a node's backups: the run it was granted, and the
// plane's verdict once the job ended.
type BackupJob struct {
	JobID   string           `json:"job_id"`
	NodeID  string           `json:"node_id"`
	Purpose BackupJobPurpose `json:"purpose"`
	Target  string           `json:"target"`
	// Run is the run granted (a backup), or the run verified; "" until the grant is made at claim.
	Run string `json:"run,omitempty"`
	// Parent is the run an incremental may build on; Chain the runs a verify or restore reads, full
	// run first.
	Parent    string         `json:"parent,omitempty"`
	Chain     []string       `json:"chain,omitempty"`
	Objects   int            `json:"objects"` // the fresh keys granted (a backup)
	StartedAt time.Time      `json:"started_at"`
	State     BackupJobState `json:"state"`
	Kind      string         `json:"kind,omitempty"` // full or incremental, as the node reported
	Bytes     int64          `json:"bytes"`          // the run's stored bytes, from its manifest
	Detail    string         `json:"detail,omitempty"`
	JudgedAt  time.Time      `json:"judged_at,omitzero"`
}

type BackupJobCreateParams struct {
	Job BackupJob // State is set to dispatched, StartedAt from Now
	Now time.Time
}

type BackupJobGetParams struct{ JobID string }

type BackupJobListParams struct {
	NodeID string // "": every node
	// Dispatched narrows the list to jobs not judged yet.
	Dispatched bool
	Limit      int // 0: 100
}

// BackupJobListRecentParams names the nodes, at most MaxListLimit, and how many of each node's
// newest jobs to return (1 to MaxListLimit).
type BackupJobListRecentParams struct {
	NodeIDs []string
	PerNode int
}

// BackupJobSetRunParams records the run a job's grant names, when it was made.
type BackupJobSetRunParams struct {
	JobID string
	Run   string
}

// BackupJobJudgeParams records the verdict on a dispatched job; only a dispatched job is judged.
type BackupJobJudgeParams struct {
	JobID  string
	State  BackupJobState
	Kind   string
	Run    string
	Bytes  int64
	Detail string
	Now    time.Time
}

// BackupFinding is one reason a node's backups are red, read by the detector of its source.
type BackupFinding struct {
	Source  string `json:"source"`
	Summary string `json:"summary"`
}

// BackupFindingsSetParams replaces a node's findings.
type BackupFindingsSetParams struct {
	NodeID   string
	Findings []BackupFinding
	Now      time.Time
}

type BackupFindingsListParams struct {
	NodeID string // "": every node's
}

// BackupNodeFinding is a finding with the node it is about.
type BackupNodeFinding struct {
	NodeID string `json:"node_id"`
	BackupFinding
	FoundAt time.Time `json:"found_at"`
}
