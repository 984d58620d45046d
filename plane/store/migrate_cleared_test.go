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

// The SQLite migration that lets notifications be 'cleared' builds the table again: the rows and the
// attempts that reference them come through whole, with every foreign key still matched.
func TestSQLiteNotifyClearedMigrationKeepsRows(t *testing.T) {
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
	res, err := s.CaseIntake(ctx, store.CaseIntakeParams{NodeID: node.Node.ID, Now: now, Notify: []string{"pd", "ops"},
		Cases: []store.CaseReport{{ID: 1, Recipe: "unit_health", State: store.CaseOpen, OpenedAt: now, Summary: "failed"}}})
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("CaseIntake: %v %+v", err, res)
	}
	inc := res.Changes[0].Incident.ID
	if _, err := s.NotificationClaim(ctx, store.NotificationClaimParams{Webhooks: []string{"pd", "ops"}, Now: now}); err != nil {
		t.Fatal(err)
	}
	before, err := s.NotificationList(ctx, store.NotificationListParams{IncidentID: inc})
	if err != nil || len(before) != 2 || len(before[0].History) != 1 {
		t.Fatalf("before: %v %+v", err, before)
	}
	_ = s.Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM lexicon_migrations WHERE name = 'notify_cleared'`); err != nil {
		t.Fatal(err)
	}
	s = storetest.Open(t, path) // runs the migration again, over rows with attempts
	after, err := s.NotificationList(ctx, store.NotificationListParams{IncidentID: inc})
	if err != nil || len(after) != 2 || len(after[0].History) != 1 || after[0].ID != before[0].ID || after[1].ID != before[1].ID {
		t.Fatalf("after: %v %+v", err, after)
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
