package api

import (
	"encoding/json"
	"time"
)

// RolloutRequest is the body of POST /rollouts. Exactly one of Release (a release rollout: each node's
// target moves to it; needs admin) and Word (a job rollout: the word runs on each node; needs the role
// its class needs) is set. Nodes are chosen by Selector ("" or "all", names "web-1,web-2", or labels
// "role=web,zone=a") and split into Stages (a selector each, a node in the first that matches it) or
// into a Canary count followed by Percentages ("10%","50%","100%", cumulative); neither is one stage.
type RolloutRequest struct {
	Release         int64           `json:"release,omitempty"`
	Word            string          `json:"word,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	Preflight       string          `json:"preflight,omitempty"` // a word that must pass on a node before its change
	PreflightParams json.RawMessage `json:"preflight_params,omitempty"`
	Verify          string          `json:"verify,omitempty"` // a word that must pass on a node after its change
	VerifyParams    json.RawMessage `json:"verify_params,omitempty"`
	Selector        string          `json:"selector,omitempty"`
	Stages          []string        `json:"stages,omitempty"`
	Canary          int             `json:"canary,omitempty"`
	Percentages     []string        `json:"percentages,omitempty"`
	MaxParallel     int             `json:"max_parallel,omitempty"`    // 0: 1
	ErrorBudget     int             `json:"error_budget,omitempty"`    // misses allowed before it halts
	StepTimeoutMS   int64           `json:"step_timeout_ms,omitempty"` // per phase of a node's step; 0: 10 minutes
}

// Rollout states and step verdicts.
const (
	RolloutRunning   = "running"
	RolloutPaused    = "paused"
	RolloutHalted    = "halted"
	RolloutCompleted = "completed"
	RolloutAborted   = "aborted"
	RolloutReverted  = "reverted"

	StepPending = "pending"
	StepRunning = "running"
	StepPassed  = "passed"
	StepFailed  = "failed"
	StepSkipped = "skipped"
)

// Rollout is a change reaching nodes in stages (GET /rollouts/{id} has Steps and Events).
type Rollout struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"` // release or job
	Release       int64           `json:"release,omitempty"`
	Word          string          `json:"word,omitempty"`
	Params        json.RawMessage `json:"params,omitempty"`
	Preflight     string          `json:"preflight,omitempty"`
	Verify        string          `json:"verify,omitempty"`
	Selector      string          `json:"selector"`
	Stages        []string        `json:"stages"`
	MaxParallel   int             `json:"max_parallel"`
	ErrorBudget   int             `json:"error_budget"`
	StepTimeoutMS int64           `json:"step_timeout_ms"`
	State         string          `json:"state"`
	Misses        int             `json:"misses"`
	HaltNode      string          `json:"halt_node,omitempty"`   // the node whose miss halted it
	HaltReason    string          `json:"halt_reason,omitempty"` // and why
	CreatedBy     string          `json:"created_by"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	FinishedAt    time.Time       `json:"finished_at,omitzero"`
	Steps         []RolloutStep   `json:"steps,omitempty"`
	Events        []RolloutEvent  `json:"events,omitempty"`
	Moved         []string        `json:"moved,omitempty"` // revert: the nodes moved back
	// Purpose is "patch" for a fleet patch, whose steps are judged by what the package words report.
	Purpose string `json:"purpose,omitempty"`
	// LeftOut are the selected nodes a fleet patch left out, and why (POST /fleet/patch only; the
	// start event's detail keeps them).
	LeftOut []LeftOut `json:"left_out,omitempty"`
}

// LeftOut is a node a fleet patch did not include, and why.
type LeftOut struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// FleetPatchRequest is the body of POST /fleet/patch: a staged rollout of install_security_updates
// over the selected nodes that have it, a canary node first, each node's services on replaced code
// restarted by restart_services (where its release pins it) and the node verified by a fresh
// packages_report showing no security fix waiting. Two nodes on one machine are never patched at once.
type FleetPatchRequest struct {
	Selector      string `json:"selector,omitempty"`        // "" or "all", names, or labels, as a rollout's
	MaxParallel   int    `json:"max_parallel,omitempty"`    // machines patched at once; 0: 1
	StepTimeoutMS int64  `json:"step_timeout_ms,omitempty"` // per phase; 0: 20 minutes (the word may take 15)
}

// RolloutStep is one node's verdict in a rollout, with its timings.
type RolloutStep struct {
	NodeID         string    `json:"node_id"`
	NodeName       string    `json:"node_name"`
	Stage          int       `json:"stage"`
	State          string    `json:"state"`
	Phase          string    `json:"phase,omitempty"` // preflight, change or verify
	JobID          string    `json:"job_id,omitempty"`
	PreviousTarget int64     `json:"previous_target,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	StartedAt      time.Time `json:"started_at,omitzero"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	DurationMS     int64     `json:"duration_ms,omitempty"`
	// Machine is the machine the node runs on, when the rollout knows it: two steps of one machine
	// never run at once.
	Machine string `json:"machine,omitempty"`
	// UpdatePhase is where the node's agent update stood in its last report, on a release step under
	// way whose release pins an agent: fetching, restarting, on trial (a release step includes the trial).
	UpdatePhase string `json:"update_phase,omitempty"`
}

// RolloutEvent is one entry of a rollout's audit.
type RolloutEvent struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Detail string    `json:"detail,omitempty"`
}

// RolloutList is the answer of GET /rollouts.
type RolloutList struct {
	Rollouts []Rollout `json:"rollouts"`
}

// LabelRequest is the body of POST /nodes/{id}/labels: labels to set and keys to remove.
type LabelRequest struct {
	Set    map[string]string `json:"set,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

// Lease is a per-node lease: who holds the node's change, what for, until when.
type Lease struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	Purpose    string    `json:"purpose"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}
