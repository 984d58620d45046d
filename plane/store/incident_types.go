package store

import (
	"regexp"
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

// Triage is what a person says is being done.
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

// The plane's detectors, by source name.
const (
	DetectorAgentSilent      = "plane:agent_silent"
	DetectorRefusals         = "plane:refusals"
	DetectorLostJobs         = "plane:lost_jobs"
	DetectorUntrustedRelease = "plane:untrusted_release"
	// The plane's own health: these concern the plane, not a node (Incident.NodeID is "", Subject
	// names the driver, replica or route).
	DetectorDriverFailing  = "plane:driver_failing"
	DetectorMemory         = "plane:memory"
	DetectorRouteFailing   = "plane:route_failing"
	DetectorReplicaMissing = "plane:replica_missing"
	// DetectorAgentUpdateRefused: the node refused the agent its statement offers (verify_failed,
	// probe_failed, rejected); cleared when the node reports current.
	DetectorAgentUpdateRefused = "plane:agent_update_refused"
	// DetectorRolloutHalted: a rollout halted on a miss (Subject is the rollout's id, the summary names
	// the node and the reason); cleared when it is resumed, aborted or reverted. A halted rollout waits
	// for an operator, so it notifies like any incident.
	DetectorRolloutHalted = "plane:rollout_halted"
	// DetectorReleaseExpiring: a release some active node is served expires within the lead
	// (IncidentReconcileParams.ExpiryLead; subject release:<sequence>, warning). It clears once no
	// active node is served it (a newer release was rolled out) or the lead no longer reaches it.
	DetectorReleaseExpiring = "plane:release_expiring"
)

// DefaultRefusalThreshold is how many refusals in the last hour a node may have before the refusals
// detector opens an incident, when IncidentReconcileParams names no threshold.
const DefaultRefusalThreshold = 5

// Incident is one condition: a source on one node, or a source about one subject of the plane itself
// (a driver, a replica, a route pattern), which has no node.
type Incident struct {
	ID       string `json:"id"`
	NodeID   string `json:"node_id"`   // "" for the plane's own incidents
	NodeName string `json:"node_name"` // "" for the plane's own incidents
	Source   string `json:"source"`
	// Subject is what a plane incident is about ("dns-memory", a replica id, "GET /api/v1/admin/nodes");
	// "" for a node's incidents.
	Subject      string    `json:"subject,omitempty"`
	Severity     Severity  `json:"severity"`
	Condition    Condition `json:"condition"`
	Triage       Triage    `json:"triage"`
	SnoozedUntil time.Time `json:"snoozed_until,omitzero"`
	// Summary says what the condition is. For a case it is the node's own text: show it as text.
	Summary   string    `json:"summary"`
	CaseID    int64     `json:"case_id,omitempty"` // the node's case, for recipe:<name> sources
	OpenedAt  time.Time `json:"opened_at"`
	ChangedAt time.Time `json:"changed_at"` // the condition's last change: opened, cleared, reopened
	ClearedAt time.Time `json:"cleared_at,omitzero"`
	TriagedAt time.Time `json:"triaged_at,omitzero"`
	TriagedBy string    `json:"triaged_by,omitempty"`
	Reason    string    `json:"reason,omitempty"` // why the triage is what it is
	Events    int       `json:"events"`
	// NeedsYou is NeedsYouAt the time the incident was read.
	NeedsYou bool `json:"needs_you"`
}

// NeedsYouAt reports whether the incident needs a person at t: it is new, or snoozed and due.
func (i Incident) NeedsYouAt(t time.Time) bool {
	return i.Triage == TriageNew || (i.Triage == TriageSnoozed && !i.SnoozedUntil.After(t))
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

// IncidentChange is one event a call wrote, with the incident as it stood after it.
type IncidentChange struct {
	Incident      Incident      `json:"incident"`
	Event         IncidentEvent `json:"event"`
	Notifications int           `json:"notifications"` // notifications queued with the event
}

type IncidentReconcileParams struct {
	Now time.Time
	// Up is when this plane process started. Silence is counted from it as well as from a node's
	// last claim: a plane that was down has not heard anyone, and must not call the fleet silent.
	Up time.Time
	// SilentAfter: 0 means 10 minutes.
	SilentAfter time.Duration
	// RefusalThreshold and LostThreshold: more than this many in the last hour opens the incident.
	// Negative means the default.
	RefusalThreshold, LostThreshold int
	ReopenWithin                    time.Duration // 0: an hour; at most a week
	// Health is how the plane's own detectors judge; zero fields mean their defaults.
	Health HealthThresholds
	// Notify names the webhooks that each opened or reopened incident notifies.
	Notify []string
	// Packages is how the package detectors judge (plane:old_code_serving,
	// plane:critical_fix_waiting).
	Packages PackageThresholds
	// ExpiryLead is how long before the fleet's release expires plane:release_expiring opens; 0 means
	// DefaultExpiryLead.
	ExpiryLead time.Duration
}

// DefaultExpiryLead is how long before a served release expires its incident opens.
const DefaultExpiryLead = 14 * 24 * time.Hour

type IncidentReconcileResult struct {
	Changes []IncidentChange
}

type IncidentGetParams struct {
	ID  string
	Now time.Time // for NeedsYou
}

type IncidentCountParams struct{}

// IncidentCount is how many incidents have one condition and one triage.
type IncidentCount struct {
	Condition Condition `json:"condition"`
	Triage    Triage    `json:"triage"`
	Count     int64     `json:"count"`
}

type IncidentListParams struct {
	NodeID    string    // "" for every node
	NeedsYou  bool      // only incidents that are new, or snoozed and due at Now
	Condition Condition // "" for both
	Now       time.Time
	Limit     int // 0: 100
	Cursor    string
}

type IncidentListResult struct {
	Incidents  []Incident `json:"incidents"`
	NextCursor string     `json:"next_cursor,omitempty"` // "" on the last page
}

type IncidentEventListParams struct {
	ID string
}

type IncidentTriageParams struct {
	ID           string
	Triage       Triage
	SnoozedUntil time.Time // after Now, exactly when Triage is snoozed
	By           string
	Reason       string
	Now          time.Time
}

type IncidentNoteParams struct {
	ID   string
	By   string
	Text string
	Now  time.Time
}

var webhookNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// MaxWebhooks bounds the webhooks one incident notifies.
const MaxWebhooks = 32

// ValidWebhookName reports whether name may name a webhook.
func ValidWebhookName(name string) bool { return webhookNameRE.MatchString(name) }
