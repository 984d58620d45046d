package checkpoint

import (
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Caps on a consistency proof. A proof between two trees of at most 2^63 entries has under 128
// hashes; a list of proofs is what one statement needs, one per log.
const (
	MaxProofHashes = 128
	MaxProofs      = 16
	MaxProofBytes  = 64 << 10
)

// Proof is an RFC 6962 consistency proof: the tree of OldSize entries of log Origin is a prefix of
// its tree of NewSize entries.
type Proof struct {
	Origin  string   `json:"origin"`
	OldSize uint64   `json:"old_size"`
	NewSize uint64   `json:"new_size"`
	Hashes  [][]byte `json:"hashes"`
}

// Need names a proof a verification needs: between the checkpoint it holds and the one a statement
// brings, smaller size first.
type Need struct {
	Origin  string
	OldSize uint64
	NewSize uint64
}

func (n Need) String() string { return fmt.Sprintf("%s %d..%d", n.Origin, n.OldSize, n.NewSize) }

// ParseProof reads one proof. Anything malformed is statement.malformed at layer "log_proof".
func ParseProof(data []byte) (Proof, error) {
	var p Proof
	if err := decode(data, &p); err != nil {
		return Proof{}, err
	}
	return p, p.check()
}

// ParseProofs reads a JSON array of proofs, as a verifier keeps them beside a statement.
func ParseProofs(data []byte) ([]Proof, error) {
	var ps []Proof
	if err := decode(data, &ps); err != nil {
		return nil, err
	}
	if len(ps) > MaxProofs {
		return nil, malformedProof("%d proofs, over the cap of %d", len(ps), MaxProofs)
	}
	for _, p := range ps {
		if err := p.check(); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

func decode(data []byte, v any) error {
	if err := strictjson.Decode(data, MaxProofBytes, v); err != nil {
		if errors.Is(err, strictjson.ErrTooLarge) {
			return errcode.New(errcode.StatementTooLarge, "consistency proof is over %d bytes", MaxProofBytes).With(errcode.DetailLayer, "log_proof")
		}
		return errcode.Wrap(err, errcode.StatementMalformed, "consistency proof is not valid").With(errcode.DetailLayer, "log_proof")
	}
	return nil
}

func malformedProof(format string, args ...any) error {
	return errcode.New(errcode.StatementMalformed, "consistency proof: "+format, args...).With(errcode.DetailLayer, "log_proof")
}

func (p Proof) check() error {
	switch {
	case p.Origin == "":
		return malformedProof("no origin")
	case p.OldSize == 0 || p.OldSize > p.NewSize:
		return malformedProof("sizes %d..%d are not a tree and a larger one", p.OldSize, p.NewSize)
	case len(p.Hashes) > MaxProofHashes:
		return malformedProof("%d hashes, over the cap of %d", len(p.Hashes), MaxProofHashes)
	}
	for i, h := range p.Hashes {
		if len(h) != rfc6962.DefaultHasher.Size() {
			return malformedProof("hash %d is %d bytes, not %d", i, len(h), rfc6962.DefaultHasher.Size())
		}
	}
	return nil
}

// Verify checks that p proves older a prefix of newer: both of p's log, of p's sizes.
func (p Proof) Verify(older, newer Checkpoint) error {
	if p.Origin != older.Origin || p.Origin != newer.Origin || p.OldSize != older.Size || p.NewSize != newer.Size {
		return fmt.Errorf("the proof is for %s %d..%d, not %s %d..%d", p.Origin, p.OldSize, p.NewSize, older.Origin, older.Size, newer.Size)
	}
	return proof.VerifyConsistency(rfc6962.DefaultHasher, older.Size, newer.Size, p.Hashes, older.Hash, newer.Hash)
}

// Matches reports whether p is the proof n asks for.
func (p Proof) Matches(n Need) bool {
	return p.Origin == n.Origin && p.OldSize == n.OldSize && p.NewSize == n.NewSize
}
