package drivers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// root is the repository root.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// bins are the driver executables TestMain builds, by the name they get in a release.
var bins = map[string]string{}

// Drivers built for these tests: the outside author's in-memory DNS driver (twice, as two different
// executables, for re-pinning), host/goplugin's misbehaving DNS driver (crash.test. panics mid-call
// with the credential in its message) and its mock cloud driver (creating "hang" never answers, "crash"
// panics), also built as cloud-basic, which has none of the optional features.
var builds = []struct{ name, pkg, flags string }{
	{"dns-memory", "./examples/driver-memory", "-s -w"},
	{"dns-memory-v2", "./examples/driver-memory", ""},
	{"dns-crashy", "./host/goplugin/internal/testdriver/dns", "-s -w"},
	{"cloud-mock", "./host/goplugin/internal/testdriver/cloud", "-s -w"},
	{"cloud-basic", "./host/goplugin/internal/testdriver/cloud", "-s -w -X main.variant=basic"},
	{"dns-memory-privileged", "./examples/driver-memory", "-s -w"},
	{"cloud-netns", "./plugins/cloud/netns", "-s -w"},
}

// binDir holds the built drivers; they are built on first use, so that fuzz workers (which run
// TestMain too) never build them.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plane-drivers-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildBins = sync.OnceValue(func() error {
	for _, b := range builds {
		out := filepath.Join(binDir, b.name)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+b.flags, "-o", out, b.pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", b.pkg, err, msg)
		}
		bins[b.name] = out
	}
	return nil
})

// credential is the secret every test account gets; no log line or answer may ever hold it.
const credential = "tsig-Zk9pQ2rX7vL1mN4bW8cY3dF6gH0jK5sA"

// manifests of the test drivers, by release name.
var manifests = map[string]string{
	"dns-memory":            `{"schema":"lexicon/manifest/v1","name":"memory","kind":"driver","version":"1.0.0","class":"dns","summary":"in-memory DNS","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-dns-memory"}}`,
	"dns-memory-v2":         `{"schema":"lexicon/manifest/v1","name":"memory","kind":"driver","version":"1.0.1","class":"dns","summary":"in-memory DNS","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-dns-memory"}}`,
	"dns-crashy":            `{"schema":"lexicon/manifest/v1","name":"crashy","kind":"driver","version":"1.0.0","class":"dns","summary":"misbehaves on purpose","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-dns-crashy"}}`,
	"cloud-mock":            `{"schema":"lexicon/manifest/v1","name":"mock","kind":"driver","version":"1.0.0","class":"cloud","summary":"mock cloud","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-cloud-mock"}}`,
	"cloud-basic":           `{"schema":"lexicon/manifest/v1","name":"basic","kind":"driver","version":"1.0.0","class":"cloud","summary":"cloud without optional features","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-cloud-basic"}}`,
	"dns-memory-privileged": `{"schema":"lexicon/manifest/v1","name":"memory","kind":"driver","version":"1.0.2","class":"dns","summary":"in-memory DNS, declared privileged","platforms":["linux/amd64"],"privileged":true,"module":{"file":"lexicon-driver-dns-memory"}}`,
	"dns-armonly":           `{"schema":"lexicon/manifest/v1","name":"armonly","kind":"driver","version":"1.0.0","class":"dns","summary":"not for this plane","platforms":["linux/arm64"],"module":{"file":"lexicon-driver-dns-armonly"}}`,
}

// fixture is a plane store with releases, a master key, and a driver manager on them.
type fixture struct {
	t    testing.TB
	url  string
	st   store.Store
	key  *seal.Key
	log  *testkit.Buffer
	m    *drivers.Manager
	pub  keys.PublisherPrivate
	seq  uint64
	dir  string
	ctx  context.Context
	logs []*testkit.Buffer // every manager's log, checked for the credential at cleanup
	// driverDir is the first manager's local copy of driver executables.
	driverDir string
}

