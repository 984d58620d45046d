package store

import (
	"encoding/json"
	"time"
)

// PackageReportListParams asks for every active node's newest completed report of word (the fleet
// security view reads packages_report), in one query.
type PackageReportListParams struct {
	Word string
	// RebootCutoff and FixCutoff are times in the past: each row also says whether the newest report
	// finished at or before RebootCutoff owed a reboot, and which security fixes the newest report
	// finished at or before FixCutoff had waiting, so that how long a reboot or a fix has waited is
	// read from two reports, not from a node's whole history. Zero: not looked up.
	RebootCutoff, FixCutoff time.Time
}

// PackageReport is one active node and its newest completed report of the word, if any.
type PackageReport struct {
	NodeID   string
	NodeName string
	// HasWord: the node's vocabulary has the word.
	HasWord bool
	// JobID, FinishedAt and Output are the newest completed report's; JobID is "" when there is none.
	JobID      string
	FinishedAt time.Time
	Output     json.RawMessage
	// OwedBefore: the newest report at or before RebootCutoff owed a reboot.
	OwedBefore bool
	// FixesBefore is that report's security_upgrades at or before FixCutoff (JSON), nil when none.
	FixesBefore json.RawMessage
}

// The fleet security view's incidents, on a node.
const (
	// DetectorOldCodeServing: the node's newest packages_report names services running code an
	// upgrade replaced; cleared when a report names none.
	DetectorOldCodeServing = "plane:old_code_serving"
	// DetectorCriticalFixWaiting: a critical package's security fix was already waiting in the node's
	// newest report at least FixAge old, and still waits in its newest.
	DetectorCriticalFixWaiting = "plane:critical_fix_waiting"
)

// PackageThresholds is how the package detectors judge: the critical package name patterns
// (path.Match) and how long a critical fix may wait. No patterns: plane:critical_fix_waiting is not
// judged. FixAge 0: a day.
type PackageThresholds struct {
	Critical []string
	FixAge   time.Duration
}
