package checkpoint

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxWitnesses caps the witnesses one policy names.
const MaxWitnesses = 64

// Policy requires cosignatures (C2SP tlog-cosignature, cosignature/v1) of at least Quorum of Witnesses
// on every log checkpoint a statement is verified under. Its file form is lines of text, # comments
// and blank lines ignored:
//
//	quorum 2
//	witness-key:witness.example+1c2d3e4f+BASE64...
//	witness-key:other.example+5a6b7c8d+BASE64...
type Policy struct {
	Quorum    int
	Witnesses []keys.WitnessPublic
}

// ParsePolicy reads a policy file. Exactly one quorum line, from 1 to the number of witnesses, and
// witnesses with distinct names and keys; anything else is key.malformed.
func ParsePolicy(data []byte) (Policy, error) {
	var p Policy
	quorum := false
	for _, line := range keys.Lines(data) {
		if q, ok := strings.CutPrefix(line, "quorum "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(q))
			if err != nil || quorum || n < 1 || n > MaxWitnesses || strconv.Itoa(n) != strings.TrimSpace(q) {
				return Policy{}, errcode.New(errcode.KeyMalformed, "witness policy: one quorum line, a whole number from 1, is needed; got %q", line)
			}
			p.Quorum, quorum = n, true
			continue
		}
		w, err := keys.ParseWitnessPublic(line)
		if err != nil {
			return Policy{}, fmt.Errorf("witness policy: %w", err)
		}
		if err := p.add(w); err != nil {
			return Policy{}, err
		}
	}
	if !quorum {
		return Policy{}, errcode.New(errcode.KeyMalformed, "witness policy has no quorum line")
	}
	return p, p.Valid()
}

func (p *Policy) add(w keys.WitnessPublic) error {
	for _, o := range p.Witnesses {
		if o.Name() == w.Name() || o.Equal(w) {
			return errcode.New(errcode.KeyMalformed, "witness policy names witness %s twice", w.Name())
		}
	}
	if len(p.Witnesses) == MaxWitnesses {
		return errcode.New(errcode.KeyMalformed, "witness policy names more than %d witnesses", MaxWitnesses)
	}
	p.Witnesses = append(p.Witnesses, w)
	return nil
}

// NewPolicy makes a policy of quorum out of witnesses, checked as ParsePolicy checks a file.
func NewPolicy(quorum int, witnesses []keys.WitnessPublic) (Policy, error) {
	p := Policy{Quorum: quorum}
	for _, w := range witnesses {
		if err := p.add(w); err != nil {
			return Policy{}, err
		}
	}
	return p, p.Valid()
}

// Valid checks the quorum against the witnesses named.
func (p Policy) Valid() error {
	if p.Quorum < 1 || p.Quorum > len(p.Witnesses) {
		return errcode.New(errcode.KeyMalformed, "witness quorum %d must be from 1 to the %d witnesses named", p.Quorum, len(p.Witnesses))
	}
	return nil
}

// Marshal is the policy's file form.
func (p Policy) Marshal() []byte {
	var b strings.Builder
	b.WriteString("# Log checkpoints must carry cosignatures of at least quorum of these witnesses.\n")
	fmt.Fprintf(&b, "quorum %d\n", p.Quorum)
	for _, w := range p.Witnesses {
		b.WriteString(w.String() + "\n")
	}
	return []byte(b.String())
}

// Cosigners lists the policy's witnesses whose cosignature on cp verifies. A cosignature line that
// does not verify counts as absent, so whoever carried the note cannot spoil a good one by adding
// a bad line.
func (p Policy) Cosigners(cp Checkpoint) []string {
	var out []string
	for _, w := range p.Witnesses {
		if _, err := note.Open(cp.Note, note.VerifierList(w.Verifier())); err == nil {
			out = append(out, w.Name())
		}
	}
	return out
}

// Check refuses cp with statement.unwitnessed unless at least Quorum witnesses cosigned it, and
// returns the witnesses that did.
func (p Policy) Check(cp Checkpoint) ([]string, error) {
	got := p.Cosigners(cp)
	if len(got) >= p.Quorum {
		return got, nil
	}
	return got, errcode.New(errcode.StatementUnwitnessed, "the checkpoint of log %s at size %d is cosigned by %d of the held witnesses (%s); the trust folder requires %d",
		cp.Origin, cp.Size, len(got), strings.Join(got, ", "), p.Quorum).
		With(errcode.DetailLimit, p.Quorum).With(errcode.DetailCount, len(got)).With(errcode.DetailOrigin, cp.Origin)
}
