package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Reader reads one chain of runs back through a read grant.
type Reader struct {
	client *Client
	id     age.Identity
	grant  *channel.BackupGrant
	runs   []*runRead
	index  *backup.Index

	// fetched and fetchedBytes count the objects read back and checked.
	fetched, fetchedBytes atomic.Int64
}

type runRead struct {
	m    *backup.Manifest
	gets map[string]channel.Presigned
}

// Open fetches and checks the manifests of the grant's chain and the index of its last run, decrypted
// with id (the node's key, or the recovery key).
func Open(ctx context.Context, client *Client, g *channel.BackupGrant, id age.Identity, now time.Time) (*Reader, error) {
	if err := checkReadGrant(g, now); err != nil {
		return nil, err
	}
	r := &Reader{client: client, id: id, grant: g}
	chain := make([]string, 0, len(g.Runs))
	for _, gr := range g.Runs {
		chain = append(chain, gr.Run)
	}
	for i, gr := range g.Runs {
		m, err := r.manifest(ctx, gr)
		if err != nil {
			return nil, err
		}
		switch {
		case m.Run != gr.Run || m.Node != g.Node:
			return nil, errcode.New(errcode.BackupManifestInvalid, "the manifest at %s describes %s/%s", gr.Manifest.Key, m.Node, m.Run).
				With(errcode.DetailName, gr.Manifest.Key)
		case !slices.Equal(m.Chain, chain[:i+1]):
			return nil, errcode.New(errcode.BackupManifestInvalid, "run %s is not part of the chain %s", m.Run, strings.Join(chain, ", ")).
				With(errcode.DetailName, gr.Manifest.Key)
		}
		rr := &runRead{m: m, gets: map[string]channel.Presigned{}}
		for _, p := range gr.Objects {
			rr.gets[p.Key] = p
		}
		for _, o := range m.Objects {
			if _, ok := rr.gets[o.Key]; !ok {
				return nil, errcode.New(errcode.BackupGrantInvalid, "the grant has no request for %s, which run %s names", o.Key, m.Run).
					With(errcode.DetailName, o.Key)
			}
		}
		r.runs = append(r.runs, rr)
	}
	last := r.Last()
	rc := r.stream(ctx, last, backup.RoleIndex, "")
	x, err := backup.ReadIndex(rc)
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if x.Header.Run != last.Run || x.Header.Node != last.Node || !slices.Equal(x.Header.Chain, last.Chain) {
		return nil, errcode.New(errcode.BackupManifestInvalid, "the index of %s describes another run", last.Run).With(errcode.DetailName, last.Run)
	}
	r.index = x
	return r, nil
}

// checkReadGrant holds a read grant to its shape: runs in order, GETs only, under the node's prefix.
func checkReadGrant(g *channel.BackupGrant, now time.Time) error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.BackupGrantInvalid, "the read grant: "+format, args...).With(errcode.DetailField, field)
	}
	switch {
	case g == nil || len(g.Runs) == 0:
		return errcode.New(errcode.BackupGrantMissing, "the job carries no read grant: only the plane hands one, for a verify or restore job")
	case !backup.ValidNodeID(g.Node) || !strings.HasSuffix(g.Prefix, g.Node+"/"):
		return bad("prefix", "the prefix is not the node's own folder")
	case !g.Expires.After(now):
		return bad("expires", "the grant expired at %s", g.Expires.UTC().Format(time.RFC3339))
	case len(g.Runs) > backup.MaxChain:
		return bad("runs", "over %d runs", backup.MaxChain)
	}
	for i, gr := range g.Runs {
		f := fmt.Sprintf("runs/%d", i)
		if !backup.ValidRunID(gr.Run) || i > 0 && gr.Run <= g.Runs[i-1].Run {
			return bad(f+"/run", "the runs are not run ids in order")
		}
		prefix := g.Prefix + gr.Run + "/"
		if gr.Manifest.Key != prefix+backup.ManifestName || gr.Manifest.Method != http.MethodGet {
			return bad(f+"/manifest", "the manifest request is not a GET of the run's manifest")
		}
		for j, o := range gr.Objects {
			name, ok := strings.CutPrefix(o.Key, prefix)
			if !ok || name == "" || strings.Contains(name, "/") || o.Method != http.MethodGet {
				return bad(fmt.Sprintf("%s/objects/%d", f, j), "the request for %q is not a GET of the run's own object", o.Key)
			}
		}
	}
	return nil
}

