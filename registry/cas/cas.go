// Package cas is the content-addressed store: blobs live at <root>/sha256/<hex>, are written atomically
// and are re-hashed on every read, so a blob is only ever handed out as the bytes its name promises.
//
//	s, _ := cas.Open(dir)
//	d, _ := s.Put(wasm)    // d is the lowercase hex sha256
//	b, err := s.Get(d)     // module.digest_mismatch if the file was altered
package cas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is a content-addressed blob store rooted at a directory.
type Store struct {
	dir string // <root>/sha256
}

// ValidDigest reports whether d is a lowercase hex sha256, the only name a blob can have.
func ValidDigest(d string) bool {
	if len(d) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(d); i++ {
		if !lowerHex[d[i]] {
			return false
		}
	}
	return true
}

var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// Sum returns the lowercase hex sha256 of data.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Open opens (creating if needed) the store at root.
func Open(root string) (*Store, error) {
	dir := filepath.Join(root, "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create store %s", dir)
	}
	return &Store{dir: dir}, nil
}

// Root returns the directory that holds sha256/.
func (s *Store) Root() string { return filepath.Dir(s.dir) }

// Path returns where the blob named d lives (whether or not it exists). d must be a valid digest.
func (s *Store) Path(d string) string { return filepath.Join(s.dir, d) }

// Put stores data and returns its digest. Storing a blob that is already present rewrites nothing.
func (s *Store) Put(data []byte) (string, error) {
	d := Sum(data)
	return d, s.put(d, data)
}

// PutAs stores data under the digest the caller expects, refusing bytes that do not match it. The
// bytes are hashed once: a new node writes its vocabulary's megabytes this way before its first word.
func (s *Store) PutAs(d string, data []byte) error {
	if !ValidDigest(d) {
		return errcode.New(errcode.ModuleNotFound, "%q is not a sha256 digest", d)
	}
	if got := Sum(data); got != d {
		return errcode.New(errcode.ModuleDigestMismatch, "bytes hash to %s, not %s", got, d).With(errcode.DetailSHA256, d)
	}
	return s.put(d, data)
}

// put writes data, which hashes to d, unless the blob is present and intact.
func (s *Store) put(d string, data []byte) error {
	if s.Verify(d) == nil {
		return nil
	}
	_, _, err := s.write(bytes.NewReader(data), func() string { return d })
	return err
}

// PutReader streams r into the store, hashing as it writes, and returns the digest and size. The blob
// appears under its name only once it is complete and synced.
func (s *Store) PutReader(r io.Reader) (string, int64, error) {
	h := sha256.New()
	return s.write(io.TeeReader(r, h), func() string { return hex.EncodeToString(h.Sum(nil)) })
}

// write copies r to a temp file, syncs it and commits it under the name digest gives once r is read.
func (s *Store) write(r io.Reader, digest func() string) (string, int64, error) {
	tmp, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return "", 0, errcode.Wrap(err, errcode.IOFailed, "cannot write to store")
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, errcode.Wrap(err, errcode.IOFailed, "cannot write to store")
	}
	d := digest()
	if err := s.commit(tmp.Name(), d); err != nil {
		return "", 0, err
	}
	return d, n, nil
}

// commit renames a synced temp file into place and syncs the directory, so the name survives a crash.
func (s *Store) commit(tmp, d string) error {
	if err := os.Chmod(tmp, 0o644); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write blob %s", d)
	}
	if err := os.Rename(tmp, s.Path(d)); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write blob %s", d)
	}
	dir, err := os.Open(s.dir)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot sync store")
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot sync store")
	}
	return nil
}

// Get reads the blob named d and returns it only if it still hashes to d.
func (s *Store) Get(d string) ([]byte, error) {
	data, err := s.Read(d)
	if err != nil {
		return nil, err
	}
	if got := Sum(data); got != d {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "blob %s hashes to %s: it was altered", d, got).With(errcode.DetailSHA256, d)
	}
	return data, nil
}

// Read reads the blob named d as it is, without re-hashing it: for a reader that checks the bytes
// against d itself before it uses them, as the word host does in each process that compiles a module.
// Anyone else uses Get.
func (s *Store) Read(d string) ([]byte, error) {
	if !ValidDigest(d) {
		return nil, errcode.New(errcode.ModuleNotFound, "%q is not a sha256 digest", d)
	}
	data, err := os.ReadFile(s.Path(d))
	if err != nil {
		return nil, notFound(err, d)
	}
	return data, nil
}

// Verify re-hashes the blob named d without holding it in memory.
func (s *Store) Verify(d string) error {
	if !ValidDigest(d) {
		return errcode.New(errcode.ModuleNotFound, "%q is not a sha256 digest", d)
	}
	f, err := os.Open(s.Path(d))
	if err != nil {
		return notFound(err, d)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot read blob %s", d)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d {
		return errcode.New(errcode.ModuleDigestMismatch, "blob %s hashes to %s: it was altered", d, got).With(errcode.DetailSHA256, d)
	}
	return nil
}

// Has reports whether a blob named d is present; it does not re-hash.
func (s *Store) Has(d string) bool {
	if !ValidDigest(d) {
		return false
	}
	_, err := os.Stat(s.Path(d))
	return err == nil
}

// List returns the digests present, in directory order. Temp files and strays are skipped.
func (s *Store) List() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot list store")
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && ValidDigest(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func notFound(err error, d string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(err, errcode.ModuleNotFound, "no blob %s in the store", d).With(errcode.DetailSHA256, d)
	}
	return errcode.Wrap(err, errcode.IOFailed, "cannot read blob %s", d)
}
