// Package statement defines the release statement and its signed form.
//
// # Wire format
//
// A release statement is an in-toto Statement v1 (JSON):
//
//	{
//	  "_type": "https://in-toto.io/Statement/v1",
//	  "subject": [{"name": "word/disk_usage@1.0.0.wasm", "digest": {"sha256": "<hex>"}}, ...],
//	  "predicateType": "https://lexicon-fleet.github.io/release/v2",
//	  "predicate": {
//	    "release": "1.4.0", "sequence": 7,
//	    "issuedAt": "2026-11-30T10:00:00Z", "expiresAt": "2027-02-28T10:00:00Z",
//	    "sourceCommit": "<git sha or empty>", "floor": "0.1.0", "publisher": "publisher-key:...",
//	    "modules": [{"name", "kind", "version", "class", "manifest": "<sha256>", "module": "<sha256>"}],
//	    "keyChain": [{"op": "add"|"retire", "key": "publisher-key:...", "fromSequence": 5,
//	                  "signedBy": "SHA256:...", "signature": "<base64>"}]
//	  }
//	}
//
// Every artifact is one subject: word and recipe modules, every manifest ("manifest/<name>@<v>.json"),
// drivers ("driver/<class>-<name>@<v>/<os>-<arch>") and agent binaries ("agent/<os>-<arch>"). Subject
// names are unique, and each subject carries a sha256 digest.
//
// The statement layer is read the way in-toto tells consumers to: fields it does not define at the top
// level, other fields of a subject (annotations, uri, ...) and digests in other algorithms are ignored.
// The predicate is ours and is read strictly: an unknown field in it is refused. Repeated keys are
// refused everywhere, since two parsers could keep different copies.
//
// The statement is the payload of a DSSE envelope (payloadType "application/vnd.in-toto+json") with
// exactly one signature: ECDSA P-256 with SHA-256 over the DSSE pre-authentication encoding, the
// signature every standard Sigstore verifier checks and a Rekor v2 log records. The envelope travels in
// a Sigstore bundle v0.3 whose verification material is the publisher key's fingerprint as hint,
// optionally with one Rekor v2 transparency-log entry: a hashedrekord v0.0.2 over the SHA-256 of the
// pre-authentication encoding, as sigstore-go's Rekor v2 client submits it.
//
// A key-chain entry is signed, in ECDSA P-256 with SHA-256 too, over the text
//
//	lexicon key-chain v2\n<op>\n<key>\n<fromSequence>\n
//
// "add" introduces key for statements from fromSequence on; "retire" ends key's right to sign
// statements from fromSequence on. Each entry must be signed by a key already held (by the node, or
// added earlier in the same chain) and not retired at fromSequence.
//
// The format before this one (predicate type release/v1, snake_case fields, Ed25519ph signatures) is
// refused with statement.format_retired.
package statement

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// Media and type names of the wire format.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://lexicon-fleet.github.io/release/v2"
	// RetiredPredicateType is the format before PredicateType, refused with statement.format_retired.
	RetiredPredicateType = "https://lexicon-fleet.github.io/release/v1"
	PayloadType          = "application/vnd.in-toto+json"
)

// Caps on outside bytes. A 200-module statement is about 100 KiB.
const (
	MaxBundleSize  = 8 << 20
	MaxPayloadSize = 4 << 20
	MaxSubjects    = 1024 // sigstore-go refuses more, too
)

// Statement is an in-toto Statement v1 with the release predicate.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is one artifact and its digest.
type Subject struct {
	Name   string `json:"name"`
	Digest Digest `json:"digest"`
}

// Digest is the part of an in-toto digest set that pins an artifact here: its sha256. A subject must
// carry one; digests in other algorithms are ignored (in-toto lets a consumer pick the algorithms it
// trusts), so no artifact is ever pinned by another hash.
type Digest struct {
	SHA256 string `json:"sha256"`
}

// SHA256 returns the subject's sha256 digest.
func (s Subject) SHA256() string { return s.Digest.SHA256 }

// NewSubject pins an artifact name to a sha256 digest.
func NewSubject(name, sha256 string) Subject {
	return Subject{Name: name, Digest: Digest{SHA256: sha256}}
}

// Predicate is what a release says about itself.
type Predicate struct {
	Release      string    `json:"release"`
	Sequence     uint64    `json:"sequence"`
	IssuedAt     time.Time `json:"issuedAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	SourceCommit string    `json:"sourceCommit"`
	Floor        string    `json:"floor"`
	// Publisher is the signing key. The verifier still finds the key among those it holds and insists
	// it is this one; the field is here so that `lexicon-release log` can submit the envelope to Rekor,
	// which needs the public key.
	Publisher keys.PublisherPublic `json:"publisher"`
	Modules   []Module             `json:"modules"`
	KeyChain  []ChainEntry         `json:"keyChain"`
}

// Module is one row of the module table.
type Module struct {
	Name     string         `json:"name"`
	Kind     manifest.Kind  `json:"kind"`
	Version  string         `json:"version"`
	Class    manifest.Class `json:"class,omitempty"`
	Manifest string         `json:"manifest"`
	Module   string         `json:"module"`
}

// Chain operations.
const (
	OpAdd    = "add"
	OpRetire = "retire"
)

// ChainEntry adds or retires a publisher key.
type ChainEntry struct {
	Op           string               `json:"op"`
	Key          keys.PublisherPublic `json:"key"`
	FromSequence uint64               `json:"fromSequence"`
	SignedBy     string               `json:"signedBy"`
	Signature    string               `json:"signature"`
}

// SignedText is the exact text an entry's signature covers.
func (e ChainEntry) SignedText() []byte {
	return []byte("lexicon key-chain v2\n" + e.Op + "\n" + e.Key.String() + "\n" + strconv.FormatUint(e.FromSequence, 10) + "\n")
}

// SignChainEntry fills in signedBy and signature with signer.
func SignChainEntry(e ChainEntry, signer keys.PublisherPrivate) ChainEntry {
	e.SignedBy = signer.Public().Fingerprint()
	sig, _ := signer.Sign(e.SignedText())
	e.Signature = base64.StdEncoding.EncodeToString(sig)
	return e
}

// VerifyBy checks the entry's signature against key.
func (e ChainEntry) VerifyBy(key keys.PublisherPublic) bool {
	sig, err := base64.StdEncoding.DecodeString(e.Signature)
	return err == nil && key.Verify(e.SignedText(), sig)
}

func (e ChainEntry) String() string {
	return fmt.Sprintf("%s %s from sequence %d (signed by %s)", e.Op, e.Key.Fingerprint(), e.FromSequence, e.SignedBy)
}
