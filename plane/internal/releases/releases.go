// Package releases publishes releases on the plane and serves them: it takes a release folder as a tar
// stream, verifies it with the plane's trust folder exactly as a node would, holds every word to the
// contract of the newest release that held it, stores it, and answers what the stored releases pin (to
// people, and to nodes: their target's statement and artifacts).
package releases

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the releases room reads and writes.
type Store interface {
	CatalogStore
	ReleasePut(ctx context.Context, p store.ReleasePutParams) (store.Release, error)
	FleetTargetSet(ctx context.Context, p store.FleetTargetSetParams) error
	ArtifactReleased(ctx context.Context, p store.ArtifactGetParams) (bool, error)
}

// Deployer starts the fleet-wide rollout of a release just published (publish with deploy_all).
type Deployer interface {
	// DeployAll starts it and returns the rollout's id. Refused: rollout.empty_selection when no node
	// is active, and whatever a rollout's start refuses.
	DeployAll(ctx context.Context, who api.Token, seq int64) (string, error)
}

// Config sets up the room.
type Config struct {
	Store Store
	// TrustDir verifies releases before they are published (statement_keys/, log_keys/, state).
	TrustDir string
	Log      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Catalog reads the words of stored releases; nil makes one over Store.
	Catalog *Catalog
	// Deployer starts the rollout of publish with deploy_all; nil refuses deploy_all.
	Deployer Deployer
	// Published, when not nil, is called after a release was stored (the driver manager re-pins its
	// drivers at once, not at its next sync).
	Published func()
}

// Room is the releases' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c       Config
	log     *slog.Logger
	catalog *Catalog

	mu       sync.Mutex
	statRefs map[int64]channel.StatementRef // each release's statement as claims name it; releases never change
	expiries map[int64]time.Time            // each release's statement's expiry, read once for the same reason
	agentOf  map[int64]string               // each release's version when it pins an agent binary, "" when not
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Catalog == nil {
		c.Catalog = NewCatalog(c.Store)
	}
	return &Room{c: c, log: services.Logger(c.Log), catalog: c.Catalog, statRefs: map[int64]channel.StatementRef{}, expiries: map[int64]time.Time{}, agentOf: map[int64]string{}}
}

// Catalog is the room's catalog of the words stored releases pin.
func (r *Room) Catalog() *Catalog { return r.catalog }

