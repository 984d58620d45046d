package webhook

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// PagerDutyEvent is a PagerDuty Events API v2 event
// (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/). An incident that opens or
// reopens triggers an alert; one that clears resolves it, under the same dedup key (DedupKey: the
// incident id, and for the plane's own incidents its subject too).
type PagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"` // trigger or resolve
	DedupKey    string            `json:"dedup_key"`
	Payload     *PagerDutyPayload `json:"payload,omitempty"` // a trigger's; a resolve carries none
	Client      string            `json:"client,omitempty"`
}

// PagerDutyPayload is the event's payload. Summary is at most 1024 characters.
type PagerDutyPayload struct {
	Summary       string        `json:"summary"`
	Source        string        `json:"source"`
	Severity      string        `json:"severity"` // critical, error, warning or info
	Timestamp     time.Time     `json:"timestamp"`
	Component     string        `json:"component,omitempty"`
	Group         string        `json:"group,omitempty"`
	Class         string        `json:"class,omitempty"`
	CustomDetails CustomDetails `json:"custom_details"`
}

// CustomDetails carries the incident as the plane sees it.
type CustomDetails struct {
	IncidentID string `json:"incident_id"`
	Event      string `json:"event"`     // opened or reopened
	NodeID     string `json:"node_id"`   // "" for the plane's own incidents
	NodeName   string `json:"node_name"` // "" for the plane's own incidents
	Source     string `json:"source"`
	Subject    string `json:"subject,omitempty"` // what a plane incident is about: a driver, replica or route
	CaseID     int64  `json:"case_id,omitempty"`
	Summary    string `json:"summary"`
}

// Message is the plain JSON body: one event of one incident. NotificationID is the same on every retry of
// one notification, so a receiver can drop repeats.
type Message struct {
	Type           string         `json:"type"` // incident.opened, incident.reopened or incident.cleared
	NotificationID string         `json:"notification_id"`
	EventSeq       int            `json:"event_seq"`
	Incident       store.Incident `json:"incident"`
}

// pagerDutySummaryMax is PagerDuty's limit on payload.summary; pagerDutyFieldMax the one on dedup_key
// (and a reasonable one on source).
const (
	pagerDutySummaryMax = 1024
	pagerDutyFieldMax   = 255
)

// planeSource is the group of the plane's own incidents (which have no node).
const planeSource = "lexicon-plane"

// DedupKey is the PagerDuty dedup key of an incident, the same for its trigger and its resolve: the
// incident id, and for the plane's own incidents ":" and the subject as well, so that an alert names
// the driver, replica or route it is about. A node's incident keeps the bare id, as before plane
// incidents existed, so that an alert triggered by an older plane is still resolved.
func DedupKey(inc store.Incident) string {
	if inc.Subject == "" {
		return inc.ID
	}
	return cutBytes(inc.ID+":"+inc.Subject, pagerDutyFieldMax)
}

// cutBytes shortens s to at most max bytes, on a rune boundary.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Body is what endpoint e receives for notification n of incident inc.
func Body(e Endpoint, n store.Notification, inc store.Incident) ([]byte, error) {
	switch e.Format {
	case FormatPagerDuty:
		if n.Kind == store.EventCleared {
			return json.Marshal(PagerDutyEvent{RoutingKey: e.RoutingKey, EventAction: "resolve", DedupKey: DedupKey(inc), Client: "Lexicon"})
		}
		// A plane incident has no node: it is about the plane, its subject naming which part.
		on, group := inc.NodeName, inc.NodeID
		if inc.NodeID == "" {
			on, group = "the plane ("+inc.Subject+")", planeSource
		}
		summary := fmt.Sprintf("%s on %s: %s", inc.Source, on, inc.Summary)
		if n.Kind == store.EventReopened {
			summary = "(reopened) " + summary
		}
		return json.Marshal(PagerDutyEvent{
			RoutingKey: e.RoutingKey, EventAction: "trigger", DedupKey: DedupKey(inc), Client: "Lexicon",
			Payload: &PagerDutyPayload{
				Summary: cut(summary, pagerDutySummaryMax), Source: cut(on, pagerDutyFieldMax), Severity: string(inc.Severity),
				Timestamp: inc.ChangedAt, Component: inc.Source, Group: group, Class: inc.Source,
				CustomDetails: CustomDetails{IncidentID: inc.ID, Event: string(n.Kind), NodeID: inc.NodeID,
					NodeName: inc.NodeName, Source: inc.Source, Subject: inc.Subject, CaseID: inc.CaseID, Summary: inc.Summary},
			},
		})
	case FormatJSON:
		return json.Marshal(Message{Type: "incident." + string(n.Kind), NotificationID: n.ID, EventSeq: n.EventSeq, Incident: inc})
	}
	return nil, fmt.Errorf("webhook %s has no format", e.Name)
}

// cut shortens s to at most max characters.
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
