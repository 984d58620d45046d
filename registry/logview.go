package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LogProofsFile is the optional file of a release folder holding consistency proofs (a JSON array,
// registry/checkpoint's form) from earlier releases' checkpoints to this one's, for nodes that install
// releases from a folder rather than from a plane (lexicon-release prove writes it).
const LogProofsFile = "log_proofs.json"

// witnessFile is the trust folder's witness policy (checkpoint.Policy's file form). Without it no
// cosignature is required.
const witnessFile = "witnesses"

// CheckCheckpoint, run right after CheckLog, is the check that the log checkpoints a statement is
// logged under are cosigned as the witness policy asks and consistent with those this verifier holds.
const CheckCheckpoint = "log_checkpoint"

// logView is what a Trust knows of the logs' histories beyond their keys.
type logView struct {
	witnesses *checkpoint.Policy
	// heldFile is where the held checkpoints live; "" when this verifier keeps none (then nothing is
	// compared, as for a publisher's one-off verify).
	heldFile string
	held     checkpoint.Held
	proofs   []checkpoint.Proof
}

// readWitnesses loads the trust folder's witness policy, if it has one.
func (t *Trust) readWitnesses() error {
	path := filepath.Join(t.dir, witnessFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	data, err := keys.ReadTrusted(path)
	if err != nil {
		return err
	}
	p, err := checkpoint.ParsePolicy(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t.view.witnesses = &p
	return nil
}

// Witnesses returns the trust folder's witness policy; nil when it requires no cosignature.
func (t *Trust) Witnesses() *checkpoint.Policy { return t.view.witnesses }

// SetWitnessPolicy writes the witness policy of the trust folder dir, replacing any it had; a nil
// policy removes the requirement.
func SetWitnessPolicy(dir string, p *checkpoint.Policy) error {
	path := filepath.Join(dir, witnessFile)
	if p == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errcode.Wrap(err, errcode.IOFailed, "cannot remove %s", path)
		}
		return nil
	}
	if err := p.Valid(); err != nil {
		return err
	}
	return keys.ReplaceFile(path, p.Marshal(), 0o644)
}

// HoldCheckpoints makes this verifier keep the checkpoint of each log it accepts in path (a trusted
// file, written whole and readable by its owner alone): from then on a statement logged under another
// checkpoint of that log verifies only with a consistency proof between the two (UseProofs).
func (t *Trust) HoldCheckpoints(path string) error {
	h, err := checkpoint.ReadHeld(path, t.logs)
	if err != nil {
		return err
	}
	t.view.heldFile, t.view.held = path, h
	return nil
}

// Checkpoints returns the checkpoints held, by origin.
func (t *Trust) Checkpoints() checkpoint.Held { return t.view.held }

// UseProofs gives the consistency proofs later verifications may use. Where they came from does not
// matter: each is checked against two signed checkpoints.
func (t *Trust) UseProofs(proofs []checkpoint.Proof) { t.view.proofs = proofs }

// ProofsNeeded names the consistency proofs verifying bundleJSON will take: for each entry in a held
// log, one between the checkpoint held and the one the entry is logged under. Nothing is verified
// here; it only says what to fetch.
func (t *Trust) ProofsNeeded(bundleJSON []byte) []checkpoint.Need {
	if t.view.heldFile == "" {
		return nil
	}
	b, err := statement.ParseBundle(bundleJSON)
	if err != nil {
		return nil
	}
	var out []checkpoint.Need
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		if _, ok := t.logByID(e.GetLogId().GetKeyId()); !ok {
			continue
		}
		origin, size, ok := checkpoint.Peek([]byte(e.GetInclusionProof().GetCheckpoint().GetEnvelope()))
		if !ok {
			continue
		}
		if n, ok := t.view.held.Need(origin, size); ok {
			out = append(out, n)
		}
	}
	return out
}

func (t *Trust) logByID(id []byte) (keys.LogPublic, bool) {
	for _, l := range t.logs {
		if bytes.Equal(id, l.ID()) {
			return l, true
		}
	}
	return keys.LogPublic{}, false
}

// checkCheckpoints judges the checkpoint of every entry in a held log, once checkLog has proven the
// statement included under it: cosigned by the witness policy's quorum, and consistent with the
// checkpoint held of that log. It records on rel what Accept will hold, and says what it found.
func (t *Trust) checkCheckpoints(b *protobundle.Bundle, rel *Release) (string, error) {
	var said []string
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		log, ok := t.logByID(e.GetLogId().GetKeyId())
		if !ok {
			continue
		}
		cp, err := checkpoint.Open([]byte(e.GetInclusionProof().GetCheckpoint().GetEnvelope()), log)
		if err != nil {
			return "", err
		}
		what := fmt.Sprintf("log %s at size %d", cp.Origin, cp.Size)
		if w := t.view.witnesses; w != nil {
			got, err := w.Check(cp)
			if err != nil {
				return "", err
			}
			what += fmt.Sprintf(", cosigned by %d of %d held witnesses", len(got), len(w.Witnesses))
		}
		if t.view.heldFile != "" {
			held, had := t.view.held[cp.Origin]
			keep, err := t.view.held.Check(cp, t.view.proofs)
			if err != nil {
				return "", err
			}
			switch {
			case !had:
				what += ", the first checkpoint held of it"
			case held.Size != cp.Size:
				what += fmt.Sprintf(", proven consistent with the size %d held", held.Size)
			default:
				what += ", the checkpoint held"
			}
			if rel.checkpoints == nil {
				rel.checkpoints = checkpoint.Held{}
			}
			rel.checkpoints[cp.Origin] = keep
		}
		said = append(said, what)
	}
	if len(said) == 0 {
		return "no entry in a held log", nil
	}
	return strings.Join(said, "; "), nil
}

// acceptCheckpoints holds the checkpoints rel was verified under. Called by Accept before the state
// moves: a crash in between leaves the larger checkpoint held and the statement it came with current.
func (t *Trust) acceptCheckpoints(rel *Release) error {
	if t.view.heldFile == "" || len(rel.checkpoints) == 0 {
		return nil
	}
	next := checkpoint.Held{}
	for o, cp := range t.view.held {
		next[o] = cp
	}
	changed := false
	for o, cp := range rel.checkpoints {
		if old, ok := next[o]; !ok || !bytes.Equal(old.Note, cp.Note) {
			next[o], changed = cp, true
		}
	}
	if !changed {
		return nil
	}
	if err := next.Write(t.view.heldFile); err != nil {
		return err
	}
	t.view.held = next
	return nil
}
