package store

import (
	"encoding/json"
	"time"
)

// Batch limits.
const (
	// MaxBatchJobs bounds the jobs of one batch: the fleet a plane serves, with room.
	MaxBatchJobs = 100000
	// NoErrorBudget is a batch's ErrorBudget when failures never stop it.
	NoErrorBudget = -1
)

// Batch is one word run on every node a selector matched, one job a node, created in one transaction.
// Its jobs are ordinary jobs carrying the batch's id. A batch has no stored state of its own beyond
// its stop: whether it runs or is done is read from its jobs' states (Counts).
type Batch struct {
	ID       string          `json:"id"`
	Word     string          `json:"word"`
	Selector string          `json:"selector"`
	Class    string          `json:"class"`
	Params   json.RawMessage `json:"params"`
	// MaxParallel bounds the batch's jobs queued for hand-out or running at once (0: no bound); the
	// rest wait held.
	MaxParallel int `json:"max_parallel"`
	// ErrorBudget is how many jobs may fail (failed, refused, lost) before the batch stops;
	// NoErrorBudget for no limit.
	ErrorBudget int       `json:"error_budget"`
	Jobs        int       `json:"jobs"` // jobs created
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	StoppedAt   time.Time `json:"stopped_at,omitzero"`
	StopReason  string    `json:"stop_reason,omitempty"`
	// Skipped counts the nodes the selector matched that were not given a job (BatchSkipList).
	Skipped int `json:"skipped"`
	// Counts are the batch's jobs by state; a held job counts as waiting, not queued. Filled by
	// BatchGet only.
	Counts BatchCounts `json:"counts,omitzero"`
}

// BatchCounts are a batch's jobs by where they stand.
type BatchCounts struct {
	Waiting   int `json:"waiting"` // queued but held back by the batch's bound
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	Lost      int `json:"lost"`
	Cancelled int `json:"cancelled"`
}

// Open is how many jobs have not ended.
func (c BatchCounts) Open() int { return c.Waiting + c.Queued + c.Running }

// Failures is how many jobs count against the error budget.
func (c BatchCounts) Failures() int { return c.Failed + c.Refused + c.Lost }

// BatchTarget is a node a batch gives a job, with the digest of the word the caller checked params
// against (as JobCreateParams.WordDigest).
type BatchTarget struct {
	NodeID     string
	WordDigest string
}

// BatchSkip is a node a batch matched but gave no job, and why.
type BatchSkip struct {
	NodeID   string `json:"node_id"`
	NodeName string `json:"node_name"`
	Reason   string `json:"reason"`
}

type BatchCreateParams struct {
	Word     string
	Selector string // as the caller gave it, for people reading the batch
	// Class, Params and Budget are as JobCreateParams, the same for every job.
	Class       string
	Params      json.RawMessage
	Budget      time.Duration
	MaxParallel int // 0: no bound
	ErrorBudget int // NoErrorBudget: none
	Targets     []BatchTarget
	// Skipped are nodes the caller matched but found without the word. A target that no longer
	// reports the word at its digest, or is no longer active, when the batch is stored is skipped too.
	Skipped   []BatchSkip
	CreatedBy string
	Now       time.Time
}

type BatchGetParams struct {
	ID string
}

type BatchListParams struct {
	Limit  int // 0: 100
	Cursor string
}

type BatchListResult struct {
	Batches    []Batch `json:"batches"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// BatchJob is a batch's job with its node's name, output included (transcript and audit are not).
type BatchJob struct {
	Job
	NodeName string `json:"node_name"`
	Held     bool   `json:"held,omitempty"`
}

type BatchJobListParams struct {
	ID string
	// State narrows to one job state ("" for all); "waiting" is queued and held.
	State string
	// Like narrows to the jobs that ended as job Like did: same state, code and output (a group of
	// BatchGroupList).
	Like   string
	Limit  int // 0: 100
	Cursor string
}

type BatchJobListResult struct {
	Jobs       []BatchJob `json:"jobs"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// BatchGroup is a set of a batch's ended jobs that ended alike: one state, one code, one output.
type BatchGroup struct {
	State  JobState        `json:"state"`
	Code   string          `json:"code,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Count  int             `json:"count"`
	// Like is one of the group's jobs (the oldest), the handle BatchJobListParams.Like takes.
	Like string `json:"like"`
}

type BatchGroupListParams struct {
	ID    string
	Limit int // the largest groups first; 0: 100
}

type BatchSkipListParams struct {
	ID     string
	Limit  int // 0: 100
	Cursor string
}

type BatchSkipListResult struct {
	Skips      []BatchSkip `json:"skips"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

type BatchStalledListParams struct {
	Limit int // 0: the default list limit
}

type BatchAdvanceParams struct {
	ID  string
	Now time.Time
}

// BatchAdvanceResult is what one advance did.
type BatchAdvanceResult struct {
	Batch Batch
	// Released are the held jobs now queued for hand-out.
	Released []Job
	// Cancelled are the queued jobs the stop cancelled.
	Cancelled []Job
	// Stopped is true when this advance stopped the batch.
	Stopped bool
}
