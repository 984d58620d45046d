package caps

import (
	"context"
	"path"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

const (
	defaultJournalLines = 50
	maxJournalLines     = 1000
)

// unitAllowed checks a unit name against the declared patterns.
func unitAllowed(c manifest.Capability, unit string) error {
	if unit == "" {
		return invalid("unit", "%s needs a unit", c.Cap)
	}
	if !systemd.ValidName(unit) {
		return invalid("unit", "%q is not a unit name", unit)
	}
	if !matchAny(c.Units, unit) {
		return denied(c.Cap, "unit %q matches no declared pattern", unit).With(errcode.DetailUnit, unit)
	}
	return nil
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func systemdUnit(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SystemdUnit
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Failed {
		if req.Unit != "" {
			return nil, invalid("unit", "ask for one unit or for the failed ones, not both")
		}
		names, err := w.env.Systemd.FailedUnits(ctx)
		if err != nil {
			return nil, err
		}
		out := capv1.FailedUnits{Units: []string{}}
		for _, n := range names {
			if matchAny(c.Units, n) {
				out.Units = append(out.Units, n)
			}
		}
		return out, nil
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	return w.env.Systemd.Unit(ctx, req.Unit)
}

func systemdRestart(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SystemdAction
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	if err := w.env.Systemd.Restart(ctx, req.Unit); err != nil {
		return nil, err
	}
	return capv1.SystemdActionResult{Unit: req.Unit}, nil
}

func systemdResetFailed(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SystemdAction
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	if err := w.env.Systemd.ResetFailed(ctx, req.Unit); err != nil {
		return nil, err
	}
	return capv1.SystemdActionResult{Unit: req.Unit}, nil
}

func journalRead(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.JournalRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Lines < 0 {
		return nil, invalid("lines", "lines must not be negative")
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	lines := defaultJournalLines
	if req.Lines > 0 {
		lines = min(req.Lines, maxJournalLines)
	}
	entries, err := w.env.Systemd.Journal(ctx, req.Unit, lines)
	if err != nil {
		return nil, err
	}
	out := capv1.JournalResult{Entries: []capv1.JournalEntry{}}
	// Keep the newest entries that fit the byte cap.
	budget := maxBytes(c)
	start := len(entries)
	for start > 0 {
		cost := int64(len(entries[start-1].Message)) + 48
		if cost > budget {
			out.Truncated = true
			break
		}
		budget -= cost
		start--
	}
	out.Entries = append(out.Entries, entries[start:]...)
	return out, nil
}

// systemdEnable reloads the unit files and enables one declared unit.
func systemdEnable(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SystemdEnable
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := unitAllowed(c, req.Unit); err != nil {
		return nil, err
	}
	if err := w.env.Systemd.Enable(ctx, req.Unit); err != nil {
		return nil, err
	}
	return capv1.SystemdActionResult{Unit: req.Unit}, nil
}

// maxVacuumBytes is the largest size journal.vacuum takes (1 TiB): a size no journal reaches, so larger
// ones are a mistake rather than a request.
const maxVacuumBytes = 1 << 40

// journalVacuum shrinks the journal's archived files to a size no lower than the declared floor.
func journalVacuum(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.JournalVacuum
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.SizeBytes <= 0 || req.SizeBytes > maxVacuumBytes {
		return nil, invalid("size_bytes", "size_bytes must be between 1 and %d", int64(maxVacuumBytes))
	}
	if req.SizeBytes < c.MinBytes {
		return nil, denied(c.Cap, "%d bytes is under the declared floor of %d", req.SizeBytes, c.MinBytes).
			With("size_bytes", req.SizeBytes).With("min_bytes", c.MinBytes)
	}
	if err := w.env.Systemd.Vacuum(ctx, req.SizeBytes); err != nil {
		return nil, err
	}
	return capv1.JournalVacuumResult{SizeBytes: req.SizeBytes}, nil
}
