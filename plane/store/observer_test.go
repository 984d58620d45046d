package store_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// counter is an Observer that counts the runs it is told of.
type counter struct{ runs, named atomic.Int64 }

func (c *counter) Statement(name string) store.StatementTimer {
	c.named.Add(1)
	return c
}

func (c *counter) Observe(time.Duration, bool) { c.runs.Add(1) }

// TestSQLiteObserved runs the whole suite on stores opened as lexicon-plane serve opens them, with
// every statement timed: the timing wrapper around the driver changes no rule.
func TestSQLiteObserved(t *testing.T) {
	obs := &counter{}
	storetest.Run(t, func(t testing.TB) storetest.Env {
		path := filepath.Join(t.TempDir(), "plane.db")
		openOne := func(t testing.TB) store.Store {
			s, err := open.URL(context.Background(), path, open.WithObserver(obs))
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		return storetest.Env{Store: openOne(t), Peer: openOne}
	})
	if obs.runs.Load() == 0 || obs.named.Load() == 0 {
		t.Fatalf("the observer was told of %d runs of %d statements", obs.runs.Load(), obs.named.Load())
	}
}