func (r *Reader) manifest(ctx context.Context, gr channel.GrantRun) (*backup.Manifest, error) {
	body, _, err := r.client.get(ctx, gr.Manifest)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, backup.MaxManifestSize+1))
	if err != nil {
		return nil, transportError(ctx, gr.Manifest.Key, err)
	}
	m, err := backup.ParseManifest(data)
	if err != nil {
		e := errcode.From(err, errcode.BackupManifestInvalid)
		e.Message = gr.Manifest.Key + ": " + e.Message
		return nil, e.With(errcode.DetailName, gr.Manifest.Key)
	}
	return m, nil
}

// Last is the manifest of the chain's last run, the one read.
func (r *Reader) Last() *backup.Manifest { return r.runs[len(r.runs)-1].m }

// Manifests are the chain's manifests, the full run first.
func (r *Reader) Manifests() []*backup.Manifest {
	out := make([]*backup.Manifest, len(r.runs))
	for i, rr := range r.runs {
		out[i] = rr.m
	}
	return out
}

// Index is the last run's index: the whole tree.
func (r *Reader) Index() *backup.Index { return r.index }

func (r *Reader) run(id string) *runRead {
	for _, rr := range r.runs {
		if rr.m.Run == id {
			return rr
		}
	}
	return nil
}

// stream returns one stream of run m, its segments fetched, checked against the manifest (size and
// sha256 of the bytes stored) and decrypted in order. A segment is fetched while the one before it is
// read.
func (r *Reader) stream(ctx context.Context, m *backup.Manifest, role, db string) io.ReadCloser {
	rr := r.run(m.Run)
	objs := m.Stream(role, db)
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	fetched := make(chan fetchResult, 1)
	go func() {
		defer close(fetched)
		for _, o := range objs {
			b, err := r.fetch(ctx, rr.gets[o.Key], o)
			select {
			case fetched <- fetchResult{o: o, data: b, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for f := range fetched {
			if f.err != nil {
				pw.CloseWithError(f.err)
				return
			}
			dr, err := age.Decrypt(bytes.NewReader(f.data), r.id)
			if err == nil {
				var n int64
				n, err = io.Copy(pw, dr)
				if err == nil && n != f.o.Plain {
					err = fmt.Errorf("%d bytes where the manifest says %d", n, f.o.Plain)
				}
			}
			if err != nil {
				if errcode.Code(err) == "" {
					err = errcode.Wrap(err, errcode.BackupVerifyFailed, "%s does not decrypt to its segment: %v", f.o.Key, err).
						With(errcode.DetailName, f.o.Key).With(errcode.DetailReason, "decrypt")
				}
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	return &streamReader{PipeReader: pr, cancel: cancel}
}

type fetchResult struct {
	o    backup.Object
	data []byte
	err  error
}

type streamReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (s *streamReader) Close() error {
	s.cancel()
	return s.PipeReader.Close()
}

// fetch downloads one object and checks its size and digest.
func (r *Reader) fetch(ctx context.Context, p channel.Presigned, o backup.Object) ([]byte, error) {
	body, _, err := r.client.get(ctx, p)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var buf bytes.Buffer
	buf.Grow(int(o.Size) + 1) // at most backup.MaxObjectSize: the manifest was checked
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(&buf, h), io.LimitReader(body, o.Size+1))
	if err != nil {
		return nil, transportError(ctx, o.Key, err)
	}
	if n != o.Size {
		return nil, errcode.New(errcode.BackupVerifyFailed, "%s is %d bytes in the bucket, the manifest says %d", o.Key, n, o.Size).
			With(errcode.DetailName, o.Key).With(errcode.DetailReason, "size")
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != o.SHA256 {
		return nil, errcode.New(errcode.BackupVerifyFailed, "%s has sha256 %s in the bucket, the manifest says %s", o.Key, sum, o.SHA256).
			With(errcode.DetailName, o.Key).With(errcode.DetailReason, "sha256")
	}
	r.fetched.Add(1)
	r.fetchedBytes.Add(n)
	return buf.Bytes(), nil
}

// Database returns the dump of a database of the last run, decrypted.
func (r *Reader) Database(ctx context.Context, name string) (io.ReadCloser, error) {
	last := r.Last()
	for _, d := range last.Databases {
		if d.Name == name {
			return r.stream(ctx, last, backup.RoleDatabase, name), nil
		}
	}
	return nil, errcode.New(errcode.BackupObjectMissing, "run %s holds no dump of %s", last.Run, name).With(errcode.DetailName, name)
}

var _ io.ReadCloser = (*streamReader)(nil)