// Publish takes a release folder as a tar stream (statement.bundle.json and sha256/<hex>, nothing
// else), verifies it with the plane's trust folder exactly as a node would, checks word contracts
// against the releases that held each word, and stores it. Nothing is stored unless every check passes.
// With deployAll it then starts a fleet-wide rollout of it; a fleet with no active node has its target
// moved instead, so the first machine provisioned gets the release.
func (r *Room) Publish(ctx context.Context, who api.Token, body io.Reader, deployAll bool) (api.Release, error) {
	if deployAll && r.c.Deployer == nil {
		return api.Release{}, errcode.New(errcode.RequestMalformed, "this plane cannot start rollouts: publish without deploy_all").With(errcode.DetailField, "deploy_all")
	}
	dir, err := os.MkdirTemp("", "lexicon-publish-")
	if err != nil {
		return api.Release{}, err
	}
	defer os.RemoveAll(dir)
	if err := untarRelease(body, dir); err != nil {
		return api.Release{}, err
	}
	if r.c.TrustDir == "" {
		return api.Release{}, errcode.New(errcode.KeyMalformed, "this plane has no trust folder; start it with --trust (make one with lexicon-release trust init)")
	}
	trust, err := registry.OpenTrust(r.c.TrustDir)
	if err != nil {
		return api.Release{}, err
	}
	rel, rep, err := trust.VerifyDir(dir, r.c.Now(), true)
	if err != nil {
		return api.Release{}, errcode.From(err, errcode.StatementInvalid).With(errcode.DetailChecks, apiconv.Checks(rep.Checks))
	}
	if err := r.checkContracts(ctx, rel, dir); err != nil {
		return api.Release{}, err
	}
	files, _ := cas.Open(dir)
	puts := make([]store.ArtifactPut, 0, len(rel.Statement.Subject))
	for _, sub := range rel.Statement.Subject {
		data, err := files.Get(sub.SHA256())
		if err != nil {
			return api.Release{}, err
		}
		puts = append(puts, store.ArtifactPut{Name: sub.Name, Digest: sub.SHA256(), Data: data})
	}
	bundle, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
	if err != nil {
		return api.Release{}, err
	}
	p := rel.Statement.Predicate
	stored, err := r.c.Store.ReleasePut(ctx, store.ReleasePutParams{
		Sequence: int64(p.Sequence), Version: p.Release, StatementDigest: rel.Digest, Bundle: bundle,
		Artifacts: puts, By: who.Name, Now: r.c.Now(), ExpiresAt: p.ExpiresAt,
	})
	if err != nil {
		return api.Release{}, err
	}
	if err := trust.Accept(rel); err != nil {
		r.log.Warn("release stored but the plane's trust state did not move", "sequence", p.Sequence, "err", err)
	}
	if r.c.Published != nil {
		r.c.Published()
	}
	r.log.Info("release published", "release", p.Release, "sequence", p.Sequence, "by", who.Name, "artifacts", len(puts))
	answer := apiconv.Release(stored)
	answer.Checks = apiconv.Checks(rep.Checks)
	if deployAll {
		// The release is stored whatever happens here: a rollout that cannot start (no active node)
		// is reported, and can be started again by hand.
		id, err := r.c.Deployer.DeployAll(ctx, who, stored.Sequence)
		switch {
		case errcode.Has(err, errcode.RolloutEmptySelection):
			// No active node: every node runs it already, as a fleet-wide rollout with no misses
			// ends, so new nodes (provisioned ones first) are given it. Without this a fleet with
			// no node could never move the target its first machine installs.
			if err := r.c.Store.FleetTargetSet(ctx, store.FleetTargetSetParams{Sequence: stored.Sequence, By: who.Name, Now: r.c.Now()}); err != nil {
				return api.Release{}, err
			}
			r.log.Info("fleet target moved: no active node to roll out to", "sequence", stored.Sequence, "by", who.Name)
		case err != nil:
			return api.Release{}, err
		}
		answer.Rollout = id
	}
	return answer, nil
}

// List lists the stored releases, newest first, without their bundles.
func (r *Room) List(ctx context.Context, who api.Token, q api.ReleasesListQuery) (api.ReleaseList, error) {
	list, err := r.c.Store.ReleaseList(ctx, store.ReleaseListParams{Limit: q.Limit})
	if err != nil {
		return api.ReleaseList{}, err
	}
	out := api.ReleaseList{Releases: apiconv.Each(list, apiconv.Release)}
	for i := range out.Releases {
		out.Releases[i].ExpiresAt = r.Expiry(ctx, out.Releases[i].Sequence)
	}
	return out, nil
}

// AgentOf is the agent version release seq takes a node to: its version when it pins an agent binary,
// "" when it pins none or cannot be read. Read once per release and kept.
func (r *Room) AgentOf(ctx context.Context, seq int64) string {
	if seq <= 0 {
		return ""
	}
	r.mu.Lock()
	v, ok := r.agentOf[seq]
	r.mu.Unlock()
	if ok {
		return v
	}
	rel, err := r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return ""
	}
	for _, a := range rel.Artifacts {
		if strings.HasPrefix(a.Name, registry.AgentSubjectPrefix) {
			v = rel.Version
			break
		}
	}
	r.mu.Lock()
	r.agentOf[seq] = v
	r.mu.Unlock()
	return v
}

// Expiry is when release seq's statement expires, zero when it cannot be read. A list shows it for
// every row and the store lists releases without their bundles, so each release's is decoded once
// and kept: releases never change.
func (r *Room) Expiry(ctx context.Context, seq int64) time.Time {
	r.mu.Lock()
	at, ok := r.expiries[seq]
	r.mu.Unlock()
	if ok {
		return at
	}
	_, st, err := r.storedStatement(ctx, seq)
	if err != nil {
		return time.Time{}
	}
	r.mu.Lock()
	r.expiries[seq] = st.Predicate.ExpiresAt
	r.mu.Unlock()
	return st.Predicate.ExpiresAt
}

