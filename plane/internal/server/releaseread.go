package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// releaseShow answers a published release with the module table and agent pins of its statement.
func (s *Server) releaseShow(r *http.Request) (any, error) {
	rel, st, err := s.storedStatement(r.Context(), chi.URLParam(r, "sequence"), "sequence")
	if err != nil {
		return nil, err
	}
	out := api.ReleaseDetail{Release: apiconv.Release(rel), Modules: []api.ReleaseModule{}, Agents: []api.ReleaseAgent{}}
	for _, m := range st.Predicate.Modules {
		out.Modules = append(out.Modules, api.ReleaseModule{Kind: string(m.Kind), Name: m.Name, Version: m.Version, Class: string(m.Class), Module: m.Module, Manifest: m.Manifest})
	}
	for _, a := range registry.AgentPins(st) {
		out.Agents = append(out.Agents, api.ReleaseAgent{Platform: a.Platform, SHA256: a.SHA256})
	}
	return out, nil
}

// releaseDiff compares two published releases with registry.DiffStatements, the comparison
// lexicon-release diff makes of two release folders, reading manifests from the stored artifacts.
func (s *Server) releaseDiff(r *http.Request) (any, error) {
	from, fromSt, err := s.storedStatement(r.Context(), chi.URLParam(r, "sequence"), "sequence")
	if err != nil {
		return nil, err
	}
	to, toSt, err := s.storedStatement(r.Context(), chi.URLParam(r, "to"), "to")
	if err != nil {
		return nil, err
	}
	get := func(digest string) ([]byte, error) {
		a, err := s.store.ArtifactGet(r.Context(), store.ArtifactGetParams{Digest: digest})
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
		return nil, err
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

// storedStatement reads a stored release by the sequence in a path parameter, and decodes its bundle.
// The bundle was verified when it was published; the store holds it as it was then.
func (s *Server) storedStatement(ctx context.Context, raw, param string) (store.Release, *statement.Statement, error) {
	seq, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || seq <= 0 {
		return store.Release{}, nil, errcode.New(errcode.RequestMalformed, "a release is named by its sequence, a positive integer, not %q", raw).With(errcode.DetailField, param)
	}
	rel, err := s.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return store.Release{}, nil, err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return store.Release{}, nil, err
	}
	return rel, st, nil
}
