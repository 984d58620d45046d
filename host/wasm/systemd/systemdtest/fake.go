// Package systemdtest is a fake service manager for tests on machines without systemd. It holds each
// unit as the properties `systemctl show` prints and answers through the same parsing as the real one,
// so a word tested against it sees what it would see on a systemd machine.
package systemdtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Fake is an in-memory service manager. Its zero value has no units.
type Fake struct {
	// UnitDir is where Enable's daemon-reload reads unit files from (/etc/systemd/system on a real
	// machine); "" means Enable finds none and only enables units the fake already holds.
	UnitDir string

	mu       sync.Mutex
	units    map[string]map[string]string
	journals map[string][]capv1.JournalEntry
	failNext map[string]bool
	actions  []string
	nextPID  int
}

// New returns a fake with the given units, each given as `systemctl show` output.
func New(units map[string]string) *Fake {
	f := &Fake{}
	for name, show := range units {
		f.AddUnit(name, show)
	}
	return f
}

// AddUnit adds or replaces a unit from `systemctl show` output (Key=Value lines).
func (f *Fake) AddUnit(name, show string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.units == nil {
		f.units = map[string]map[string]string{}
	}
	p := systemd.ParseShow(show)
	if p["Id"] == "" {
		p["Id"] = name
	}
	f.units[name] = p
}

// SetJournal sets a unit's journal, oldest first.
func (f *Fake) SetJournal(unit string, entries []capv1.JournalEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.journals == nil {
		f.journals = map[string][]capv1.JournalEntry{}
	}
	f.journals[unit] = entries
}

// FailNextRestart makes the unit's next restart (or start) fail the way a service whose start command exits 1
// does: systemctl restart reports failure and the unit is left failed.
func (f *Fake) FailNextRestart(unit string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext == nil {
		f.failNext = map[string]bool{}
	}
	f.failNext[unit] = true
}

// Actions lists the changes asked of the fake, as "restart x.service", "reset-failed x.service",
// "daemon-reload", "enable x.service" or "vacuum-size N".
func (f *Fake) Actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.actions)
}

// Property returns one property of a unit as systemctl show would print it.
func (f *Fake) Property(unit, key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.units[unit][key]
}

func (f *Fake) Unit(_ context.Context, name string) (capv1.Unit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.units[name]
	if !ok && f.hasFile(name) {
		// systemd loads a unit file it has not loaded yet when asked about it.
		p, ok = newUnit(name), true
	}
	if !ok {
		// What systemctl show prints for a unit it cannot find.
		p = map[string]string{"Id": name, "LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead",
			"Result": "success", "ExecMainStatus": "0", "ExecMainCode": "0", "MainPID": "0", "NRestarts": "0"}
	}
	return systemd.UnitFromProperties(name, p), nil
}

func (f *Fake) FailedUnits(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for n, p := range f.units {
		if p["ActiveState"] == "failed" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (f *Fake) Restart(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.units[name]
	if !ok {
		return errcode.Wrap(systemd.ErrNotFound, errcode.CapabilityNotFound, "systemctl restart: unit %s not found", name)
	}
	f.actions = append(f.actions, "restart "+name)
	f.nextPID += 100
	now := time.Now().UTC().Format("Mon 2006-01-02 15:04:05 MST")
	if f.failNext[name] {
		delete(f.failNext, name)
		p["ActiveState"], p["SubState"], p["Result"] = "failed", "failed", "exit-code"
		p["ExecMainStatus"], p["ExecMainCode"], p["MainPID"] = "1", "1", "0"
		return errcode.New(errcode.CapabilityFailed,
			"systemctl restart failed: Job for %s failed because the control process exited with error code.", name)
	}
	p["ActiveState"], p["SubState"], p["Result"] = "active", "running", "success"
	p["ExecMainStatus"], p["ExecMainCode"] = "0", "0"
	p["MainPID"] = strconv.Itoa(1000 + f.nextPID)
	p["ActiveEnterTimestamp"] = now
	return nil
}

func (f *Fake) ResetFailed(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.units[name]
	if !ok {
		return errcode.Wrap(systemd.ErrNotFound, errcode.CapabilityNotFound, "systemctl reset-failed: unit %s not found", name)
	}
	f.actions = append(f.actions, "reset-failed "+name)
	if p["ActiveState"] == "failed" {
		p["ActiveState"], p["SubState"] = "inactive", "dead"
	}
	p["Result"] = "success"
	return nil
}

// Enable does what daemon-reload and enable do to the fake: a unit file in UnitDir is (re)loaded, its
// Restart= setting taken from the file, and the unit is enabled. A unit with neither a file nor a
// state already held is not found, as systemctl enable says.
func (f *Fake) Enable(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "daemon-reload", "enable "+name)
	p, ok := f.units[name]
	if f.UnitDir != "" {
		if b, err := os.ReadFile(filepath.Join(f.UnitDir, name)); err == nil {
			if !ok {
				p = map[string]string{"Id": name, "ActiveState": "inactive", "SubState": "dead", "Result": "success",
					"ExecMainStatus": "0", "ExecMainCode": "0", "MainPID": "0", "NRestarts": "0"}
			}
			p["LoadState"], p["Restart"] = "loaded", "no"
			for line := range strings.Lines(string(b)) {
				if v, found := strings.CutPrefix(strings.TrimSpace(line), "Restart="); found {
					p["Restart"] = v
				}
			}
			ok = true
		}
	}
	if !ok {
		return errcode.Wrap(systemd.ErrNotFound, errcode.CapabilityNotFound, "systemctl enable: unit %s not found", name)
	}
	if f.units == nil {
		f.units = map[string]map[string]string{}
	}
	p["UnitFileState"] = "enabled"
	f.units[name] = p
	return nil
}

func (f *Fake) hasFile(name string) bool {
	if f.UnitDir == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(f.UnitDir, name))
	return err == nil && fi.Mode().IsRegular()
}

