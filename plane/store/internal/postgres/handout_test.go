package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// A hand-out after a wake-up runs while every connection of the main pool is taken, as in a wave of
// long polls renewing; other pipelines wait for the main pool.
func TestHandOutDoesNotQueueBehindMainPool(t *testing.T) {
	// The bound only keeps a broken build from hanging the suite; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := postgres.Open(ctx, storetest.PostgresURL(t)+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	held, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- d.Tx(ctx, func(sqldb.Execer) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held // the main pool's one connection is taken until release

	one := func() []sqldb.Step {
		return []sqldb.Step{{Query: "SELECT 1", Scan: func(r sqldb.Row) error { var n int; return r.Scan(&n) }}}
	}
	plain := make(chan error, 1)
	go func() { plain <- d.Pipeline(ctx, one()) }()

	if err := d.Pipeline(sqldb.HandOut(ctx), one()); err != nil {
		t.Fatalf("hand-out with the main pool taken: %v", err)
	}
	select {
	case err := <-plain:
		t.Fatalf("a plain pipeline ran while the main pool's only connection was taken (err %v)", err)
	default:
	}
	close(release)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	if err := <-plain; err != nil {
		t.Fatalf("plain pipeline once the main pool is free: %v", err)
	}
}
