// Package update is the agent updating itself from the signed release: between jobs, under the job
// lock, it fetches the agent binary its verified statement pins for its platform, checks it against
// the pin, probes it, swaps it in with the running binary kept as fallback, and exits for its
// supervisor to start the new one, which then runs on trial. A start that finds the previous start of
// the same version still on trial puts the fallback back and rejects that version for good.
//
// The fallback is the known-good binary, kept for good in the update folder, and it is what guards
// every start (the unit's ExecStartPre runs its `guard`): the binary on trial is never trusted to
// judge itself, so one that cannot run its guard, or cannot start at all, is still rolled back.
//
// Files, in <state>/update/ (0700, the agent's alone):
//
//	state.json   the trial in progress, the rejected agents and the update history
//	staged       a fetched binary being checked
//	known-good   the last binary that ended a trial, or ran with none: the guard, and the fallback
package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Defaults.
const (
	DefaultTrial         = 3 * time.Minute
	DefaultTrialDeadline = 15 * time.Minute
	DefaultProbeTimeout  = 10 * time.Second
	// RetryAfter is how long a node waits before fetching again a pin that failed to fetch, verify or
	// probe: the plane's copy may be repaired, and a node must not download a bad binary every claim.
	RetryAfter = 10 * time.Minute
	maxBinary  = 256 << 20
)

// ErrRestart is returned once a new binary is in place: the caller exits cleanly, holding the job
// lock until it does, and the supervisor starts the new binary.
var ErrRestart = errors.New("a new agent binary is in place; exit for the supervisor to start it")

// ErrRolledBack is returned by Start when it put the fallback back: the caller exits at once.
var ErrRolledBack = errors.New("the agent on trial was rolled back; exit for the supervisor to start the fallback")

// Fetcher gets the agent binary through the channel's artifact route.
type Fetcher interface {
	Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error)
}

// Teller is a Fetcher that can also tell the plane where the update stands in the middle of a swap:
// fetched and verified, its probe about to run. The swap runs inside one check, with no claim out, so
// without it the plane would see the node pending until the swap ended. Tell must take no job (the
// daemon sends a busy claim) and is bounded by ctx; whether it reached the plane changes nothing here.
type Teller interface {
	Fetcher
	Tell(ctx context.Context, r *channel.UpdateReport)
}

// Trial is the version on trial and the one to fall back to.
type Trial struct {
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Exe is the path the binary on trial was put at: the guard, which runs from the known-good copy,
	// judges and replaces the binary there.
	Exe             string    `json:"exe,omitempty"`
	FallbackVersion string    `json:"fallback_version"`
	FallbackDigest  string    `json:"fallback_digest"`
	Sequence        uint64    `json:"sequence"` // the statement that offered it
	Installed       time.Time `json:"installed"`
	Starts          int       `json:"starts"`
	// Pending names who marked the start now under way and not yet ended: "guard" (ExecStartPre) or
	// "run". A run that finds "run" here knows the previous start died on trial.
	Pending string `json:"pending,omitempty"`
}

// Rejection is an agent that failed its trial: never installed again.
type Rejection struct {
	Version  string    `json:"version"`
	Digest   string    `json:"digest"`
	Sequence uint64    `json:"sequence"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"`
}

// record is state.json.
type record struct {
	Trial    *Trial                `json:"trial,omitempty"`
	Rejected []Rejection           `json:"rejected"`
	History  []channel.UpdateEvent `json:"history"`
}

// Config is what an Updater works with.
type Config struct {
	Dir      string // <state>/update
	Exe      string // the running binary's path; "" for os.Executable
	Version  string
	Platform string // linux-amd64
	LockFile string // the job lock
	// Off is set when the node's policy turns updates off.
	Off           bool
	TrialFor      time.Duration
	TrialDeadline time.Duration
	ProbeTimeout  time.Duration
	Log           *slog.Logger
	Now           func() time.Time
	// OnState, when not nil, is told every state the update moves to (the agent's update_state
	// metric).
	OnState func(state string)
	// TestPause is set only by a test build (agent.TestFault "pause"): the update stops for good after
	// the step named in <Dir>/test-pause ("fetch", "probe", "rename"), once, for a test to kill it
	// there.
	TestPause bool
}

// Updater keeps the agent's binary the one its statement pins. Safe for concurrent use.
type Updater struct {
	c    Config
	self string // sha256 of the running binary

	mu       sync.Mutex
	rec      record
	state    string
	offered  string
	reason   string
	trialAt  time.Time // when this start began its trial; zero when not on trial
	claimed  bool
	done     chan struct{} // closed when the trial passes
	stopped  chan struct{} // closed by Stopping
	stopOnce sync.Once
	failed   map[string]failure

	// keepMu serialises the copies of the known-good binary: a start's, made in the background, and a
	// swap's or a passed trial's, made under mu.
	keepMu sync.Mutex
	kept   chan struct{} // closed when the start's copy has been made or has failed
}

