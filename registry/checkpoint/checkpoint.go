// Package checkpoint is what a verifier knows of a transparency log's history: the signed checkpoints
// it verified, the RFC 6962 consistency proofs that join them, and the witnesses' cosignatures on them.
//
// A checkpoint is a C2SP signed note (c2sp.org/tlog-checkpoint): the log's origin, the tree size and
// the base64 root hash on three lines, then the log's signature line and any witness cosignature lines
// (c2sp.org/tlog-cosignature). A verifier holds the largest checkpoint of each log it has accepted
// (Held) and takes a new one only when it is the same tree, or a consistency proof (Proof) shows one
// tree is a prefix of the other: a log that shows one history here and another there is caught the
// first time this verifier sees the other. A witness policy (Policy) may also require cosignatures of
// at least k named witnesses.
//
// A consistency proof travels as JSON, base64 hashes oldest level first as RFC 6962 orders them:
//
//	{"origin": "log.example", "old_size": 10, "new_size": 17, "hashes": ["<base64>", ...]}
//
// Verification uses github.com/transparency-dev/merkle (the RFC 6962 proof code sigstore-go links) and
// golang.org/x/mod/sumdb/note for signatures; nothing here trusts who delivered a proof.
package checkpoint

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"strconv"
	"strings"

	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxNote caps a signed checkpoint: three short lines and a few dozen signature lines.
const MaxNote = 16 << 10

// Checkpoint is a checkpoint whose log signature was verified with a held log key.
type Checkpoint struct {
	Origin string
	Size   uint64
	Hash   []byte // the RFC 6962 root hash, 32 bytes
	// Note is the signed note as it arrived, cosignatures included: what a verifier keeps, so what it
	// holds can be verified again on every load.
	Note []byte
}

// Summary is a checkpoint without its signatures: what a node reports and a plane compares.
type Summary struct {
	Origin string `json:"origin"`
	Size   uint64 `json:"size"`
	Hash   []byte `json:"root_hash"` // base64 in JSON
}

// Summary returns the checkpoint's origin, size and root hash.
func (c Checkpoint) Summary() Summary { return Summary{Origin: c.Origin, Size: c.Size, Hash: c.Hash} }

// Same reports whether two checkpoints name the same tree of the same log.
func (c Checkpoint) Same(o Checkpoint) bool {
	return c.Origin == o.Origin && c.Size == o.Size && bytes.Equal(c.Hash, o.Hash)
}

// NoteVerifier is the signed-note verifier of a log key: Rekor v2's key hash rules, ECDSA P-256 or
// Ed25519.
func NoteVerifier(log keys.LogPublic) (note.Verifier, error) {
	v, err := signature.LoadVerifier(log.Key(), crypto.SHA256)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyMalformed, "log key %s cannot verify checkpoints", log.Origin())
	}
	nv, err := rekornote.NewNoteVerifier(log.Origin(), v)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyMalformed, "log key %s cannot verify checkpoints", log.Origin())
	}
	return nv, nil
}

// Open verifies a signed checkpoint with the log's key and parses it. Signature lines of other keys
// (witnesses) are left for Policy to judge. A note that does not verify, or names another origin, is
// statement.malformed at layer "checkpoint".
func Open(signed []byte, log keys.LogPublic) (Checkpoint, error) {
	if len(signed) > MaxNote {
		return Checkpoint{}, errcode.New(errcode.StatementTooLarge, "checkpoint is over %d bytes", MaxNote).With(errcode.DetailLayer, "checkpoint")
	}
	nv, err := NoteVerifier(log)
	if err != nil {
		return Checkpoint{}, err
	}
	cp, _, _, err := flog.ParseCheckpoint(signed, log.Origin(), nv)
	if err != nil {
		return Checkpoint{}, errcode.Wrap(err, errcode.StatementMalformed, "checkpoint is not signed by the held key of log %s", log.Origin()).
			With(errcode.DetailLayer, "checkpoint").With(errcode.DetailOrigin, log.Origin())
	}
	if len(cp.Hash) != 32 || cp.Size == 0 {
		return Checkpoint{}, errcode.New(errcode.StatementMalformed, "checkpoint of log %s has a %d-byte root hash and size %d", log.Origin(), len(cp.Hash), cp.Size).
			With(errcode.DetailLayer, "checkpoint").With(errcode.DetailOrigin, log.Origin())
	}
	return Checkpoint{Origin: cp.Origin, Size: cp.Size, Hash: cp.Hash, Note: bytes.Clone(signed)}, nil
}

// Peek reads a checkpoint's origin and size without verifying anything: enough to ask for the proof a
// verification will need. Never act on what it returns.
func Peek(signed []byte) (origin string, size uint64, ok bool) {
	lines := strings.SplitN(string(signed), "\n", 3)
	if len(lines) < 3 || lines[0] == "" {
		return "", 0, false
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	return lines[0], size, err == nil
}

// RootHash is the root hash in standard base64, as a checkpoint writes it.
func (s Summary) RootHash() string { return base64.StdEncoding.EncodeToString(s.Hash) }
