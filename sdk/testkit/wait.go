package testkit

import (
	"sync"
	"testing"
	"time"
)

// NoDeadline is how long a wait may last in a test run without a deadline (go test -timeout 0, or a
// benchmark): as long as go test's default timeout.
const NoDeadline = 10 * time.Minute

// reportMargin is left between a wait's end and the test binary's own deadline, so a wait that fails
// reports what it waited for before go test panics on the timeout.
const reportMargin = 3 * time.Second

// limit is when a wait in t gives up: shortly before the test binary's deadline, so the wait's bound
// never decides a test that would otherwise pass (a slow machine just takes longer), and a hang fails
// with a message naming what never happened.
func limit(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			return at.Add(-reportMargin)
		}
	}
	return time.Now().Add(NoDeadline)
}

// Wait returns the next value received from ch, or the zero value once ch is closed. It fails the test
// with what (the thing awaited) if neither happens before the test's deadline.
func Wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(time.Until(limit(t)))
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// Cond is a condition the code under test and the test share: whoever changes the state it guards
// calls Broadcast, and a test waits with Until for the state it expects. It needs no initialisation.
//
// Unlike sync.Cond it does not hold the state's lock; the state has its own. Until checks the state
// after taking the change signal, so a Broadcast between the check and the wait is never lost.
type Cond struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on Broadcast
}

// signal is the channel the next Broadcast closes.
func (c *Cond) signal() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// Broadcast wakes every Until waiting on c to check its condition again.
func (c *Cond) Broadcast() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// Until returns once ok reports true, checking it now and after each Broadcast. It fails the test with
// what (the state awaited) if ok is still false at the test's deadline.
func (c *Cond) Until(t testing.TB, what string, ok func() bool) {
	t.Helper()
	if !c.until(t, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// until reports whether ok came true before the test's deadline.
func (c *Cond) until(t testing.TB, ok func() bool) bool {
	timer := time.NewTimer(time.Until(limit(t)))
	defer timer.Stop()
	for {
		changed := c.signal()
		if ok() {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return ok()
		}
	}
}