type failure struct {
	state, reason string
	at            time.Time
}

// New opens the update folder and hashes the running binary.
func New(c Config) (*Updater, error) {
	if c.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot find the running binary")
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot find the running binary")
		}
		c.Exe = exe
	}
	if c.TrialFor == 0 {
		c.TrialFor = DefaultTrial
	}
	if c.TrialDeadline == 0 {
		c.TrialDeadline = DefaultTrialDeadline
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", c.Dir)
	}
	_ = os.Chmod(c.Dir, 0o700)
	self, err := fileDigest(c.Exe)
	if err != nil {
		return nil, err
	}
	u := &Updater{c: c, self: self, state: channel.UpdatePending, done: make(chan struct{}), stopped: make(chan struct{}),
		failed: map[string]failure{}, kept: make(chan struct{})}
	if err := u.load(); err != nil {
		return nil, err
	}
	return u, nil
}

// Self is the sha256 of the running binary.
func (u *Updater) Self() string { return u.self }

func (u *Updater) path(name string) string { return filepath.Join(u.c.Dir, name) }

// KnownGoodFile is the name of the known-good binary in the update folder; the unit runs its guard.
const KnownGoodFile = "known-good"

// knownGood is the known-good binary: the one kept for good, or the fallback an agent from before it
// existed left for its trial.
func (u *Updater) knownGood() string {
	if _, err := os.Stat(u.path("fallback")); err == nil {
		if _, err := os.Stat(u.path(KnownGoodFile)); errors.Is(err, fs.ErrNotExist) {
			return u.path("fallback")
		}
	}
	return u.path(KnownGoodFile)
}

// keepKnownGood makes the known-good binary the running one, which has ended its trial or ran with
// none. Called with mu held, never by a start on trial.
func (u *Updater) keepKnownGood() error {
	u.keepMu.Lock()
	defer u.keepMu.Unlock()
	if d, err := fileDigest(u.path(KnownGoodFile)); err == nil && d == u.self {
		return nil
	}
	if err := install(u.c.Exe, u.path(KnownGoodFile), u.self); err != nil {
		return err
	}
	_ = os.Remove(u.path("fallback"))
	return nil
}

// startKnownGood is keepKnownGood for a start off trial, made in the background: a copy that cannot
// be made (a full disk) is logged and the agent runs on; the previous known-good binary, if any, keeps
// guarding, and a swap makes the copy again before it installs anything (waiting for this one).
func (u *Updater) startKnownGood() {
	go func() {
		defer close(u.kept)
		if err := u.keepKnownGood(); err != nil {
			u.c.Log.Warn("cannot keep the running agent as the known-good binary", "err", err)
		}
	}()
}

func (u *Updater) load() error {
	data, err := os.ReadFile(u.path("state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		u.rec = record{}
		return nil
	}
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot read the update state")
	}
	if err := json.Unmarshal(data, &u.rec); err != nil {
		// A damaged record must not stop the agent: it loses its history, never its binary.
		u.c.Log.Warn("the update state is damaged; starting a new one", "err", err)
		u.rec = record{}
	}
	return nil
}

func (u *Updater) save() error {
	data, _ := json.MarshalIndent(u.rec, "", "  ")
	if err := keys.ReplaceFile(u.path("state.json"), append(data, '\n'), 0o600); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot record the update state")
	}
	return nil
}

func (u *Updater) event(ev, from, to, detail string) {
	u.rec.History = append(u.rec.History, channel.UpdateEvent{At: u.c.Now().UTC(), Event: ev, From: from, To: to, Detail: detail})
	if n := len(u.rec.History); n > channel.MaxUpdateHistory {
		u.rec.History = u.rec.History[n-channel.MaxUpdateHistory:]
	}
}

