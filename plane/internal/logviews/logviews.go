// Package logviews compares the nodes' views of the transparency logs: it fetches from each log the
// plane reads the RFC 6962 consistency proofs nodes ask for, and judges whether the checkpoints
// different nodes hold are one history, recording each verdict for the plane:log_split_view detector.
//
// The plane is not trusted with either job: a node verifies every proof it is served against two
// signed checkpoints, and a verdict here only raises an incident for a person to look at. A log the
// plane cannot reach yields no verdict at all, never a false "consistent".
package logviews

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// DefaultEvery is how often the views are compared.
const DefaultEvery = 30 * time.Second

// Store is what the room reads and writes.
type Store interface {
	NodeCheckpointList(ctx context.Context, p store.NodeCheckpointListParams) ([]store.NodeCheckpoint, error)
	LogConsistencyList(ctx context.Context, p store.LogConsistencyListParams) ([]store.LogConsistency, error)
	LogConsistencyRecord(ctx context.Context, p store.LogConsistencyRecordParams) error
}

var _ Store = store.Store(nil)

// Config sets up the room.
type Config struct {
	Store Store
	// URLs are the read URLs of the logs the plane reads (C2SP tlog-tiles, as Rekor v2 serves them).
	// Each is paired with the held log key of the origin its checkpoint names, on first use.
	URLs []string
	// LogKeys returns the log keys the plane's trust folder holds now.
	LogKeys func() ([]keys.LogPublic, error)
	Now     func() time.Time
	Log     *slog.Logger
	Every   time.Duration // 0: DefaultEvery
}

// Views serves consistency proofs and compares the nodes' views.
type Views struct {
	*services.Periodic
	c Config

	mu      sync.Mutex
	readers map[string]*tlog.Reader // by origin, once found
}

// New makes the room; Start runs the comparisons.
func New(c Config) *Views {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	v := &Views{c: c, readers: map[string]*tlog.Reader{}}
	v.Periodic = &services.Periodic{Name: "log views", Every: c.Every, Step: v.Compare, RunAtStart: true}
	return v
}

// reader returns a reader of the log of origin: the URL whose checkpoint names origin and verifies
// with the held key of that origin.
func (v *Views) reader(ctx context.Context, origin string) (*tlog.Reader, error) {
	v.mu.Lock()
	r, ok := v.readers[origin]
	v.mu.Unlock()
	if ok {
		return r, nil
	}
	var held []keys.LogPublic
	if v.c.LogKeys != nil {
		var err error
		if held, err = v.c.LogKeys(); err != nil {
			return nil, err
		}
	}
	var key keys.LogPublic
	for _, k := range held {
		if k.Origin() == origin {
			key = k
		}
	}
	if key.IsZero() {
		return nil, errcode.New(errcode.LogUnavailable, "this plane holds no key of log %s", origin).With(errcode.DetailOrigin, origin)
	}
	var errs []string
	for _, u := range v.c.URLs {
		r := &tlog.Reader{URL: u, Log: key}
		if _, err := r.Checkpoint(ctx); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		v.mu.Lock()
		v.readers[origin] = r
		v.mu.Unlock()
		return r, nil
	}
	return nil, errcode.New(errcode.LogUnavailable, "this plane reads no log %s (lexicon-plane serve --log-url): %v", origin, errs).
		With(errcode.DetailOrigin, origin)
}

// Proof returns the consistency proof between two sizes of the log of origin, fetched from the log.
// Refused: usage.invalid (sizes that are not a tree and a larger one), log.unavailable.
func (v *Views) Proof(ctx context.Context, origin string, oldSize, newSize uint64) (checkpoint.Proof, error) {
	if oldSize == 0 || oldSize >= newSize {
		return checkpoint.Proof{}, errcode.New(errcode.UsageInvalid, "a consistency proof joins a tree to a larger one, not %d..%d", oldSize, newSize)
	}
	r, err := v.reader(ctx, origin)
	if err != nil {
		return checkpoint.Proof{}, err
	}
	return r.Prove(ctx, oldSize, newSize)
}

