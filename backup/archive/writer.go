// Package archive writes and reads backup runs in the format of package backup, through the presigned
// requests of a grant: the node's side of backups. A Writer streams files (walked and read here, natively,
// never through a word's memory) and database dumps into a tar stream and dump streams, cuts them into
// segments, encrypts each segment to the run's recipients with age and uploads it, several at a time;
// Commit writes the index and then the manifest, last. A Reader fetches a chain of runs back,
// checking every object's size and digest, decrypts with the node's key, and verifies or restores it.
//
//	w, err := archive.NewWriter(archive.WriterConfig{Grant: g, NodeKey: id, Client: c})
//	files, err := w.Files(ctx, []archive.Root{{Path: "/srv/app", Dir: fd}})
//	db, err := w.Database(ctx, "app", dumpReader)
//	m, index, err := w.Commit(ctx)
package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Defaults of a writer.
const (
	// DefaultSegment is the plaintext bytes of one object. Each upload in flight holds one segment in
	// memory, so memory is about (Parallel+1) × Segment while a run uploads.
	DefaultSegment = 8 << 20
	// DefaultParallel is how many segments are encrypted and uploaded at once.
	DefaultParallel = 3
)

// WriterConfig configures a Writer.
type WriterConfig struct {
	// Grant is the run's write grant.
	Grant *channel.BackupGrant
	// NodeKey is the node's own key: every object is encrypted to it besides the grant's recipients.
	NodeKey *age.X25519Identity
	// Parent is the index of the run the node last committed to this target, or nil. The run is
	// incremental only when Incremental is asked and Parent is the grant's parent run.
	Parent      *backup.Index
	Incremental bool
	Client      *Client
	// Segment and Parallel default to DefaultSegment and DefaultParallel.
	Segment  int
	Parallel int
	Now      func() time.Time
}

// Writer writes one run. Its methods are called one at a time; each waits for its own uploads.
type Writer struct {
	cfg        WriterConfig
	grant      *channel.BackupGrant
	recipients []age.Recipient
	recipTexts []string
	kind       string
	chain      []string
	parent     map[string]*backup.Entry
	started    time.Time
	hdrLen     int64

	free chan []byte // plaintext segment buffers

	// ctx ends the uploads in flight at the run's first failure, or when it is closed.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	next    int // the next object of the grant to use
	objects []backup.Object
	wg      sync.WaitGroup
	err     error // the first upload error
	jobs    chan *segment

	firstTaken atomic.Bool // the run's first object is taken

	index     backup.Index
	files     *backup.Files
	databases []backup.Database
	done      bool
}

type segment struct {
	buf      []byte
	role, db string
	seq      int
	slot     int
}

// NewWriter checks the grant and readies a run.
func NewWriter(cfg WriterConfig) (*Writer, error) {
	g := cfg.Grant
	if err := checkWriteGrant(g, cfg.now()); err != nil {
		return nil, err
	}
	if cfg.NodeKey == nil || cfg.Client == nil {
		return nil, errcode.New(errcode.UsageInvalid, "a writer needs the node key and a client")
	}
	if cfg.Segment <= 0 {
		cfg.Segment = DefaultSegment
	}
	cfg.Segment = min(cfg.Segment, backup.MaxSegment)
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	texts := append(append([]string{}, g.Recipients...), cfg.NodeKey.Recipient().String())
	recips, err := backup.ParseRecipients(texts)
	if err != nil {
		return nil, err
	}
	w := &Writer{cfg: cfg, grant: g, recipients: recips, recipTexts: texts, started: cfg.now().UTC(),
		free: make(chan []byte, cfg.Parallel+1), jobs: make(chan *segment)}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if w.hdrLen, err = headerLen(recips); err != nil {
		return nil, err
	}
	w.kind, w.chain = backup.KindFull, []string{g.Run}
	if p := cfg.Parent; cfg.Incremental && p != nil && g.Parent != "" && p.Header.Run == g.Parent && p.Header.Node == g.Node &&
		len(p.Header.Chain) < backup.MaxChain && g.Parent < g.Run {
		w.kind, w.chain = backup.KindIncremental, append(append([]string{}, p.Header.Chain...), g.Run)
		w.parent = p.Lookup()
	}
	w.index.Header = backup.IndexHeader{Schema: backup.IndexSchema, Node: g.Node, Run: g.Run, Kind: w.kind, Chain: w.chain}
	for range cfg.Parallel + 1 {
		w.free <- make([]byte, 0, cfg.Segment)
	}
	for range cfg.Parallel {
		go w.uploader()
	}
	return w, nil
}

