package recipes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

const root = "../../../"

// t0 is when every test starts; ledger times are shown as minutes after it.
var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// The loop takes the kit's manual clock for its own.
var _ Clock = (*testkit.Clock)(nil)

// machine is the service manager the tests' host sees: the faithful fake, plus a switch that makes
// restarts fail (the unit stays failed) and one that makes systemd unreachable.
type machine struct {
	*systemdtest.Fake
	stubborn  atomic.Bool // restarts fail
	unknown   atomic.Bool // every call answers capability.unknown
	onRestart func()      // called as a restart begins (the crash test exits here)
	onQuery   func()      // called as a check asks for a unit or the failed units (a slow check)
}

func (m *machine) FailedUnits(ctx context.Context) ([]string, error) {
	if m.onQuery != nil {
		m.onQuery()
	}
	if m.unknown.Load() {
		return nil, m.gone()
	}
	return m.Fake.FailedUnits(ctx)
}

func (m *machine) gone() error {
	return errcode.New(errcode.CapabilityUnknown, "systemd is not reachable (test)")
}

func (m *machine) Unit(ctx context.Context, name string) (capv1.Unit, error) {
	if m.onQuery != nil {
		m.onQuery()
	}
	if m.unknown.Load() {
		return capv1.Unit{}, m.gone()
	}
	return m.Fake.Unit(ctx, name)
}

func (m *machine) Restart(ctx context.Context, name string) error {
	if m.onRestart != nil {
		m.onRestart()
	}
	if m.unknown.Load() {
		return m.gone()
	}
	if m.stubborn.Load() {
		m.Fake.FailNextRestart(name)
	}
	return m.Fake.Restart(ctx, name)
}

func (m *machine) Vacuum(ctx context.Context, bytes int64) error {
	if m.unknown.Load() {
		return m.gone()
	}
	return m.Fake.Vacuum(ctx, bytes)
}

func (m *machine) restarts() int {
	n := 0
	for _, a := range m.Actions() {
		if strings.HasPrefix(a, "restart ") {
			n++
		}
	}
	return n
}

var _ systemd.Manager = (*machine)(nil)

const (
	running = "LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nUnitFileState=enabled\nMainPID=812\n"
	failed  = "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nUnitFileState=enabled\nMainPID=0\n"
)

// Modules of the test releases.
func wordMod(name string) vocabtest.Module {
	return vocabtest.Module{Manifest: root + "primitives/" + name + "/manifest.json", File: root + "build/wasm/" + name + ".wasm"}
}

func recipeMod(name string, edit func(*manifest.Manifest)) vocabtest.Module {
	return vocabtest.Module{Manifest: root + "primitives/recipes/" + name + "/manifest.json",
		File: root + "build/wasm/recipes/" + name + ".wasm", Edit: edit}
}

// scriptedMod is the test recipe whose check answers what dir/script.json says.
func scriptedMod(dir string, edit func(*manifest.Manifest)) vocabtest.Module {
	return vocabtest.Module{Manifest: "testdata/scripted/manifest.json", File: root + "build/wasm/recipetest/scripted.wasm",
		Edit: func(m *manifest.Manifest) {
			m.Capabilities[0].Paths = []string{dir}
			m.Params = json.RawMessage(strings.Replace(string(m.Params), "/nonexistent/script.json", filepath.Join(dir, "script.json"), 1))
			if edit != nil {
				edit(m)
			}
		}}
}

func interval(d string) func(*manifest.Manifest) {
	return func(m *manifest.Manifest) { m.Recipe.Interval = d }
}

// env is one node: a signed release loaded as its vocabulary, its policy, a host whose systemd is a
// machine, and a loop over its own state folder.
type env struct {
	t       *testing.T
	clock   *testkit.Clock
	sd      *machine
	rel     vocabtest.Release
	state   string // <state>/recipes
	config  string
	script  string // the scripted recipe's folder
	lock    string
	policy  string
	host    *wasm.Host
	loop    *Loop
	ctx     context.Context
	agentSH string
}

type setup struct {
	mods   func(e *env) []vocabtest.Module
	policy string // policy.json; default accepts look and change
	handed string // the policy the agent loaded at start and hands the loop and the host; default policy
	units  map[string]string
	agents map[string]string
	digest string // the running agent's digest, for scope release
	dirs   *env   // reuse the folders and release of an earlier env (a restart)
	// config adds to the host's configuration (the footprint capabilities' bounds, plane and folder):
	// such a node gets a host of its own.
	config func(e *env, cfg *wasm.Config)
}

