package seal

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A master key rotation (plane/internal/keyrotate) keeps up to three key files side by side:
// master.key (the key new values are sealed under), master.key.next (the key a rotation in progress
// re-seals into) and master.key.prev (the key the last rotation retired). A Ring holds all of them, so a
// replica opens a value whichever of them sealed it, and follows a rotation another process runs
// without a restart: it reads the files again when it meets a value no key it holds opens, and before
// sealing when master.key is no longer the file it read.

// PrevSuffix and NextSuffix name the retired and the incoming key files beside the master key file.
const (
	PrevSuffix = ".prev"
	NextSuffix = ".next"
)

// Ring is the plane's master key with the keys beside it. It is safe for concurrent use.
type Ring struct {
	path string

	mu    sync.Mutex
	cur   *Key
	keys  map[string]*Key // every key this ring has read, by id: a key once held is never forgotten
	order []*Key          // the same keys, current first after each read, for values without a key id
	stamp fileStamp
}

// fileStamp tells whether master.key is still the file the ring read: a rotation renames a new file
// over it, which changes its inode.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return fileStamp{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano()} //nolint:unconvert // Dev's type differs by platform
}

// OpenRing loads (or, on first start, creates) the master key at path, and the .prev and .next key
// files beside it when they exist, with the checks Load describes.
func OpenRing(path string) (*Ring, error) {
	if _, err := LoadOrCreate(path); err != nil {
		return nil, err
	}
	r := &Ring{path: path, keys: map[string]*Key{}}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// LoadRing is OpenRing without creating a missing master key.
func LoadRing(path string) (*Ring, error) {
	r := &Ring{path: path, keys: map[string]*Key{}}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads the key files again; the caller holds mu (or owns r alone).
func (r *Ring) reload() error {
	st := stampOf(r.path)
	cur, err := Load(r.path)
	if err != nil {
		return err
	}
	found := []*Key{cur}
	for _, extra := range []string{r.path + NextSuffix, r.path + PrevSuffix} {
		k, err := Load(extra)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		}
		found = append(found, k)
	}
	for _, k := range found {
		if _, ok := r.keys[k.ID()]; !ok {
			r.keys[k.ID()] = k
		}
	}
	order := []*Key{r.keys[cur.ID()]}
	for id, k := range r.keys {
		if id != cur.ID() {
			order = append(order, k)
		}
	}
	r.cur, r.order, r.stamp = r.keys[cur.ID()], order, st
	return nil
}

// current is the key to seal under, read again first if master.key was replaced.
func (r *Ring) current() *Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	if stampOf(r.path) != r.stamp {
		_ = r.reload() // a failed read keeps the key held: sealing under it stays openable
	}
	return r.cur
}

// ID is the id of the key new values are sealed under.
func (r *Ring) ID() string { return r.current().ID() }

// String names the current key, never shows it.
func (r *Ring) String() string { return r.current().String() }

// Seal seals under the current key.
func (r *Ring) Seal(plaintext, context []byte) []byte { return r.current().Seal(plaintext, context) }

// SealWithID seals under the current key and returns that key's id, for a row that records it.
func (r *Ring) SealWithID(plaintext, context []byte) ([]byte, string) {
	k := r.current()
	return k.Seal(plaintext, context), k.ID()
}

// Open opens a value sealed under any key of the ring, for values whose row does not record the key
// (GCM authenticates, so a wrong key fails rather than yield garbage). When none opens it, the ring
// reads the key files again and tries the keys it did not hold.
func (r *Ring) Open(sealed, context []byte) ([]byte, error) {
	_, plain, err := r.OpenAny(sealed, context)
	return plain, err
}

// OpenAny is Open that also returns the id of the key that opened the value.
func (r *Ring) OpenAny(sealed, context []byte) (string, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tried := map[string]bool{}
	for pass := 0; pass < 2; pass++ {
		for _, k := range r.order {
			if tried[k.ID()] {
				continue
			}
			tried[k.ID()] = true
			if plain, err := k.Open(sealed, context); err == nil {
				return k.ID(), plain, nil
			}
		}
		if pass == 0 {
			if err := r.reload(); err != nil {
				return "", nil, err
			}
		}
	}
	return "", nil, errcode.New(errcode.AccountSealBroken, "the sealed value opens under none of the master keys %s holds", r.path)
}

// OpenAs opens a value its row says keyID sealed. A key id the ring does not know makes it read the key
// files again; one still unknown is account.key_mismatch.
func (r *Ring) OpenAs(sealed, context []byte, keyID string) ([]byte, error) {
	r.mu.Lock()
	k, ok := r.keys[keyID]
	if !ok {
		if err := r.reload(); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		k, ok = r.keys[keyID]
	}
	cur := r.cur
	r.mu.Unlock()
	if !ok {
		return nil, errcode.New(errcode.AccountKeyMismatch,
			"the value was sealed under master key %s, which is not among this plane's key files (%s holds %s): every replica needs the same master key file",
			keyID, r.path, cur.ID()).With(errcode.DetailKeyID, keyID).With(errcode.DetailPlaneKeyID, cur.ID())
	}
	return k.Open(sealed, context)
}

// Key returns the key with id, reading the files again if the ring does not hold it.
func (r *Ring) Key(id string) (*Key, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.keys[id]; ok {
		return k, true
	}
	if r.reload() != nil {
		return nil, false
	}
	k, ok := r.keys[id]
	return k, ok
}

// Path is the master key file the ring reads.
func (r *Ring) Path() string { return r.path }

// Keyring is what the rooms that seal need: a *Ring in the plane, a *Key (a ring of one) in tests.
type Keyring interface {
	ID() string
	Seal(plaintext, context []byte) []byte
	Open(sealed, context []byte) ([]byte, error)
	SealWithID(plaintext, context []byte) ([]byte, string)
	OpenAs(sealed, context []byte, keyID string) ([]byte, error)
}