// Start is the first thing `run` does. On a binary on trial it either begins this start's trial or,
// when the previous start of the same version is still on trial (it crashed, was killed, never
// reached the plane), puts the fallback back and returns ErrRolledBack. A binary not on trial is
// known good: it becomes the known-good copy that guards the next starts, copied in the background
// (a first start's copy of ~30 MB, synced, took 0.16 s of a new node's way to its first word) and
// done before any swap (keepKnownGood waits for it).
func (u *Updater) Start() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	keep := false
	defer func() {
		if keep {
			u.startKnownGood()
		} else {
			close(u.kept)
		}
	}()
	t := u.rec.Trial
	if t == nil {
		keep = true
		return nil
	}
	switch u.self {
	case t.Digest:
	case t.FallbackDigest:
		// Killed between recording the trial and the rename: the swap never happened.
		u.c.Log.Info("update abandoned before the swap; running the fallback", "version", t.Version)
		u.event("abandoned", t.FallbackVersion, t.Version, "the agent stopped before the new binary was in place")
		u.rec.Trial = nil
		if err := u.save(); err != nil {
			return err
		}
		keep = true
		return nil
	default:
		u.c.Log.Warn("the binary on trial was replaced by other means; ending the trial", "version", t.Version)
		u.rec.Trial = nil
		if err := u.save(); err != nil {
			return err
		}
		keep = true
		return nil
	}
	if t.Pending == "run" {
		return u.rollback(fmt.Sprintf("the previous start of %s did not end its trial", t.Version))
	}
	t.Pending, t.Starts = "run", t.Starts+1
	u.trialAt, u.claimed, u.state, u.offered = u.c.Now(), false, channel.UpdateTrial, t.Version
	if err := u.save(); err != nil {
		return err
	}
	u.c.Log.Info("update trial started", "version", t.Version, "start", t.Starts, "trial", u.c.TrialFor)
	return nil
}

// Guard is `lexicon-agent guard`, run before every start by the known-good binary (the unit's
// ExecStartPre): a version on trial whose previous start has not ended, or that cannot answer version,
// is rolled back before it runs. It judges the binary at the trial's path, not itself, so a binary on
// trial that never reaches the agent's own code, or whose own guard is broken, is rolled back all the
// same.
func (u *Updater) Guard(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.rec.Trial
	if t == nil {
		return nil
	}
	exe := t.Exe
	if exe == "" { // a trial an agent from before Exe was recorded began
		exe = u.c.Exe
	}
	if d, err := fileDigest(exe); err != nil || d != t.Digest {
		return nil // replaced by other means, or gone: the start that follows ends the trial or fails
	}
	if t.Pending != "" {
		return u.rollback(fmt.Sprintf("the previous start of %s did not end its trial", t.Version))
	}
	if err := u.probe(ctx, exe, t.Version); err != nil {
		return u.rollback(fmt.Sprintf("%s on trial does not answer version: %v", t.Version, err))
	}
	t.Pending = "guard"
	return u.save()
}

// rollback puts the known-good binary back in place of the one on trial, records the version as
// rejected and ends the trial. Called with mu held.
func (u *Updater) rollback(why string) error {
	t := u.rec.Trial
	exe := t.Exe
	if exe == "" {
		exe = u.c.Exe
	}
	if err := install(u.knownGood(), exe, t.FallbackDigest); err != nil {
		return err
	}
	u.rec.Rejected = append(u.rec.Rejected, Rejection{Version: t.Version, Digest: t.Digest, Sequence: t.Sequence, At: u.c.Now().UTC(), Reason: why})
	u.event("rolled_back", t.Version, t.FallbackVersion, why)
	u.rec.Trial = nil
	if err := u.save(); err != nil {
		return err
	}
	u.c.Log.Error("update rolled back", "rejected", t.Version, "to", t.FallbackVersion, "reason", why)
	return ErrRolledBack
}

// Stopping records a deliberate stop (SIGTERM, a leave): a trial under way starts again with the next
// start rather than counting against the version.
func (u *Updater) Stopping() {
	u.stopOnce.Do(func() { close(u.stopped) })
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.rec.Trial; t != nil && !u.trialAt.IsZero() && t.Pending != "" {
		t.Pending = ""
		u.event("trial_restarted", "", t.Version, "the agent was stopped during its trial")
		_ = u.save()
		u.c.Log.Info("update trial interrupted by a stop; it starts again with the next start", "version", t.Version)
	}
}

// Stopped is closed once Stopping was called.
func (u *Updater) Stopped() <-chan struct{} { return u.stopped }

// TrialDone is closed when this start's trial passes.
func (u *Updater) TrialDone() <-chan struct{} { return u.done }

// OnTrial reports whether this start is on trial.
func (u *Updater) OnTrial() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return !u.trialAt.IsZero()
}

// TrialDeadline is how long a start may stay on trial before it gives up and exits, leaving the next
// start to roll it back.
func (u *Updater) TrialDeadline() time.Duration { return u.c.TrialDeadline }

// Claimed is told of every claim round trip the plane answered: with the trial's time served, it
// passes the trial.
func (u *Updater) Claimed() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.claimed = true
	u.passIfDue()
}

