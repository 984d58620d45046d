package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// The statements of a round trip look up one node's rows. On a fresh store, where every index costs
// the same, the generic plans a pooled connection keeps must still probe by node: never scan the expiry
// sweep's index of every running job, or the index of every active node's name, filtered by node. The
// sweep and the lookup by name must still be able to use their indexes.
func TestRoundTripPlansProbeByNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := storetest.PostgresURL(t)
	st, err := open.Postgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, _, err := sqldb.Load(postgres.Files)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}

	// Every statement looks up one node's rows; those of a claim or result, its running job too.
	byNode := map[string]string{"NodeSeen": q.NodeSeen, "NodeReport": q.NodeReport, "JobClaim": q.JobClaim,
		"JobClaimLock": q.JobClaimLock, "JobFinishClaim": q.JobFinishClaim, "JobLoseRunning": q.JobLoseRunning}
	for name, query := range byNode {
		plan := genericPlan(t, ctx, conn, name, query)
		for _, scan := range []string{"jobs_running_deadline", "nodes_active_name"} {
			if strings.Contains(plan, scan) {
				t.Errorf("%s's generic plan scans %s:\n%s", name, scan, plan)
			}
		}
		if strings.HasPrefix(name, "Job") && !strings.Contains(plan, "jobs_one_running") {
			t.Errorf("%s's generic plan does not probe jobs_one_running:\n%s", name, plan)
		}
	}

	// With a scan of the whole table priced out, each index's own query must be able to use it.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ query, index string }{
		"JobExpire":     {q.JobExpire, "jobs_running_deadline"},
		"NodeGetByName": {q.NodeGetByName, "nodes_active_name"},
	} {
		if plan := genericPlan(t, ctx, conn, name, c.query); !strings.Contains(plan, c.index) {
			t.Errorf("%s cannot use %s:\n%s", name, c.index, plan)
		}
	}
}

// genericPlan prepares query as name and explains its generic plan, with NULL for every parameter
// the server found in it (a generic plan does not depend on them).
func genericPlan(t *testing.T, ctx context.Context, conn *pgx.Conn, name, query string) string {
	t.Helper()
	sd, err := conn.Prepare(ctx, name, query)
	if err != nil {
		t.Fatalf("prepare %s: %v", name, err)
	}
	args := strings.TrimSuffix(strings.Repeat("NULL, ", len(sd.ParamOIDs)), ", ")
	rows, err := conn.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE %s(%s)", pgx.Identifier{name}.Sanitize(), args), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("explain %s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain %s: %v", name, err)
	}
	return strings.Join(lines, "\n")
}
