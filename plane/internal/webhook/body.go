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
// reopens triggers an alert; one that clears resolves it, under the same dedup key (the incident id).
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
	Event      string `json:"event"` // opened or reopened
	NodeID     string `json:"node_id"`
	NodeName   string `json:"node_name"`
	Source     string `json:"source"`
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

// pagerDutySummaryMax is PagerDuty's limit on payload.summary.
const pagerDutySummaryMax = 1024

// Body is what endpoint e receives for notification n of incident inc.
func Body(e Endpoint, n store.Notification, inc store.Incident) ([]byte, error) {
	switch e.Format {
	case FormatPagerDuty:
		if n.Kind == store.EventCleared {
			return json.Marshal(PagerDutyEvent{RoutingKey: e.RoutingKey, EventAction: "resolve", DedupKey: inc.ID, Client: "Lexicon"})
		}
		summary := fmt.Sprintf("%s on %s: %s", inc.Source, inc.NodeName, inc.Summary)
		if n.Kind == store.EventReopened {
			summary = "(reopened) " + summary
		}
		return json.Marshal(PagerDutyEvent{
			RoutingKey: e.RoutingKey, EventAction: "trigger", DedupKey: inc.ID, Client: "Lexicon",
			Payload: &PagerDutyPayload{
				Summary: cut(summary, pagerDutySummaryMax), Source: inc.NodeName, Severity: string(inc.Severity),
				Timestamp: inc.ChangedAt, Component: inc.Source, Group: inc.NodeID, Class: inc.Source,
				CustomDetails: CustomDetails{IncidentID: inc.ID, Event: string(n.Kind), NodeID: inc.NodeID,
					NodeName: inc.NodeName, Source: inc.Source, CaseID: inc.CaseID, Summary: inc.Summary},
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
