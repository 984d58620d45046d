//go:build !wasip1

// Package wordtest runs a built word or recipe through the real Lexicon host inside an ordinary `go test`: the
// same loading, schema checks, limits and capability checks a node applies, against this machine.
//
//	func TestHello(t *testing.T) {
//		w := wordtest.Load(t, "../../build/wasm/examples/hello.wasm", "manifest.json")
//		var out struct{ Greeting string }
//		w.Must(map[string]any{"name": "node"}, &out)
//		if out.Greeting != "hello, node" { t.Fatal(out.Greeting) }
//	}
//
// Capabilities reach the real machine, so a test points the manifest's roots at its own temporary
// directories (Paths; WritableDir for an fs.write root) and gives a fake service manager (WithSystemd
// with systemdtest.Fake) where this machine has no systemd. A word reaches a package manager only when
// the test gives one (WithPackages, typically pkgmgr.Apt on an apttest root). The module is pinned by its own sha256, as
// a release would pin it. sdk/word/recipetest runs a recipe's check and repair word under the recipe
// loop's rules.
package wordtest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// Word is a word (or recipe) loaded into a host for one test.
type Word struct {
	t    testing.TB
	mod  *wasm.Module
	self []string
}

type config struct {
	host   wasm.Config
	isoSet bool
	edits  []func(*manifest.Manifest)
}

// Option adjusts how a word is loaded.
type Option func(*config)

// WithSystemd gives the host a service manager, typically a systemdtest.Fake.
func WithSystemd(m systemd.Manager) Option { return func(c *config) { c.host.Systemd = m } }

// WithoutSystemd gives the host a machine without a service manager, whatever this machine has: every
// systemd.* and journal.read call answers capability.unknown.
func WithoutSystemd() Option {
	return func(c *config) { c.host.Systemd = systemd.Unavailable{Reason: "no systemd on this machine (wordtest)"} }
}

// WithPackages gives the host a package manager, typically a pkgmgr.Apt on an apttest root. Without
// it every pkg.* call answers capability.unknown: a word test never reaches this machine's own
// packages unless it asks to.
func WithPackages(m pkgmgr.Manager) Option { return func(c *config) { c.host.Packages = m } }

// WithPackagePolicy sets the node's narrowing of the pkg.* capabilities (its policy's "packages").
func WithPackagePolicy(p manifest.NodePackages) Option {
	return func(c *config) { c.host.PackagePolicy = &p }
}

// WithRenewal sets the node's renewal program, what exec.pinned's "@renewal" runs (the node's policy
// names it in production).
func WithRenewal(p manifest.NodeProgram) Option { return func(c *config) { c.host.Renewal = &p } }

// WithSelf sets the node's own names, what "@self" stands for (host or host:port).
func WithSelf(names ...string) Option { return func(c *config) { c.host.Self = names } }

// WithRootCAs sets the roots net.http trusts, for a test's own TLS server.
func WithRootCAs(pool *x509.CertPool) Option { return func(c *config) { c.host.RootCAs = pool } }

// WithConverge sets the node's bounds on the footprint capabilities, what the "converge" section of
// its policy says in production.
func WithConverge(b footprint.Bounds) Option {
	return func(c *config) { c.host.Converge = func() (*footprint.Bounds, error) { return &b, nil } }
}

// WithArtifacts gives the host a plane to fetch artifacts from by digest (wasmtest.NewArtifacts), and
// the folder where the footprint capabilities keep what they stage and record (a fresh one per Load
// unless WithConvergeDir names one).
func WithArtifacts(f wasm.Fetcher) Option { return func(c *config) { c.host.Artifacts = f } }

// WithConvergeDir names the folder the footprint capabilities keep their state in, so that several
// loads (a converge and a drift check) share it.
func WithConvergeDir(dir string) Option { return func(c *config) { c.host.ConvergeDir = dir } }

// WithReserved names the folders no footprint capability writes beneath (the agent's own, in
// production).
func WithReserved(dirs ...string) Option { return func(c *config) { c.host.Reserved = dirs } }

// WithBackup gives the host the node's backup side: the policy's backup section and the folder where
// the node's backup key is kept (a fresh test folder, typically). Run a backup word with RunWith and a
// grant the test presigned (backup/presign, against backup/backuptest's server).
func WithBackup(policy *backup.Policy, dir string) Option {
	return func(c *config) { c.host.Backup = &wasm.BackupConfig{Policy: policy, Dir: dir} }
}

// WithIsolation runs the word in worker processes (wasm.Process), as a node does. The test binary must
// then call wasm.ServeWorkerIfChild in TestMain; see Main. The default is wasm.InProcess.
func WithIsolation(iso wasm.Isolation) Option {
	return func(c *config) { c.host.Isolation, c.isoSet = iso, true }
}

// Paths replaces the roots of the declared capability cap, so a test can point a word at a temporary
// directory instead of /etc.
func Paths(cap string, paths ...string) Option {
	return WithManifest(func(m *manifest.Manifest) {
		for i := range m.Capabilities {
			if m.Capabilities[i].Cap == cap {
				m.Capabilities[i].Paths = paths
			}
		}
	})
}

