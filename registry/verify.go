package registry

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	rekorverify "github.com/sigstore/rekor-tiles/v2/pkg/verify"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Check names, in the order verification runs them (ARCHITECTURE.md, "The path of a release").
const (
	CheckParse     = "parse"
	CheckSignature = "signature"
	CheckLog       = "transparency_log"
	CheckSequence  = "sequence"
	CheckExpiry    = "expiry"
	CheckDigests   = "artifact_digests"
	CheckPinning   = "pinning"
)

// CheckResult is one verdict of a verification run.
type CheckResult struct {
	Check   string `json:"check"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// Report lists the verdicts of a run. Checks after the first failure are marked skipped: verification
// fails closed and stops there.
type Report struct {
	Checks []CheckResult `json:"checks"`
}

func (r *Report) pass(check, format string, args ...any) {
	r.Checks = append(r.Checks, CheckResult{Check: check, OK: true, Message: fmt.Sprintf(format, args...)})
}

// fail records err against check and every check after it as skipped, and returns err.
func (r *Report) fail(check string, err error, rest ...string) error {
	r.Checks = append(r.Checks, CheckResult{Check: check, Code: errcode.Code(err), Message: err.Error()})
	for _, c := range rest {
		r.Checks = append(r.Checks, CheckResult{Check: c, Skipped: true, Message: "not run: an earlier check failed"})
	}
	return err
}

var statementChecks = []string{CheckParse, CheckSignature, CheckLog, CheckCheckpoint, CheckSequence, CheckExpiry}

func after(check string, all []string) []string {
	for i, c := range all {
		if c == check {
			return all[i+1:]
		}
	}
	return nil
}

// Verify checks a statement bundle against the trust directory, offline, in the order of the checks
// above: signature by a held, unretired key; the transparency-log entry when log keys are held, and its
// checkpoint cosigned as the witness policy asks and consistent with the one held; sequence not rolled
// back; not expired. It changes nothing; call Accept to remember the release.
func (t *Trust) Verify(bundleJSON []byte, now time.Time) (*Release, error) {
	var rep Report
	return t.verify(bundleJSON, now, &rep, statementChecks)
}

func (t *Trust) verify(bundleJSON []byte, now time.Time, rep *Report, order []string) (*Release, error) {
	fail := func(check string, err error) (*Release, error) {
		return nil, rep.fail(check, err, after(check, order)...)
	}
	b, err := statement.ParseBundle(bundleJSON)
	if err != nil {
		return fail(CheckParse, err)
	}
	payload := b.GetDsseEnvelope().Payload
	st, err := statement.Decode(payload)
	if err != nil {
		return fail(CheckParse, err)
	}
	digest := sha256.Sum256(payload)
	rel := &Release{Statement: st, Payload: payload, Digest: hex.EncodeToString(digest[:])}
	rep.pass(CheckParse, "release %s, sequence %d, %d subjects", st.Predicate.Release, st.Predicate.Sequence, len(st.Subject))

	sb := &signedBundle{Bundle: b}
	signer, material, err := t.checkSigner(sb, st, rel)
	if err != nil {
		return fail(CheckSignature, err)
	}
	rel.Signer = signer
	rep.pass(CheckSignature, "signed by held key %s", signer.Fingerprint())

	if t.RequiresLog() {
		if err := t.checkLog(sb, material); err != nil {
			return fail(CheckLog, err)
		}
		rel.Logged = true
		rep.pass(CheckLog, "inclusion proven in a log whose key is held")
		said, err := t.checkCheckpoints(sb, rel)
		if err != nil {
			return fail(CheckCheckpoint, err)
		}
		rep.pass(CheckCheckpoint, "%s", said)
	} else {
		rep.pass(CheckLog, "no log keys held: a log entry is not required")
		rep.pass(CheckCheckpoint, "no log keys held: no checkpoint to compare")
	}

	seq := st.Predicate.Sequence
	switch {
	case seq < t.state.Sequence:
		return fail(CheckSequence, errcode.New(errcode.StatementRollback, "sequence %d is below the accepted %d", seq, t.state.Sequence).
			With(errcode.DetailSequence, seq).With(errcode.DetailAccepted, t.state.Sequence))
	case seq == t.state.Sequence && rel.Digest != t.state.Statement:
		return fail(CheckSequence, errcode.New(errcode.StatementRollback, "sequence %d was accepted for another statement", seq).
			With(errcode.DetailSequence, seq))
	}
	rep.pass(CheckSequence, "sequence %d is not below the accepted %d", seq, t.state.Sequence)

	if exp := st.Predicate.ExpiresAt; !now.Before(exp) {
		return fail(CheckExpiry, errcode.New(errcode.StatementExpired, "statement expired at %s", exp.UTC().Format(time.RFC3339)).
			With(errcode.DetailExpiresAt, exp))
	}
	rep.pass(CheckExpiry, "valid until %s", st.Predicate.ExpiresAt.UTC().Format(time.RFC3339))
	return rel, nil
}

// signedBundle remembers the bundle's signature content: sigstore-go's Bundle rebuilds it, base64 of
// the whole payload included, on every call, and verification asks for it twice.
type signedBundle struct {
	*bundle.Bundle
	content sgverify.SignatureContent
}

func (b *signedBundle) SignatureContent() (sgverify.SignatureContent, error) {
	if b.content == nil {
		c, err := b.Bundle.SignatureContent()
		if err != nil {
			return nil, err
		}
		b.content = c
	}
	return b.content, nil
}

// checkSigner walks the key chain, finds the key the bundle names among those held, and verifies the
// envelope signature with sigstore-go. sigstore-go knows nothing of retirement, so that is checked here.
func (t *Trust) checkSigner(b *signedBundle, st *statement.Statement, rel *Release) (keys.PublisherPublic, root.TrustedMaterial, error) {
	held, learned, err := t.walkChain(st.Predicate.KeyChain)
	if err != nil {
		return keys.PublisherPublic{}, nil, err
	}
	rel.learned = learned
	hint := b.GetVerificationMaterial().GetPublicKey().GetHint()
	h, ok := held[hint]
	if !ok {
		return keys.PublisherPublic{}, nil, errcode.New(errcode.StatementSignatureInvalid,
			"statement is signed by %q, a key this trust directory does not hold", hint).With(errcode.DetailKeyID, hint)
	}
	verifier, err := signature.LoadECDSAVerifier(h.key.ECDSA(), crypto.SHA256)
	if err != nil {
		return keys.PublisherPublic{}, nil, errcode.Wrap(err, errcode.StatementSignatureInvalid, "cannot load key %s", hint)
	}
	material := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{
		hint: root.NewExpiringKey(verifier, time.Time{}, time.Time{}),
	})
	sig, err := b.SignatureContent()
	if err != nil {
		return keys.PublisherPublic{}, nil, errcode.Wrap(err, errcode.StatementSignatureInvalid, "bundle signature unreadable")
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return keys.PublisherPublic{}, nil, errcode.Wrap(err, errcode.StatementSignatureInvalid, "bundle verification material unreadable")
	}
	if err := sgverify.VerifySignature(sig, vc, material); err != nil {
		return keys.PublisherPublic{}, nil, errcode.Wrap(err, errcode.StatementSignatureInvalid, "envelope signature does not verify with key %s", hint).
			With(errcode.DetailKeyID, hint)
	}
	if !st.Predicate.Publisher.Equal(h.key) {
		return keys.PublisherPublic{}, nil, errcode.New(errcode.StatementSignatureInvalid, "statement names publisher %s but is signed by %s",
			st.Predicate.Publisher.Fingerprint(), hint)
	}
	seq := st.Predicate.Sequence
	if h.retired != 0 && seq >= h.retired {
		return keys.PublisherPublic{}, nil, errcode.New(errcode.KeyRetired, "key %s was retired from sequence %d; this statement is sequence %d", hint, h.retired, seq).
			With(errcode.DetailKeyID, hint).With(errcode.DetailRetiredFrom, h.retired)
	}
	if seq < h.from {
		return keys.PublisherPublic{}, nil, errcode.New(errcode.KeyChainInvalid, "key %s may sign only from sequence %d; this statement is sequence %d", hint, h.from, seq).
			With(errcode.DetailKeyID, hint)
	}
	return h.key, material, nil
}

// walkChain applies a statement's key chain to a copy of the held keys. It returns the resulting keys
// and the lines Accept appends for what was new.
//
// An entry that changes nothing held is history this trust directory already has, and is passed over.
// A new entry must be signed by a key held at that point in the walk and valid at the first sequence
// the entry can affect here: its own fromSequence, but never below the next sequence this directory
// can accept. Without that floor a retired key could sign an entry dated before its retirement and so
// hand its authority to a key it made up after it.
func (t *Trust) walkChain(chain []statement.ChainEntry) (map[string]heldKey, []string, error) {
	held := make(map[string]heldKey, len(t.held)+len(chain))
	for k, v := range t.held {
		held[k] = v
	}
	var learned []string
	for i, e := range chain {
		fp := e.Key.Fingerprint()
		h, had := held[fp]
		switch {
		case e.Op == statement.OpAdd && had && h.from <= e.FromSequence,
			e.Op == statement.OpRetire && had && h.retired != 0 && h.retired <= retiredFrom(e.FromSequence):
			continue
		}
		signer, ok := held[e.SignedBy]
		if !ok {
			return nil, nil, errcode.New(errcode.KeyChainInvalid, "key-chain entry %d (%s) is signed by %s, a key not held", i, e, e.SignedBy).
				With(errcode.DetailEntry, i)
		}
		at := max(e.FromSequence, t.state.Sequence+1)
		if !signer.validAt(at) {
			code := errcode.KeyChainInvalid
			if signer.retired != 0 && at >= signer.retired {
				code = errcode.KeyRetired
			}
			return nil, nil, errcode.New(code, "key-chain entry %d (%s) is signed by %s, which may not sign at sequence %d", i, e, e.SignedBy, at).
				With(errcode.DetailEntry, i).With(errcode.DetailKeyID, e.SignedBy)
		}
		if !e.VerifyBy(signer.key) {
			return nil, nil, errcode.New(errcode.KeyChainInvalid, "key-chain entry %d (%s) has a bad signature", i, e).With(errcode.DetailEntry, i)
		}
		switch e.Op {
		case statement.OpAdd:
			if !had {
				h = heldKey{key: e.Key, from: e.FromSequence}
			} else {
				h.from = e.FromSequence
			}
			learned = append(learned, fmt.Sprintf("%s from %d", e.Key, e.FromSequence))
		case statement.OpRetire:
			if !had {
				h = heldKey{key: e.Key, from: ^uint64(0)}
			}
			h.retired = retiredFrom(e.FromSequence)
			learned = append(learned, fmt.Sprintf("retire %s from %d", e.Key, e.FromSequence))
		}
		held[fp] = h
	}
	return held, learned, nil
}

// checkLog requires one Rekor v2 entry, bound to this envelope, proven included under a checkpoint
// signed by a held log key. sigstore-go rebuilds the entry from the bundle, so an entry spliced in from
// another statement does not verify.
func (t *Trust) checkLog(b *signedBundle, publisher root.TrustedMaterial) error {
	if len(t.logs) == 0 {
		return errcode.New(errcode.StatementUnlogged, "this trust directory once held log keys and holds none now; refusing rather than loosening")
	}
	if len(b.GetVerificationMaterial().GetTlogEntries()) == 0 {
		return errcode.New(errcode.StatementUnlogged, "log keys are held and the statement carries no transparency-log entry")
	}
	logs := make(map[string]*root.TransparencyLog, len(t.logs))
	for _, l := range t.logs {
		logs[hex.EncodeToString(l.ID())] = &root.TransparencyLog{
			BaseURL:           "https://" + l.Origin(),
			ID:                l.ID(),
			HashFunc:          crypto.SHA256,
			PublicKey:         l.Key(),
			SignatureHashFunc: crypto.SHA256,
		}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, logs)
	if err != nil {
		return errcode.Wrap(err, errcode.StatementUnlogged, "cannot build the log trust root")
	}
	// The publisher key is in the material too: Rekor v2 entries are rebuilt from the bundle's
	// signature and key, which is what binds the entry to this envelope.
	material := root.TrustedMaterialCollection{tr, publisher}
	if _, err := sgverify.VerifyTlogEntry(b, material, 1, false); err != nil {
		why, msg := t.whyUnlogged(b)
		return errcode.Wrap(err, errcode.StatementUnlogged, "no valid transparency-log entry for this statement: %s", msg).
			With("log_check", why)
	}
	return nil
}

// Reasons a log entry fails, in details.log_check of a statement.unlogged refusal.
const (
	LogCheckKey        = "log_key"    // no entry names a held log key
	LogCheckCheckpoint = "checkpoint" // the checkpoint is not signed by the held log key the entry names
	LogCheckEntry      = "entry"      // the entry is not bound to this envelope or not proven included
)

// whyUnlogged names which part of the log evidence failed once sigstore-go has refused it: its errors
// are text, and "unlogged" alone does not tell a forged checkpoint from a spliced entry.
func (t *Trust) whyUnlogged(b *signedBundle) (string, string) {
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		for _, l := range t.logs {
			if !bytes.Equal(e.GetLogId().GetKeyId(), l.ID()) {
				continue
			}
			v, err := signature.LoadVerifier(l.Key(), crypto.SHA256)
			if err != nil {
				return LogCheckCheckpoint, fmt.Sprintf("log key %s cannot verify checkpoints: %v", l.Origin(), err)
			}
			nv, err := rekornote.NewNoteVerifier(l.Origin(), v)
			if err != nil {
				return LogCheckCheckpoint, fmt.Sprintf("log key %s cannot verify checkpoints: %v", l.Origin(), err)
			}
			if _, err := rekorverify.VerifyCheckpoint(e.GetInclusionProof().GetCheckpoint().GetEnvelope(), nv); err != nil {
				return LogCheckCheckpoint, fmt.Sprintf("the checkpoint is not signed by the held key of log %s", l.Origin())
			}
			return LogCheckEntry, fmt.Sprintf("the entry in log %s is not bound to this statement or not proven included", l.Origin())
		}
	}
	return LogCheckKey, "no entry names a held log key"
}
