package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"sort"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Reasons for statement.log_inconsistent, in details.reason.
const (
	ReasonFork         = "fork"          // two signed roots for one tree size
	ReasonNoProof      = "no_proof"      // the sizes differ and no proof between them was given
	ReasonProofInvalid = "proof_invalid" // the proof given does not join the two roots
)

// Held is the largest checkpoint of each log a verifier has accepted, by origin.
type Held map[string]Checkpoint

// heldFile is the file form: the signed notes, each verified again on load.
type heldFile struct {
	Checkpoints []string `json:"checkpoints"`
}

// ReadHeld reads a held-checkpoints file: a trusted file (keys.ReadTrusted), each checkpoint verified
// again with the held key of its log. A missing file is an empty Held: the first checkpoint of each log
// is taken on trust, as a first statement's keys are.
func ReadHeld(path string, logs []keys.LogPublic) (Held, error) {
	data, err := keys.ReadTrusted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Held{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseHeld(data, logs)
}

// ParseHeld reads a held-checkpoints file's bytes. A checkpoint of a log whose key is no longer held is
// dropped: that log's history no longer matters here. One that does not verify with its log's key, or
// a log held twice, is statement.malformed at layer "checkpoints".
func ParseHeld(data []byte, logs []keys.LogPublic) (Held, error) {
	var f heldFile
	if err := strictjson.Decode(data, keys.MaxFileSize, &f); err != nil {
		return nil, errcode.Wrap(err, errcode.StatementMalformed, "held checkpoints are not valid").With(errcode.DetailLayer, "checkpoints")
	}
	h := Held{}
	for i, n := range f.Checkpoints {
		origin, _, ok := Peek([]byte(n))
		if !ok {
			return nil, errcode.New(errcode.StatementMalformed, "held checkpoint %d is not a checkpoint", i).With(errcode.DetailLayer, "checkpoints")
		}
		log, ok := logKey(logs, origin)
		if !ok {
			continue
		}
		cp, err := Open([]byte(n), log)
		if err != nil {
			return nil, errcode.From(err, errcode.StatementMalformed).With(errcode.DetailLayer, "checkpoints")
		}
		if _, dup := h[origin]; dup {
			return nil, errcode.New(errcode.StatementMalformed, "log %s is held twice", origin).With(errcode.DetailLayer, "checkpoints").
				With(errcode.DetailOrigin, origin)
		}
		h[origin] = cp
	}
	return h, nil
}

func logKey(logs []keys.LogPublic, origin string) (keys.LogPublic, bool) {
	for _, l := range logs {
		if l.Origin() == origin {
			return l, true
		}
	}
	return keys.LogPublic{}, false
}

// Marshal is the file form of h, logs in origin order.
func (h Held) Marshal() []byte {
	f := heldFile{Checkpoints: []string{}}
	for _, o := range h.Origins() {
		f.Checkpoints = append(f.Checkpoints, string(h[o].Note))
	}
	data, _ := json.MarshalIndent(f, "", "  ")
	return append(data, '\n')
}

// Write replaces the held-checkpoints file at path with h, atomically, readable by its owner alone.
func (h Held) Write(path string) error {
	return keys.ReplaceFile(path, h.Marshal(), 0o600)
}

// Origins lists the held logs in order.
func (h Held) Origins() []string {
	out := make([]string, 0, len(h))
	for o := range h {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// Summaries lists the held checkpoints without their signatures, in origin order.
func (h Held) Summaries() []Summary {
	out := make([]Summary, 0, len(h))
	for _, o := range h.Origins() {
		out = append(out, h[o].Summary())
	}
	return out
}

// Need names the proof that checking next against h takes, if any.
func (h Held) Need(origin string, size uint64) (Need, bool) {
	held, ok := h[origin]
	if !ok || held.Size == size {
		return Need{}, false
	}
	return Need{Origin: origin, OldSize: min(held.Size, size), NewSize: max(held.Size, size)}, true
}

// Check judges next, a verified checkpoint, against the one held for its log, and returns the one to
// hold afterwards. The same size must have the same root; a larger tree needs a proof that the held one
// is its prefix, and is held from then on; a smaller tree needs a proof that it is a prefix of the held
// one, which stays held. Any of proofs may be the one; the others are ignored. Refusals are
// statement.log_inconsistent.
func (h Held) Check(next Checkpoint, proofs []Proof) (Checkpoint, error) {
	held, ok := h[next.Origin]
	if !ok {
		return next, nil
	}
	refuse := func(reason, format string, args ...any) (Checkpoint, error) {
		return Checkpoint{}, errcode.New(errcode.StatementLogInconsistent, format, args...).With(errcode.DetailReason, reason).
			With(errcode.DetailOrigin, next.Origin).With(errcode.DetailTreeSize, next.Size).With(errcode.DetailHeldSize, held.Size)
	}
	if held.Size == next.Size {
		if !bytes.Equal(held.Hash, next.Hash) {
			return refuse(ReasonFork, "log %s signed two different roots for tree size %d: it shows different histories to different readers",
				next.Origin, next.Size)
		}
		return held, nil
	}
	older, newer, keep := held, next, next
	if next.Size < held.Size {
		older, newer, keep = next, held, held
	}
	need := Need{Origin: next.Origin, OldSize: older.Size, NewSize: newer.Size}
	found := false
	for _, p := range proofs {
		if !p.Matches(need) {
			continue
		}
		found = true
		if p.Verify(older, newer) == nil {
			return keep, nil
		}
	}
	if !found {
		return refuse(ReasonNoProof, "the statement is logged under tree size %d of log %s and this verifier holds size %d: no consistency proof between them was given",
			next.Size, next.Origin, held.Size)
	}
	return refuse(ReasonProofInvalid, "log %s's tree of size %d is not proven a prefix of its tree of size %d: the log shows different histories to different readers, or rolled back",
		next.Origin, older.Size, newer.Size)
}
