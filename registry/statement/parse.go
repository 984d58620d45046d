package statement

import (
	"errors"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"golang.org/x/mod/semver"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func malformed(err error, layer, format string, args ...any) error {
	return errcode.Wrap(err, errcode.StatementMalformed, format, args...).With(errcode.DetailLayer, layer)
}

// MaxLogEntries caps a bundle's transparency-log entries, as sigstore-go caps them.
const MaxLogEntries = 32

// ParseBundle reads statement.bundle.json. It checks shape only; trust is the verifier's business.
//
// The shape is what sigstore-go's bundle loader checks of a v0.3 bundle, narrowed to what a statement
// is: protobuf JSON with no unknown fields, a DSSE envelope of the in-toto payload type with exactly
// one signature, a public key as verification material, and at most MaxLogEntries log entries, each
// with a body, a log id, a kind and version, and an inclusion proof carrying its checkpoint. Other
// bundle versions and certificate material are refused: nothing here writes them.
func ParseBundle(data []byte) (*protobundle.Bundle, error) {
	if len(data) > MaxBundleSize {
		return nil, errcode.New(errcode.StatementTooLarge, "bundle is %d bytes, over the %d-byte cap", len(data), MaxBundleSize).
			With(errcode.DetailLayer, "bundle")
	}
	var b protobundle.Bundle
	if err := protojson.Unmarshal(data, &b); err != nil {
		return nil, malformed(err, "bundle", "bundle is not a valid Sigstore bundle")
	}
	if b.MediaType != BundleMediaType {
		return nil, malformed(nil, "bundle", "bundle media type is %q, not %q", b.MediaType, BundleMediaType)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, malformed(nil, "envelope", "bundle holds no DSSE envelope")
	}
	if env.PayloadType != PayloadType {
		return nil, malformed(nil, "envelope", "envelope payload type is %q, not %q", env.PayloadType, PayloadType)
	}
	if len(env.Signatures) != 1 {
		return nil, errcode.New(errcode.StatementSignatureInvalid, "envelope has %d signatures; exactly one is allowed", len(env.Signatures))
	}
	if b.GetVerificationMaterial().GetPublicKey() == nil {
		return nil, malformed(nil, "bundle", "bundle names no publisher key")
	}
	entries := b.GetVerificationMaterial().GetTlogEntries()
	if len(entries) > MaxLogEntries {
		return nil, malformed(nil, "bundle", "bundle has %d log entries, over the cap of %d", len(entries), MaxLogEntries)
	}
	for i, e := range entries {
		switch {
		case e == nil, len(e.CanonicalizedBody) == 0, e.LogIndex < 0, len(e.GetLogId().GetKeyId()) == 0, e.KindVersion == nil:
			return nil, malformed(nil, "bundle", "log entry %d lacks its body, index, log id or kind", i)
		case e.GetInclusionProof().GetCheckpoint().GetEnvelope() == "":
			return nil, malformed(nil, "bundle", "log entry %d has no inclusion proof with a checkpoint", i)
		}
	}
	return &b, nil
}

// DecodeBundle reads the statement out of a bundle without verifying it: for a bundle that was verified
// before it was stored, or that a publisher is still building.
func DecodeBundle(data []byte) (*Statement, error) {
	b, err := ParseBundle(data)
	if err != nil {
		return nil, err
	}
	return Decode(b.GetDsseEnvelope().Payload)
}

// Decode parses and checks a statement payload. It needs no key: it runs before trust is decided,
// and only checks that the statement is well formed.
//
// The statement layer is in-toto's: members it does not define are ignored, as in-toto requires of a
// consumer, so a statement with subject annotations, a second digest or an extension field still
// decodes. The predicate is Lexicon's own and is decoded strictly.
func Decode(payload []byte) (*Statement, error) {
	if len(payload) > MaxPayloadSize {
		return nil, errcode.New(errcode.StatementTooLarge, "statement is %d bytes, over the %d-byte cap", len(payload), MaxPayloadSize).
			With(errcode.DetailLayer, "statement")
	}
	var w wireStatement
	if err := strictjson.DecodeOpen(payload, MaxPayloadSize, &w); err != nil {
		return nil, malformed(err, "statement", "statement is not valid in-toto Statement JSON")
	}
	s := Statement{Type: w.Type, Subject: w.Subject, PredicateType: w.PredicateType}
	if err := s.checkHeader(); err != nil {
		return nil, err
	}
	if len(w.Predicate) == 0 {
		return nil, invalid("predicate", "the statement has no predicate")
	}
	if err := strictjson.Decode(w.Predicate, MaxPayloadSize, &s.Predicate); err != nil {
		var unknown *strictjson.UnknownFieldError
		if errors.As(err, &unknown) {
			return nil, malformed(err, "predicate", "predicate has unknown field %q", unknown.Field)
		}
		return nil, malformed(err, "predicate", "predicate is not valid JSON of the release schema")
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// wireStatement is the statement layer as it is read: the predicate is kept as its bytes and decoded
// strictly on its own once the predicate type is known.
type wireStatement struct {
	Type          string         `json:"_type"`
	Subject       []Subject      `json:"subject"`
	PredicateType string         `json:"predicateType"`
	Predicate     jsontext.Value `json:"predicate"`
}

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.StatementInvalid, format, args...).With(errcode.DetailField, field)
}

// checkHeader checks what says how to read the rest: the statement and predicate types.
func (s *Statement) checkHeader() error {
	if s.Type != StatementType {
		return invalid("_type", "statement type is %q, not %q", s.Type, StatementType)
	}
	if s.PredicateType == RetiredPredicateType {
		return errcode.New(errcode.StatementFormatRetired,
			"the statement is in the retired release/v1 format (Ed25519ph-signed); build and sign the release again with this lexicon-release").
			With(errcode.DetailField, "predicateType")
	}
	if s.PredicateType != PredicateType {
		return invalid("predicateType", "predicate type is %q, not %q", s.PredicateType, PredicateType)
	}
	return nil
}

func (s *Statement) check() error {
	if len(s.Subject) == 0 || len(s.Subject) > MaxSubjects {
		return invalid("subject", "a statement has 1 to %d subjects, this one %d", MaxSubjects, len(s.Subject))
	}
	pinned := make(map[string]string, len(s.Subject)) // name -> digest
	for _, sub := range s.Subject {
		if sub.Name == "" || strings.ContainsAny(sub.Name, "\x00\n") {
			return invalid("subject", "subject name %q is empty or has control characters", sub.Name)
		}
		if _, dup := pinned[sub.Name]; dup {
			return errcode.New(errcode.StatementSubjectDuplicate, "subject %q appears twice", sub.Name).With(errcode.DetailSubject, sub.Name)
		}
		if !cas.ValidDigest(sub.SHA256()) {
			return invalid("subject", "subject %q needs a sha256 digest in lowercase hex", sub.Name)
		}
		pinned[sub.Name] = sub.SHA256()
	}
	p := &s.Predicate
	if !semver.IsValid("v"+p.Release) || semver.Canonical("v"+p.Release) != "v"+p.Release {
		return invalid("predicate.release", "release %q is not MAJOR.MINOR.PATCH semver", p.Release)
	}
	if p.Floor != "" && !semver.IsValid("v"+p.Floor) {
		return invalid("predicate.floor", "floor %q is not semver", p.Floor)
	}
	if p.Sequence == 0 {
		return invalid("predicate.sequence", "sequence starts at 1")
	}
	if p.IssuedAt.IsZero() || p.ExpiresAt.IsZero() || !p.ExpiresAt.After(p.IssuedAt) {
		return invalid("predicate.expiresAt", "issuedAt and expiresAt are required and expiresAt comes after issuedAt")
	}
	seen := map[string]bool{}
	for _, m := range p.Modules {
		id := string(m.Kind) + "/" + m.Name
		if seen[id] {
			return invalid("predicate.modules", "module %s appears twice", id)
		}
		seen[id] = true
		if !cas.ValidDigest(m.Manifest) || !cas.ValidDigest(m.Module) {
			return invalid("predicate.modules", "module %s needs sha256 digests of its manifest and module", id)
		}
		if pinned[m.ManifestSubject()] != m.Manifest {
			return errcode.New(errcode.ModuleNotPinned, "the manifest of %s is not a subject of the statement", id).With(errcode.DetailModule, id)
		}
		if !s.pins(pinned, m) {
			return errcode.New(errcode.ModuleNotPinned, "the artifact of %s is not a subject of the statement", id).With(errcode.DetailModule, id)
		}
	}
	for i, e := range p.KeyChain {
		if (e.Op != OpAdd && e.Op != OpRetire) || e.Key.IsZero() || e.SignedBy == "" || e.Signature == "" {
			return invalid("predicate.keyChain", "key-chain entry %d is incomplete or has op %q", i, e.Op)
		}
		// Sequences start at 1. An entry "from 0" has no meaning of its own, and reading it as "from 1"
		// would sign one text and apply another.
		if e.FromSequence == 0 {
			return invalid("predicate.keyChain", "key-chain entry %d applies from sequence 0; sequences start at 1", i)
		}
	}
	return nil
}

// pins reports whether a subject pins the module's artifact under the module's name. Drivers carry
// a platform after their name, so they are looked up by prefix; there are few of them.
func (s *Statement) pins(pinned map[string]string, m Module) bool {
	name := m.SubjectPrefix()
	if m.Kind != manifest.KindDriver {
		return pinned[name] == m.Module
	}
	for _, sub := range s.Subject {
		if strings.HasPrefix(sub.Name, name) && sub.SHA256() == m.Module {
			return true
		}
	}
	return false
}

// ManifestSubject is the subject name of the module's manifest.
func (m Module) ManifestSubject() string {
	mf := manifest.Manifest{Name: m.Name, Kind: m.Kind, Version: m.Version}
	return mf.ManifestSubjectName()
}

// SubjectPrefix is the start of the module artifact's subject name; drivers add a platform after it.
func (m Module) SubjectPrefix() string {
	mf := manifest.Manifest{Name: m.Name, Kind: m.Kind, Version: m.Version, Class: m.Class}
	if m.Kind == manifest.KindDriver {
		n := mf.SubjectName() // driver/<class>-<name>@<v>/<platform>
		return n[:strings.LastIndex(n, "/")+1]
	}
	return mf.SubjectName()
}