// Tick passes the trial once its time is served, for a start whose claim came first.
func (u *Updater) Tick() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.passIfDue()
}

func (u *Updater) passIfDue() {
	t := u.rec.Trial
	if t == nil || u.trialAt.IsZero() || !u.claimed || u.c.Now().Sub(u.trialAt) < u.c.TrialFor {
		return
	}
	u.event("accepted", t.FallbackVersion, t.Version, fmt.Sprintf("ran %s and completed a claim round trip", u.c.TrialFor))
	u.rec.Trial = nil
	u.trialAt = time.Time{}
	if err := u.save(); err != nil {
		u.c.Log.Warn("cannot record the end of the trial", "err", err)
	}
	// The version that passed guards the next starts. Until the copy is made the previous known-good
	// binary does, which is harmless: with no trial recorded the guard does nothing.
	if err := u.keepKnownGood(); err != nil {
		u.c.Log.Warn("cannot keep the accepted agent as the known-good binary", "err", err)
	}
	u.state, u.offered = channel.UpdateCurrent, ""
	close(u.done)
	u.c.Log.Info("update trial passed", "version", t.Version)
}

// Report is where the update stands, for the claim. belowFloor is the floor of a statement the node
// holds back because this agent is below it.
func (u *Updater) Report(belowFloor string) *channel.UpdateReport {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.report(belowFloor)
}

// report is Report with mu held.
func (u *Updater) report(belowFloor string) *channel.UpdateReport {
	r := &channel.UpdateReport{State: u.state, Offered: u.offered, Reason: u.reason, NeedsNewerAgent: belowFloor,
		History: append([]channel.UpdateEvent(nil), u.rec.History...)}
	return r
}

func (u *Updater) set(state, offered, reason string) {
	u.state, u.offered, u.reason = state, offered, reason
	if u.c.OnState != nil {
		u.c.OnState(state)
	}
}

// Check brings the running binary to the one rel pins for this platform. It is called between jobs;
// it takes the job lock itself, so no job or repair starts while a swap is under way, and keeps it
// when it returns ErrRestart (the process exits with it held). rel is the newest statement the node
// verified, whether or not its vocabulary was taken (a floor above this agent holds that back).
func (u *Updater) Check(ctx context.Context, f Fetcher, rel *registry.Release, off bool, offReason string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.trialAt.IsZero() {
		u.passIfDue()
		if !u.trialAt.IsZero() {
			return nil // nothing newer goes in over a version on trial
		}
	}
	if off {
		u.set(channel.UpdateNone, "", offReason)
		return nil
	}
	if rel == nil {
		u.set(channel.UpdateNone, "", "no verified statement")
		return nil
	}
	pin, ok := rel.Subject(registry.AgentSubjectPrefix + u.c.Platform)
	version := rel.Statement.Predicate.Release
	if !ok {
		u.set(channel.UpdateNone, "", fmt.Sprintf("the statement pins no agent for %s", u.c.Platform))
		return nil
	}
	if pin == u.self {
		u.set(channel.UpdateCurrent, "", "")
		return nil
	}
	for _, r := range u.rec.Rejected {
		if r.Digest == pin {
			u.set(channel.UpdateRejected, version, r.Reason)
			return nil
		}
	}
	if fl, ok := u.failed[pin]; ok && u.c.Now().Sub(fl.at) < RetryAfter {
		u.set(fl.state, version, fl.reason)
		return nil
	}
	lock, err := joblock.TryAcquire(u.c.LockFile)
	if err != nil {
		u.set(channel.UpdatePending, version, "waiting for the job lock")
		return nil
	}
	err = u.swap(ctx, f, rel, pin, version)
	if errors.Is(err, ErrRestart) {
		return err // the lock stays held until the process exits
	}
	lock.Release()
	return err
}

