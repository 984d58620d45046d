package drivers

import (
	"context"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Entry is a driver the current release pins for this plane's platform.
type Entry struct {
	// Name is the driver's class and name ("dns-memory"), as the release's subject and the executable
	// (lexicon-driver-dns-memory) spell it; operators enable drivers by it.
	Name     string      `json:"name"`
	Kind     driver.Kind `json:"kind"`
	Version  string      `json:"version"`
	Summary  string      `json:"summary,omitempty"`
	Platform string      `json:"platform"`
	// Digest is the sha256 of the executable the release pins: the only bytes the plane will run.
	Digest string `json:"digest"`
	// Manifest is the sha256 of the driver's manifest.
	Manifest string `json:"manifest"`
	// Privileged is the release's manifest saying the driver's work is this machine: it runs as the
	// plane's user without Landlock (goplugin.Options.Privileged), and only with Unconfined.
	Privileged bool `json:"privileged,omitempty"`
	// Unconfined is the admin's consent, read from the store with the driver's state (never from the
	// release), to start it where no protection can be applied.
	Unconfined bool `json:"-"`
}

// catalog is what the current release says about drivers.
type catalog struct {
	sequence int64  // 0 when no release is published
	release  string // the release's semver
	entries  map[string]Entry
	// elsewhere lists drivers the release pins only for other platforms, for a clear refusal.
	elsewhere map[string][]string
}

func (c *catalog) get(name string) (Entry, bool) {
	e, ok := c.entries[name]
	return e, ok
}

// notPinned is the refusal for a driver the current release does not pin for this platform.
func (c *catalog) notPinned(name, platform string) error {
	if c.sequence == 0 {
		return errcode.New(errcode.DriverNotPinned, "no release is published, so no driver is pinned; publish one with lexicon releases publish").
			With(errcode.DetailDriver, name)
	}
	if others, ok := c.elsewhere[name]; ok {
		return errcode.New(errcode.DriverNotPinned, "release %s pins %s only for %s, not for this plane's %s",
			c.release, name, strings.Join(others, ", "), platform).With(errcode.DetailDriver, name).With(errcode.DetailSequence, c.sequence)
	}
	return errcode.New(errcode.DriverNotPinned, "release %s (sequence %d) does not pin a driver named %s (lexicon drivers list)",
		c.release, c.sequence, name).With(errcode.DetailDriver, name).With(errcode.DetailSequence, c.sequence)
}

// sorted returns the entries by name.
func (c *catalog) sorted() []Entry {
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// loadCatalog reads the current release's drivers from the store. Manifests are checked against the
// digests the statement pins (the statement was verified when it was published) and cached by digest:
// a manifest never changes under its digest.
func (m *Manager) loadCatalog(ctx context.Context) (*catalog, error) {
	rel, err := m.store.ReleaseCurrent(ctx)
	if errcode.Has(err, errcode.ReleaseNotFound) {
		return &catalog{entries: map[string]Entry{}, elsewhere: map[string][]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := statement.DecodeBundle(rel.Bundle) // verified when it was published
	if err != nil {
		return nil, err
	}
	c := &catalog{sequence: rel.Sequence, release: rel.Version, entries: map[string]Entry{}, elsewhere: map[string][]string{}}
	for _, row := range st.Predicate.Modules {
		if row.Kind != manifest.KindDriver {
			continue
		}
		mf, err := m.manifest(ctx, row.Manifest)
		if err != nil {
			return nil, err
		}
		name := string(row.Class) + "-" + row.Name
		platform := ""
		if len(mf.Platforms) > 0 {
			platform = mf.Platforms[0]
		}
		if platform != m.cfg.Platform {
			c.elsewhere[name] = append(c.elsewhere[name], platform)
			continue
		}
		c.entries[name] = Entry{Name: name, Kind: driver.Kind(row.Class), Version: row.Version, Summary: mf.Summary,
			Platform: platform, Digest: row.Module, Manifest: row.Manifest, Privileged: mf.Privileged}
	}
	return c, nil
}

func (m *Manager) manifest(ctx context.Context, digest string) (*manifest.Manifest, error) {
	m.mu.Lock()
	mf, ok := m.manifests[digest]
	m.mu.Unlock()
	if ok {
		return mf, nil
	}
	a, err := m.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: digest})
	if err != nil {
		return nil, err
	}
	if got := cas.Sum(a.Data); got != digest {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "the stored manifest %s hashes to %s: it was altered", digest, got).
			With(errcode.DetailSHA256, digest)
	}
	mf, err = manifest.Parse(a.Data)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.manifests[digest] = mf
	m.mu.Unlock()
	return mf, nil
}

// catalog returns the current release's drivers, read again when the cached copy is older than
// CatalogTTL or fresh is set (enabling a driver always reads the release as it is now).
func (m *Manager) catalog(ctx context.Context, fresh bool) (*catalog, error) {
	m.mu.Lock()
	c, at := m.cat, m.catAt
	m.mu.Unlock()
	if c != nil && !fresh && m.cfg.Now().Sub(at) < m.cfg.CatalogTTL {
		return c, nil
	}
	c, err := m.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.cat, m.catAt = c, m.cfg.Now()
	m.mu.Unlock()
	return c, nil
}
