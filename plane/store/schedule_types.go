package store

import (
	"encoding/json"
	"regexp"
	"time"
)

// Schedule runs a word with params on the nodes a selector picks, every Every or at the times Cron
// names (exactly one of the two). The store keeps it and when it runs next; the schedules room parses
// the cron expression and queues the jobs.
type Schedule struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Word     string          `json:"word"`
	Params   json.RawMessage `json:"params"`
	Selector string          `json:"selector"`
	Every    time.Duration   `json:"every"`
	Cron     string          `json:"cron"`
	Paused   bool            `json:"paused"`
	// Role is the role its jobs are queued as: that of the token that last saved it.
	Role      Role      `json:"role"`
	CreatedBy string    `json:"created_by"`
	UpdatedBy string    `json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// NextRunAt is when it fires next; zero: at once.
	NextRunAt time.Time `json:"next_run_at"`
	// The last firing: when, how many jobs it queued, how many nodes it skipped (they lack the word),
	// how many it could not queue a job on, and why, in a line.
	LastRunAt   time.Time `json:"last_run_at"`
	LastQueued  int       `json:"last_queued"`
	LastSkipped int       `json:"last_skipped"`
	LastFailed  int       `json:"last_failed"`
	LastMessage string    `json:"last_message"`
}

// Bounds of a schedule's fields.
const (
	MaxScheduleCron     = 128
	MaxScheduleSelector = 1024
	MaxScheduleParams   = 64 << 10
	MinScheduleEvery    = time.Minute
	MaxScheduleEvery    = 366 * 24 * time.Hour
)

var scheduleNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidScheduleName reports whether name can name a schedule: 1 to 63 of a-z 0-9 - _, starting with a
// letter or digit.
func ValidScheduleName(name string) bool { return scheduleNameRE.MatchString(name) }

type ScheduleCreateParams struct {
	Name, Word string
	Params     json.RawMessage
	Selector   string
	Every      time.Duration
	Cron       string
	Paused     bool
	Role       Role
	By         string
	NextRunAt  time.Time // zero: at once
	Now        time.Time
}

// ScheduleGetParams names a schedule by its id or, when ID is empty, by its name.
type ScheduleGetParams struct {
	ID, Name string
}

type ScheduleListParams struct {
	// Due: only schedules not paused whose next run is at or before Now.
	Due   bool
	Now   time.Time
	Limit int // 0: 100
}

// ScheduleUpdateParams sets every editable field of a schedule (the room reads it, changes what was
// asked, and writes the whole back).
type ScheduleUpdateParams struct {
	ID        string
	Word      string
	Params    json.RawMessage
	Selector  string
	Every     time.Duration
	Cron      string
	Paused    bool
	Role      Role
	NextRunAt time.Time
	By        string
	Now       time.Time
}

// ScheduleFireParams claims one firing: the next run moves from From (what the caller saw; zero for
// "at once") to Next, and LastRunAt becomes Now, only if the schedule is not paused and its next run is
// still From.
type ScheduleFireParams struct {
	ID         string
	From, Next time.Time
	Now        time.Time
}

type ScheduleFireResult struct {
	Schedule Schedule
	// Fired is false when another caller claimed this firing first (or the schedule was paused or
	// edited meanwhile): nothing changed.
	Fired bool
}

// ScheduleRunRecordParams records what a firing did.
type ScheduleRunRecordParams struct {
	ID                      string
	Queued, Skipped, Failed int
	Message                 string
}

type ScheduleDeleteParams struct {
	ID string
}
