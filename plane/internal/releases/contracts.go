package releases

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

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
func (r *Room) checkContracts(ctx context.Context, rel *registry.Release, dir string) error {
	files, err := cas.Open(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, row := range rel.Modules() {
		if row.Kind == manifest.KindWord {
			want[row.Name] = true
		}
	}
	held, err := r.lastHeld(ctx, want)
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
		raw, err := files.Get(row.Manifest)
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
func (r *Room) lastHeld(ctx context.Context, want map[string]bool) (map[string]heldWord, error) {
	held := map[string]heldWord{}
	// Paged by sequence so that no release is out of reach however many were published.
	for before := int64(0); len(held) < len(want); {
		list, err := r.c.Store.ReleaseList(ctx, store.ReleaseListParams{Limit: store.MaxListLimit, BeforeSequence: before})
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			break
		}
		before = list[len(list)-1].Sequence
		if err := r.placeHeld(ctx, list, want, held); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// placeHeld records in held, for each name of want not placed yet, its manifest in the newest release
// of list (newest first) that held it.
func (r *Room) placeHeld(ctx context.Context, list []store.Release, want map[string]bool, held map[string]heldWord) error {
	for _, rel := range list {
		if len(held) == len(want) {
			break
		}
		full, err := r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: rel.Sequence})
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
			m, err := storedManifest(ctx, r.c.Store, row)
			if err != nil {
				return err
			}
			held[row.Name] = heldWord{m: m, release: rel.Version, sequence: rel.Sequence}
		}
	}
	return nil
}
