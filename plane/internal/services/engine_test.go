package services_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestEngineBaseDefaults: the zero value leases for 30 s, reads the real clock in UTC and logs to the
// default logger.
func TestEngineBaseDefaults(t *testing.T) {
	var b services.EngineBase
	if b.TTL() != services.DefaultLeaseTTL || b.Time().Location() != time.UTC || b.Logger() != slog.Default() {
		t.Fatalf("zero EngineBase: ttl %s, time %s, logger default %v", b.TTL(), b.Time(), b.Logger() == slog.Default())
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	b = services.EngineBase{LeaseTTL: time.Minute, Now: func() time.Time { return at }}
	if b.TTL() != time.Minute || !b.Time().Equal(at) || b.Time().Location() != time.UTC {
		t.Fatalf("set EngineBase: ttl %s, time %s", b.TTL(), b.Time())
	}
	if services.NewHolder() == services.NewHolder() {
		t.Fatal("two holders of one process have one name")
	}
}

// TestEngineBaseService: the pass runs at start and again at once on Wake (a Wake before the service
// exists is kept), and a failed pass is logged with its error under "err".
func TestEngineBaseService(t *testing.T) {
	var logs bytes.Buffer
	b := &services.EngineBase{Log: slog.New(slog.NewTextHandler(&logs, nil))}
	b.Wake() // before the service: kept for its first wait
	b.Wake() // coalesces
	tk := newManualTicker()
	ran := make(chan struct{})
	p := b.Service("test engine", time.Hour, func(ctx context.Context) error {
		select {
		case ran <- struct{}{}:
		case <-ctx.Done():
		}
		return errcode.New(errcode.StoreBusy, "busy")
	})
	p.NewTicker = tk.new
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-ran // at start
	<-ran // the wake-ups, coalesced into one pass
	b.Wake()
	<-ran
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `msg="pass failed" service="test engine" err=`) {
		t.Fatalf("log: %s", logs.String())
	}
}
