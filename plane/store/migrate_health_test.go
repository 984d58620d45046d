package store_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// The SQLite migration that lets an incident have no node builds the incidents table again: node
// incidents come through whole with subject ”, their events and notifications still matched.
func TestSQLitePlaneHealthMigrationKeepsIncidents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plane.db")
	s := storetest.Open(t, path)
	ctx, now := t.Context(), time.Now().UTC().Truncate(time.Second)
	pub := keys.NewNode().Public()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	node, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CaseIntake(ctx, store.CaseIntakeParams{NodeID: node.Node.ID, Now: now, Notify: []string{"pd"},
		Cases: []store.CaseReport{{ID: 1, Recipe: "unit_health", State: store.CaseOpen, OpenedAt: now, Summary: "failed"}}})
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("CaseIntake: %v %+v", err, res)
	}
	before := res.Changes[0].Incident
	_ = s.Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DELETE FROM lexicon_migrations WHERE name = 'plane_health'`, `DROP TABLE route_counts`,
		`DROP TABLE replicas`, `DROP INDEX driver_calls_at`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	s = storetest.Open(t, path) // runs the migration again, over an incident with events and a notification
	after, err := s.IncidentGet(ctx, store.IncidentGetParams{ID: before.ID, Now: now})
	if err != nil || after.NodeID != node.Node.ID || after.NodeName != "web-1" || after.Subject != "" || after.Events != before.Events ||
		after.CaseID != 1 || after.Condition != store.ConditionOpen {
		t.Fatalf("after: %v %+v, before %+v", err, after, before)
	}
	ns, err := s.NotificationList(ctx, store.NotificationListParams{IncidentID: before.ID})
	if err != nil || len(ns) != 1 {
		t.Fatalf("notifications: %v %+v", err, ns)
	}
	rows, err := db.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("a foreign key lost its row")
	}
}
