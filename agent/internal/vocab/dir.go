package vocab

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Dir fetches artifacts from a release folder as lexicon-release build writes it, for a node that has
// no plane to fetch from. What it serves is verified exactly as what a plane serves.
type Dir string

// Artifact serves the folder's statement bundle or one of its blobs, by the artifact route's query.
func (d Dir) Artifact(_ context.Context, query url.Values, limit int64) ([]byte, error) {
	var path string
	switch digest := query.Get("sha256"); {
	case query.Has("log_proof"):
		return d.logProof(query)
	case query.Get("statement") == "current":
		path = filepath.Join(string(d), registry.BundleFile)
	case cas.ValidDigest(digest):
		path = filepath.Join(string(d), "sha256", digest)
	default:
		return nil, errcode.New(errcode.UsageInvalid, "a release folder serves its statement, a blob by sha256 or a log proof")
	}
	return d.read(path, limit)
}

// read reads a file of the folder, up to limit bytes.
func (d Dir) read(path string, limit int64) ([]byte, error) {
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

// logProof serves the consistency proof the query asks for from the folder's log_proofs.json, if the
// publisher put one there; the node verifies it as it would the plane's.
func (d Dir) logProof(query url.Values) ([]byte, error) {
	old, err1 := strconv.ParseUint(query.Get("old"), 10, 64)
	new, err2 := strconv.ParseUint(query.Get("new"), 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errcode.New(errcode.UsageInvalid, "a log proof is asked for by origin, old and new size")
	}
	need := checkpoint.Need{Origin: query.Get("log_proof"), OldSize: old, NewSize: new}
	data, err := d.read(filepath.Join(string(d), registry.LogProofsFile), checkpoint.MaxProofBytes)
	if err == nil {
		var proofs []checkpoint.Proof
		if proofs, err = checkpoint.ParseProofs(data); err == nil {
			for _, p := range proofs {
				if p.Matches(need) {
					return json.Marshal(p)
				}
			}
		}
	}
	return nil, errcode.New(errcode.LogUnavailable, "release folder %s has no consistency proof for %s (lexicon-release prove writes them)", d, need)
}