func newUnit(name string) map[string]string {
	return map[string]string{"Id": name, "LoadState": "loaded", "ActiveState": "inactive", "SubState": "dead", "Result": "success",
		"ExecMainStatus": "0", "ExecMainCode": "0", "MainPID": "0", "NRestarts": "0", "UnitFileState": "disabled", "Restart": "no"}
}

// Act does to the fake what systemctl start, stop, reload, disable and daemon-reload do: daemon-reload
// loads the unit files in UnitDir that it does not hold yet; start honours FailNextRestart; reload of a
// unit that is not running fails, as systemd's does.
func (f *Fake) Act(_ context.Context, action, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.units == nil {
		f.units = map[string]map[string]string{}
	}
	if action == systemd.ActDaemonReload {
		f.actions = append(f.actions, action)
		if entries, err := os.ReadDir(f.UnitDir); err == nil && f.UnitDir != "" {
			for _, e := range entries {
				if _, ok := f.units[e.Name()]; !ok && e.Type().IsRegular() {
					f.units[e.Name()] = newUnit(e.Name())
				}
			}
		}
		return nil
	}
	p, ok := f.units[name]
	if !ok && f.hasFile(name) {
		p, ok = newUnit(name), true
		f.units[name] = p
	}
	if !ok {
		return errcode.Wrap(systemd.ErrNotFound, errcode.CapabilityNotFound, "systemctl %s: unit %s not found", action, name)
	}
	f.actions = append(f.actions, action+" "+name)
	switch action {
	case systemd.ActStart:
		if f.failNext[name] {
			delete(f.failNext, name)
			p["ActiveState"], p["SubState"], p["Result"] = "failed", "failed", "exit-code"
			return errcode.New(errcode.CapabilityFailed, "systemctl start failed: Job for %s failed because the control process exited with error code.", name)
		}
		f.nextPID += 100
		p["ActiveState"], p["SubState"], p["Result"], p["MainPID"] = "active", "running", "success", strconv.Itoa(1000+f.nextPID)
	case systemd.ActStop:
		p["ActiveState"], p["SubState"], p["MainPID"] = "inactive", "dead", "0"
	case systemd.ActReload:
		if p["ActiveState"] != "active" {
			return errcode.New(errcode.CapabilityFailed, "systemctl reload failed: %s is not active, cannot reload.", name)
		}
	case systemd.ActDisable:
		p["UnitFileState"] = "disabled"
	default:
		return errcode.New(errcode.CapabilityInvalid, "no systemd action %q", action)
	}
	return nil
}

// Vacuum records the size asked for; the fake has no journal files to remove.
func (f *Fake) Vacuum(_ context.Context, bytes int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "vacuum-size "+strconv.FormatInt(bytes, 10))
	return nil
}

func (f *Fake) Journal(_ context.Context, unit string, lines int) ([]capv1.JournalEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.journals[unit]
	if lines > 0 && len(e) > lines {
		e = e[len(e)-lines:]
	}
	return slices.Clone(e), nil
}

var _ systemd.Manager = (*Fake)(nil)
