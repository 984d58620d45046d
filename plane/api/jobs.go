package api

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// JobState is where a job stands: the agent channel's type, so the API, the store and the node spell
// each state one way. Completed, failed, refused, lost and cancelled are final.
type JobState = channel.JobState

const (
	JobQueued    = channel.JobQueued
	JobRunning   = channel.JobRunning
	JobCompleted = channel.JobCompleted // the word ran and succeeded
	JobFailed    = channel.JobFailed    // the word ran and failed, or an operator marked it failed
	JobRefused   = channel.JobRefused   // the node would not run it (policy, capability, params)
	JobLost      = channel.JobLost      // it was handed out and never reported; it is never re-run
	JobCancelled = channel.JobCancelled // an operator cancelled it, or its node left, before it ran
)

// JobRequest is the body of POST /jobs: a word and its params, never a command. Node is the node's
// id or name. Params must satisfy the word's schema ({} when empty).
type JobRequest struct {
	Node   string          `json:"node"`
	Word   string          `json:"word"`
	Params json.RawMessage `json:"params"`
	// Exclusive takes the node's change lease for the job, as a rollout's step does: refused with
	// lease.held while another change holds the node, and no rollout starts on the node until the job
	// is final.
	Exclusive bool `json:"exclusive,omitempty"`
}

// MarkFailedRequest is the body of POST /jobs/{id}/mark-failed (optional): why.
type MarkFailedRequest struct {
	Message string `json:"message"`
}

// Job is one word queued for one node, and its outcome once final.
type Job struct {
	ID     string `json:"id"`
	NodeID string `json:"node_id"`
	// NodeName is the node's name, for people; the id is what identifies it.
	NodeName    string          `json:"node_name,omitempty"`
	Word        string          `json:"word"`
	WordVersion string          `json:"word_version"`
	WordDigest  string          `json:"word_digest"`
	Class       string          `json:"class"`
	Params      json.RawMessage `json:"params"`
	State       JobState        `json:"state"`
	Budget      time.Duration   `json:"budget"` // nanoseconds from the claim until the job is lost
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	ClaimedAt   time.Time       `json:"claimed_at,omitzero"`
	DeadlineAt  time.Time       `json:"deadline_at,omitzero"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`

	// The outcome: a code and message for every final state but completed, the word's output and
	// transcript (redacted on the node), and the capability calls it made.
	OutcomeCode    string          `json:"outcome_code,omitempty"`
	OutcomeMessage string          `json:"outcome_message,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Transcript     string          `json:"transcript,omitempty"`
	Audit          json.RawMessage `json:"audit,omitempty"`
	DurationMS     int64           `json:"duration_ms,omitempty"`
	FinishedBy     string          `json:"finished_by,omitempty"` // the operator who cancelled or failed it
	// BatchID is the batch the job is one of; Waiting is true while the batch's max-parallel holds
	// the queued job back.
	BatchID string `json:"batch_id,omitempty"`
	Waiting bool   `json:"waiting,omitempty"`
}

// JobList is the answer of GET /jobs, newest first.
type JobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor,omitempty"`
}
