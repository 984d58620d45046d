package api

import (
	"encoding/json"
	"net/url"
	"time"
)

// BatchRequest is the body of POST /batches: one word, with one params object, on every active node
// the selector matches, one job a node.
type BatchRequest struct {
	Word string `json:"word"`
	// Selector picks the nodes: "all", node names ("web-1,web-2") or labels that must all match
	// ("role=web,zone=a").
	Selector string `json:"selector"`
	// Params are the word's params, the same for every node; absent for none.
	Params json.RawMessage `json:"params,omitempty"`
	// MaxParallel bounds the batch's jobs handed out or running at once; 0 (or absent) for none.
	MaxParallel int `json:"max_parallel,omitempty"`
	// ErrorBudget is how many jobs may fail (failed, refused or lost) before the batch stops and
	// cancels its queued jobs; absent for no budget.
	ErrorBudget *int `json:"error_budget,omitempty"`
}

// BatchState is where a batch stands, read from its jobs.
type BatchState string

const (
	BatchRunning  BatchState = "running"  // jobs are queued, waiting or running
	BatchDone     BatchState = "done"     // every job ended
	BatchStopping BatchState = "stopping" // stopped by its error budget, jobs still running
	BatchStopped  BatchState = "stopped"  // stopped by its error budget, every job ended
)

// Batch is one word run across the nodes a selector matched.
type Batch struct {
	ID          string          `json:"id"`
	Word        string          `json:"word"`
	Selector    string          `json:"selector"`
	Class       string          `json:"class"`
	Params      json.RawMessage `json:"params"`
	MaxParallel int             `json:"max_parallel"`
	// ErrorBudget is -1 when the batch has none.
	ErrorBudget int        `json:"error_budget"`
	State       BatchState `json:"state,omitempty"` // in show, not in list
	Jobs        int        `json:"jobs"`            // jobs created, one a node
	// Skipped counts the nodes the selector matched that were given no job (Skips names them).
	Skipped    int         `json:"skipped"`
	CreatedBy  string      `json:"created_by"`
	CreatedAt  time.Time   `json:"created_at"`
	StoppedAt  time.Time   `json:"stopped_at,omitzero"`
	StopReason string      `json:"stop_reason,omitempty"`
	Counts     BatchCounts `json:"counts,omitzero"`
	// Groups are the ended jobs grouped by state, code and output, the largest first (show only,
	// at most 20).
	Groups []BatchGroup `json:"groups,omitempty"`
	// Skips are the first skipped nodes (show only, at most 100; GET /batches/{id}/skips pages).
	Skips []BatchSkip `json:"skips,omitempty"`
}

// BatchCounts are a batch's jobs by where they stand. Waiting jobs are queued but held back by the
// batch's max-parallel.
type BatchCounts struct {
	Waiting   int `json:"waiting"`
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	Lost      int `json:"lost"`
	Cancelled int `json:"cancelled"`
}

// Open is how many of the batch's jobs have not ended.
func (c BatchCounts) Open() int { return c.Waiting + c.Queued + c.Running }

// BatchGroup is a set of a batch's jobs that ended alike: one state, one code, one output.
type BatchGroup struct {
	State  JobState        `json:"state"`
	Code   string          `json:"code,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Count  int             `json:"count"`
	// Like is one of the group's jobs: GET /batches/{id}/jobs?like= lists the group.
	Like string `json:"like"`
}

// BatchSkip is a node a batch matched but gave no job, and why (it does not report the word).
type BatchSkip struct {
	NodeID   string `json:"node_id"`
	NodeName string `json:"node_name"`
	Reason   string `json:"reason"`
}

// BatchList is the answer of GET /batches, newest first.
type BatchList struct {
	Batches    []Batch `json:"batches"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// BatchJobList is a page of a batch's jobs, in creation order, each with its output.
type BatchJobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// BatchSkipList is a page of a batch's skipped nodes.
type BatchSkipList struct {
	Skips      []BatchSkip `json:"skips"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// BatchesListQuery pages GET /batches.
type BatchesListQuery struct {
	Limit  int    `query:"limit"`
	Cursor string `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q BatchesListQuery) Values() url.Values {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseBatchesListQuery decodes a request's query.
func ParseBatchesListQuery(v url.Values) (BatchesListQuery, error) {
	limit, err := intParam(v, "limit")
	return BatchesListQuery{Limit: limit, Cursor: v.Get("cursor")}, err
}

// BatchJobsQuery narrows GET /batches/{id}/jobs: a job state (or "waiting"), or the jobs that ended
// like job Like (a group's handle).
type BatchJobsQuery struct {
	State  string `query:"state"`
	Like   string `query:"like"`
	Limit  int    `query:"limit"`
	Cursor string `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q BatchJobsQuery) Values() url.Values {
	v := url.Values{}
	set(v, "state", q.State)
	set(v, "like", q.Like)
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseBatchJobsQuery decodes a request's query.
func ParseBatchJobsQuery(v url.Values) (BatchJobsQuery, error) {
	limit, err := intParam(v, "limit")
	return BatchJobsQuery{State: v.Get("state"), Like: v.Get("like"), Limit: limit, Cursor: v.Get("cursor")}, err
}