const defaultPolicy = `{"classes": {"look": "accept", "change": "accept"}}`

func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	e := &env{t: t, clock: testkit.NewClock(t0), ctx: context.Background()}
	if s.dirs != nil {
		e.state, e.config, e.script, e.lock, e.rel, e.sd = s.dirs.state, s.dirs.config, s.dirs.script, s.dirs.lock, s.dirs.rel, s.dirs.sd
		e.clock = s.dirs.clock
	} else {
		base := t.TempDir()
		e.state, e.config, e.script = filepath.Join(base, "state", "recipes"), filepath.Join(base, "config"), filepath.Join(base, "script")
		e.lock = filepath.Join(base, "state", "job.lock")
		for _, d := range []string{e.config, e.script, filepath.Dir(e.state)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		e.sd = &machine{Fake: systemdtest.New(s.units)}
		e.rel = vocabtest.BuildWith(t, vocabtest.Options{Agents: s.agents}, s.mods(e)...)
	}
	pol := s.policy
	if pol == "" {
		pol = defaultPolicy
	}
	e.policy = filepath.Join(e.config, "policy.json")
	if err := os.WriteFile(e.policy, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	handed := policy.Load(e.policy)
	if s.handed != "" {
		path := filepath.Join(t.TempDir(), "handed.json")
		if err := os.WriteFile(path, []byte(s.handed), 0o600); err != nil {
			t.Fatal(err)
		}
		handed = policy.Load(path)
	}
	names := handed
	v := e.rel.Open(t)
	var rn *runner.Runner
	if s.config != nil {
		cfg := hostConfig(t, e.sd, names.Names, names.Renewal)
		s.config(e, &cfg)
		h, err := wasm.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.host = h
		t.Cleanup(func() { e.host.Close() })
		rn = &runner.Runner{Host: e.host, Vocab: v, PolicyFile: e.policy, LockFile: e.lock}
	} else if len(names.Names) == 0 && names.Renewal == nil {
		// Most tests share one host and runner, so each module is loaded once per test binary rather
		// than once per test; the runner keys what it loaded by module and manifest digest.
		sh := sharedHost(t)
		sh.sd.Store(e.sd)
		rn = sh.runner
		rn.Vocab, rn.PolicyFile, rn.LockFile = v, e.policy, e.lock
		e.host = sh.host
	} else {
		e.host = newHost(t, e.sd, names.Names, names.Renewal)
		t.Cleanup(func() { e.host.Close() })
		rn = &runner.Runner{Host: e.host, Vocab: v, PolicyFile: e.policy, LockFile: e.lock}
	}
	var err error
	e.loop, err = New(Config{Vocab: v, Runner: rn, Policy: handed, Dir: e.state, ConfigDir: e.config, AgentDigest: s.digest, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.loop.holdOwner = uint32(os.Getuid()) // root in production; the test's own user here (root in CI)
	return e
}

// step ticks what is due now; after moves the clock on, then steps.
func (e *env) step() { e.loop.Step(e.ctx) }

func (e *env) after(d time.Duration) {
	e.clock.Advance(d)
	e.step()
}

// every steps n times, d apart.
func (e *env) every(d time.Duration, n int) {
	for range n {
		e.after(d)
	}
}

// unit sets a unit's state on the machine.
func (e *env) unit(name, show string) { e.sd.AddUnit(name, show) }

// answer makes the scripted recipe's next checks answer v.
func (e *env) answer(v map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(v)
	if err := os.WriteFile(filepath.Join(e.script, "script.json"), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func fail(repair any) map[string]any {
	v := map[string]any{"verdict": "fail", "detail": "the scripted check fails"}
	if repair != nil {
		v["repair"] = repair
	}
	return v
}

var pass = map[string]any{"verdict": "pass", "detail": "the scripted check passes"}

// ledger reads a recipe's ledger.
func (e *env) ledger(recipe string) []Event {
	e.t.Helper()
	evs, skipped, err := ledger{path: ledgerPath(filepath.Join(e.state, "ledger"), recipe)}.read()
	if err != nil || skipped > 0 {
		e.t.Fatalf("ledger %s: %v (%d lines skipped)", recipe, err, skipped)
	}
	return evs
}

// timeline shows a recipe's ledger as "<minutes after t0> <event>" lines.
func (e *env) timeline(recipe string) []string {
	e.t.Helper()
	var out []string
	for _, ev := range e.ledger(recipe) {
		s := ev.Event
		switch ev.Event {
		case EventCheck:
			s += ":" + ev.Verdict
		case EventAttempt:
			s += fmt.Sprintf(":%d:%s", ev.N, ev.Mode)
		case EventOutcome:
			s += fmt.Sprintf(":%d:%s", ev.N, ev.Outcome)
			if ev.Code != "" {
				s += ":" + ev.Code
			}
		case EventEscalation, EventEscalationClosed:
			s += fmt.Sprintf(":%d", ev.Case)
		case EventEscalationNote:
			s += fmt.Sprintf(":%d:%d", ev.Case, ev.Seq)
		}
		out = append(out, fmt.Sprintf("%g %s", ev.At.Sub(t0).Minutes(), s))
	}
	return out
}

// want checks a recipe's whole timeline.
func (e *env) want(recipe string, lines ...string) {
	e.t.Helper()
	got := e.timeline(recipe)
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		e.t.Fatalf("%s ledger:\n  %s\nwant:\n  %s", recipe, strings.Join(got, "\n  "), strings.Join(lines, "\n  "))
	}
}

func (e *env) report(recipe string) (rep reportOf) {
	recipes, cases := e.loop.Report()
	for _, r := range recipes {
		if r.Name == recipe {
			rep.recipe = &r
		}
	}
	for i := range cases {
		if cases[i].Recipe == recipe {
			rep.cases = append(rep.cases, cases[i])
		}
	}
	return rep
}

func sha(path string) string {
	b, _ := os.ReadFile(path)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type reportOf struct {
	recipe *channel.RecipeReport
	cases  []channel.CaseReport
}

// newHost is an in-process host over sd, with the compile cache wordtest uses.
func newHost(t *testing.T, sd systemd.Manager, self []string, renewal *manifest.NodeProgram) *wasm.Host {
	t.Helper()
	h, err := wasm.New(context.Background(), hostConfig(t, sd, self, renewal))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// hostConfig is an in-process host's configuration over sd, with the compile cache wordtest uses.
func hostConfig(t *testing.T, sd systemd.Manager, self []string, renewal *manifest.NodeProgram) wasm.Config {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	cache = filepath.Join(cache, "lexicon", "wordtest")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	return wasm.Config{Isolation: wasm.InProcess, CacheDir: filepath.Join(cache, "cache"),
		CacheKeyFile: filepath.Join(cache, "cache.key"), Systemd: sd, Self: self, Renewal: renewal}
}

// shared is the host and runner most tests use, with the machine of the test running now.
type sharedRunner struct {
	once   sync.Once
	host   *wasm.Host
	runner *runner.Runner
	sd     *switchable
}

var shared sharedRunner

func sharedHost(t *testing.T) *sharedRunner {
	shared.once.Do(func() {
		shared.sd = &switchable{}
		shared.host = newHost(t, shared.sd, nil, nil)
		shared.runner = &runner.Runner{Host: shared.host}
	})
	return &shared
}

// switchable is a service manager that forwards to the current test's machine.
type switchable struct{ atomic.Pointer[machine] }

func (s *switchable) Unit(ctx context.Context, name string) (capv1.Unit, error) {
	return s.Load().Unit(ctx, name)
}
func (s *switchable) FailedUnits(ctx context.Context) ([]string, error) {
	return s.Load().FailedUnits(ctx)
}
func (s *switchable) Restart(ctx context.Context, name string) error {
	return s.Load().Restart(ctx, name)
}
func (s *switchable) ResetFailed(ctx context.Context, name string) error {
	return s.Load().ResetFailed(ctx, name)
}
func (s *switchable) Journal(ctx context.Context, unit string, lines int) ([]capv1.JournalEntry, error) {
	return s.Load().Journal(ctx, unit, lines)
}

func (s *switchable) Enable(ctx context.Context, name string) error {
	return s.Load().Enable(ctx, name)
}
func (s *switchable) Vacuum(ctx context.Context, bytes int64) error {
	return s.Load().Vacuum(ctx, bytes)
}
func (s *switchable) Act(ctx context.Context, action, name string) error {
	return s.Load().Act(ctx, action, name)
}

var _ systemd.Manager = (*switchable)(nil)
