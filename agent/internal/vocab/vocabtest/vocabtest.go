// Package vocabtest builds a real, signed release from built modules and hands tests the vocabulary a
// node would load from it, verified exactly as in production.
package vocabtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Module is one module of a test release.
type Module struct {
	Manifest string                   // path of its manifest.json
	File     string                   // path of the built module (build/wasm/...)
	Edit     func(*manifest.Manifest) // optional change to the manifest before signing
}

// Release is a signed release on disk with a trust folder holding its publisher key.
type Release struct {
	Dir, Trust string

	key      keys.PublisherPrivate
	sequence uint64
}

// Options change how Build signs.
type Options struct {
	// Agents pins agent binaries: "linux/amd64" -> the binary's path.
	Agents map[string]string
	// Floor is the statement's floor; Expires its validity (0: the default).
	Floor   string
	Expires time.Duration
}

// Build signs a release of mods (sequence 1) and a trust folder for it.
func Build(t testing.TB, mods ...Module) Release {
	t.Helper()
	return BuildWith(t, Options{}, mods...)
}

// BuildWith is Build with options.
func BuildWith(t testing.TB, o Options, mods ...Module) Release {
	t.Helper()
	key := keys.NewPublisher()
	rel := Release{Dir: filepath.Join(t.TempDir(), "release"), Trust: filepath.Join(t.TempDir(), "trust"), key: key, sequence: 1}
	rel.build(t, o, mods)
	if err := registry.InitTrust(rel.Trust, []keys.PublisherPublic{key.Public()}, nil); err != nil {
		t.Fatalf("vocabtest: %v", err)
	}
	return rel
}

// Next signs the release that follows r (same publisher and trust folder, next sequence) with mods.
func (r Release) Next(t testing.TB, o Options, mods ...Module) Release {
	t.Helper()
	next := Release{Dir: filepath.Join(t.TempDir(), "release"), Trust: r.Trust, key: r.key, sequence: r.sequence + 1}
	next.build(t, o, mods)
	return next
}

func (r Release) build(t testing.TB, o Options, mods []Module) {
	t.Helper()
	src := t.TempDir()
	for _, m := range mods {
		raw, err := os.ReadFile(m.Manifest)
		if err != nil {
			t.Fatalf("vocabtest: %v", err)
		}
		man, err := manifest.Parse(raw)
		if err != nil {
			t.Fatalf("vocabtest: %s: %v", m.Manifest, err)
		}
		if m.Edit != nil {
			m.Edit(man)
			if raw, err = json.Marshal(man); err == nil {
				man, err = manifest.Parse(raw)
			}
			if err != nil {
				t.Fatalf("vocabtest: edited %s: %v", m.Manifest, err)
			}
		}
		data, err := os.ReadFile(m.File)
		if err != nil {
			t.Fatalf("vocabtest: %v (build the modules first: make wasm)", err)
		}
		dir := filepath.Join(src, string(man.Kind)+"-"+man.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, man.Module.File), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := registry.Build(registry.BuildOptions{Key: r.key, ModulesDir: src, Release: fmt.Sprintf("1.0.%d", r.sequence),
		Sequence: r.sequence, Agents: o.Agents, Floor: o.Floor, Expires: o.Expires, OutDir: r.Dir, Now: time.Now()}); err != nil {
		t.Fatalf("vocabtest: build: %v", err)
	}
}

// Open returns the vocabulary a node with a fresh state folder loads from the release.
func (r Release) Open(t testing.TB) *vocab.Vocabulary {
	t.Helper()
	v, err := vocab.Open(r.Trust, filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatalf("vocabtest: %v", err)
	}
	if err := v.Sync(context.Background(), r, channel.StatementRef{}); err != nil {
		t.Fatalf("vocabtest: sync: %v", err)
	}
	return v
}

// Artifact serves the release as the plane's artifact route does.
func (r Release) Artifact(_ context.Context, q url.Values, limit int64) ([]byte, error) {
	var path string
	switch {
	case q.Get("statement") == "current":
		path = filepath.Join(r.Dir, registry.BundleFile)
	case q.Get("sha256") != "":
		path = filepath.Join(r.Dir, "sha256", filepath.Base(q.Get("sha256")))
	default:
		return nil, errcode.New(errcode.ReleaseNotFound, "no such artifact")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.ReleaseNotFound, "no such artifact")
	}
	if int64(len(data)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "artifact over %d bytes", limit)
	}
	return data, nil
}

var _ vocab.Fetcher = Release{}
