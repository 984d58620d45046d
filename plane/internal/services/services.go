// Package services runs the plane's background work (the replica's heartbeat, job expiry, sweeping
// expired nonces and joins, incident reconciling, webhook delivery) beside the HTTP server rather than
// inside it. Each piece is a
// Service that starts and stops; a Group starts a list of them and stops them in reverse order.
//
//	g := services.Group{expirer, sweeper, reconciler}
//	if err := g.Start(ctx); err != nil { ... }
//	defer g.Stop(context.WithoutCancel(ctx))
//
// Every replica runs every service: each step they take is idempotent, and the store serialises what
// must not run twice at once. The engines that advance records under a lease per record (rollouts,
// provisioning) share EngineBase: their holder name, lease TTL, clock, log and wake-up.
package services

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Service is background work with a lifetime: Start begins it and returns at once; the work runs until
// Stop, or until the context given to Start ends.
type Service interface {
	// Start begins the work. Starting a service that is running is refused.
	Start(ctx context.Context) error
	// Stop ends the work and returns when it has ended (every goroutine it started has returned), or
	// when ctx ends first, with ctx's error. Stopping a service that is not running does nothing.
	Stop(ctx context.Context) error
}

// Group is services started in order and stopped in reverse order. It is a Service itself.
type Group []Service

// Start starts every service in order. If one fails, those already started are stopped and its error
// is returned.
func (g Group) Start(ctx context.Context) error {
	for i, s := range g {
		if err := s.Start(ctx); err != nil {
			_ = g[:i].Stop(context.WithoutCancel(ctx))
			return err
		}
	}
	return nil
}

// Stop stops every service, the last started first, and returns their errors joined.
func (g Group) Stop(ctx context.Context) error {
	var errs []error
	for i := len(g) - 1; i >= 0; i-- {
		errs = append(errs, g[i].Stop(ctx))
	}
	return errors.Join(errs...)
}

// NewTickerFunc makes the ticker of a Periodic: a channel of ticks every d, and a function that stops
// it. Tests give their own, so that a tick is something they send rather than something they wait for.
type NewTickerFunc func(d time.Duration) (ticks <-chan time.Time, stop func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Periodic runs Step on every tick of Every, and whenever Wake receives, one step at a time, until it
// is stopped. A step that fails logs its own error: the next tick tries again.
type Periodic struct {
	// Name names the service in errors.
	Name  string
	Every time.Duration
	Step  func(ctx context.Context)
	// Wake, when not nil, runs the step at once (this process queued work and need not wait for the
	// tick).
	Wake <-chan struct{}
	// RunAtStart runs the step once as soon as the service starts, before the first tick.
	RunAtStart bool
	// NewTicker makes the ticker; nil means a time.Ticker.
	NewTicker NewTickerFunc

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start begins the loop in a goroutine of its own.
func (p *Periodic) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return errcode.New(errcode.InternalError, "service %s is already running", p.Name)
	}
	if p.Every <= 0 || p.Step == nil {
		return errcode.New(errcode.InternalError, "service %s has no interval or no step", p.Name)
	}
	newTicker := p.NewTicker
	if newTicker == nil {
		newTicker = realTicker
	}
	ticks, stopTicks := newTicker(p.Every)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	p.cancel, p.done = cancel, done
	go func() {
		defer close(done)
		defer stopTicks()
		p.loop(runCtx, ticks)
	}()
	return nil
}

func (p *Periodic) loop(ctx context.Context, ticks <-chan time.Time) {
	if p.RunAtStart {
		p.Step(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-p.Wake:
		}
		if ctx.Err() != nil {
			return
		}
		p.Step(ctx)
	}
}

// Stop cancels the loop (a step under way sees its context end) and waits for it to return.
func (p *Periodic) Stop(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return errcode.Wrap(ctx.Err(), errcode.InternalError, "service %s did not stop in time", p.Name)
	}
	p.mu.Lock()
	if p.done == done {
		p.cancel, p.done = nil, nil
	}
	p.mu.Unlock()
	return nil
}

// Done is closed when the running loop has returned; nil when the service is not running.
func (p *Periodic) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

var (
	_ Service = (*Periodic)(nil)
	_ Service = Group(nil)
)
