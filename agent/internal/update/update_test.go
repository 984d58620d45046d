package update

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// script is a stand-in agent binary: it answers `version -o json` as the real one does.
func script(version, platform string) []byte {
	return []byte("#!/bin/sh\necho '{\"version\": \"" + version + "\", \"platform\": \"" + platform + "\", \"go\": \"go\"}'\n")
}

type served struct {
	data []byte
	err  error
	n    int
}

func (s *served) Artifact(_ context.Context, q url.Values, _ int64) ([]byte, error) {
	s.n++
	if q.Get("agent") != "linux-amd64" {
		return nil, errcode.New(errcode.ArtifactNotPinned, "no")
	}
	return s.data, s.err
}

func release(version string, seq uint64, pin string) *registry.Release {
	return &registry.Release{Statement: &statement.Statement{
		Subject:   []statement.Subject{statement.NewSubject("agent/linux-amd64", pin)},
		Predicate: statement.Predicate{Release: version, Sequence: seq},
	}}
}

type node struct {
	t    *testing.T
	dir  string
	exe  string
	now  time.Time
	lock string
}

func newNode(t *testing.T, running []byte) *node {
	dir := t.TempDir()
	n := &node{t: t, dir: dir, exe: filepath.Join(dir, "bin", "lexicon-agent"), now: time.Unix(1_800_000_000, 0), lock: filepath.Join(dir, "job.lock")}
	if err := os.MkdirAll(filepath.Dir(n.exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.exe, running, 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

// start is one start of the binary in place, as `run` makes it, once its known-good copy is made.
// Each start has its own job lock file: a swap keeps its lock until its process exits, which a test
// process never does.
func (n *node) start(version string) (*Updater, error) {
	u, err := n.startNow(version)
	<-u.kept
	return u, err
}

// startNow is start without waiting for the known-good copy, which a start makes in the background.
func (n *node) startNow(version string) (*Updater, error) {
	u, err := New(Config{Dir: filepath.Join(n.dir, "update"), Exe: n.exe, Version: version, Platform: "linux-amd64",
		LockFile: filepath.Join(n.t.TempDir(), "job.lock"), TrialFor: time.Minute, Now: func() time.Time { return n.now }})
	if err != nil {
		n.t.Fatal(err)
	}
	return u, u.Start()
}

func (n *node) running() string {
	data, err := os.ReadFile(n.exe)
	if err != nil {
		n.t.Fatal(err)
	}
	return cas.Sum(data)
}

func TestSwapTrialAndAccept(t *testing.T) {
	v1, v2 := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64")
	n := newNode(t, v1)
	u, err := n.start("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Check(context.Background(), &served{data: v2}, release("2.0.0", 2, cas.Sum(v2)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatalf("check: %v", err)
	}
	if n.running() != cas.Sum(v2) {
		t.Fatal("v2 is not in place")
	}
	// The new start is on trial; a claim alone does not pass it, the time served with one does.
	u, err = n.start("2.0.0")
	if err != nil || u.Report("").State != channel.UpdateTrial {
		t.Fatalf("start of v2: %v %+v", err, u.Report(""))
	}
	u.Claimed()
	if u.Report("").State != channel.UpdateTrial {
		t.Fatal("the trial passed before its time")
	}
	n.now = n.now.Add(time.Minute)
	u.Tick()
	if r := u.Report(""); r.State != channel.UpdateCurrent || r.History[len(r.History)-1].Event != "accepted" {
		t.Fatalf("after the trial: %+v", r)
	}
	// The version that passed is the known-good binary now, which guards the next starts.
	if got := n.knownGood(); got != cas.Sum(v2) {
		t.Fatalf("known-good after the trial is %s, want v2's %s", got, cas.Sum(v2))
	}
}

func (n *node) knownGood() string {
	data, err := os.ReadFile(filepath.Join(n.dir, "update", KnownGoodFile))
	if err != nil {
		n.t.Fatal(err)
	}
	return cas.Sum(data)
}

// guard is the unit's ExecStartPre as it runs: the known-good binary's own guard, whose running binary
// is the known-good copy, not the one on trial.
func (n *node) guard() error {
	g, err := New(Config{Dir: filepath.Join(n.dir, "update"), Exe: filepath.Join(n.dir, "update", KnownGoodFile),
		Version: "known-good", Platform: "linux-amd64", LockFile: n.lock})
	if err != nil {
		n.t.Fatal(err)
	}
	return g.Guard(context.Background())
}

// TestSwapRightAfterAStartKeepsTheStartsBinary: a start copies itself to known-good in the background;
// a swap that comes before that copy is made waits for it, so the known-good binary is the one that
// ran, never the new one and never half a copy. Run under -race for the two copies' lock.
func TestSwapRightAfterAStartKeepsTheStartsBinary(t *testing.T) {
	v1, v2 := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64")
	n := newNode(t, v1)
	u, err := n.startNow("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Check(context.Background(), &served{data: v2}, release("2.0.0", 2, cas.Sum(v2)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatalf("check: %v", err)
	}
	<-u.kept
	if n.running() != cas.Sum(v2) || n.knownGood() != cas.Sum(v1) {
		t.Fatal("after the swap v2 must run and v1 guard it")
	}
	if _, err := os.Stat(filepath.Join(n.dir, "update", KnownGoodFile+".lexicon-new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a copy was left half made: %v", err)
	}
}

// TestStartAfterAKilledCopy: a start killed while it copied itself to known-good (in the background)
// leaves the previous known-good binary whole and a partial copy beside it; the next start puts the
// running binary in place and leaves nothing half made.
func TestStartAfterAKilledCopy(t *testing.T) {
	v0, v1 := script("0.9.0", "linux-amd64"), script("1.0.0", "linux-amd64")
	n := newNode(t, v1)
	dir := filepath.Join(n.dir, "update")
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, KnownGoodFile), v0, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, KnownGoodFile+".lexicon-new"), v1[:len(v1)/2], 0o755))
	if _, err := n.start("1.0.0"); err != nil {
		t.Fatal(err)
	}
	if n.knownGood() != cas.Sum(v1) {
		t.Fatal("the running binary is not the known-good one after the start")
	}
	if _, err := os.Stat(filepath.Join(dir, KnownGoodFile+".lexicon-new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the killed start's partial copy is still there: %v", err)
	}
}