// Compare judges each view of each log the nodes hold against the largest of that log: a smaller
// tree must be proven its prefix. Views of one size with two roots need no proof; the detector sees
// those itself. A pair already judged is not asked again: two signed checkpoints are one history or
// are not, for good.
func (v *Views) Compare(ctx context.Context) {
	cps, err := v.c.Store.NodeCheckpointList(ctx, store.NodeCheckpointListParams{})
	if err != nil {
		v.warn(ctx, "cannot list the nodes' checkpoints", err)
		return
	}
	done, err := v.c.Store.LogConsistencyList(ctx, store.LogConsistencyListParams{})
	if err != nil {
		v.warn(ctx, "cannot list the log verdicts", err)
		return
	}
	judged := map[store.LogConsistency]bool{}
	for _, d := range done {
		judged[pairKey(d.Origin, d.Old, d.New)] = true
	}
	for origin, views := range distinctViews(cps) {
		largest := views[0]
		for _, t := range views {
			if t.Size > largest.Size {
				largest = t
			}
		}
		for _, t := range views {
			if t.Size >= largest.Size || judged[pairKey(origin, t, largest)] {
				continue
			}
			if err := v.judge(ctx, origin, t, largest); err != nil {
				v.warn(ctx, "cannot compare two views of a log", err, "origin", origin, "old_size", t.Size, "new_size", largest.Size)
			}
		}
	}
}

// judge asks the log for the proof that old is a prefix of new and records the verdict.
func (v *Views) judge(ctx context.Context, origin string, old, new store.LogTree) error {
	p, err := v.Proof(ctx, origin, uint64(old.Size), uint64(new.Size))
	if err != nil {
		return err // no verdict: the log could not be asked
	}
	verdict := store.LogConsistency{Origin: origin, Old: old, New: new, Consistent: true, Detail: "the log proved the smaller tree a prefix of the larger"}
	if err := p.Verify(tree(origin, old), tree(origin, new)); err != nil {
		verdict.Consistent = false
		verdict.Detail = fmt.Sprintf("the log's proof %d..%d does not join the two roots: %v", old.Size, new.Size, err)
		v.c.Log.Warn("two nodes hold checkpoints of a log that are not one history", "code", errcode.StatementLogInconsistent,
			"origin", origin, "old_size", old.Size, "new_size", new.Size)
	}
	return v.c.Store.LogConsistencyRecord(ctx, store.LogConsistencyRecordParams{Verdict: verdict, Now: v.c.Now()})
}

func (v *Views) warn(ctx context.Context, msg string, err error, args ...any) {
	if ctx.Err() == nil {
		v.c.Log.Warn(msg, append(args, "err", err)...)
	}
}

// distinctViews groups the checkpoints nodes hold into the distinct trees of each log.
func distinctViews(cps []store.NodeCheckpoint) map[string][]store.LogTree {
	out := map[string][]store.LogTree{}
	seen := map[store.NodeCheckpoint]bool{}
	for _, c := range cps {
		k := store.NodeCheckpoint{Origin: c.Origin, Size: c.Size, RootHash: c.RootHash}
		if seen[k] {
			continue
		}
		seen[k] = true
		out[c.Origin] = append(out[c.Origin], store.LogTree{Size: c.Size, RootHash: c.RootHash})
	}
	return out
}

func pairKey(origin string, old, new store.LogTree) store.LogConsistency {
	return store.LogConsistency{Origin: origin, Old: old, New: new}
}

// tree is a stored view as a checkpoint to verify a proof against; its root was checked when stored.
func tree(origin string, t store.LogTree) checkpoint.Checkpoint {
	h, _ := base64.StdEncoding.DecodeString(t.RootHash)
	return checkpoint.Checkpoint{Origin: origin, Size: uint64(t.Size), Hash: bytes.Clone(h)}
}

var _ services.Service = (*Views)(nil)