// WithManifest edits the manifest before loading. The edited manifest is checked again as a whole.
func WithManifest(edit func(*manifest.Manifest)) Option {
	return func(c *config) { c.edits = append(c.edits, edit) }
}

// Main is a TestMain for tests using WithIsolation(wasm.Process):
//
//	func TestMain(m *testing.M) { wordtest.Main(m) }
func Main(m *testing.M) {
	wasm.ServeWorkerIfChild()
	os.Exit(m.Run())
}

// Load loads the built module at wasmPath under the manifest at manifestPath into a fresh host, and
// fails the test if it cannot. The host closes when the test ends.
func Load(t testing.TB, wasmPath, manifestPath string, opts ...Option) *Word {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	if !c.isoSet {
		c.host.Isolation = wasm.InProcess
	}
	module, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatalf("wordtest: %v (build the word first: make wasm)", err)
	}
	mb, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatalf("wordtest: %v", err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		t.Fatalf("wordtest: %s: %v", manifestPath, err)
	}
	if len(c.edits) > 0 {
		for _, e := range c.edits {
			e(m)
		}
		b, err := json.Marshal(m)
		if err == nil {
			m, err = manifest.Parse(b)
		}
		if err != nil {
			t.Fatalf("wordtest: edited manifest: %v", err)
		}
	}
	if c.host.CacheDir == "" {
		c.host.CacheDir, c.host.CacheKeyFile = cacheDir(t)
	}
	if c.host.ConvergeDir == "" {
		c.host.ConvergeDir = filepath.Join(t.TempDir(), "converge")
	}
	if c.host.Packages == nil {
		c.host.Packages = pkgmgr.Unavailable{Reason: "no package manager given to this test (wordtest.WithPackages)"}
	}
	h, err := wasm.New(context.Background(), c.host)
	if err != nil {
		t.Fatalf("wordtest: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	mod, err := h.Load(context.Background(), m, module, cas.Sum(module))
	if err != nil {
		t.Fatalf("wordtest: load %s: %v", wasmPath, err)
	}
	t.Cleanup(mod.Close)
	return &Word{t: t, mod: mod, self: c.host.Self}
}

// cacheDir is a compile cache shared by a user's test runs, so a word compiles once, not per test.
func cacheDir(t testing.TB) (string, string) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "lexicon", "wordtest")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("wordtest: %v", err)
	}
	return filepath.Join(dir, "cache"), filepath.Join(dir, "cache.key")
}

// Run runs the word with params: a value to encode as JSON, or json.RawMessage/[]byte/string as is.
func (w *Word) Run(params any) *wasm.Result {
	w.t.Helper()
	return w.RunWith(params, wasm.RunOptions{})
}

// RunWith is Run with what the host holds for the run and the word never sees (a backup grant).
func (w *Word) RunWith(params any, opts wasm.RunOptions) *wasm.Result {
	w.t.Helper()
	var input []byte
	switch p := params.(type) {
	case nil:
		input = []byte("{}")
	case json.RawMessage:
		input = p
	case []byte:
		input = p
	case string:
		input = []byte(p)
	default:
		b, err := json.Marshal(p)
		if err != nil {
			w.t.Fatalf("wordtest: params: %v", err)
		}
		input = b
	}
	return w.mod.RunWith(context.Background(), input, opts)
}

// Must runs the word, fails the test unless it completed, and decodes its output into out (if not nil).
func (w *Word) Must(params, out any) *wasm.Result {
	w.t.Helper()
	res := w.Run(params)
	if res.Outcome != wasm.Completed {
		w.t.Fatalf("wordtest: %s: %s %s: %s\ntranscript:\n%s", w.mod.Manifest().Name, res.Outcome, res.Code, res.Message, res.Transcript)
	}
	if out != nil {
		if err := json.Unmarshal(res.Output, out); err != nil {
			w.t.Fatalf("wordtest: output %s: %v", res.Output, err)
		}
	}
	return res
}

// Manifest returns the manifest the word was loaded with, after edits.
func (w *Word) Manifest() *manifest.Manifest { return w.mod.Manifest() }

// FakeSystemd is a service manager for tests on machines without systemd; see systemdtest.
type FakeSystemd = systemdtest.Fake

// NewFakeSystemd returns a fake whose units are given as `systemctl show` output (Key=Value lines).
func NewFakeSystemd(units map[string]string) *FakeSystemd { return systemdtest.New(units) }

// Verdict is a recipe check's answer, as the agent reads it.
type Verdict struct {
	Verdict string          `json:"verdict"`
	Detail  string          `json:"detail"`
	Repair  json.RawMessage `json:"repair,omitempty"`
}

// Check runs a recipe's check, fails the test unless it completed, and returns its verdict. A nil decl
// gives the check what the agent gives it: its manifest's declaration, with the node's own names
// (WithSelf) as "names".
func (w *Word) Check(decl any) Verdict {
	w.t.Helper()
	if decl == nil {
		d, err := w.mod.Manifest().Declaration(w.self)
		if err != nil {
			w.t.Fatalf("wordtest: declaration: %v", err)
		}
		decl = d
	}
	var v Verdict
	w.Must(decl, &v)
	return v
}
