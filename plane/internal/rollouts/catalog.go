package rollouts

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

// Catalog reads the words a stored release pins, with their checked manifests. Releases never change
// once stored, so each is read once.
type Catalog struct {
	store store.Store
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
func NewCatalog(s store.Store) *Catalog {
	return &Catalog{store: s, rels: map[int64]*releaseWords{}}
}

// Words returns the words release seq pins, by name, and its statement digest.
func (c *Catalog) Words(ctx context.Context, seq int64) (map[string]Word, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rels[seq]; ok {
		return r.words, r.digest, nil
	}
	rel, err := c.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return nil, "", err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return nil, "", err
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
		a, err := c.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: row.Manifest})
		if err != nil {
			return nil, "", err
		}
		if cas.Sum(a.Data) != row.Manifest {
			return nil, "", errcode.New(errcode.ModuleDigestMismatch, "stored manifest of %s was altered", row.Name)
		}
		m, err := manifest.Parse(a.Data)
		if err != nil {
			return nil, "", err
		}
		if m.Name != row.Name || m.Class != row.Class || m.Module.SHA256 != row.Module {
			return nil, "", errcode.New(errcode.StatementInvalid, "stored manifest %s does not describe its row %s", row.Manifest, row.Name).
				With(errcode.DetailModule, row.Name)
		}
		r.words[row.Name] = Word{Manifest: m, Module: row.Module}
	}
	c.rels[seq] = r
	return r.words, r.digest, nil
}

// Agent returns the agent version release seq pins, "" when it pins no agent.
func (c *Catalog) Agent(ctx context.Context, seq int64) (string, error) {
	if _, _, err := c.Words(ctx, seq); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rels[seq].agent, nil
}
