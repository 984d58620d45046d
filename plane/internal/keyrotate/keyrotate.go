// Package keyrotate re-seals every sealed value under a new master key while the plane serves, and
// survives a kill at any point: the state lives in the key files and the rows themselves, so running
// it again finishes what a killed run began.
//
// Steps (see plane/RATIONALE.md, "Master key rotation"):
//
//  1. write master.key.next once (mode 0600, placed whole by a link, never half-written);
//  2. re-seal every value not already under the next key, compare-and-set per row, in batches;
//  3. master.key.prev ← master.key (written whole, renamed), then rename master.key.next over
//     master.key: one atomic step after which every replica seals under the new key;
//  4. sweep again: values a replica sealed under the old key before it saw the rename.
//
// A rerun with master.key.next present resumes at step 2; without it, it starts a new rotation.
package keyrotate

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what a rotation needs of the store.
type Store interface {
	SealedValueList(ctx context.Context, p store.SealedValueListParams) ([]store.SealedValue, error)
	SealedValueReseal(ctx context.Context, p store.SealedValueResealParams) (bool, error)
}

// The steps a Hook is called after.
const (
	StepNextWritten = "next_written"
	StepBatch       = "batch"
	StepResealed    = "resealed"
	StepPrevWritten = "prev_written"
	StepSwapped     = "swapped"
)

// Options configure a rotation.
type Options struct {
	KeyFile string // master.key; .next and .prev sit beside it
	Store   Store
	Batch   int // rows per page; default 200
	// Progress, when set, hears each batch: the kind and how many values were re-sealed so far.
	Progress func(kind store.SealedKind, resealed int)
	// Hook, when set, runs after each step; an error stops the rotation there, as a kill would. Tests
	// use it to stop at every step and run again.
	Hook func(step string) error
}

// Result says what a rotation did. Unopenable lists values no key opens (already broken before the
// rotation; left as they are and reported, not fatal: one bad row must not block rotating the key).
type Result struct {
	From       string   `json:"from_key_id"`
	To         string   `json:"to_key_id"`
	Resumed    bool     `json:"resumed"`
	Resealed   int      `json:"resealed"`
	Unopenable []string `json:"unopenable"`
}

// maxPasses bounds the re-seal passes: a pass repeats only for rows that changed under it.
const maxPasses = 5

// Rotate runs or resumes a rotation of the master key at o.KeyFile.
func Rotate(ctx context.Context, o Options) (Result, error) {
	if o.Batch <= 0 {
		o.Batch = 200
	}
	if o.Batch > store.MaxSealedPage {
		o.Batch = store.MaxSealedPage
	}
	hook := func(step string) error {
		if o.Hook == nil {
			return nil
		}
		return o.Hook(step)
	}
	next := o.KeyFile + seal.NextSuffix
	var res Result
	cur, err := seal.Load(o.KeyFile)
	if err != nil {
		return res, err
	}
	res.From = cur.ID()
	if _, err := os.Lstat(next); err == nil {
		res.Resumed = true
	} else if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, seal.KeySize)
		_, _ = rand.Read(raw)
		text := []byte("lexicon-master-key-v1:" + base64.RawURLEncoding.EncodeToString(raw) + "\n")
		if err := keys.CreateExclusive(next, text, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
			return res, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", next)
		}
		if err := syncDir(next); err != nil {
			return res, err
		}
	} else {
		return res, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", next)
	}
	// The ring loads master.key, .next and .prev with the trust checks (owner, mode 0600, no symlink).
	ring, err := seal.LoadRing(o.KeyFile)
	if err != nil {
		return res, err
	}
	target, err := seal.Load(next)
	if err != nil {
		return res, err
	}
	res.To = target.ID()
	if err := hook(StepNextWritten); err != nil {
		return res, err
	}
	if err := sweep(ctx, o, ring, target, &res, hook); err != nil {
		return res, err
	}
	if err := hook(StepResealed); err != nil {
		return res, err
	}
	// Keep the old key as .prev before master.key changes: values a replica seals under it until it
	// sees the rename still open. The file is written whole and renamed, never half there.
	old, err := os.ReadFile(o.KeyFile)
	if err != nil {
		return res, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", o.KeyFile)
	}
	if err := keys.ReplaceFile(o.KeyFile+seal.PrevSuffix, old, 0o600); err != nil {
		return res, err
	}
	if err := hook(StepPrevWritten); err != nil {
		return res, err
	}
	if err := os.Rename(next, o.KeyFile); err != nil {
		return res, errcode.Wrap(err, errcode.IOFailed, "cannot put %s in place of %s", next, o.KeyFile)
	}
	if err := syncDir(o.KeyFile); err != nil {
		return res, err
	}
	if err := hook(StepSwapped); err != nil {
		return res, err
	}
	// A replica that sealed under the old key between its last look at master.key and the rename:
	// sweep once more now that every replica's next seal uses the new key.
	if err := sweep(ctx, o, ring, target, &res, hook); err != nil {
		return res, err
	}
	return res, nil
}

