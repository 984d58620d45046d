package store

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// JobState is where a job stands: the agent channel's type, so the plane and the node spell each state
// once.
type JobState = channel.JobState

const (
	JobQueued    = channel.JobQueued
	JobRunning   = channel.JobRunning
	JobCompleted = channel.JobCompleted
	JobFailed    = channel.JobFailed
	JobRefused   = channel.JobRefused
	JobLost      = channel.JobLost
	JobCancelled = channel.JobCancelled
)

// Job limits.
const (
	// DefaultJobBudget is how long a claimed job may run before it is lost, unless its word sets
	// its own limit.
	DefaultJobBudget = 15 * time.Minute
	MaxJobBudget     = 24 * time.Hour
	// MaxMessageLen bounds a message (a job's outcome, an operator's note); callers taking text from
	// outside cut it to this first.
	MaxMessageLen = 4096
)

// Job is a word to run on a node with params.
type Job struct {
	ID          string          `json:"id"`
	NodeID      string          `json:"node_id"`
	Word        string          `json:"word"`
	WordVersion string          `json:"word_version"`
	WordDigest  string          `json:"word_digest"`
	Class       string          `json:"class"`
	Params      json.RawMessage `json:"params"`
	State       JobState        `json:"state"`
	Budget      time.Duration   `json:"budget"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	ClaimedAt   time.Time       `json:"claimed_at,omitzero"`
	DeadlineAt  time.Time       `json:"deadline_at,omitzero"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`
	// OutcomeCode is "" for completed, the node's code for failed and refused, and job.lost,
	// job.cancelled or job.marked_failed when the plane ended the job.
	OutcomeCode    string          `json:"outcome_code,omitempty"`
	OutcomeMessage string          `json:"outcome_message,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Transcript     string          `json:"transcript,omitempty"`
	Audit          json.RawMessage `json:"audit,omitempty"`
	DurationMS     int64           `json:"duration_ms,omitempty"`
	FinishedBy     string          `json:"finished_by,omitempty"` // the operator who cancelled or failed it
	// BatchID is the batch the job is one of, "" for a job queued on its own.
	BatchID string `json:"batch_id,omitempty"`
}

type JobCreateParams struct {
	NodeID string
	Word   string
	// WordDigest, if set, must be the digest the node reports for Word: the caller validated Params
	// against the manifest of that module, and a node that moved to another version since must not
	// get them.
	WordDigest string
	// Class is the word's class from its manifest in the release (look, change, destructive): the
	// class the caller authorised, not what the node says.
	Class     string
	Params    json.RawMessage // a JSON object
	Budget    time.Duration   // 0: DefaultJobBudget; else the word's own limit
	CreatedBy string
	Now       time.Time
	// Backup, when set, is recorded with the job in its transaction (its JobID, NodeID and StartedAt
	// are the job's): the node can claim the job only once the plane's record of it exists.
	Backup *BackupJob
}

type JobClaimParams struct {
	NodeID string
	Now    time.Time
}

type JobFinishParams struct {
	ID      string
	NodeID  string   // the node the signature proved
	Outcome JobState // completed, failed or refused
	Code    string   // the node's error code for failed and refused
	Message string
	Output  json.RawMessage // nil for none
	// Transcript and Audit are stored as given; bound them on intake.
	Transcript string
	Audit      json.RawMessage // nil for none
	Duration   time.Duration
	Now        time.Time
	// Nonce, when set (JobFinishClaim only), is the result request's signature nonce, recorded in the
	// same transaction as the result: a nonce already recorded refuses the whole transaction
	// (JobFinishClaimResult.Replayed), so the request's nonce and its effects commit together, in one
	// durable commit. Nil: the caller recorded it already (NonceUse).
	Nonce *NonceUseParams
	// Seen (JobFinishClaim only) also records the node as seen at Now and idle, as NodeSeen would, in
	// the same transaction (on PostgreSQL the same statement): the idle claim the result carries then
	// costs no statement of its own.
	Seen bool
}

type JobClaimIdleResult struct {
	Lost []Job // the job that was running, now lost: only its ID, NodeID, Word, State and BatchID are set
	Job  *Job  // the job handed out, nil for none
}

type JobFinishClaimResult struct {
	Job  Job  // the job finished
	Next *Job // the job handed out, nil for none
	// Replayed: JobFinishParams.Nonce was recorded already; nothing changed (Job and Next are empty).
	Replayed bool
}

type JobLoseRunningParams struct {
	NodeID string
	Now    time.Time
}

type JobExpireParams struct {
	Now time.Time
}

type JobCancelParams struct {
	ID  string
	By  string
	Now time.Time
}

type JobMarkFailedParams struct {
	ID      string
	By      string
	Message string
	Now     time.Time
}

type JobGetParams struct {
	ID string
}

type JobListParams struct {
	NodeID string   // "" for every node
	State  JobState // "" for every state
	Limit  int      // 0: 100
	Cursor string
}

type JobListResult struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor,omitempty"` // "" on the last page
}
