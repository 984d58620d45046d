package registry

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	rekorverify "github.com/sigstore/rekor-tiles/v2/pkg/verify"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
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

	signer, err := t.checkSigner(b, st, rel)
	if err != nil {
		return fail(CheckSignature, err)
	}
	rel.Signer = signer
	rep.pass(CheckSignature, "signed by held key %s", signer.Fingerprint())

	if t.RequiresLog() {
		if err := t.checkLog(b, signer); err != nil {
			return fail(CheckLog, err)
		}
		rel.Logged = true
		rep.pass(CheckLog, "inclusion proven in a log whose key is held")
		said, err := t.checkCheckpoints(b, rel)
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

// checkSigner walks the key chain, finds the key the bundle names among those held, and verifies the
// envelope's one signature with it: ECDSA P-256 over the SHA-256 of the DSSE pre-authentication
// encoding, as sigstore-go verifies a DSSE envelope with a public key. Retirement and the key chain,
// which no Sigstore verifier knows of, are checked here too.
func (t *Trust) checkSigner(b *protobundle.Bundle, st *statement.Statement, rel *Release) (keys.PublisherPublic, error) {
	held, learned, err := t.walkChain(st.Predicate.KeyChain)
	if err != nil {
		return keys.PublisherPublic{}, err
	}
	rel.learned = learned
	hint := b.GetVerificationMaterial().GetPublicKey().GetHint()
	h, ok := held[hint]
	if !ok {
		return keys.PublisherPublic{}, errcode.New(errcode.StatementSignatureInvalid,
			"statement is signed by %q, a key this trust directory does not hold", hint).With(errcode.DetailKeyID, hint)
	}
	env := b.GetDsseEnvelope()
	if len(env.GetSignatures()) != 1 || !h.key.Verify(statement.PAE(env.GetPayloadType(), env.GetPayload()), env.GetSignatures()[0].GetSig()) {
		return keys.PublisherPublic{}, errcode.New(errcode.StatementSignatureInvalid, "envelope signature does not verify with key %s", hint).
			With(errcode.DetailKeyID, hint)
	}
	if !st.Predicate.Publisher.Equal(h.key) {
		return keys.PublisherPublic{}, errcode.New(errcode.StatementSignatureInvalid, "statement names publisher %s but is signed by %s",
			st.Predicate.Publisher.Fingerprint(), hint)
	}
	seq := st.Predicate.Sequence
	if h.retired != 0 && seq >= h.retired {
		return keys.PublisherPublic{}, errcode.New(errcode.KeyRetired, "key %s was retired from sequence %d; this statement is sequence %d", hint, h.retired, seq).
			With(errcode.DetailKeyID, hint).With(errcode.DetailRetiredFrom, h.retired)
	}
	if seq < h.from {
		return keys.PublisherPublic{}, errcode.New(errcode.KeyChainInvalid, "key %s may sign only from sequence %d; this statement is sequence %d", hint, h.from, seq).
			With(errcode.DetailKeyID, hint)
	}
	return h.key, nil
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

// Reasons a log entry fails, in details.log_check of a statement.unlogged refusal.
const (
	LogCheckKey        = "log_key"    // no entry names a held log key
	LogCheckCheckpoint = "checkpoint" // the checkpoint is not signed by the held log key the entry names
	LogCheckEntry      = "entry"      // the entry is not bound to this envelope or not proven included
)

// checkLog requires a Rekor v2 entry bound to this envelope, proven included under a checkpoint signed
// by a held log key. These are the checks sigstore-go's VerifyTlogEntry makes of a Rekor v2 entry with
// a threshold of one, made with the same rekor-tiles functions, and narrowed to the one entry kind
// Lexicon's releases are logged as:
//
//   - at most statement.MaxLogEntries entries (ParseBundle), no two with the same log and index;
//   - entries of logs whose key is not held are passed over; any other entry must verify;
//   - the entry is rebuilt from the envelope and the publisher key (rekorV2Entry), so an entry spliced
//     in from another statement does not verify; the body the bundle carries must be that entry byte
//     for byte (sigstore-go ignores the carried body; an inclusion proof of the rebuilt entry implies
//     the same bytes, so this refuses nothing the proof would pass and names the fault sooner);
//   - the checkpoint verifies with the held log key under the log's origin, and the RFC 6962 inclusion
//     proof joins the entry to the checkpoint's root at the entry's index;
//   - an entry with an inclusion promise (a Rekor v1 signed entry timestamp) or of another kind is
//     refused rather than passed over: no Rekor v2 log writes one.
func (t *Trust) checkLog(b *protobundle.Bundle, publisher keys.PublisherPublic) error {
	unlogged := func(why, format string, args ...any) error {
		return errcode.New(errcode.StatementUnlogged, "no valid transparency-log entry for this statement: "+format, args...).With("log_check", why)
	}
	if len(t.logs) == 0 {
		return errcode.New(errcode.StatementUnlogged, "this trust directory once held log keys and holds none now; refusing rather than loosening")
	}
	entries := b.GetVerificationMaterial().GetTlogEntries()
	if len(entries) == 0 {
		return errcode.New(errcode.StatementUnlogged, "log keys are held and the statement carries no transparency-log entry")
	}
	for i, e := range entries {
		for _, o := range entries[i+1:] {
			if bytes.Equal(e.GetLogId().GetKeyId(), o.GetLogId().GetKeyId()) && e.GetLogIndex() == o.GetLogIndex() {
				return unlogged(LogCheckEntry, "the bundle carries the same log entry twice")
			}
		}
	}
	der, err := x509.MarshalPKIXPublicKey(publisher.ECDSA())
	if err != nil {
		return errcode.Wrap(err, errcode.StatementUnlogged, "the publisher key cannot be encoded for its log entry")
	}
	env := b.GetDsseEnvelope()
	body := rekorV2Entry(sha256.Sum256(statement.PAE(env.GetPayloadType(), env.GetPayload())), env.GetSignatures()[0].GetSig(), der)
	verified := false
	for _, e := range entries {
		l, ok := t.logByID(e.GetLogId().GetKeyId())
		if !ok {
			continue // an entry the held log keys cannot judge, as sigstore-go passes it over
		}
		if e.GetInclusionPromise() != nil || e.GetKindVersion().GetKind() != "hashedrekord" || e.GetKindVersion().GetVersion() != "0.0.2" {
			return unlogged(LogCheckEntry, "the entry in log %s is not a Rekor v2 hashedrekord v0.0.2 entry", l.Origin())
		}
		nv, err := checkpoint.NoteVerifier(l)
		if err != nil {
			return unlogged(LogCheckCheckpoint, "log key %s cannot verify checkpoints: %v", l.Origin(), err)
		}
		cp, err := rekorverify.VerifyCheckpoint(e.GetInclusionProof().GetCheckpoint().GetEnvelope(), nv)
		if err != nil {
			return unlogged(LogCheckCheckpoint, "the checkpoint is not signed by the held key of log %s", l.Origin())
		}
		if !bytes.Equal(e.GetCanonicalizedBody(), body) {
			return unlogged(LogCheckEntry, "the entry in log %s is not bound to this statement", l.Origin())
		}
		if err := rekorverify.VerifyInclusionProof(e, cp); err != nil {
			return unlogged(LogCheckEntry, "the entry in log %s is not proven included: %v", l.Origin(), err)
		}
		verified = true
	}
	if !verified {
		return unlogged(LogCheckKey, "no entry names a held log key")
	}
	return nil
}