func (c WriterConfig) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Kind is the run's kind, full or incremental, and Chain its chain.
func (w *Writer) Kind() string      { return w.kind }
func (w *Writer) Chain() []string   { return append([]string{}, w.chain...) }
func (w *Writer) Run() string       { return w.grant.Run }
func (w *Writer) Recipient() string { return w.cfg.NodeKey.Recipient().String() }

// checkWriteGrant holds a write grant to its shape: a run id, keys directly under the run's own
// prefix, PUTs only, and not expired.
func checkWriteGrant(g *channel.BackupGrant, now time.Time) error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.BackupGrantInvalid, "the write grant: "+format, args...).With(errcode.DetailField, field)
	}
	switch {
	case g == nil || g.Run == "" || g.Manifest == nil:
		return errcode.New(errcode.BackupGrantMissing, "the job carries no write grant: only the plane hands one, for a backup job")
	case !backup.ValidRunID(g.Run) || !backup.ValidNodeID(g.Node):
		return bad("run", "the run or node id is malformed")
	case g.Parent != "" && !backup.ValidRunID(g.Parent):
		return bad("parent", "the parent run id is malformed")
	case !strings.HasSuffix(g.Prefix, "/"+g.Node+"/"+g.Run+"/") && g.Prefix != g.Node+"/"+g.Run+"/":
		return bad("prefix", "the prefix is not the run's own folder")
	case !g.Expires.After(now):
		return bad("expires", "the grant expired at %s", g.Expires.UTC().Format(time.RFC3339))
	case len(g.Objects) < 2:
		return bad("objects", "a run needs at least two objects (its data and its index)")
	case g.Manifest.Key != g.Prefix+backup.ManifestName || g.Manifest.Method != http.MethodPut:
		return bad("manifest", "the manifest request is not a PUT of the run's manifest")
	}
	seen := map[string]bool{}
	for i, o := range g.Objects {
		name, ok := strings.CutPrefix(o.Key, g.Prefix)
		if !ok || name == "" || name == backup.ManifestName || strings.Contains(name, "/") || path.Clean(o.Key) != o.Key || seen[o.Key] {
			return bad(fmt.Sprintf("objects/%d", i), "key %q is not a fresh object of the run", o.Key)
		}
		if o.Method != http.MethodPut {
			return bad(fmt.Sprintf("objects/%d", i), "the request for %s is not a PUT", o.Key)
		}
		seen[o.Key] = true
	}
	return nil
}

// headerLen is the length of an age header for recipients: fixed for X25519 stanzas, so measured
// once on an empty file (header, nonce, and one empty final chunk).
func headerLen(recips []age.Recipient) (int64, error) {
	var c counter
	ew, err := age.Encrypt(&c, recips...)
	if err == nil {
		err = ew.Close()
	}
	if err != nil {
		return 0, errcode.Wrap(err, errcode.InternalError, "cannot encrypt to the run's recipients")
	}
	return c.n - nonceSize - tagSize, nil
}

// age's payload: a 16-byte nonce, then chunks of 64 KiB plaintext each sealed with a 16-byte tag; the
// last chunk may be full, and only an empty file has an empty one.
const (
	nonceSize = 16
	tagSize   = 16
	chunkSize = 64 << 10
)

// encryptedSize is the bytes of an age file of plain bytes whose header is hdr bytes long.
func encryptedSize(hdr int64, plain int64) int64 {
	chunks := (plain + chunkSize - 1) / chunkSize
	if chunks == 0 {
		chunks = 1
	}
	return hdr + nonceSize + plain + chunks*tagSize
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// fail records the first error of the run and stops its uploads in flight: the run cannot commit.
func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel()
}

// Fail marks the run failed with err, as a failed upload does: it can no longer commit. The host calls
// it when a step of the run failed outside the writer (pg_dump exited non-zero after its output was
// stored, a path was refused), so that a run missing something it was asked for is never a restore
// point.
func (w *Writer) Fail(err error) { w.fail(err) }

// Err is the run's first error, nil while it can still commit.
func (w *Writer) Err() error { return w.failed() }

