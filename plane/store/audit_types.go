package store

import "time"

// AuditEvent is one change asked of the plane through the admin API or the web UI: who asked (a token,
// directly or through a UI session), from which address, the operation (the admin API route's
// operation id, or the UI's), its target, and how it ended. It is written twice: once with code
// CodePending before the change is made, and once with the outcome after, so a plane that stops
// mid-change leaves the intent behind. It never holds a request body or a secret: the caller gives only
// names, ids and codes.
type AuditEvent struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	Via     string    `json:"via"`                // AuditViaAPI or AuditViaUI
	ActorID string    `json:"actor_id,omitempty"` // the token's id; "" before a sign-in resolved one
	Actor   string    `json:"actor,omitempty"`    // the token's name
	Address string    `json:"address,omitempty"`
	// Operation is the admin API route's operation id ("JobsCreate"), or the UI's own ("UISignIn").
	Operation string `json:"operation"`
	Target    string `json:"target,omitempty"` // the route's resource: its parameters, or what it made
	// Status is the HTTP status answered; 0 while pending.
	Status int `json:"status"`
	// Code is CodePending until the outcome is written, then CodeOK or the error code answered.
	Code       string `json:"code"`
	DurationMS int64  `json:"duration_ms"`
}

// Where a change was asked.
const (
	AuditViaAPI = "api"
	AuditViaUI  = "ui"
)

// AuditOutcomeFailed, as AuditEventListParams.Outcome, lists every event that ended with an error code.
const AuditOutcomeFailed = "failed"

type AuditEventStartParams struct {
	Via, ActorID, Actor, Address, Operation, Target string
	Now                                             time.Time
}

// AuditEventFinishParams is a started event's outcome. ActorID, Actor and Target, when not empty, fill
// the event's where it had none (a sign-in learns its actor, a create its target, only once done).
type AuditEventFinishParams struct {
	ID                     string
	Status                 int
	Code                   string // CodeOK or an error code; never CodePending
	ActorID, Actor, Target string
	Duration               time.Duration
}

// AuditEventListParams filters the events. Actor matches a token's name or id; Outcome is a code
// (CodeOK, CodePending, an error code) or AuditOutcomeFailed; Since and Until (exclusive) bound At
// when not zero.
type AuditEventListParams struct {
	Actor, Operation, Target, Outcome string
	Since, Until                      time.Time
	Limit                             int    // 0: 100
	Cursor                            string // NextCursor of the previous page
}

type AuditEventListResult struct {
	Events     []AuditEvent `json:"events"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// PruneParams removes records older than Before, at most Limit of them (0: 10,000) in one statement, so
// that a large backlog is removed in bounded steps.
type PruneParams struct {
	Before time.Time
	Limit  int
}
