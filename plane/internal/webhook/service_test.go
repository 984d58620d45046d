package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
)

// The service delivers once at start and at once when woken, without waiting for its tick.
func TestServiceDeliversAtStartAndWhenWoken(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	hit := make(chan int, 10) // buffered: a failing test must not leave the handler blocked
	r := newReceiver(t, func(n int) int { hit <- n; return http.StatusAccepted })
	e := webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: r.URL}
	f.open(1, "ops")
	svc := webhook.NewService(f.deliverer(e), 0)
	stopped := make(chan struct{})
	svc.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != webhook.DefaultDeliverEvery {
			t.Errorf("ticker of %s, want %s", d, webhook.DefaultDeliverEvery)
		}
		return nil, func() { close(stopped) } // never ticks: only the start and Wake deliver
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := <-hit; n != 1 {
		t.Fatalf("request %d at start", n)
	}
	f.close(1)
	f.open(2, "ops") // reopens the incident: a second notification
	svc.Wake()
	svc.Wake() // coalesces with the first; never blocks
	if n := <-hit; n != 2 {
		t.Fatalf("request %d after Wake", n)
	}
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopped
	if got := len(r.got()); got != 2 {
		t.Fatalf("webhook got %d requests, want 2", got)
	}
}
