package vocab_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestFloorHoldsStatementBack: an agent below a statement's floor keeps its vocabulary and offers the
// statement to its updater; an agent at the floor takes it.
func TestFloorHoldsStatementBack(t *testing.T) {
	r1 := vocabtest.Build(t, mods()[:1]...)
	modules := filepath.Join(t.TempDir(), "modules")
	v, err := vocab.Open(r1.Trust, modules, nil)
	must(t, err)
	v.SetAgentVersion("1.0.0")
	must(t, v.Sync(context.Background(), r1, channel.StatementRef{}))
	r2 := r1.Next(t, vocabtest.Options{Floor: "2.0.0"}, mods()...)
	testkit.WantCode(t, v.Sync(context.Background(), r2, channel.StatementRef{}), errcode.AgentNeedsNewerAgent)
	if v.Ref().Sequence != 1 || v.BelowFloor() != "2.0.0" || v.Offer().Statement.Predicate.Sequence != 2 || len(v.Recipes()) != 0 {
		t.Fatalf("below the floor: sequence %d, floor %q, offer %d, recipes %d", v.Ref().Sequence, v.BelowFloor(), v.Offer().Statement.Predicate.Sequence, len(v.Recipes()))
	}
	// The new agent, at the floor, takes it from the same state folder.
	v2, err := vocab.Open(r1.Trust, modules, nil)
	must(t, err)
	v2.SetAgentVersion("2.0.0")
	must(t, v2.Sync(context.Background(), r2, channel.StatementRef{}))
	if v2.Ref().Sequence != 2 || v2.BelowFloor() != "" || len(v2.Recipes()) != 2 {
		t.Fatalf("at the floor: sequence %d floor %q", v2.Ref().Sequence, v2.BelowFloor())
	}
}

// TestExpiredStatementFreezes: once the statement's expiry passes, jobs and repairs are refused with
// statement.expired and the node says so; a renewed statement thaws it.
func TestExpiredStatementFreezes(t *testing.T) {
	r1 := vocabtest.BuildWith(t, vocabtest.Options{Expires: time.Hour}, mods()[:1]...)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v, err := vocab.Open(r1.Trust, filepath.Join(t.TempDir(), "modules"), clock)
	must(t, err)
	must(t, v.Sync(context.Background(), r1, channel.StatementRef{}))
	if v.CheckExpiry() || v.Frozen() != nil {
		t.Fatal("frozen before the expiry")
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if !v.CheckExpiry() {
		t.Fatal("not frozen after the expiry")
	}
	testkit.WantCode(t, v.Frozen(), errcode.StatementExpired)
	if !strings.HasPrefix(v.Untrusted(), errcode.StatementExpired) {
		t.Fatalf("untrusted %q", v.Untrusted())
	}
	must(t, v.Sync(context.Background(), r1.Next(t, vocabtest.Options{}, mods()[:1]...), channel.StatementRef{}))
	if v.CheckExpiry() || v.Frozen() != nil || v.Untrusted() != "" {
		t.Fatalf("still frozen after a renewal: %q", v.Untrusted())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
