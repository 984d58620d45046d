package server

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// publish takes a release folder as a tar stream, verifies it with the plane's trust folder exactly as
// a node would, checks word contracts against the current release, and stores it. Nothing is stored
// unless every check passes.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	who := tokenFrom(r.Context())
	deployAll := false
	switch v := r.URL.Query().Get("deploy_all"); v {
	case "", "false":
	case "true":
		deployAll = true
	default:
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "deploy_all is true or false, not %q", v).With(errcode.DetailField, "deploy_all"))
		return
	}
	dir, err := os.MkdirTemp("", "lexicon-publish-")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer os.RemoveAll(dir)
	if err := untarRelease(http.MaxBytesReader(w, r.Body, api.MaxReleaseUpload), dir); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.cfg.TrustDir == "" {
		s.writeError(w, r, errcode.New(errcode.KeyMalformed, "this plane has no trust folder; start it with --trust (make one with lexicon-release trust init)"))
		return
	}
	trust, err := registry.OpenTrust(s.cfg.TrustDir)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rel, rep, err := trust.VerifyDir(dir, s.now(), true)
	if err != nil {
		s.writeError(w, r, errcode.From(err, errcode.StatementInvalid).With(errcode.DetailChecks, apiconv.Checks(rep.Checks)))
		return
	}
	if err := s.checkContracts(r.Context(), rel, dir); err != nil {
		s.writeError(w, r, err)
		return
	}
	store0, _ := cas.Open(dir)
	puts := make([]store.ArtifactPut, 0, len(rel.Statement.Subject))
	for _, sub := range rel.Statement.Subject {
		data, err := store0.Get(sub.SHA256())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		puts = append(puts, store.ArtifactPut{Name: sub.Name, Digest: sub.SHA256(), Data: data})
	}
	bundle, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := rel.Statement.Predicate
	stored, err := s.store.ReleasePut(r.Context(), store.ReleasePutParams{
		Sequence: int64(p.Sequence), Version: p.Release, StatementDigest: rel.Digest, Bundle: bundle,
		Artifacts: puts, By: who.Name, Now: s.now(),
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := trust.Accept(rel); err != nil {
		s.log.Warn("release stored but the plane's trust state did not move", "sequence", p.Sequence, "err", err)
	}
	if s.cfg.Drivers != nil {
		s.cfg.Drivers.ReleaseChanged() // re-pin drivers now, not at the next sync
	}
	s.log.Info("release published", "release", p.Release, "sequence", p.Sequence, "by", who.Name, "artifacts", len(puts))
	answer := apiconv.Release(stored)
	answer.Checks = apiconv.Checks(rep.Checks)
	if deployAll {
		// The release is stored whatever happens here: a rollout that cannot start (no active node)
		// is reported, and can be started again by hand.
		ro, err := s.startRollout(r.Context(), api.RolloutRequest{Release: stored.Sequence, Selector: "all", MaxParallel: 10}, true)
		switch {
		case errcode.Has(err, errcode.RolloutEmptySelection):
			// No active node: every node runs it already, as a fleet-wide rollout with no misses
			// ends, so new nodes (provisioned ones first) are given it. Without this a fleet with
			// no node could never move the target its first machine installs.
			if err := s.store.FleetTargetSet(r.Context(), store.FleetTargetSetParams{Sequence: stored.Sequence, By: who.Name, Now: s.now()}); err != nil {
				s.writeError(w, r, err)
				return
			}
			s.log.Info("fleet target moved: no active node to roll out to", "sequence", stored.Sequence, "by", who.Name)
		case err != nil:
			s.writeError(w, r, err)
			return
		}
		answer.Rollout = ro.ID
	}
	writeJSON(w, api.ReleasesPublish.Status, answer)
}

// untarRelease unpacks only statement.bundle.json and sha256/<hex> regular files; anything else (a
// path, a link, a device) is refused, so an upload can never write outside dir.
func untarRelease(r io.Reader, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sha256"), 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return errcode.New(errcode.RequestTooLarge, "release upload is over %d bytes", api.MaxReleaseUpload)
			}
			return errcode.Wrap(err, errcode.RequestMalformed, "release upload is not a tar stream")
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag == tar.TypeDir && (name == "sha256" || name == "sha256/" || name == "" || name == ".") {
			continue
		}
		hexName, inStore := strings.CutPrefix(name, "sha256/")
		if h.Typeflag != tar.TypeReg || (name != registry.BundleFile && !(inStore && cas.ValidDigest(hexName))) {
			return errcode.New(errcode.RequestMalformed, "release upload holds %q; only %s and sha256/<hex> files belong in a release", h.Name, registry.BundleFile)
		}
		if h.Size > store.MaxArtifactSize {
			return errcode.New(errcode.RequestTooLarge, "%s is over %d bytes", name, store.MaxArtifactSize)
		}
		f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return errcode.Wrap(err, errcode.RequestMalformed, "release upload repeats %s", name)
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return errcode.Wrap(err, errcode.RequestMalformed, "cannot unpack %s", name)
		}
	}
}