// Show answers a published release with the module table and agent pins of its statement.
func (r *Room) Show(ctx context.Context, who api.Token, seq int64) (api.ReleaseDetail, error) {
	rel, st, err := r.storedStatement(ctx, seq)
	if err != nil {
		return api.ReleaseDetail{}, err
	}
	out := api.ReleaseDetail{Release: apiconv.Release(rel), Modules: []api.ReleaseModule{}, Agents: []api.ReleaseAgent{}}
	out.ExpiresAt = st.Predicate.ExpiresAt
	for _, m := range st.Predicate.Modules {
		out.Modules = append(out.Modules, api.ReleaseModule{Kind: string(m.Kind), Name: m.Name, Version: m.Version, Class: string(m.Class), Module: m.Module, Manifest: m.Manifest})
	}
	for _, a := range registry.AgentPins(st) {
		out.Agents = append(out.Agents, api.ReleaseAgent{Platform: a.Platform, SHA256: a.SHA256})
	}
	return out, nil
}

// Diff compares two published releases with registry.DiffStatements, the comparison lexicon-release
// diff makes of two release folders, reading manifests from the stored artifacts.
func (r *Room) Diff(ctx context.Context, who api.Token, fromSeq, toSeq int64) (api.ReleaseDiff, error) {
	from, fromSt, err := r.storedStatement(ctx, fromSeq)
	if err != nil {
		return api.ReleaseDiff{}, err
	}
	to, toSt, err := r.storedStatement(ctx, toSeq)
	if err != nil {
		return api.ReleaseDiff{}, err
	}
	get := func(digest string) ([]byte, error) {
		a, err := r.c.Store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: digest})
		if err != nil {
			return nil, err
		}
		// The store does not re-hash on the way out; a manifest read here must still be the signed one.
		if cas.Sum(a.Data) != digest {
			return nil, errcode.New(errcode.ModuleDigestMismatch, "stored artifact %s was altered", digest).With(errcode.DetailDigest, digest)
		}
		return a.Data, nil
	}
	d, err := registry.DiffStatements(fromSt, toSt, get, get)
	if err != nil {
		return api.ReleaseDiff{}, err
	}
	out := api.ReleaseDiff{From: apiconv.Release(from), To: apiconv.Release(to), Added: []api.ReleaseModule{}, Removed: []api.ReleaseModule{},
		Changed: []api.ModuleChange{}, Broken: []api.ContractBreak{}, Agents: []api.AgentChange{}}
	for _, m := range d.Added {
		out.Added = append(out.Added, api.ReleaseModule{Kind: string(m.Kind), Name: m.Name, Version: m.Version})
	}
	for _, m := range d.Removed {
		out.Removed = append(out.Removed, api.ReleaseModule{Kind: string(m.Kind), Name: m.Name, Version: m.Version})
	}
	for _, c := range d.Changed {
		out.Changed = append(out.Changed, api.ModuleChange{Kind: string(c.Kind), Name: c.Name, FromVersion: c.FromVersion, ToVersion: c.ToVersion,
			ModuleChanged: c.ModuleChanged, ManifestChanged: c.ManifestChanged})
	}
	for _, b := range d.Broken {
		out.Broken = append(out.Broken, api.ContractBreak{Word: b.Word, Field: b.Field, Change: b.Change})
	}
	for _, a := range d.Agents {
		out.Agents = append(out.Agents, api.AgentChange{Platform: a.Platform, From: a.From, To: a.To})
	}
	return out, nil
}

// storedStatement reads a stored release and decodes its bundle. The bundle was verified when it was
// published; the store holds it as it was then.
func (r *Room) storedStatement(ctx context.Context, seq int64) (store.Release, *statement.Statement, error) {
	rel, err := r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return store.Release{}, nil, err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return store.Release{}, nil, err
	}
	return rel, st, nil
}