// TestKnownGoodGuardsTheTrial: the binary a start with no trial runs becomes the known-good copy; a
// swap keeps it; and its guard, not the binary on trial, judges each start on trial. It rolls back a
// version whose start died before its own code ran (its guard and run broken alike), and one that no
// longer answers version, each to the known-good binary, and rejects it.
func TestKnownGoodGuardsTheTrial(t *testing.T) {
	v1 := script("1.0.0", "linux-amd64")
	for _, tc := range []struct {
		name   string
		broken string // the binary on trial; @DIR@ is a folder holding "ok" until the swap is made
		starts int    // guarded starts before the one that rolls back
		reason string
	}{
		// Answers version (so the swap's probe passes) and nothing else: every start dies at once.
		{"cannot start", ("#!/bin/sh\n[ \"$1\" = version ] && exec echo '{\"version\":\"2.0.0\",\"platform\":\"linux-amd64\"}'\nexit 2\n"),
			1, "did not end its trial"},
		// Answered version when it was probed, no longer does (a dependency it needs at start is gone).
		{"stops answering version", ("#!/bin/sh\n[ -e @DIR@/ok ] && exec echo '{\"version\":\"2.0.0\",\"platform\":\"linux-amd64\"}'\nexit 2\n"),
			0, "does not answer version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, v1)
			broken := []byte(strings.ReplaceAll(tc.broken, "@DIR@", n.dir))
			must(t, os.WriteFile(filepath.Join(n.dir, "ok"), nil, 0o644))
			u, err := n.start("1.0.0")
			must(t, err)
			if got := n.knownGood(); got != cas.Sum(v1) {
				t.Fatal("a start with no trial did not keep its binary as known-good")
			}
			if err := u.Check(context.Background(), &served{data: broken}, release("2.0.0", 2, cas.Sum(broken)), false, ""); !errors.Is(err, ErrRestart) {
				t.Fatalf("swap: %v", err)
			}
			must(t, os.Remove(filepath.Join(n.dir, "ok")))
			for i := range tc.starts {
				// The guard marks the start; the broken binary dies before its own code could.
				if err := n.guard(); err != nil {
					t.Fatalf("guard %d: %v", i, err)
				}
			}
			if err := n.guard(); !errors.Is(err, ErrRolledBack) {
				t.Fatalf("the known-good guard did not roll back: %v", err)
			}
			if n.running() != cas.Sum(v1) || n.knownGood() != cas.Sum(v1) {
				t.Fatal("v1 is not back, or is no longer the known-good binary")
			}
			u, err = n.start("1.0.0")
			must(t, err)
			r := u.Report("")
			if last := r.History[len(r.History)-1]; last.Event != "rolled_back" || !strings.Contains(last.Detail, tc.reason) {
				t.Fatalf("history after the rollback: %+v", r.History)
			}
			f := &served{data: broken}
			if err := u.Check(context.Background(), f, release("2.0.0", 2, cas.Sum(broken)), false, ""); err != nil || f.n != 0 || u.Report("").State != channel.UpdateRejected {
				t.Fatalf("the rolled-back version is offered again: %v, fetched %d times", err, f.n)
			}
		})
	}
}

