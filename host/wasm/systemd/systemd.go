// Package systemd is the host's door to the service manager: unit state, restarts, failed-state resets
// and the journal, behind one small interface so a machine without systemd answers "unknown" and tests
// use a fake shaped exactly like systemctl's answers.
package systemd

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Manager is what the capabilities systemd.* and journal.read need. Names reaching it are already
// checked against the word's declared unit patterns and ValidName.
type Manager interface {
	// Unit returns one unit's state. A unit systemd does not know has LoadState "not-found".
	Unit(ctx context.Context, name string) (capv1.Unit, error)
	// FailedUnits lists the units in the failed state.
	FailedUnits(ctx context.Context) ([]string, error)
	// Restart restarts a unit and waits for the job to finish.
	Restart(ctx context.Context, name string) error
	// ResetFailed clears a unit's failed state.
	ResetFailed(ctx context.Context, name string) error
	// Journal returns the unit's last lines entries, oldest first.
	Journal(ctx context.Context, unit string, lines int) ([]capv1.JournalEntry, error)
	// Enable reloads the unit files (daemon-reload) and enables the unit, so a unit file just put back
	// is the one systemd runs and starts at boot.
	Enable(ctx context.Context, name string) error
	// Vacuum removes archived journal files until the journal takes at most bytes on disk.
	Vacuum(ctx context.Context, bytes int64) error
	// Act runs one of the actions a converge needs and waits for systemd's job to finish: ActStart,
	// ActStop, ActReload or ActDisable of the unit name, or ActDaemonReload (name "").
	Act(ctx context.Context, action, name string) error
}

// Actions of Manager.Act, as systemctl names them.
const (
	ActStart        = "start"
	ActStop         = "stop"
	ActReload       = "reload"
	ActDisable      = "disable"
	ActDaemonReload = "daemon-reload"
)

// Unavailable is the Manager of a machine without systemd: every call answers capability.unknown.
type Unavailable struct{ Reason string }

func (u Unavailable) err() error {
	return errcode.New(errcode.CapabilityUnknown, "%s", u.Reason).With(errcode.DetailReason, u.Reason)
}

func (u Unavailable) Unit(context.Context, string) (capv1.Unit, error) { return capv1.Unit{}, u.err() }
func (u Unavailable) FailedUnits(context.Context) ([]string, error)    { return nil, u.err() }
func (u Unavailable) Restart(context.Context, string) error            { return u.err() }
func (u Unavailable) ResetFailed(context.Context, string) error        { return u.err() }
func (u Unavailable) Enable(context.Context, string) error             { return u.err() }
func (u Unavailable) Vacuum(context.Context, int64) error              { return u.err() }
func (u Unavailable) Act(context.Context, string, string) error        { return u.err() }
func (u Unavailable) Journal(context.Context, string, int) ([]capv1.JournalEntry, error) {
	return nil, u.err()
}

// ValidName reports whether s can be a unit name: 1 to 255 of systemd's characters (letters, digits,
// ":_.@\\-"), never an option. A loop, not `^[A-Za-z0-9:_.@\\-]{1,255}$`: a bounded repeat compiles
// to one state per repetition, and a package-level regexp is compiled at every start of the binary,
// each wasm worker included (host/RATIONALE.md, "Footprint").
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 255 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(":_.@\\-", c) >= 0) {
			return false
		}
	}
	return true
}

// ErrNotFound marks an action on a unit systemd does not know.
var ErrNotFound = errors.New("unit not found")

// ShowProperties are the properties Unit reads, in systemctl show's names.
var ShowProperties = []string{
	"Id", "Description", "LoadState", "ActiveState", "SubState", "Result",
	"ExecMainStatus", "ExecMainCode", "MainPID", "NRestarts", "ActiveEnterTimestamp", "UnitFileState", "Restart",
}

// ParseShow reads systemctl show's Key=Value lines.
func ParseShow(out string) map[string]string {
	props := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			props[k] = v
		}
	}
	return props
}

// UnitFromProperties turns systemctl show's properties into a unit state. ExecMainCode is numeric in
// systemctl show (CLD_* of waitid); it is named here as systemctl status names it.
func UnitFromProperties(name string, p map[string]string) capv1.Unit {
	u := capv1.Unit{
		Name:        p["Id"],
		Description: p["Description"],
		LoadState:   p["LoadState"],
		ActiveState: p["ActiveState"],
		SubState:    p["SubState"],
		Result:      p["Result"],
		ActiveEnter: p["ActiveEnterTimestamp"],

		UnitFileState: p["UnitFileState"],
		Restart:       p["Restart"],
	}
	if u.Name == "" {
		u.Name = name
	}
	u.ExecMainStatus, _ = strconv.Atoi(p["ExecMainStatus"])
	u.MainPID, _ = strconv.Atoi(p["MainPID"])
	u.NRestarts, _ = strconv.Atoi(p["NRestarts"])
	switch p["ExecMainCode"] {
	case "1":
		u.ExecMainCode = "exited"
	case "2":
		u.ExecMainCode = "killed"
	case "3":
		u.ExecMainCode = "dumped"
	}
	return u
}
