package vocab

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Dir fetches artifacts from a release folder as lexicon-release build writes it, for a node that has
// no plane to fetch from. What it serves is verified exactly as what a plane serves.
type Dir string

// Artifact serves the folder's statement bundle or one of its blobs, by the artifact route's query.
func (d Dir) Artifact(_ context.Context, query url.Values, limit int64) ([]byte, error) {
	var path string
	switch digest := query.Get("sha256"); {
	case query.Get("statement") == "current":
		path = filepath.Join(string(d), registry.BundleFile)
	case cas.ValidDigest(digest):
		path = filepath.Join(string(d), "sha256", digest)
	default:
		return nil, errcode.New(errcode.UsageInvalid, "a release folder serves its statement or a blob by sha256")
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errcode.New(errcode.ModuleNotFound, "release folder %s has no %s", d, filepath.Base(path))
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	if int64(len(data)) > limit {
		return nil, errcode.New(errcode.StatementTooLarge, "%s is over %d bytes", path, limit)
	}
	return data, nil
}