// swap fetches, verifies, probes and installs. Called with mu and the job lock held.
func (u *Updater) swap(ctx context.Context, f Fetcher, rel *registry.Release, pin, version string) error {
	u.set(channel.UpdatePending, version, "")
	fail := func(state string, err error) error {
		if ctx.Err() != nil {
			_ = os.Remove(u.path("staged"))
			return ctx.Err() // stopped mid-check: no verdict on the binary
		}
		reason := err.Error()
		u.failed[pin] = failure{state: state, reason: reason, at: u.c.Now()}
		u.set(state, version, reason)
		u.event("refused", u.c.Version, version, state+": "+reason)
		_ = u.save()
		_ = os.Remove(u.path("staged"))
		u.c.Log.Warn("agent update refused", "state", state, "version", version, "err", err)
		return nil
	}
	u.c.Log.Info("agent update: fetching", "version", version, "sha256", pin)
	data, err := f.Artifact(ctx, url.Values{"agent": {u.c.Platform}}, maxBinary)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := err.Error()
		u.failed[pin] = failure{state: channel.UpdateFetchFailed, reason: reason, at: u.c.Now()}
		u.set(channel.UpdateFetchFailed, version, reason)
		u.c.Log.Warn("agent update: fetch failed", "version", version, "err", err)
		return nil
	}
	// The pin is the one in the statement this node verified; the response's own word counts for
	// nothing.
	if got := cas.Sum(data); got != pin {
		return fail(channel.UpdateVerifyFailed, errcode.New(errcode.ModuleDigestMismatch,
			"the agent served for %s hashes to %s, the statement pins %s", u.c.Platform, got, pin))
	}
	staged := u.path("staged")
	if err := writeSynced(staged, data, 0o700); err != nil {
		return err
	}
	u.step("fetch")
	u.set(channel.UpdateProbing, version, "")
	if t, ok := f.(Teller); ok {
		// Told before the probe runs, so a step that times out while it runs names probing. The
		// floor is the daemon's to add: this report leaves it empty.
		t.Tell(ctx, u.report(""))
	}
	if err := u.probe(ctx, staged, version); err != nil {
		return fail(channel.UpdateProbeFailed, err)
	}
	u.step("probe")
	// The running binary is the known-good one (the fallback, and the guard of the starts on trial)
	// before anything names the new one.
	if err := u.keepKnownGood(); err != nil {
		return err
	}
	u.rec.Trial = &Trial{Version: version, Digest: pin, Exe: u.c.Exe, FallbackVersion: u.c.Version, FallbackDigest: u.self,
		Sequence: rel.Statement.Predicate.Sequence, Installed: u.c.Now().UTC()}
	u.event("installed", u.c.Version, version, "")
	if err := u.save(); err != nil {
		return err
	}
	if err := install(staged, u.c.Exe, pin); err != nil {
		u.rec.Trial = nil
		_ = u.save()
		return err
	}
	_ = os.Remove(staged)
	u.step("rename")
	u.set(channel.UpdateTrial, version, "")
	u.c.Log.Info("agent update installed; exiting for the supervisor to start it", "from", u.c.Version, "to", version)
	return ErrRestart
}

// step logs a step of the swap and, in a test build that asks for it, stops there for good.
func (u *Updater) step(name string) {
	u.c.Log.Info("agent update step", "step", name)
	if !u.c.TestPause {
		return
	}
	at, err := os.ReadFile(u.path("test-pause"))
	if err != nil || strings.TrimSpace(string(at)) != name {
		return
	}
	_ = os.Remove(u.path("test-pause"))
	u.c.Log.Info("agent update paused for the test", "step", name)
	time.Sleep(1 << 62) // a sleeping goroutine keeps the runtime from calling this a deadlock
}

// probe runs bin's `version -o json` with an empty environment and a short timeout, and refuses a
// binary that does not answer with version and this node's platform.
func (u *Updater) probe(ctx context.Context, bin, version string) error {
	ctx, cancel := context.WithTimeout(ctx, u.c.ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "version", "-o", "json")
	cmd.Env = []string{}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		return errcode.Wrap(err, errcode.AgentUpdateRefused, "the staged agent did not answer version")
	}
	var got struct{ Version, Platform string }
	if err := json.Unmarshal(out, &got); err != nil {
		return errcode.Wrap(err, errcode.AgentUpdateRefused, "the staged agent's version answer is not JSON")
	}
	if got.Version != version || got.Platform != u.c.Platform {
		return errcode.New(errcode.AgentUpdateRefused, "the staged agent is %s for %s, the statement names %s for %s",
			got.Version, got.Platform, version, u.c.Platform)
	}
	return nil
}

// install copies src next to dst and renames it over dst: the path is never without a whole binary.
// want is the sha256 the copy must have.
func install(src, dst, want string) error {
	tmp := dst + ".lexicon-new"
	if err := copyFile(src, tmp, want); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return errcode.Wrap(err, errcode.IOFailed, "cannot put %s in place", dst)
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// copyFile copies src to dst (0755, synced), checking the bytes copied hash to want.
func copyFile(src, dst, want string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot read %s", src)
	}
	if got := cas.Sum(data); want != "" && got != want {
		return errcode.New(errcode.ModuleDigestMismatch, "%s hashes to %s, not %s", src, got, want)
	}
	return writeSynced(dst, data, 0o755)
}

func writeSynced(path string, data []byte, mode os.FileMode) error {
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", path)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", path)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", path)
	}
	return f.Close()
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read the running binary %s", path)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read the running binary %s", path)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
