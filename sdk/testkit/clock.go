package testkit

import (
	"sync"
	"time"
)

// Clock is a manual clock: Now stands still until Advance moves it, and a channel from After receives
// once the clock has been moved to or past its due time. Code under test takes it where it would take
// time.Now and time.After, so a test covers hours of behaviour in milliseconds and decides exactly when
// time passes.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []timer
	waiting chan struct{}
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// waitingCap bounds the signals Waiting holds for a test that does not read them.
const waitingCap = 64

// NewClock returns a Clock that reads at.
func NewClock(at time.Time) *Clock {
	return &Clock{now: at, waiting: make(chan struct{}, waitingCap)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once the clock has moved d on (at once when d
// is not positive), and signals Waiting.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	select {
	case c.waiting <- struct{}{}:
	default: // nobody is reading the signals; the timer itself is kept
	}
	return ch
}

// Waiting receives once for each timer After sets, so a test moves the clock only after the code under
// test is waiting on it: testkit.Wait(t, clock.Waiting(), "the loop's next wait"). Signals nobody reads
// are kept up to a bound, then dropped.
func (c *Clock) Waiting() <-chan struct{} { return c.waiting }

// Advance moves the clock d on and fires every timer now due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, w := range c.timers {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.timers = kept
}