// sweep re-seals every value not under target, pass after pass while rows changed under it.
func sweep(ctx context.Context, o Options, ring *seal.Ring, target *seal.Key, res *Result, hook func(string) error) error {
	for pass := 0; pass < maxPasses; pass++ {
		raced := 0
		res.Unopenable = nil
		for _, kind := range store.SealedKinds {
			for after := ""; ; {
				page, err := o.Store.SealedValueList(ctx, store.SealedValueListParams{Kind: kind, After: after, Limit: o.Batch})
				if err != nil {
					return err
				}
				if len(page) == 0 {
					break
				}
				after = page[len(page)-1].Ref
				for _, v := range page {
					done, err := reseal(ctx, o.Store, ring, target, v)
					switch {
					case errcode.Code(err) == errcode.AccountSealBroken || errcode.Code(err) == errcode.AccountKeyMismatch:
						res.Unopenable = append(res.Unopenable, string(kind)+" "+label(v))
					case err != nil:
						return err
					case done == resealed:
						res.Resealed++
					case done == changed:
						raced++
					}
				}
				if o.Progress != nil {
					o.Progress(kind, res.Resealed)
				}
				if err := hook(StepBatch); err != nil {
					return err
				}
			}
		}
		if raced == 0 {
			return nil
		}
	}
	return errcode.New(errcode.IOFailed, "sealed values kept changing during %d re-seal passes; run the rotation again", maxPasses)
}

func label(v store.SealedValue) string {
	if v.Name != "" {
		return v.Name
	}
	return v.Ref
}

type outcome int

const (
	already outcome = iota
	resealed
	changed
)

// reseal moves one value under target unless it is already there.
func reseal(ctx context.Context, st Store, ring *seal.Ring, target *seal.Key, v store.SealedValue) (outcome, error) {
	var aad []byte
	switch v.Kind {
	case store.SealedAccount:
		aad = seal.AccountContext(v.Name, v.Driver)
	case store.SealedBackupTarget:
		aad = seal.BackupTargetContext(v.Ref)
	default:
		aad = seal.SSORefreshContext(v.Ref)
	}
	var plain []byte
	var err error
	if v.KeyID != "" {
		if v.KeyID == target.ID() {
			return already, nil
		}
		plain, err = ring.OpenAs(v.Sealed, aad, v.KeyID)
	} else {
		var id string
		id, plain, err = ring.OpenAny(v.Sealed, aad)
		if err == nil && id == target.ID() {
			return already, nil
		}
	}
	if err != nil {
		return already, err
	}
	ok, err := st.SealedValueReseal(ctx, store.SealedValueResealParams{Kind: v.Kind, Ref: v.Ref, Old: v.Sealed,
		New: target.Seal(plain, aad), KeyID: target.ID()})
	switch {
	case err != nil:
		return already, err
	case ok:
		return resealed, nil
	}
	return changed, nil
}

// syncDir makes a rename or link in path's folder durable before the next step relies on it.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot open %s", filepath.Dir(path))
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot sync %s", filepath.Dir(path))
	}
	return nil
}
