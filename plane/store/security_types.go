package store

import (
	"encoding/json"
	"path"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// PackageReportListParams asks for every active node's newest completed report of word (the fleet
// security view reads packages_report, the only word whose newest report the store keeps per node;
// any other is refused), in one query.
type PackageReportListParams struct {
	Word string
	// RebootCutoff and FixCutoff are times in the past: each row also says whether the newest report
	// finished at or before RebootCutoff owed a reboot, and which security fixes the newest report
	// finished at or before FixCutoff had waiting, so that how long a reboot or a fix has waited is
	// read from two reports, not from a node's whole history. Zero: not looked up.
	RebootCutoff, FixCutoff time.Time
	// Narrow looks the older reports up only where what they said is read: OwedBefore only where the
	// newest report owes a reboot (a reboot owed then and now), FixesBefore only where it has security
	// fixes waiting (a fix waiting then and now); elsewhere they are left zero. Each lookup is an index
	// probe per node, and most of a fleet owes nothing.
	Narrow bool
	// Selectable also reads each node's labels and facts, what a role's selector matches: the view asks
	// when a role is assigned, so that what each node serves needs no second read of the fleet.
	Selectable bool
}

// PackageReport is one active node and its newest completed report of the word, if any.
type PackageReport struct {
	NodeID   string
	NodeName string
	// HasWord: the node's vocabulary has the word.
	HasWord bool
	// JobID, FinishedAt and Output are the newest completed report's; JobID is "" when there is none.
	// Output is the part the view reads, cut when the result was taken in (known, unknown,
	// security_upgrades, half_configured, stale_services, reboot.owed, os.pretty_name), or the whole
	// output of a report taken in before the store kept that part.
	JobID      string
	FinishedAt time.Time
	Output     json.RawMessage
	// OwedBefore: the newest report at or before RebootCutoff owed a reboot.
	OwedBefore bool
	// FixesBefore is that report's security_upgrades at or before FixCutoff (JSON), nil when none.
	FixesBefore json.RawMessage
	// Labels and Facts are the node's, with Selectable; nil and zero without.
	Labels map[string]string
	Facts  NodeFacts
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
// (path.Match), the package names each node serves by its roles (by node ID, critical on that node
// alone, as the fleet security view counts them), and how long a critical fix may wait. No patterns
// and nothing served: plane:critical_fix_waiting is not judged. FixAge 0: a day.
type PackageThresholds struct {
	Critical []string
	Served   map[string][]string
	FixAge   time.Duration
}

// SecuritySettings is what an admin set at run time for the fleet security view: the critical package
// name patterns (path.Match). Set is false until someone sets them; then the plane's own list (serve's
// --critical-packages) is in force.
type SecuritySettings struct {
	Set       bool
	Critical  []string
	UpdatedBy string
	UpdatedAt time.Time
}

// SecuritySettingsSetParams sets the critical list (an empty list: no package is critical), or with
// Reset forgets it, so the plane's own list is in force again.
type SecuritySettingsSetParams struct {
	Critical []string
	Reset    bool
	By       string
	Now      time.Time
}

// MaxCriticalPatterns bounds the critical list: every report of the fleet is matched against each.
const MaxCriticalPatterns = 100

// maxCriticalPattern bounds one critical pattern: a Debian package name is at most a few dozen bytes.
const maxCriticalPattern = 128

// CheckCritical refuses a critical list that is not 0 to MaxCriticalPatterns patterns, each 1 to 128
// bytes of a package name's characters and the wildcards, that path.Match accepts: the list is
// matched against every report of the fleet, and a pattern path.Match refuses would match nothing
// without saying so.
func CheckCritical(list []string) error {
	if len(list) > MaxCriticalPatterns {
		return errcode.New(errcode.SecurityCriticalInvalid, "the critical list has %d patterns, over %d", len(list), MaxCriticalPatterns).
			With(errcode.DetailReason, "too_many")
	}
	seen := map[string]bool{}
	for i, p := range list {
		bad := func(reason, format string, args ...any) error {
			return errcode.New(errcode.SecurityCriticalInvalid, format, args...).With(errcode.DetailIndex, i).With(errcode.DetailReason, reason)
		}
		if p == "" || len(p) > maxCriticalPattern {
			return bad("length", "critical pattern %d must be 1 to %d bytes", i, maxCriticalPattern)
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.' || r == '*' || r == '?' || r == '[' ||
				r == ']' || r == '^') {
				return bad("character", "critical pattern %d holds %q: a package name's characters (a-z 0-9 + - .) and * ? [ ] only", i, r)
			}
		}
		if _, err := path.Match(p, ""); err != nil {
			return bad("syntax", "critical pattern %d is not a pattern: %v", i, err)
		}
		if seen[p] {
			return bad("duplicate", "critical pattern %d repeats %q", i, p)
		}
		seen[p] = true
	}
	return nil
}
