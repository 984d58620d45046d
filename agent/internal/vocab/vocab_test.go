package vocab_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const root = "../../../"

func mods() []vocabtest.Module {
	return []vocabtest.Module{
		{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm"},
		{Manifest: root + "primitives/recipes/unit_health/manifest.json", File: root + "build/wasm/recipes/unit_health.wasm"},
		{Manifest: root + "primitives/recipes/disk_headroom/manifest.json", File: root + "build/wasm/recipes/disk_headroom.wasm"},
	}
}

// TestRecipesVerifiedLikeWords: the statement's recipes load beside its words, each module re-hashed
// against its pin; a claim's vocabulary still lists only words.
func TestRecipesVerifiedLikeWords(t *testing.T) {
	v := vocabtest.Build(t, mods()...).Open(t)
	var names []string
	for _, r := range v.Recipes() {
		if r.Manifest.Kind != manifest.KindRecipe {
			t.Fatalf("%s is a %s", r.Manifest.Name, r.Manifest.Kind)
		}
		if _, err := v.Module(r); err != nil {
			t.Fatalf("%s: %v", r.Manifest.Name, err)
		}
		names = append(names, r.Manifest.Name)
	}
	if strings.Join(names, ",") != "disk_headroom,unit_health" {
		t.Fatalf("recipes %v", names)
	}
	if rep := v.Report(); len(rep) != 1 || rep[0].Name != "restart_unit" {
		t.Fatalf("vocabulary %+v", rep)
	}
	if _, ok := v.Word("unit_health"); ok {
		t.Fatal("a recipe is runnable as a word")
	}
	if v.Untrusted() != "" {
		t.Fatal(v.Untrusted())
	}
}

// TestTamperedRecipeLeftOut: a recipe whose bytes do not match their pin is not loaded, and the node
// says why.
func TestTamperedRecipeLeftOut(t *testing.T) {
	rel := vocabtest.Build(t, mods()...)
	data, err := os.ReadFile(root + "build/wasm/recipes/unit_health.wasm")
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(rel.Dir, "sha256", cas.Sum(data))
	data[len(data)-1] ^= 1
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	v := rel.Open(t)
	if got := v.Recipes(); len(got) != 1 || got[0].Manifest.Name != "disk_headroom" {
		t.Fatalf("recipes %v", got)
	}
	if !strings.Contains(v.Untrusted(), "unit_health: module.digest_mismatch") {
		t.Fatalf("untrusted %q", v.Untrusted())
	}
}

// fetchBundle serves a release with its statement bundle replaced by bundle.
type fetchBundle struct {
	vocabtest.Release
	bundle []byte
}

func (f fetchBundle) Artifact(ctx context.Context, q url.Values, limit int64) ([]byte, error) {
	if q.Get("statement") == "current" {
		return f.bundle, nil
	}
	return f.Release.Artifact(ctx, q, limit)
}

// TestUnverifiedStatementKeepsVocabulary: the vocabulary is exactly the words of the newest statement
// the node could verify with its held keys. A newer statement signed by a key the node does not hold,
// or edited after signing, leaves the vocabulary and the statement it runs as they were and says why;
// the publisher's next statement then replaces them.
func TestUnverifiedStatementKeepsVocabulary(t *testing.T) {
	first := vocabtest.Module{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm"}
	second := vocabtest.Module{Manifest: root + "primitives/file_head/manifest.json", File: root + "build/wasm/file_head.wasm"}
	rel := vocabtest.Build(t, first)
	v := rel.Open(t)
	was := v.Ref()
	if was.Sequence != 1 || !hasWords(v, "restart_unit") {
		t.Fatalf("first statement: %+v %+v", was, v.Report())
	}
	next := rel.Next(t, vocabtest.Options{}, second)

	// A statement of sequence 2 from a publisher whose key the node does not hold.
	stranger := vocabtest.Build(t, first).Next(t, vocabtest.Options{}, second)
	// The publisher's own statement of sequence 2, its release name edited after signing.
	raw, err := os.ReadFile(filepath.Join(next.Dir, registry.BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := statement.ParseBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	env := b.GetDsseEnvelope()
	edited := bytes.Replace(env.Payload, []byte(`"1.0.2"`), []byte(`"1.0.9"`), 1)
	if bytes.Equal(edited, env.Payload) {
		t.Fatal("the payload names no release 1.0.2")
	}
	env.Payload = edited
	tampered, err := statement.MarshalBundle(b)
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		f    vocab.Fetcher
		code string
	}{
		{"unknown key", stranger, errcode.StatementSignatureInvalid},
		{"edited after signing", fetchBundle{next, tampered}, errcode.StatementSignatureInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := v.Sync(context.Background(), c.f, channel.StatementRef{})
			if !errcode.Has(err, c.code) {
				t.Fatalf("sync: %v, want %s", err, c.code)
			}
			if got := v.Ref(); got != was {
				t.Fatalf("statement %+v, want %+v", got, was)
			}
			if !hasWords(v, "restart_unit") {
				t.Fatalf("vocabulary %+v", v.Report())
			}
			if _, ok := v.Word("file_head"); ok {
				t.Fatal("a word of the refused statement is runnable")
			}
			if !strings.HasPrefix(v.Untrusted(), c.code) {
				t.Fatalf("untrusted %q, want %s", v.Untrusted(), c.code)
			}
		})
	}

	if err := v.Sync(context.Background(), next, channel.StatementRef{}); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := v.Ref(); got.Sequence != 2 || got.Digest == was.Digest {
		t.Fatalf("statement %+v after the good one", got)
	}
	if !hasWords(v, "file_head") {
		t.Fatalf("vocabulary %+v", v.Report())
	}
	if v.Untrusted() != "" {
		t.Fatalf("untrusted %q after the good statement", v.Untrusted())
	}
}

// hasWords reports whether the vocabulary is exactly names.
func hasWords(v *vocab.Vocabulary, names ...string) bool {
	var got []string
	for _, w := range v.Report() {
		got = append(got, w.Name)
	}
	return strings.Join(got, ",") == strings.Join(names, ",")
}

// crashEnv carries the child's folders: trust, modules and release, separated by newlines.
const crashEnv = "VOCAB_TEST_KILLED_CHILD"

// killedExit is the child's exit status when it was killed where the test asked.
const killedExit = 3

// TestKilledBetweenSwitchAndAccept: a node killed after it points current at a new statement and
// before it raises its trust state restarts on that statement, with its words, and completes the raise;
// it does not take its own newest statement for a rollback.
func TestKilledBetweenSwitchAndAccept(t *testing.T) {
	if env := os.Getenv(crashEnv); env != "" {
		dirs := strings.Split(env, "\n")
		v, err := vocab.Open(dirs[0], dirs[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		vocab.SetAfterSwitch(v, func() { os.Exit(killedExit) }) // no deferred function, no later write runs
		err = v.Sync(context.Background(), vocab.Dir(dirs[2]), channel.StatementRef{})
		t.Fatalf("sync finished (%v) without reaching the kill", err)
	}
	first := vocabtest.Build(t, vocabtest.Module{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm"})
	modules := filepath.Join(t.TempDir(), "modules")
	v, err := vocab.Open(first.Trust, modules, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Sync(context.Background(), first, channel.StatementRef{}); err != nil || v.Ref().Sequence != 1 {
		t.Fatalf("first statement: %v %+v", err, v.Ref())
	}
	next := first.Next(t, vocabtest.Options{}, vocabtest.Module{Manifest: root + "primitives/file_head/manifest.json", File: root + "build/wasm/file_head.wasm"})

	child := exec.Command(os.Args[0], "-test.run=^TestKilledBetweenSwitchAndAccept$")
	child.Env = append(os.Environ(), crashEnv+"="+first.Trust+"\n"+modules+"\n"+next.Dir)
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != killedExit {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if tr, err := registry.OpenTrust(first.Trust); err != nil || tr.State().Sequence != 1 {
		t.Fatalf("the kill came after the raise: %+v %v", tr.State(), err)
	}

	restarted, err := vocab.Open(first.Trust, modules, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := restarted.Ref(); got.Sequence != 2 || !hasWords(restarted, "file_head") || restarted.Untrusted() != "" {
		t.Fatalf("restarted on %+v with %+v, untrusted %q", got, restarted.Report(), restarted.Untrusted())
	}
	tr, err := registry.OpenTrust(first.Trust)
	if err != nil || tr.State().Sequence != 2 {
		t.Fatalf("the restart did not complete the raise: %+v %v", tr.State(), err)
	}
	// And the restart after that is an ordinary one.
	again, err := vocab.Open(first.Trust, modules, nil)
	if err != nil || again.Ref() != restarted.Ref() || !hasWords(again, "file_head") {
		t.Fatalf("second restart: %v %+v", err, again.Ref())
	}
}

// overlapFetcher serves a release and counts its module fetches: how many were in flight at once, and
// how often each digest was asked for. A module fetch waits until another is in flight too, or until
// a wait gives up (then no later one waits), so fetches made one after another show one in flight.
type overlapFetcher struct {
	vocabtest.Release
	mu       sync.Mutex
	inFlight int
	most     int
	asked    map[string]int
	overlap  chan struct{}
	once     sync.Once
}

func (o *overlapFetcher) Artifact(ctx context.Context, q url.Values, limit int64) ([]byte, error) {
	d := q.Get("sha256")
	if d == "" {
		return o.Release.Artifact(ctx, q, limit)
	}
	o.mu.Lock()
	o.inFlight++
	o.most = max(o.most, o.inFlight)
	o.asked[d]++
	if o.inFlight == 2 {
		o.once.Do(func() { close(o.overlap) })
	}
	o.mu.Unlock()
	select {
	case <-o.overlap:
	case <-time.After(5 * time.Second):
		o.once.Do(func() { close(o.overlap) })
	}
	o.mu.Lock()
	o.inFlight--
	o.mu.Unlock()
	return o.Release.Artifact(ctx, q, limit)
}

// TestStatementModulesFetchedTogether: a new statement's manifests and modules are fetched a few at a
// time, not one after another (a new node waits on them before its first claim), each digest once even
// when twin words share a module, and the vocabulary is the statement's all the same.
func TestStatementModulesFetchedTogether(t *testing.T) {
	twin := vocabtest.Module{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm",
		Edit: func(m *manifest.Manifest) { m.Name = "restart_unit_twin" }}
	rel := vocabtest.Build(t, append(mods(), twin)...)
	f := &overlapFetcher{Release: rel, asked: map[string]int{}, overlap: make(chan struct{})}
	v, err := vocab.Open(rel.Trust, filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Sync(context.Background(), f, channel.StatementRef{}); err != nil {
		t.Fatal(err)
	}
	if f.most < 2 || f.most > 4 {
		t.Errorf("%d module fetches in flight at most, want 2 to 4", f.most)
	}
	for d, n := range f.asked {
		if n != 1 {
			t.Errorf("%s fetched %d times", d, n)
		}
	}
	if len(f.asked) != 7 { // four manifests, three modules
		t.Errorf("%d digests fetched, want 7", len(f.asked))
	}
	if rep := v.Report(); len(rep) != 2 || rep[0].Name != "restart_unit" || rep[1].Name != "restart_unit_twin" || v.Untrusted() != "" {
		t.Fatalf("vocabulary %+v, untrusted %q", rep, v.Untrusted())
	}
}
