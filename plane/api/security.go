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
	Critical []string  `json:"critical"`
	At       time.Time `json:"at"`
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
