package store

import "time"

// DriverCall is one record of the audit log of driver calls: who asked (the admin token's name), for
// which account and driver, what operation on what target, and how it ended. It never holds a
// credential or a provider's answer: the caller gives only names and codes.
type DriverCall struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	Account   string    `json:"account,omitempty"`
	Driver    string    `json:"driver"`
	Operation string    `json:"operation"`        // "dns.get_records", "cloud.regions", "driver.enable", ...
	Target    string    `json:"target,omitempty"` // the zone, region or instance the call was about
	// Code is "ok" for a call that succeeded, "pending" for one started and not (yet) finished, else
	// the error code it ended with.
	Code       string `json:"code"`
	DurationMS int64  `json:"duration_ms"`
}

// CodeOK is a DriverCall's code when the call succeeded.
const CodeOK = "ok"

// CodePending is a DriverCall's code from DriverCallStart until DriverCallFinish: the driver was (or
// was about to be) asked, and no outcome is recorded. One left pending means the plane stopped mid-call.
const CodePending = "pending" // api.DriverCallPending on the wire

type DriverCallAddParams struct {
	Actor, Account, Driver, Operation, Target, Code string
	Duration                                        time.Duration
	Now                                             time.Time
}

type DriverCallStartParams struct {
	Actor, Account, Driver, Operation, Target string
	Now                                       time.Time
}

type DriverCallFinishParams struct {
	ID       string
	Code     string // CodeOK or an error code; never CodePending
	Duration time.Duration
}

type DriverCallListParams struct {
	Driver  string // "" for every driver
	Account string // "" for every account
	Limit   int    // 0: 100
	Cursor  string // NextCursor of the previous page
}

type DriverCallListResult struct {
	Calls      []DriverCall `json:"calls"`
	NextCursor string       `json:"next_cursor,omitempty"`
}
