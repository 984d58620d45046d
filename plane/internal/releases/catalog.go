package releases

import (
	"context"
	"strings"
	"sync"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// CatalogStore is what a Catalog reads: stored releases and the manifests among their artifacts.
type CatalogStore interface {
	ReleaseGet(ctx context.Context, p store.ReleaseGetParams) (store.Release, error)
	ReleaseList(ctx context.Context, p store.ReleaseListParams) ([]store.Release, error)
	ArtifactGet(ctx context.Context, p store.ArtifactGetParams) (store.Artifact, error)
}

// Catalog reads the words stored releases pin, with their signed manifests. A word is authorised by
// its name, never by its bytes: two words may share one module (a word learns its name from argv[0]),
// so a manifest is always found through the row of that name, and a stored manifest must hash to its
// row's digest and describe that row (name, class, module). Releases never change once stored, so each
// is read once.
type Catalog struct {
	store CatalogStore
	mu    sync.Mutex
	rels  map[int64]*releaseWords
}

// Word is a word a release pins.
type Word struct {
	Manifest *manifest.Manifest
	Module   string // the module's sha256, as nodes report it
}

type releaseWords struct {
	digest string
	words  map[string]Word
	agent  string // the agent version the release pins (its own version), "" when it pins none
}

// NewCatalog makes a catalog over s.
func NewCatalog(s CatalogStore) *Catalog {
	return &Catalog{store: s, rels: map[int64]*releaseWords{}}
}

// Words returns the words release seq pins, by name, and its statement digest.
func (c *Catalog) Words(ctx context.Context, seq int64) (map[string]Word, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.load(ctx, seq)
	if err != nil {
		return nil, "", err
	}
	return r.words, r.digest, nil
}

// Agent returns the agent version release seq pins, "" when it pins no agent.
func (c *Catalog) Agent(ctx context.Context, seq int64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.load(ctx, seq)
	if err != nil {
		return "", err
	}
	return r.agent, nil
}

// Word returns the manifest of the word name that a node runs as the module with that digest: the row
// of that name pinning that module, in the newest of the last 20 stored releases that has one. Another
// word on the same module has its own class and schema, and never lends them.
func (c *Catalog) Word(ctx context.Context, name, module string) (*manifest.Manifest, bool, error) {
	return c.newest(ctx, name, func(w Word) bool { return w.Module == module })
}

// Named returns the manifest of the word name as the newest of the last 20 stored releases that pins
// it: what a schedule, which is not tied to one node's module, is checked against.
func (c *Catalog) Named(ctx context.Context, name string) (*manifest.Manifest, bool, error) {
	return c.newest(ctx, name, func(Word) bool { return true })
}

// newest finds the word name that match accepts in the newest of the last 20 stored releases.
func (c *Catalog) newest(ctx context.Context, name string, match func(Word) bool) (*manifest.Manifest, bool, error) {
	list, err := c.store.ReleaseList(ctx, store.ReleaseListParams{Limit: 20})
	if err != nil {
		return nil, false, err
	}
	for _, rel := range list {
		words, _, err := c.Words(ctx, rel.Sequence)
		if err != nil {
			return nil, false, err
		}
		if w, ok := words[name]; ok && match(w) {
			return w.Manifest, true, nil
		}
	}
	return nil, false, nil
}

// load reads release seq's words once; c.mu is held.
func (c *Catalog) load(ctx context.Context, seq int64) (*releaseWords, error) {
	if r, ok := c.rels[seq]; ok {
		return r, nil
	}
	rel, err := c.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return nil, err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return nil, err
	}
	r := &releaseWords{digest: rel.StatementDigest, words: map[string]Word{}}
	for _, a := range rel.Artifacts {
		if strings.HasPrefix(a.Name, registry.AgentSubjectPrefix) {
			r.agent = rel.Version // an agent is stamped with the version of the release that pins it
		}
	}
	for _, row := range st.Predicate.Modules {
		if row.Kind != manifest.KindWord {
			continue
		}
		m, err := storedManifest(ctx, c.store, row)
		if err != nil {
			return nil, err
		}
		if m.Name != row.Name || m.Class != row.Class || m.Module.SHA256 != row.Module {
			return nil, errcode.New(errcode.StatementInvalid, "stored manifest %s describes %s (%s, module %s), its row %s (%s, module %s)",
				row.Manifest, m.Name, m.Class, m.Module.SHA256, row.Name, row.Class, row.Module).With(errcode.DetailModule, row.Name)
		}
		r.words[row.Name] = Word{Manifest: m, Module: row.Module}
	}
	c.rels[seq] = r
	return r, nil
}

// storedManifest reads the manifest a release row pins from the stored artifacts. The store does not
// re-hash on the way out; a manifest the plane authorises by must still be the signed one.
func storedManifest(ctx context.Context, s CatalogStore, row statement.Module) (*manifest.Manifest, error) {
	a, err := s.ArtifactGet(ctx, store.ArtifactGetParams{Digest: row.Manifest})
	if err != nil {
		return nil, err
	}
	if cas.Sum(a.Data) != row.Manifest {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "stored manifest of %s was altered", row.Name)
	}
	return manifest.Parse(a.Data)
}
