package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// nullDriver answers every statement at once, so that a benchmark measures the wrapper alone.
type nullDriver struct{ sqldb.Driver }

func (nullDriver) Exec(context.Context, string, ...any) (int64, error) { return 1, nil }
func (nullDriver) Writer() sqldb.Execer                                { return nullDriver{} }
func (nullDriver) Kind(error) sqldb.ErrKind                            { return sqldb.ErrOther }
func (nullDriver) Tx(ctx context.Context, fn func(sqldb.Execer) error) error {
	return fn(nullDriver{})
}

type names map[string]int

func (n names) Statement(name string) StatementTimer { n[name]++; return nopTimer{} }

type nopTimer struct{}

func (nopTimer) Observe(time.Duration, bool) {}

// TestObservedNames: each statement is timed under its block's name, a transaction's commit as
// commit, SQL without a block as other, and every name is resolved at open, once.
func TestObservedNames(t *testing.T) {
	q, _, err := sqldb.Load(postgres.Files)
	if err != nil {
		t.Fatal(err)
	}
	seen := names{}
	o := observe(nullDriver{}, q, seen)
	for _, name := range []string{"JobClaim", "NodeReport", "commit", "other"} {
		if seen[name] != 1 {
			t.Errorf("%s resolved %d times", name, seen[name])
		}
	}
	if got := o.names[o.index[q.JobClaim]]; got != "JobClaim" {
		t.Errorf("JobClaim's SQL is timed as %q", got)
	}
	if o.timer("SELECT 1") != o.other {
		t.Error("SQL without a block is not timed as other")
	}
}

// BenchmarkObservedExec is the cost the statement timing adds to each statement (make bench).
func BenchmarkObservedExec(b *testing.B) {
	q, _, err := sqldb.Load(postgres.Files)
	if err != nil {
		b.Fatal(err)
	}
	o := observe(nullDriver{}, q, names{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = o.Exec(ctx, q.JobClaim, "n1")
	}
}

// BenchmarkUnobservedExec is the same statement without the wrapper, for comparison.
func BenchmarkUnobservedExec(b *testing.B) {
	q, _, err := sqldb.Load(postgres.Files)
	if err != nil {
		b.Fatal(err)
	}
	var d sqldb.Execer = nullDriver{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = d.Exec(ctx, q.JobClaim, "n1")
	}
}
