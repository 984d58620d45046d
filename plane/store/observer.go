package store

import "time"

// Observer is told how long the store's statements take (plane/internal/metrics is one); it is given
// to plane/store/open. The store itself knows nothing of how the figures are kept.
type Observer interface {
	// Statement is called once per statement name when the store opens (and once for each new
	// combination of a pipeline), never per run, so that a timer can hold its series ready. The names
	// are the blocks of the dialect's queries*.sql; "commit" is a write transaction's commit, "other"
	// any statement without a name, and a pipeline is its steps' names joined by "+". A nil timer
	// leaves the statement untimed.
	Statement(name string) StatementTimer
}

// StatementTimer takes one run of one statement: how long it took and whether it failed (a missing
// row is no failure).
type StatementTimer interface {
	Observe(d time.Duration, failed bool)
}