func newFixture(t testing.TB, url string) *fixture {
	t.Helper()
	must(t, buildBins())
	if url == "" {
		url = filepath.Join(t.TempDir(), "plane.db")
	}
	f := &fixture{t: t, url: url, st: storetest.Open(t, url), pub: keys.NewPublisher(), dir: t.TempDir(), ctx: t.Context()}
	var err error
	f.key, err = seal.LoadOrCreate(filepath.Join(f.dir, "master.key"))
	must(t, err)
	f.m, f.log = f.manager(f.st, f.key, "")
	t.Cleanup(func() {
		for _, l := range f.logs {
			if strings.Contains(l.String(), credential) {
				t.Errorf("a log holds the credential:\n%s", l.String())
			}
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", f.log.String())
		}
	})
	return f
}

// manager makes another manager (a replica, or the plane after a restart) on st with key.
func (f *fixture) manager(st store.Store, key *seal.Key, platform string) (*drivers.Manager, *testkit.Buffer) {
	f.t.Helper()
	return f.managerWith(st, key, platform, nil)
}

// managerWith is manager with edit applied to its config (nil: none).
func (f *fixture) managerWith(st store.Store, key *seal.Key, platform string, edit func(*drivers.Config)) (*drivers.Manager, *testkit.Buffer) {
	f.t.Helper()
	lb := &testkit.Buffer{}
	dir := filepath.Join(f.t.TempDir(), "drivers")
	if f.driverDir == "" {
		f.driverDir = dir
	}
	cfg := drivers.Config{
		Store: st, Dir: dir, Key: key, Platform: platform,
		Log:    slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Plugin: goplugin.Options{CallTimeout: 20 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second},
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := drivers.New(cfg)
	must(f.t, err)
	f.t.Cleanup(m.Close)
	f.logs = append(f.logs, lb)
	return m, lb
}

// publish builds and signs a release of the named test drivers and stores it as the current one.
func (f *fixture) publish(names ...string) store.Release {
	f.t.Helper()
	return f.publishWith(nil, names...)
}

// publishWith is publish with extra artifacts pinned in the release (an agent, for provisioning).
func (f *fixture) publishWith(extra []store.ArtifactPut, names ...string) store.Release {
	f.t.Helper()
	mods := filepath.Join(f.t.TempDir(), "modules")
	for _, n := range names {
		d := filepath.Join(mods, n)
		must(f.t, os.MkdirAll(d, 0o755))
		must(f.t, os.WriteFile(filepath.Join(d, "manifest.json"), []byte(manifests[n]), 0o644))
		bin, ok := bins[n]
		var data []byte
		if ok {
			var err error
			data, err = os.ReadFile(bin)
			must(f.t, err)
		} else {
			data = []byte("\x7fELF not for this platform " + n)
		}
		var mf struct{ Module struct{ File string } }
		must(f.t, json.Unmarshal([]byte(manifests[n]), &mf))
		file := filepath.Join(d, mf.Module.File)
		must(f.t, os.WriteFile(file, data, 0o755))
	}
	f.seq++
	out := filepath.Join(f.t.TempDir(), "release")
	res, err := registry.Build(registry.BuildOptions{Key: f.pub, ModulesDir: mods, Release: fmt.Sprintf("1.0.%d", f.seq), Sequence: f.seq, OutDir: out})
	must(f.t, err)
	blobs, err := cas.Open(out)
	must(f.t, err)
	list, err := blobs.List()
	must(f.t, err)
	var puts []store.ArtifactPut
	for i, d := range list {
		data, err := blobs.Get(d)
		must(f.t, err)
		puts = append(puts, store.ArtifactPut{Name: "blob/" + strconv.Itoa(i), Digest: d, Data: data})
	}
	puts = append(puts, extra...)
	bundle, err := os.ReadFile(filepath.Join(out, registry.BundleFile))
	must(f.t, err)
	rel, err := f.st.ReleasePut(f.ctx, store.ReleasePutParams{Sequence: int64(f.seq), Version: res.Release, StatementDigest: res.Statement,
		Bundle: bundle, Artifacts: puts, By: "publisher"})
	must(f.t, err)
	f.m.ReleaseChanged()
	return rel
}

// digestOf is the digest of a built test driver.
func digestOf(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(bins[name])
	must(t, err)
	return cas.Sum(data)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// running reports whether pid is a live driver process named lexicon-driver-<name>.
func running(pid int, name string) bool {
	if pid <= 0 {
		return false
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.HasPrefix(string(cmd), "lexicon-driver-"+name)
}
