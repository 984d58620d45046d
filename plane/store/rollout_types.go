package store

import (
	"encoding/json"
	"time"
)

// RolloutKind is what a rollout changes on each node.
type RolloutKind string

const (
	RolloutRelease RolloutKind = "release" // the node's target release moves
	RolloutJob     RolloutKind = "job"     // a word runs on the node
)

// RolloutPurpose says how a job rollout's steps are judged beyond their jobs' outcomes: "" by the
// outcome alone; patch by what the package words report (plane/internal/rollouts, patch.go).
type RolloutPurpose string

const (
	PurposeNone  RolloutPurpose = ""
	PurposePatch RolloutPurpose = "patch"
)

// RolloutState is where a rollout stands. running and paused are live; halted can be resumed; the
// others are final (a completed, halted or aborted rollout can still be reverted).
type RolloutState string

const (
	RolloutRunning   RolloutState = "running"
	RolloutPaused    RolloutState = "paused"
	RolloutHalted    RolloutState = "halted"
	RolloutCompleted RolloutState = "completed"
	RolloutAborted   RolloutState = "aborted"
	RolloutReverted  RolloutState = "reverted"
)

// StepState is a node's verdict in a rollout.
type StepState string

const (
	StepPending StepState = "pending"
	StepRunning StepState = "running"
	StepPassed  StepState = "passed"
	StepFailed  StepState = "failed"
	StepSkipped StepState = "skipped"
)

// Phases of a running step, in order.
const (
	PhasePreflight = "preflight"
	PhaseChange    = "change"
	// PhaseRestart follows a fleet patch's change: the services left on replaced code are restarted
	// before the verify looks.
	PhaseRestart = "restart"
	PhaseVerify  = "verify"
)

// Rollout is a change reaching a selection of nodes in stages.
type Rollout struct {
	ID              string          `json:"id"`
	Kind            RolloutKind     `json:"kind"`
	ReleaseSequence int64           `json:"release_sequence,omitempty"`
	Word            string          `json:"word,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	PreflightWord   string          `json:"preflight_word,omitempty"`
	PreflightParams json.RawMessage `json:"preflight_params,omitempty"`
	VerifyWord      string          `json:"verify_word,omitempty"`
	VerifyParams    json.RawMessage `json:"verify_params,omitempty"`
	Selector        string          `json:"selector"`
	Stages          []string        `json:"stages"` // how each stage was chosen, as given
	// FleetWide rollouts selected every node; a fleet-wide release rollout that completes moves the
	// fleet's target, which new nodes are given.
	FleetWide   bool          `json:"fleet_wide"`
	MaxParallel int           `json:"max_parallel"`
	ErrorBudget int           `json:"error_budget"`
	StepTimeout time.Duration `json:"step_timeout"`
	State       RolloutState  `json:"state"`
	Misses      int           `json:"misses"`
	HaltNode    string        `json:"halt_node,omitempty"`
	HaltReason  string        `json:"halt_reason,omitempty"`
	CreatedBy   string        `json:"created_by"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	FinishedAt  time.Time     `json:"finished_at,omitzero"`
	// Purpose is how its steps are judged (RolloutPurpose).
	Purpose RolloutPurpose `json:"purpose,omitempty"`

	Steps  []RolloutStep  `json:"steps,omitempty"`  // RolloutGet only
	Events []RolloutEvent `json:"events,omitempty"` // RolloutGet only
}

// RolloutStep is one node's part of a rollout.
type RolloutStep struct {
	NodeID         string    `json:"node_id"`
	NodeName       string    `json:"node_name"`
	Stage          int       `json:"stage"`
	Position       int       `json:"position"`
	State          StepState `json:"state"`
	Phase          string    `json:"phase,omitempty"`
	JobID          string    `json:"job_id,omitempty"`
	PreviousTarget int64     `json:"previous_target,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	StartedAt      time.Time `json:"started_at,omitzero"`
	PhaseAt        time.Time `json:"phase_at,omitzero"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	// Machine names the machine the node runs on ("" when not known): the engine never runs two
	// steps of one machine at once.
	Machine string `json:"machine,omitempty"`
}

// RolloutEvent is one entry of a rollout's audit: who did what, when.
type RolloutEvent struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Detail string    `json:"detail,omitempty"`
}

// RolloutStepNew places a node in a new rollout.
type RolloutStepNew struct {
	NodeID, NodeName string
	Stage            int
	Machine          string // "": the node is its own machine
	// Params, when given, are this node's params for the change, in place of the rollout's (the
	// footprint a roles apply renders for each node). RolloutParamsGet reads them back.
	Params json.RawMessage
}

type RolloutParamsGetParams struct {
	RolloutID, NodeID string
}

type RolloutCreateParams struct {
	Kind            RolloutKind
	ReleaseSequence int64
	Word            string
	Params          json.RawMessage
	PreflightWord   string
	PreflightParams json.RawMessage
	VerifyWord      string
	VerifyParams    json.RawMessage
	Selector        string
	Stages          []string
	FleetWide       bool
	MaxParallel     int           // 0: 1
	ErrorBudget     int           // misses allowed before the rollout halts
	StepTimeout     time.Duration // 0: 10 minutes
	Steps           []RolloutStepNew
	Purpose         RolloutPurpose
	// Detail is the start event's detail: what the start chose that the steps do not show (the nodes
	// a patch left out, and why).
	Detail string
	By     string
	Now    time.Time
	// Lease, when its Holder is set, is granted on the new rollout (Subject is the rollout's id) in
	// the same transaction: the replica a rollout is started through advances it first, and no other
	// replica can take it in between.
	Lease LeaseAcquireParams
}

type RolloutGetParams struct{ ID string }

type RolloutListParams struct {
	State RolloutState // "" for all
	Limit int          // 0: 100
	// Judging lists only rollouts that are not running (paused, halted, aborted) but still have a
	// step under way: the engine judges those steps when their jobs end. State is then ignored.
	Judging bool
}

// RolloutSetStateParams moves a rollout from one of From to To, recording who asked and why.
type RolloutSetStateParams struct {
	ID     string
	From   []RolloutState
	To     RolloutState
	By     string
	Action string // the audit event's action (pause, resume, abort, revert, complete)
	Detail string
	Now    time.Time
}

// RolloutStepUpdateParams moves a step only if it is in FromState and FromPhase now: two replicas
// racing on the same step cannot both move it, and the loser is told (RolloutStepUpdateResult.Moved).
type RolloutStepUpdateParams struct {
	RolloutID, NodeID string
	FromState         StepState
	FromPhase         string
	State             StepState
	Phase             string
	JobID             string
	PreviousTarget    int64
	Reason            string
	Now               time.Time
}

type RolloutStepUpdateResult struct {
	Step  RolloutStep
	Moved bool
}

// RolloutMissParams counts a miss on a rollout; a running or paused rollout halts, naming the node and
// the reason, once its misses exceed its error budget. A halted or aborted one keeps its state.
type RolloutMissParams struct {
	ID, NodeID, NodeName, Reason string
	Now                          time.Time
}