// checkContracts refuses a release that breaks the contract of any word any stored release held, even
// if its publisher's tool was told to skip the check. Each word is compared with the newest release that
// held it, not only the current one: a word dropped from one release and brought back later keeps its
// name's contract. The newest holder is enough, since every release before it passed the same check
// against the one before, and output only ever grows.
func (s *Server) checkContracts(ctx context.Context, rel *registry.Release, dir string) error {
	store0, err := cas.Open(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, row := range rel.Modules() {
		if row.Kind == manifest.KindWord {
			want[row.Name] = true
		}
	}
	held, err := s.lastHeld(ctx, want)
	if err != nil {
		return err
	}
	for _, row := range rel.Modules() {
		if row.Kind != manifest.KindWord {
			continue
		}
		old, ok := held[row.Name]
		if !ok {
			continue // a word no release ever held: no contract yet
		}
		raw, err := store0.Get(row.Manifest)
		if err != nil {
			return err
		}
		next, err := manifest.Parse(raw)
		if err != nil {
			return err
		}
		if err := manifest.CheckContract(old.m, next); err != nil {
			return errcode.From(err, errcode.ContractBroken).With("release", old.release).With(errcode.DetailSequence, old.sequence)
		}
	}
	return nil
}

// heldWord is a word's manifest as the newest stored release that held it pinned it.
type heldWord struct {
	m        *manifest.Manifest
	release  string
	sequence int64
}

// lastHeld finds, for each word name in want, its manifest in the newest stored release that held it,
// walking the stored releases newest first and stopping once every name is found. Words are matched by
// name: the contract belongs to the name, whatever module or manifest digest carried it.
func (s *Server) lastHeld(ctx context.Context, want map[string]bool) (map[string]heldWord, error) {
	held := map[string]heldWord{}
	// Paged by sequence so that no release is out of reach however many were published.
	for before := int64(0); len(held) < len(want); {
		list, err := s.store.ReleaseList(ctx, store.ReleaseListParams{Limit: store.MaxListLimit, BeforeSequence: before})
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			break
		}
		before = list[len(list)-1].Sequence
		if err := s.placeHeld(ctx, list, want, held); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// placeHeld records in held, for each name of want not placed yet, its manifest in the newest release
// of list (newest first) that held it.
func (s *Server) placeHeld(ctx context.Context, list []store.Release, want map[string]bool, held map[string]heldWord) error {
	for _, r := range list {
		if len(held) == len(want) {
			break
		}
		full, err := s.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: r.Sequence})
		if err != nil {
			return err
		}
		st, err := statement.DecodeBundle(full.Bundle)
		if err != nil {
			return err
		}
		for _, row := range st.Predicate.Modules {
			if row.Kind != manifest.KindWord || !want[row.Name] {
				continue
			}
			if _, seen := held[row.Name]; seen {
				continue
			}
			a, err := s.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: row.Manifest})
			if err != nil {
				return err
			}
			if cas.Sum(a.Data) != row.Manifest {
				return errcode.New(errcode.ModuleDigestMismatch, "stored manifest of %s was altered", row.Name)
			}
			m, err := manifest.Parse(a.Data)
			if err != nil {
				return err
			}
			held[row.Name] = heldWord{m: m, release: r.Version, sequence: r.Sequence}
		}
	}
	return nil
}

// manifestIndex finds a word's signed manifest by the word's name and the release rows that pin it,
// across the stored releases. Two words may share one module (a word learns its name from argv[0]), so
// a module digest alone never names a manifest: it is always the row of that name. Manifests are
// immutable per digest, so entries never go stale.
type manifestIndex struct {
	store store.Store

	mu        sync.Mutex
	manifests map[wordKey]*manifest.Manifest // (word, manifest digest) -> manifest
	rows      map[int64][]statement.Module   // word rows of each indexed release, by sequence
}

// wordKey names one word's manifest: a manifest describes exactly one word, and is checked to on load.
type wordKey struct{ name, manifest string }

func newManifestIndex(s store.Store) *manifestIndex {
	return &manifestIndex{store: s, manifests: map[wordKey]*manifest.Manifest{}, rows: map[int64][]statement.Module{}}
}

// word returns the manifest of the word name that a node runs as the module with that digest: the row
// of that name pinning that module, in the newest stored release that has one.
func (x *manifestIndex) word(ctx context.Context, name, module string) (*manifest.Manifest, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	list, err := x.store.ReleaseList(ctx, store.ReleaseListParams{Limit: 20})
	if err != nil {
		return nil, false, err
	}
	for _, rel := range list {
		rows, err := x.load(ctx, rel.Sequence)
		if err != nil {
			return nil, false, err
		}
		for _, row := range rows {
			if row.Name == name && row.Module == module {
				return x.manifests[wordKey{row.Name, row.Manifest}], true, nil
			}
		}
	}
	return nil, false, nil
}

// load indexes the word rows of release seq once, and returns them. A stored manifest must still hash
// to its row's digest and describe that row: its name, class and module.
func (x *manifestIndex) load(ctx context.Context, seq int64) ([]statement.Module, error) {
	if rows, ok := x.rows[seq]; ok {
		return rows, nil
	}
	rel, err := x.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return nil, err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return nil, err
	}
	var rows []statement.Module
	for _, row := range st.Predicate.Modules {
		if row.Kind != manifest.KindWord {
			continue
		}
		key := wordKey{row.Name, row.Manifest}
		if _, ok := x.manifests[key]; !ok {
			a, err := x.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: row.Manifest})
			if err != nil {
				return nil, err
			}
			if cas.Sum(a.Data) != row.Manifest {
				return nil, errcode.New(errcode.ModuleDigestMismatch, "stored manifest of %s was altered", row.Name)
			}
			m, err := manifest.Parse(a.Data)
			if err != nil {
				return nil, err
			}
			if m.Name != row.Name || m.Class != row.Class || m.Module.SHA256 != row.Module {
				return nil, errcode.New(errcode.StatementInvalid, "stored manifest %s describes %s (%s, module %s), its row %s (%s, module %s)",
					row.Manifest, m.Name, m.Class, m.Module.SHA256, row.Name, row.Class, row.Module).With(errcode.DetailModule, row.Name)
			}
			x.manifests[key] = m
		}
		rows = append(rows, row)
	}
	x.rows[seq] = rows
	return rows, nil
}
