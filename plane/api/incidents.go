package api

import (
	"encoding/json"
	"time"
)

// Severity is how urgent an incident is.
type Severity string

const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
)

// Condition is whether an incident's source still says it is happening.
type Condition string

const (
	ConditionOpen    Condition = "open"
	ConditionCleared Condition = "cleared"
)

// Triage is what a person says is being done about an incident.
type Triage string

const (
	TriageNew      Triage = "new"
	TriageSnoozed  Triage = "snoozed"
	TriageResolved Triage = "resolved"
	TriageIgnored  Triage = "ignored"
)

// EventKind names a change on an incident's timeline.
type EventKind string

const (
	EventOpened   EventKind = "opened"
	EventCleared  EventKind = "cleared"
	EventReopened EventKind = "reopened"
	EventTriage   EventKind = "triage"
	EventNote     EventKind = "note"
)

// Incident is one condition (a source: recipe:<name> from a node's case, plane:<name> from the
// plane's detectors) on one node, or on one subject of the plane itself (plane:driver_failing,
// plane:memory, plane:route_failing, plane:replica_missing, plane:rollout_halted: no node, and Subject
// names the driver, replica, route or rollout). Summary is the node's own text for a case: show it as text.
type Incident struct {
	ID       string `json:"id"`
	NodeID   string `json:"node_id"`   // "" for the plane's own incidents
	NodeName string `json:"node_name"` // "" for the plane's own incidents
	Source   string `json:"source"`
	// Subject is what a plane incident is about: a driver, a replica id, a route ("GET /nodes/{id}"), a
	// rollout id.
	Subject      string    `json:"subject,omitempty"`
	Severity     Severity  `json:"severity"`
	Condition    Condition `json:"condition"`
	Triage       Triage    `json:"triage"`
	SnoozedUntil time.Time `json:"snoozed_until,omitzero"`
	Summary      string    `json:"summary"`
	CaseID       int64     `json:"case_id,omitempty"` // the node's case, for recipe:<name> sources
	OpenedAt     time.Time `json:"opened_at"`
	ChangedAt    time.Time `json:"changed_at"` // the condition's last change: opened, cleared, reopened
	ClearedAt    time.Time `json:"cleared_at,omitzero"`
	TriagedAt    time.Time `json:"triaged_at,omitzero"`
	TriagedBy    string    `json:"triaged_by,omitempty"`
	Reason       string    `json:"reason,omitempty"` // why the triage is what it is
	Events       int       `json:"events"`
	// NeedsYou: the incident is new, or snoozed and due, as the plane read it.
	NeedsYou bool `json:"needs_you"`
}

// IncidentEvent is one change on an incident's timeline.
type IncidentEvent struct {
	IncidentID   string    `json:"incident_id"`
	Seq          int       `json:"seq"`
	At           time.Time `json:"at"`
	Kind         EventKind `json:"kind"`
	Actor        string    `json:"actor"` // plane, node, or the token that did it
	Triage       Triage    `json:"triage,omitempty"`
	SnoozedUntil time.Time `json:"snoozed_until,omitzero"`
	Text         string    `json:"text,omitempty"`
}

// IncidentChange is the answer of POST /incidents/{id}/triage: the event written (Seq 0 when the
// incident already had that triage and nothing changed) and the incident after it.
type IncidentChange struct {
	Incident      Incident      `json:"incident"`
	Event         IncidentEvent `json:"event"`
	Notifications int           `json:"notifications"` // notifications queued with the event
}

// IncidentList is the answer of GET /incidents, newest first.
type IncidentList struct {
	Incidents  []Incident `json:"incidents"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// IncidentDetail is the answer of GET /incidents/{id}: the incident, its timeline (oldest first), the
// case it follows (recipe sources only) and its notifications.
type IncidentDetail struct {
	Incident      Incident        `json:"incident"`
	Events        []IncidentEvent `json:"events"`
	Case          *Case           `json:"case,omitempty"`
	Notifications []Notification  `json:"notifications"`
}

// CaseState is whether a node's case is open or closed.
type CaseState string

const (
	CaseOpen   CaseState = "open"
	CaseClosed CaseState = "closed"
)

// Case is one escalation a node's recipe raised, as the plane keeps it. Its texts and body are the
// node's: show them as text.
type Case struct {
	NodeID     string          `json:"node_id"`
	ID         int64           `json:"id"`
	Recipe     string          `json:"recipe"`
	State      CaseState       `json:"state"`
	OpenedAt   time.Time       `json:"opened_at"`           // as the node says
	ClosedAt   time.Time       `json:"closed_at,omitzero"`  // as the node says, or when the plane closed it
	ClosedBy   string          `json:"closed_by,omitempty"` // node, or plane when a newer case superseded it
	Summary    string          `json:"summary"`
	Body       json.RawMessage `json:"body,omitempty"`
	Notes      []CaseNote      `json:"notes,omitempty"`
	ReceivedAt time.Time       `json:"received_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// CaseNote is one note on a case: a further failing check from the node, or the plane's own word.
type CaseNote struct {
	Author     string    `json:"author"` // node or plane
	Seq        int64     `json:"seq"`
	At         time.Time `json:"at"`
	Text       string    `json:"text"`
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

// NotificationState is where a webhook notification stands. Delivered and failed are final.
type NotificationState string

const (
	NotificationPending   NotificationState = "pending"
	NotificationDelivered NotificationState = "delivered"
	NotificationFailed    NotificationState = "failed"
)

// Notification is one incident event on its way to one webhook, with every attempt.
type Notification struct {
	ID         string                `json:"id"`
	IncidentID string                `json:"incident_id"`
	EventSeq   int                   `json:"event_seq"`
	Webhook    string                `json:"webhook"`
	Kind       EventKind             `json:"kind"` // opened or reopened
	State      NotificationState     `json:"state"`
	Attempts   int                   `json:"attempts"`
	NextAt     time.Time             `json:"next_at"`
	LastError  string                `json:"last_error,omitempty"`
	CreatedAt  time.Time             `json:"created_at"`
	FinishedAt time.Time             `json:"finished_at,omitzero"`
	History    []NotificationAttempt `json:"history,omitempty"`
}

// NotificationAttempt is one try at delivering a notification.
type NotificationAttempt struct {
	Attempt  int       `json:"attempt"`
	At       time.Time `json:"at"`
	Status   int       `json:"status,omitempty"` // the webhook's HTTP status; 0 when it gave none
	Error    string    `json:"error,omitempty"`
	Duration int64     `json:"duration_ms"`
}

// TriageRequest is the body of POST /incidents/{id}/triage: new, resolved or ignored, or snoozed
// ("snooze" is taken too) For one of the snooze lengths. Setting the triage an incident already has
// changes nothing.
type TriageRequest struct {
	Triage string `json:"triage"`
	For    string `json:"for,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// NoteRequest is the body of POST /incidents/{id}/notes: a note for the timeline, not blank.
type NoteRequest struct {
	Text string `json:"text"`
}

// SnoozeLengths names the lengths an incident may be snoozed for, for messages.
const SnoozeLengths = "4h, 1d, 3d or 1w"

// Snooze returns the length a TriageRequest's For names. There are a few, so that a snooze means the
// same to everyone reading the timeline.
func Snooze(length string) (time.Duration, bool) {
	switch length {
	case "4h":
		return 4 * time.Hour, true
	case "1d":
		return 24 * time.Hour, true
	case "3d":
		return 72 * time.Hour, true
	case "1w":
		return 7 * 24 * time.Hour, true
	}
	return 0, false
}