// TestGuardLeavesABinaryReplacedByOtherMeans: an admin who puts another binary in place during a trial
// (a package upgrade) is not overruled by the guard; that start ends the trial and keeps its binary.
func TestGuardLeavesABinaryReplacedByOtherMeans(t *testing.T) {
	v1, v2, admin := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64"), script("2.1.0", "linux-amd64")
	n := newNode(t, v1)
	u, _ := n.start("1.0.0")
	if err := u.Check(context.Background(), &served{data: v2}, release("2.0.0", 2, cas.Sum(v2)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatal(err)
	}
	must(t, os.WriteFile(n.exe, admin, 0o755))
	for range 2 {
		if err := n.guard(); err != nil {
			t.Fatalf("guard over a binary replaced by other means: %v", err)
		}
	}
	if _, err := n.start("2.1.0"); err != nil || n.running() != cas.Sum(admin) || n.knownGood() != cas.Sum(admin) {
		t.Fatalf("the admin's binary was not kept: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A start that finds the previous start of its version still on trial rolls back; the version is
// rejected for good, and a newer statement's agent is taken again.
func TestCrashOnTrialRollsBackAndRejects(t *testing.T) {
	v1, v2, v3 := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64"), script("3.0.0", "linux-amd64")
	n := newNode(t, v1)
	u, _ := n.start("1.0.0")
	rel := release("2.0.0", 2, cas.Sum(v2))
	if err := u.Check(context.Background(), &served{data: v2}, rel, false, ""); !errors.Is(err, ErrRestart) {
		t.Fatal(err)
	}
	if _, err := n.start("2.0.0"); err != nil { // starts, then dies without a word
		t.Fatal(err)
	}
	if _, err := n.start("2.0.0"); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("second start on trial: %v", err)
	}
	if n.running() != cas.Sum(v1) {
		t.Fatal("the fallback is not back")
	}
	u, err := n.start("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	f := &served{data: v2}
	if err := u.Check(context.Background(), f, rel, false, ""); err != nil || f.n != 0 || u.Report("").State != channel.UpdateRejected {
		t.Fatalf("rejected version offered again: %v, fetched %d times, %+v", err, f.n, u.Report(""))
	}
	if err := u.Check(context.Background(), &served{data: v3}, release("3.0.0", 3, cas.Sum(v3)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatalf("a newer statement after a rejection: %v", err)
	}
}

// A deliberate stop during the trial restarts it instead of counting against the version; the guard
// rolls back a version whose previous start never ended.
func TestStopRestartsTrialAndGuard(t *testing.T) {
	v1, v2 := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64")
	n := newNode(t, v1)
	u, _ := n.start("1.0.0")
	if err := u.Check(context.Background(), &served{data: v2}, release("2.0.0", 2, cas.Sum(v2)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatal(err)
	}
	u, _ = n.start("2.0.0")
	u.Stopping()
	// guard, then run: neither rolls back after a clean stop.
	g, err := New(Config{Dir: filepath.Join(n.dir, "update"), Exe: n.exe, Version: "2.0.0", Platform: "linux-amd64", LockFile: n.lock})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Guard(context.Background()); err != nil {
		t.Fatalf("guard after a clean stop: %v", err)
	}
	u, err = n.start("2.0.0")
	if err != nil || !u.OnTrial() {
		t.Fatalf("start after a clean stop: %v", err)
	}
	// Nothing newer goes in over a version on trial.
	v3 := script("3.0.0", "linux-amd64")
	f := &served{data: v3}
	if err := u.Check(context.Background(), f, release("3.0.0", 3, cas.Sum(v3)), false, ""); err != nil || f.n != 0 {
		t.Fatalf("installed over a trial: %v %d", err, f.n)
	}
	// This start dies; the guard of the next one rolls back.
	g, _ = New(Config{Dir: filepath.Join(n.dir, "update"), Exe: n.exe, Version: "2.0.0", Platform: "linux-amd64", LockFile: n.lock})
	if err := g.Guard(context.Background()); !errors.Is(err, ErrRolledBack) || n.running() != cas.Sum(v1) {
		t.Fatalf("guard after a death on trial: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	v1, v2 := script("1.0.0", "linux-amd64"), script("2.0.0", "linux-amd64")
	for _, tc := range []struct {
		name   string
		served []byte
		pin    string
		state  string
	}{
		{"bytes differ from the pin", append([]byte{}, append(v2, '#')...), cas.Sum(v2), channel.UpdateVerifyFailed},
		{"another platform", script("2.0.0", "linux-arm64"), cas.Sum(script("2.0.0", "linux-arm64")), channel.UpdateProbeFailed},
		{"another version", script("2.0.1", "linux-amd64"), cas.Sum(script("2.0.1", "linux-amd64")), channel.UpdateProbeFailed},
		{"dies before main", []byte("#!/bin/sh\nexit 1\n"), cas.Sum([]byte("#!/bin/sh\nexit 1\n")), channel.UpdateProbeFailed},
		{"needs the environment", []byte("#!/bin/sh\n[ -n \"$HOME\" ] && echo '{\"version\":\"2.0.0\",\"platform\":\"linux-amd64\"}'\n"),
			cas.Sum([]byte("#!/bin/sh\n[ -n \"$HOME\" ] && echo '{\"version\":\"2.0.0\",\"platform\":\"linux-amd64\"}'\n")), channel.UpdateProbeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, v1)
			u, _ := n.start("1.0.0")
			if err := u.Check(context.Background(), &served{data: tc.served}, release("2.0.0", 2, tc.pin), false, ""); err != nil {
				t.Fatal(err)
			}
			if got := u.Report("").State; got != tc.state || n.running() != cas.Sum(v1) {
				t.Fatalf("state %s (want %s), running %s", got, tc.state, n.running())
			}
		})
	}
	n := newNode(t, v1)
	u, _ := n.start("1.0.0")
	_ = u.Check(context.Background(), &served{}, release("2.0.0", 2, cas.Sum(v2)), true, "turned off by policy")
	if r := u.Report("2.0.0"); r.State != channel.UpdateNone || r.Reason != "turned off by policy" || r.NeedsNewerAgent != "2.0.0" {
		t.Fatalf("update off: %+v", r)
	}
}

// teller is a served agent that records what the swap told the plane, and whether the staged binary's
// probe had run by then (the probe touches probed).
type teller struct {
	served
	probed string
	told   []channel.UpdateReport
	before []bool // per Tell: the probe had not run yet
}

func (s *teller) Tell(_ context.Context, r *channel.UpdateReport) {
	_, err := os.Stat(s.probed)
	s.told, s.before = append(s.told, *r), append(s.before, errors.Is(err, os.ErrNotExist))
}

// TestSwapTellsProbingBeforeTheProbe: a swap tells the plane, once, that it is probing the fetched
// agent before the probe runs; the probe then runs and the swap goes on to the trial.
func TestSwapTellsProbingBeforeTheProbe(t *testing.T) {
	v1 := script("1.0.0", "linux-amd64")
	n := newNode(t, v1)
	probed := filepath.Join(t.TempDir(), "probed")
	v2 := []byte("#!/bin/sh\ntouch '" + probed + "'\necho '{\"version\": \"2.0.0\", \"platform\": \"linux-amd64\"}'\n")
	u, err := n.start("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	f := &teller{served: served{data: v2}, probed: probed}
	if err := u.Check(context.Background(), f, release("2.0.0", 2, cas.Sum(v2)), false, ""); !errors.Is(err, ErrRestart) {
		t.Fatalf("check: %v", err)
	}
	if len(f.told) != 1 || f.told[0].State != channel.UpdateProbing || f.told[0].Offered != "2.0.0" || !f.before[0] {
		t.Fatalf("told %+v (before the probe: %v), want probing 2.0.0 once, before the probe", f.told, f.before)
	}
	if _, err := os.Stat(probed); err != nil {
		t.Fatalf("the probe did not run after the tell: %v", err)
	}
	if r := u.Report(""); r.State != channel.UpdateTrial {
		t.Fatalf("after the swap: %+v", r)
	}
}

// TestRefusedFetchTellsNothing: bytes that do not hash to the pin are refused before any tell: the
// plane hears probing only of a binary that was verified.
func TestRefusedFetchTellsNothing(t *testing.T) {
	n := newNode(t, script("1.0.0", "linux-amd64"))
	u, err := n.start("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	v2 := script("2.0.0", "linux-amd64")
	f := &teller{served: served{data: script("6.6.6", "linux-amd64")}, probed: filepath.Join(t.TempDir(), "probed")}
	if err := u.Check(context.Background(), f, release("2.0.0", 2, cas.Sum(v2)), false, ""); err != nil {
		t.Fatalf("check: %v", err)
	}
	if r := u.Report(""); r.State != channel.UpdateVerifyFailed || len(f.told) != 0 {
		t.Fatalf("after a bad fetch: %+v, told %+v", r, f.told)
	}
}