// AgentVersions lists the versions of the newest releases (up to 100) that pin an agent binary.
func (r *Room) AgentVersions(ctx context.Context) ([]string, error) {
	rels, err := r.c.Store.ReleaseList(ctx, store.ReleaseListParams{Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rel := range rels {
		for _, a := range rel.Artifacts {
			if strings.HasPrefix(a.Name, registry.AgentSubjectPrefix) {
				out = append(out, rel.Version)
				break
			}
		}
	}
	return out, nil
}

// Statement is the statement of release seq as a claim's answer names it: a node is served its target
// release's, never simply the newest (publishing offers a release; a rollout moves a node's target to
// it). Releases never change, so each one's reference is read once; a claim per node per poll must not
// read bundles. A node with no target, or a target that cannot be read, is told of none.
func (r *Room) Statement(ctx context.Context, seq int64) channel.StatementRef {
	if seq <= 0 {
		return channel.StatementRef{}
	}
	r.mu.Lock()
	ref, ok := r.statRefs[seq]
	r.mu.Unlock()
	if ok {
		return ref
	}
	rel, err := r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return channel.StatementRef{}
	}
	ref = channel.StatementRef{Sequence: uint64(rel.Sequence), Digest: rel.StatementDigest}
	r.mu.Lock()
	r.statRefs[seq] = ref
	r.mu.Unlock()
	return ref
}

// Artifact is what a node asks of the artifact route: its target release's statement
// (statement=current), a stored artifact by digest (sha256=<hex>), or the target release's agent
// binary for a platform (agent=<os>-<arch>). It never takes a path. target is the sequence of the
// release the asker is served.
func (r *Room) Artifact(ctx context.Context, target int64, q url.Values) (data []byte, contentType string, err error) {
	switch {
	case len(q) != 1:
		return nil, "", errcode.New(errcode.RequestMalformed, "ask for exactly one of statement=current, sha256=<hex> or agent=<os>-<arch>")
	case q.Get("statement") == "current":
		rel, err := r.target(ctx, target)
		if err != nil {
			return nil, "", err
		}
		return rel.Bundle, "application/json", nil
	case q.Has("sha256"):
		d := q.Get("sha256")
		if !cas.ValidDigest(d) {
			return nil, "", errcode.New(errcode.RequestMalformed, "sha256 must be 64 lowercase hex digits")
		}
		// Only what a release pins: the store also holds roles' content, which the roles room serves
		// to the nodes whose footprint names it.
		released, err := r.c.Store.ArtifactReleased(ctx, store.ArtifactGetParams{Digest: d})
		if err != nil {
			return nil, "", err
		}
		if !released {
			return nil, "", errcode.New(errcode.ModuleNotFound, "no release pins artifact %s", d).With(errcode.DetailSHA256, d)
		}
		a, err := r.c.Store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: d})
		if err != nil {
			return nil, "", err
		}
		return a.Data, "application/octet-stream", nil
	case q.Has("agent"):
		rel, err := r.target(ctx, target)
		if err != nil {
			return nil, "", err
		}
		digest := ""
		for _, a := range rel.Artifacts {
			if a.Name == registry.AgentSubjectPrefix+q.Get("agent") {
				digest = a.Digest
			}
		}
		if digest == "" {
			return nil, "", errcode.New(errcode.ArtifactNotPinned, "the current release pins no agent for %q; the plane serves an agent only as a pinned artifact", q.Get("agent")).
				With(errcode.DetailSubject, registry.AgentSubjectPrefix+q.Get("agent"))
		}
		a, err := r.c.Store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: digest})
		if err != nil {
			return nil, "", err
		}
		return a.Data, "application/octet-stream", nil
	default:
		return nil, "", errcode.New(errcode.RequestMalformed, "ask for statement=current, sha256=<hex> or agent=<os>-<arch>")
	}
}

// target is the release a node is served, with its bundle.
func (r *Room) target(ctx context.Context, seq int64) (store.Release, error) {
	if seq <= 0 {
		return store.Release{}, errcode.New(errcode.ReleaseNotFound, "no release is published")
	}
	return r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
}
