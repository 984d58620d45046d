package server

import (
	"context"
	"testing"
	"time"
)

// The first long poll on a connection is held anywhere from a tenth of the wait to all of it, so that
// agents that connected together spread out; the later ones, and any on a connection the plane did not
// mark, in the last fifth.
func TestHoldSpreadsFirstLongPollOnConnection(t *testing.T) {
	const w = 25 * time.Second
	s := &Server{cfg: Config{ClaimWait: w}}
	inLastFifth := func(d time.Duration) bool { return d >= w-w/5 && d <= w }
	early := false
	for range 200 {
		conn := ConnContext(context.Background(), nil)
		first := s.holdFor(conn)
		if first < w/10 || first > w {
			t.Fatalf("first hold %v outside [%v, %v]", first, w/10, w)
		}
		early = early || first < w-w/5
		if d := s.holdFor(conn); !inLastFifth(d) {
			t.Fatalf("second hold on a connection %v outside the last fifth", d)
		}
		if d := s.holdFor(context.Background()); !inLastFifth(d) {
			t.Fatalf("hold on an unmarked connection %v outside the last fifth", d)
		}
	}
	if !early {
		t.Fatal("200 first holds all fell in the last fifth: the first hold is not spread")
	}
}
