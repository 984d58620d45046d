package recipes

import "time"

// Clock is the loop's time, injectable so tests cover hours of behaviour in milliseconds.
type Clock interface {
	Now() time.Time
	// After sends the time on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the machine's clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time                         { return time.Now() }
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

var _ Clock = SystemClock{}
