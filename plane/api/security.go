package api

import "time"

// Security levels of a node, worst first: red (a critical fix waits, a critical service runs replaced
// code, or a package run was left half done), amber (another fix waits, a reboot owed over a day, no
// report for two hours, another service on replaced code), grey (nothing reported, or the node lacks
// packages_report; the reason says which), green.
const (
	SecurityRed   = "red"
	SecurityAmber = "amber"
	SecurityGrey  = "grey"
	SecurityGreen = "green"
)

// SecurityView is the answer of GET /fleet/security: every active node's row, red rows first, and
// the counts by level.
type SecurityView struct {
	Rows   []SecurityRow  `json:"rows"`
	Counts map[string]int `json:"counts"`
	// Critical is the list of package name patterns this plane counts as critical.
	Critical []string `json:"critical"`
	// CriticalSource says where Critical comes from: "plane" (serve's --critical-packages) or "set"
	// (an admin set it at run time: POST /fleet/security/critical).
	CriticalSource string    `json:"critical_source"`
	At             time.Time `json:"at"`
}

// Where the critical package list in force comes from.
const (
	CriticalFromPlane = "plane"
	CriticalFromSet   = "set"
)

// SecurityCritical is the critical package list in force: the answer of GET and POST
// /fleet/security/critical. Plane is serve's own list, in force again after a reset.
type SecurityCritical struct {
	Critical  []string  `json:"critical"`
	Source    string    `json:"source"`
	Plane     []string  `json:"plane"`
	UpdatedBy string    `json:"updated_by,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// SecurityCriticalRequest sets the critical package list (path.Match patterns of package names:
// openssl, linux-image-*; an empty list: no package is critical), or with Reset (and no list) goes
// back to the plane's own list. The list is required (empty with Reset): a body without it is refused,
// not read as "nothing is critical".
type SecurityCriticalRequest struct {
	Critical []string `json:"critical"`
	Reset    bool     `json:"reset,omitempty"`
}

// SecurityRow is one node: its level and every reason for it, worst first, from its newest
// packages_report (JobID, ReportedAt; absent when none).
type SecurityRow struct {
	NodeID     string           `json:"node_id"`
	Node       string           `json:"node"`
	Level      string           `json:"level"`
	Reasons    []SecurityReason `json:"reasons"`
	OS         string           `json:"os,omitempty"`
	JobID      string           `json:"job_id,omitempty"`
	ReportedAt time.Time        `json:"reported_at,omitzero"`
}

// SecurityReason is one thing wrong with a node. Kind is one of critical_fix, critical_old_code,
// half_done, fix, reboot_owed, silent, old_code, no_word, no_report, unknown.
type SecurityReason struct {
	Level string `json:"level"`
	Kind  string `json:"kind"`
	Text  string `json:"text"`
}
