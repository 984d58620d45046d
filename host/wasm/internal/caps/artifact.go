package caps

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// stagedAge is how long a staged artifact is kept: long enough for a converge killed part way to find
// what it fetched, short enough that the staging folder holds about one footprint's changed files.
const stagedAge = 24 * time.Hour

func stagedStore(w *Word, cap string) (*cas.Store, error) {
	dir, err := convergeDir(w, cap)
	if err != nil {
		return nil, err
	}
	s, err := cas.Open(filepath.Join(dir, stagedDir))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "%s: cannot open the staging folder", cap)
	}
	return s, nil
}

// artifactFetch stages the artifact the plane serves for a digest. Bytes already staged and intact are
// not fetched again; bytes that do not hash to the digest (or are not the size the footprint names) are
// footprint.digest_mismatch and are not staged.
func artifactFetch(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.ArtifactFetch
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if !cas.ValidDigest(req.SHA256) {
		return nil, invalid("sha256", "sha256 must be 64 lowercase hex digits")
	}
	limit := fileLimit(w)
	if req.Size < 0 {
		return nil, invalid("size", "size must not be negative")
	}
	if req.Size > limit {
		return nil, errcode.New(errcode.FootprintTooLarge, "artifact %s is %d bytes, over the converge word's limit of %d", req.SHA256, req.Size, limit).
			With(errcode.DetailSHA256, req.SHA256).With(errcode.DetailLimitBytes, limit)
	}
	store, err := stagedStore(w, c.Cap)
	if err != nil {
		return nil, err
	}
	if store.Verify(req.SHA256) == nil {
		fi, err := os.Stat(store.Path(req.SHA256))
		if err == nil {
			// Kept for another stagedAge from now: this converge is about to install it.
			now := time.Now()
			_ = os.Chtimes(store.Path(req.SHA256), now, now)
			return capv1.ArtifactFetchResult{SHA256: req.SHA256, Size: fi.Size()}, nil
		}
	}
	if w.env.Artifacts == nil {
		return nil, errcode.New(errcode.CapabilityUnknown, "artifact.fetch: this node is not joined to a plane to fetch from").
			With(errcode.DetailReason, "no plane to fetch from")
	}
	// The fetcher asks again while the plane is away or rate limited (agent/internal/client).
	data, err := w.env.Artifacts.Artifact(ctx, url.Values{"sha256": {req.SHA256}}, limit)
	if err != nil {
		return nil, fetchError(err, req.SHA256, limit)
	}
	if req.Size > 0 && int64(len(data)) != req.Size {
		return nil, errcode.New(errcode.FootprintDigestMismatch, "the plane served %d bytes for %s, the footprint names %d", len(data), req.SHA256, req.Size).
			With(errcode.DetailSHA256, req.SHA256)
	}
	if got := cas.Sum(data); got != req.SHA256 {
		return nil, errcode.New(errcode.FootprintDigestMismatch, "the plane served bytes hashing to %s for %s", got, req.SHA256).
			With(errcode.DetailSHA256, req.SHA256)
	}
	if err := store.PutAs(req.SHA256, data); err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "artifact.fetch: cannot stage %s", req.SHA256)
	}
	prune(store)
	step("artifact.staged")
	return capv1.ArtifactFetchResult{SHA256: req.SHA256, Size: int64(len(data)), Fetched: true}, nil
}

// fetchError turns what the fetch answered into a capability's answer: the plane's own codes are not
// the word's to pass on (most are reserved), so they become capability codes naming the plane's.
func fetchError(err error, digest string, limit int64) error {
	code := errcode.Code(err)
	e := errcode.From(err, errcode.CapabilityFailed)
	switch {
	case code == errcode.RequestTooLarge:
		return errcode.New(errcode.FootprintTooLarge, "artifact %s is over the converge word's limit of %d bytes", digest, limit).
			With(errcode.DetailSHA256, digest).With(errcode.DetailLimitBytes, limit)
	case code != "" && errcode.Status(code) == 404:
		return errcode.New(errcode.CapabilityNotFound, "the plane holds no artifact %s", digest).
			With(errcode.DetailSHA256, digest).With(errcode.DetailReason, code)
	case strings.HasPrefix(code, "capability."):
		return e
	}
	return errcode.New(errcode.CapabilityFailed, "artifact.fetch %s: %s", digest, e.Message).
		With(errcode.DetailSHA256, digest).With(errcode.DetailReason, code)
}

// prune removes staged artifacts older than stagedAge.
func prune(s *cas.Store) {
	ds, err := s.List()
	if err != nil {
		return
	}
	for _, d := range ds {
		if fi, err := os.Stat(s.Path(d)); err == nil && time.Since(fi.ModTime()) > stagedAge {
			_ = os.Remove(s.Path(d))
		}
	}
}
