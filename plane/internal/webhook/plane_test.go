package webhook_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestPlaneIncidentNamesItsSubject: an incident of the plane itself (a replica gone silent) reaches a
// JSON webhook with its subject and no node, and PagerDuty triggers and resolves it under one dedup key
// that holds the subject; two replicas missing are two alerts.
func TestPlaneIncidentNamesItsSubject(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	pd := newReceiver(t, always(http.StatusAccepted))
	js := newReceiver(t, always(http.StatusOK))
	d := f.deliverer(webhook.Endpoint{Name: "pd", Format: webhook.FormatPagerDuty, URL: pd.URL, RoutingKey: "R0UTING"},
		webhook.Endpoint{Name: "js", Format: webhook.FormatJSON, URL: js.URL})
	ctx := t.Context()
	t0 := f.clock.Now()
	for _, id := range []string{"plane-a", "plane-b"} {
		if _, err := f.s.ReplicaHeartbeat(ctx, store.ReplicaHeartbeatParams{ID: id, StartedAt: t0, Lease: time.Minute, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(2 * time.Minute)
	res, err := f.s.IncidentReconcile(ctx, store.IncidentReconcileParams{Now: f.clock.Now(), Notify: []string{"pd", "js"}})
	if err != nil || len(res.Changes) != 2 {
		t.Fatalf("reconcile: %v %+v", err, res)
	}
	f.deliver(d, 4)

	var msgs []webhook.Message
	for _, b := range js.got() {
		var m webhook.Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) != 2 || msgs[0].Incident.Subject == msgs[1].Incident.Subject || msgs[0].Incident.NodeID != "" ||
		!strings.HasPrefix(msgs[0].Incident.Subject, "plane-") || msgs[0].Incident.Source != store.DetectorReplicaMissing {
		t.Fatalf("json webhook got %+v", msgs)
	}
	var events []webhook.PagerDutyEvent
	for _, b := range pd.got() {
		var e webhook.PagerDutyEvent
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if len(events) != 2 || events[0].DedupKey == events[1].DedupKey {
		t.Fatalf("pagerduty got %+v", events)
	}
	for _, e := range events {
		sub := e.Payload.CustomDetails.Subject
		if sub == "" || !strings.HasSuffix(e.DedupKey, ":"+sub) || !strings.Contains(e.Payload.Summary, sub) || e.Payload.Source == "" {
			t.Fatalf("trigger %+v does not name its subject", e)
		}
	}

	// plane-a comes back: its alert is resolved under the key that triggered it.
	if _, err := f.s.ReplicaHeartbeat(ctx, store.ReplicaHeartbeatParams{ID: "plane-a", StartedAt: t0, Lease: time.Minute, Now: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.IncidentReconcile(ctx, store.IncidentReconcileParams{Now: f.clock.Now(), Notify: []string{"pd", "js"}}); err != nil {
		t.Fatal(err)
	}
	f.deliver(d, 2)
	var resolve webhook.PagerDutyEvent
	got := pd.got()
	if err := json.Unmarshal(got[len(got)-1], &resolve); err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, e := range events {
		if e.Payload.CustomDetails.Subject == "plane-a" {
			want = e.DedupKey
		}
	}
	if resolve.EventAction != "resolve" || resolve.DedupKey != want {
		t.Fatalf("resolve %+v, want dedup key %s", resolve, want)
	}
}
