package tlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// tileHeight is C2SP tlog-tiles' tile height: 2^8 hashes a tile.
const tileHeight = 8

// Reader reads a log's read side as Rekor v2 serves it (C2SP tlog-tiles: GET <URL>/checkpoint and
// GET <URL>/tile/<L>/<N>[.p/<W>]) and builds consistency proofs from the tiles. Every tile is checked
// against the log's latest checkpoint, signed by Log, before a hash from it is used; the proof is then
// checked by whoever receives it, so Reader is a convenience, not a trust anchor.
type Reader struct {
	URL  string
	Log  keys.LogPublic
	HTTP *http.Client // nil: http.DefaultClient
}

// Checkpoint fetches and verifies the log's latest checkpoint.
func (r *Reader) Checkpoint(ctx context.Context) (checkpoint.Checkpoint, error) {
	data, err := r.get(ctx, "checkpoint", checkpoint.MaxNote)
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	cp, err := checkpoint.Open(data, r.Log)
	if err != nil {
		return checkpoint.Checkpoint{}, errcode.Wrap(err, errcode.LogUnavailable, "the log at %s served a checkpoint its held key does not verify", r.URL)
	}
	return cp, nil
}

// Prove returns the RFC 6962 consistency proof from the log's tree of oldSize entries to its tree of
// newSize, built from tiles of its latest checkpoint. The log must have reached newSize.
func (r *Reader) Prove(ctx context.Context, oldSize, newSize uint64) (checkpoint.Proof, error) {
	if oldSize == 0 || oldSize > newSize || newSize > 1<<62 {
		return checkpoint.Proof{}, errcode.New(errcode.UsageInvalid, "a consistency proof joins a tree to a larger one, not %d..%d", oldSize, newSize)
	}
	latest, err := r.Checkpoint(ctx)
	if err != nil {
		return checkpoint.Proof{}, err
	}
	if latest.Size < newSize {
		return checkpoint.Proof{}, errcode.New(errcode.LogUnavailable, "the log at %s is at size %d, below %d", r.URL, latest.Size, newSize)
	}
	tree := tlog.Tree{N: int64(latest.Size)}
	copy(tree.Hash[:], latest.Hash)
	hashes := tlog.TileHashReader(tree, &tileReader{ctx: ctx, r: r})
	p, err := tlog.ProveTree(int64(newSize), int64(oldSize), hashes)
	if err != nil {
		return checkpoint.Proof{}, errcode.From(err, errcode.LogUnavailable)
	}
	out := checkpoint.Proof{Origin: r.Log.Origin(), OldSize: oldSize, NewSize: newSize, Hashes: make([][]byte, len(p))}
	for i := range p {
		out.Hashes[i] = p[i][:]
	}
	return out, nil
}

func (r *Reader) get(ctx context.Context, path string, limit int64) ([]byte, error) {
	url := strings.TrimSuffix(r.URL, "/") + "/" + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.LogUnavailable, "bad log URL %s", r.URL)
	}
	c := r.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.LogUnavailable, "cannot read %s", url)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := errcode.New(errcode.LogUnavailable, "the log answered %s for %s", resp.Status, url).With(errcode.DetailHTTPStatus, resp.StatusCode)
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %w", errNotFound, err)
		}
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.LogUnavailable, "cannot read %s", url)
	}
	if int64(len(data)) > limit {
		return nil, errcode.New(errcode.LogUnavailable, "%s is over %d bytes", url, limit)
	}
	return data, nil
}

var errNotFound = errors.New("not found")

// tileReader fetches tiles for sumdb's tile hash reader, which checks each against the tree.
type tileReader struct {
	ctx context.Context
	r   *Reader
}

func (t *tileReader) Height() int { return tileHeight }

func (t *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		// sumdb's paths carry the height (tile/8/L/N); C2SP's do not (tile/L/N).
		path := "tile/" + strings.TrimPrefix(tile.Path(), fmt.Sprintf("tile/%d/", tileHeight))
		want := int64(tile.W) * tlog.HashSize
		data, err := t.r.get(t.ctx, path, want)
		if errors.Is(err, errNotFound) && tile.W < 1<<tileHeight {
			// A log may drop a partial tile once the full one exists; its first W hashes are the same.
			full := tile
			full.W = 1 << tileHeight
			data, err = t.r.get(t.ctx, "tile/"+strings.TrimPrefix(full.Path(), fmt.Sprintf("tile/%d/", tileHeight)), int64(full.W)*tlog.HashSize)
			if err == nil && int64(len(data)) >= want {
				data = data[:want]
			}
		}
		if err != nil {
			return nil, err
		}
		if int64(len(data)) != want {
			return nil, errcode.New(errcode.LogUnavailable, "tile %s is %d bytes, not %d", path, len(data), want)
		}
		out[i] = data
	}
	return out, nil
}

func (t *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}
