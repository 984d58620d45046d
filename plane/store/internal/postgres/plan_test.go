package postgres_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// The statements of a round trip look up one node's running job. On a fresh store, where every partial
// index over running jobs costs the same, the generic plan a pooled connection keeps must still reach
// that job through jobs_one_running, never by scanning the expiry sweep's index of every running job
// in the fleet; the sweep must still be able to use its index.
func TestRoundTripPlansProbeTheNodesRunningJob(t *testing.T) {
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

	for name, query := range map[string]string{
		"JobClaim": q.JobClaim, "JobClaimLock": q.JobClaimLock, "JobFinishClaim": q.JobFinishClaim,
		"JobLoseRunning": q.JobLoseRunning,
	} {
		plan := genericPlan(t, ctx, conn, name, query)
		if strings.Contains(plan, "jobs_running_deadline") {
			t.Errorf("%s's generic plan scans the expiry sweep's index:\n%s", name, plan)
		}
		if !strings.Contains(plan, "jobs_one_running") {
			t.Errorf("%s's generic plan does not probe jobs_one_running:\n%s", name, plan)
		}
	}

	// The sweep itself, with a scan of the whole table priced out: its index must be usable.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	if plan := genericPlan(t, ctx, conn, "JobExpire", q.JobExpire); !strings.Contains(plan, "jobs_running_deadline") {
		t.Errorf("JobExpire cannot use jobs_running_deadline:\n%s", plan)
	}
}

var paramRE = regexp.MustCompile(`\$(\d+)`)

// genericPlan prepares query as name and explains its generic plan, with NULL for every parameter
// (a generic plan does not depend on them).
func genericPlan(t *testing.T, ctx context.Context, conn *pgx.Conn, name, query string) string {
	t.Helper()
	n := 0
	for _, m := range paramRE.FindAllStringSubmatch(query, -1) {
		if i, _ := strconv.Atoi(m[1]); i > n {
			n = i
		}
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("PREPARE %s AS %s", name, query)); err != nil {
		t.Fatalf("prepare %s: %v", name, err)
	}
	args := strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
	rows, err := conn.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE %s(%s)", name, args), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("explain %s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain %s: %v", name, err)
	}
	return strings.Join(lines, "\n")
}