func (w *Writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// submit hands a full (or last) segment to the uploaders, using the grant's next object. The last
// object is kept for the index: data that needs it is backup.grant_exhausted.
func (w *Writer) submit(ctx context.Context, s *segment) error {
	if err := w.failed(); err != nil {
		w.free <- s.buf[:0]
		return err
	}
	w.mu.Lock()
	limit := len(w.grant.Objects)
	if s.role != backup.RoleIndex {
		limit--
	}
	if w.next >= limit {
		w.mu.Unlock()
		w.free <- s.buf[:0]
		err := errcode.New(errcode.BackupGrantExhausted, "the run needs more than the %d objects its grant holds (%d MiB each)",
			len(w.grant.Objects), w.cfg.Segment>>20).With(errcode.DetailLimit, len(w.grant.Objects))
		w.fail(err)
		return err
	}
	s.slot = w.next
	w.next++
	w.objects = append(w.objects, backup.Object{Key: w.grant.Objects[s.slot].Key, Role: s.role, Database: s.db, Seq: s.seq, Plain: int64(len(s.buf))})
	w.wg.Add(1)
	w.mu.Unlock()
	select {
	case w.jobs <- s:
		return nil
	case <-ctx.Done():
		w.wg.Done()
		w.free <- s.buf[:0]
		err := errcode.Wrap(ctx.Err(), errcode.CapabilityTimeout, "the run was stopped")
		w.fail(err)
		return err
	}
}

// uploader encrypts and uploads segments until the writer is closed.
func (w *Writer) uploader() {
	for s := range w.jobs {
		if err := w.failed(); err == nil {
			size, sum, err := w.upload(s)
			w.mu.Lock()
			w.objects[s.slot].Size, w.objects[s.slot].SHA256 = size, sum // slots are handed out in order
			w.mu.Unlock()
			if err != nil {
				w.fail(err)
			}
		}
		w.free <- s.buf[:0]
		w.wg.Done()
	}
}

// upload encrypts one segment as it streams it to its object, hashing what it sends. The size is
// known before the first byte: age's overhead depends on the plaintext's length only.
func (w *Writer) upload(s *segment) (int64, string, error) {
	p := w.grant.Objects[s.slot]
	size := encryptedSize(w.hdrLen, int64(len(s.buf)))
	pr, pw := io.Pipe()
	h := sha256.New()
	done := make(chan error, 1)
	go func() {
		ew, err := age.Encrypt(io.MultiWriter(pw, h), w.recipients...)
		if err == nil {
			_, err = ew.Write(s.buf)
		}
		if err == nil {
			err = ew.Close()
		}
		pw.CloseWithError(err)
		done <- err
	}()
	// The pipe's reader, closed by the transport when the request ends, ends the encryption.
	err := w.cfg.Client.put(w.ctx, p, pr, size)
	pr.CloseWithError(io.ErrClosedPipe)
	encErr := <-done
	if err == nil && encErr != nil {
		err = errcode.Wrap(encErr, errcode.InternalError, "%s: cannot encrypt the segment", p.Key)
	}
	return size, hex.EncodeToString(h.Sum(nil)), err
}

// wait waits for every submitted segment and returns the run's first error.
func (w *Writer) wait() error {
	w.wg.Wait()
	return w.failed()
}

// firstSegment is the size of a run's first object. A bucket that refuses a PUT (a bad signature, a
// read-only target) may answer only after reading the body, and versitygw, for one, drops the
// connection rather than read more than 256 KiB of a body it refuses: the node would see a reset, not
// the reason. A small first object makes a run's first PUT say why it is refused.
const firstSegment = 64 << 10

// stream is an io.Writer cutting one stream into segments.
type stream struct {
	ctx      context.Context
	w        *Writer
	role, db string
	seq      int
	buf      []byte
	limit    int // the bytes the segment held in buf takes
	bytes    int64
}

// take gets a buffer for the next segment, sized for the run's first object if it is that.
func (s *stream) take() error {
	select {
	case s.buf = <-s.w.free:
	case <-s.ctx.Done():
		return errcode.Wrap(s.ctx.Err(), errcode.CapabilityTimeout, "the run was stopped")
	}
	s.limit = cap(s.buf)
	if s.w.firstTaken.CompareAndSwap(false, true) {
		s.limit = min(s.limit, firstSegment)
	}
	return nil
}

func (w *Writer) newStream(ctx context.Context, role, db string) *stream {
	return &stream{ctx: ctx, w: w, role: role, db: db}
}

func (s *stream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if s.buf == nil {
			if err := s.take(); err != nil {
				return n, err
			}
		}
		k := min(len(p), s.limit-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p, n, s.bytes = p[k:], n+k, s.bytes+int64(k)
		if len(s.buf) == s.limit {
			if err := s.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// ReadFrom fills segments straight from r, without an intermediate buffer.
func (s *stream) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if s.buf == nil {
			if err := s.take(); err != nil {
				return total, err
			}
		}
		k, err := r.Read(s.buf[len(s.buf):s.limit])
		s.buf = s.buf[:len(s.buf)+k]
		total, s.bytes = total+int64(k), s.bytes+int64(k)
		if len(s.buf) == s.limit {
			if ferr := s.flush(); ferr != nil {
				return total, ferr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// flush submits the segment held.
func (s *stream) flush() error {
	if s.buf == nil {
		return nil
	}
	s.seq++
	seg := &segment{buf: s.buf, role: s.role, db: s.db, seq: s.seq}
	s.buf = nil
	return s.w.submit(s.ctx, seg)
}

// close submits what is left, at least one segment per stream, and waits for the run's uploads.
func (s *stream) close() error {
	if s.buf == nil && s.seq == 0 {
		if err := s.take(); err != nil {
			return err
		}
	}
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.wait()
}

// abandon gives the stream's buffer back after a failure.
func (s *stream) abandon() {
	if s.buf != nil {
		s.w.free <- s.buf[:0]
		s.buf = nil
	}
}

// DatabaseResult is what Database wrote.
type DatabaseResult struct {
	Name     string `json:"name"`
	Bytes    int64  `json:"bytes"`
	Segments int    `json:"segments"`
}

// Database stores one database's dump, read from dump until EOF, as its own stream. A database is
// stored once per run.
func (w *Writer) Database(ctx context.Context, name string, dump io.Reader) (DatabaseResult, error) {
	if err := w.usable(); err != nil {
		return DatabaseResult{}, err
	}
	for _, d := range w.databases {
		if d.Name == name {
			return DatabaseResult{}, errcode.New(errcode.CapabilityInvalid, "database %s is already in the run", name).With(errcode.DetailName, name)
		}
	}
	s := w.newStream(ctx, backup.RoleDatabase, name)
	if _, err := s.ReadFrom(dump); err != nil {
		s.abandon()
		w.fail(err)
		return DatabaseResult{}, err
	}
	if err := s.close(); err != nil {
		return DatabaseResult{}, err
	}
	w.databases = append(w.databases, backup.Database{Name: name, Bytes: s.bytes})
	return DatabaseResult{Name: name, Bytes: s.bytes, Segments: s.seq}, nil
}

func (w *Writer) usable() error {
	if w.done {
		return errcode.New(errcode.CapabilityInvalid, "the run is committed or closed")
	}
	return w.failed()
}

// Commit writes the run's index and then its manifest, last, and returns both. Only a run whose
// manifest is written is a restore point.
func (w *Writer) Commit(ctx context.Context) (*backup.Manifest, *backup.Index, error) {
	if err := w.usable(); err != nil {
		return nil, nil, err
	}
	if w.files == nil && len(w.databases) == 0 {
		return nil, nil, errcode.New(errcode.CapabilityInvalid, "the run holds no files and no database")
	}
	s := w.newStream(ctx, backup.RoleIndex, "")
	if _, err := w.index.WriteTo(s); err != nil {
		s.abandon()
		w.fail(err)
		return nil, nil, err
	}
	if err := s.close(); err != nil {
		return nil, nil, err
	}
	m := &backup.Manifest{Schema: backup.ManifestSchema, Node: w.grant.Node, Run: w.grant.Run, Kind: w.kind, Chain: w.chain,
		Started: w.started, Finished: w.cfg.now().UTC(), Recipients: w.recipTexts, Databases: w.databases}
	if w.files != nil {
		m.Files = *w.files
	}
	w.mu.Lock()
	m.Objects = append([]backup.Object{}, w.objects...)
	w.mu.Unlock()
	if err := m.Validate(); err != nil {
		return nil, nil, errcode.Wrap(err, errcode.InternalError, "the run's own manifest does not hold together")
	}
	body, err := m.Marshal()
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.InternalError, "cannot encode the manifest")
	}
	if err := w.cfg.Client.put(ctx, *w.grant.Manifest, strings.NewReader(string(body)), int64(len(body))); err != nil {
		return nil, nil, err
	}
	w.Close()
	return m, &w.index, nil
}

// Close ends the run's uploaders. A run closed without Commit wrote no manifest: it is not a restore
// point, whatever it uploaded.
func (w *Writer) Close() {
	if w.done {
		return
	}
	w.done = true
	w.cancel()
	w.wg.Wait()
	close(w.jobs)
}

var (
	_ io.Writer     = (*stream)(nil)
	_ io.ReaderFrom = (*stream)(nil)
)
