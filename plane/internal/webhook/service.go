package webhook

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
)

// DefaultDeliverEvery is how often a Service looks for due notifications when nothing wakes it.
const DefaultDeliverEvery = 5 * time.Second

// Service runs a Deliverer: once at start, then every interval, and at once whenever Wake is called
// (this process queued notifications and need not wait for the tick).
type Service struct {
	*services.Periodic
	d    *Deliverer
	wake chan struct{}
}

// NewService makes the delivery service; every 0 means DefaultDeliverEvery. Start runs it.
func NewService(d *Deliverer, every time.Duration) *Service {
	if every == 0 {
		every = DefaultDeliverEvery
	}
	s := &Service{d: d, wake: make(chan struct{}, 1)}
	s.Periodic = &services.Periodic{Name: "webhook delivery", Every: every, Wake: s.wake, RunAtStart: true, Step: s.deliver}
	return s
}

// Wake asks for a delivery pass now. It never blocks: wake-ups coalesce into one pending pass.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) deliver(ctx context.Context) {
	if _, err := s.d.DeliverDue(ctx); err != nil && ctx.Err() == nil {
		s.d.log().Warn("notification delivery failed", "err", err)
	}
}

var _ services.Service = (*Service)(nil)
