package api

import (
	"encoding/json"
	"time"
)

// ScheduleRequest is the body of POST /schedules: run Word with Params on the nodes Selector picks
// ("" or "all", names "web-1,web-2", or labels "role=web,zone=a"), every Every (a Go duration, "1h",
// at least a minute) or at the times Cron names (five fields, "0 * * * *", or a descriptor such as
// "@daily"; UTC), exactly one of the two. Nodes whose vocabulary lacks the word are skipped and counted
// at each firing. The schedule's jobs are queued with the role of the token that saves it.
type ScheduleRequest struct {
	Name     string          `json:"name"`
	Word     string          `json:"word"`
	Params   json.RawMessage `json:"params,omitempty"`
	Selector string          `json:"selector,omitempty"`
	Every    string          `json:"every,omitempty"`
	Cron     string          `json:"cron,omitempty"`
	Paused   bool            `json:"paused,omitempty"`
}

// ScheduleEdit is the body of POST /schedules/{id}/edit: the fields given change, the others stay.
// Giving Every drops the cron expression and giving Cron drops the interval.
type ScheduleEdit struct {
	Word     string          `json:"word,omitempty"`
	Params   json.RawMessage `json:"params,omitempty"`
	Selector string          `json:"selector,omitempty"`
	Every    string          `json:"every,omitempty"`
	Cron     string          `json:"cron,omitempty"`
}

// Schedule is a stored schedule with its last and next run.
type Schedule struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Word     string          `json:"word"`
	Params   json.RawMessage `json:"params"`
	Selector string          `json:"selector"`
	Every    string          `json:"every,omitempty"`
	Cron     string          `json:"cron,omitempty"`
	Paused   bool            `json:"paused"`
	// Role is the role its jobs are queued as.
	Role      string    `json:"role"`
	CreatedBy string    `json:"created_by"`
	UpdatedBy string    `json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// NextRunAt is when it fires next (absent while paused: it is computed again on resume; the
	// zero time for "at once" is shown as the last run or its creation).
	NextRunAt time.Time    `json:"next_run_at,omitzero"`
	LastRun   *ScheduleRun `json:"last_run,omitempty"`
}

// ScheduleRun is what a schedule's last firing did: jobs queued, nodes skipped because their
// vocabulary lacks the word, nodes a job could not be queued on, and why, in a line.
type ScheduleRun struct {
	At      time.Time `json:"at"`
	Queued  int       `json:"queued"`
	Skipped int       `json:"skipped"`
	Failed  int       `json:"failed"`
	Message string    `json:"message,omitempty"`
}

// ScheduleList is the answer of GET /schedules.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}
