package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// algCosignatureV1 is the signed-note key type of an Ed25519 witness key (C2SP tlog-cosignature).
const algCosignatureV1 = 0x04

// WitnessPublic is a transparency-log witness's cosigning key: a C2SP signed-note verifier key
// ("vkey") of type 0x04, Ed25519 cosignature/v1. Its text form is "witness-key:" and the vkey as the
// witness publishes it: "witness-key:<name>+<hash>+<base64 of 0x04 and the key>".
type WitnessPublic struct {
	_    [0]func()
	name string
	hash uint32
	key  [ed25519.PublicKeySize]byte
}

// ParseWitnessPublic reads a "witness-key:<vkey>" text form. The key hash must be the one the name and
// key give, and the base64 must be canonical, so a witness key has one spelling.
func ParseWitnessPublic(s string) (WitnessPublic, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), witnessPublicPrefix)
	if !ok {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "witness key does not start with %q", witnessPublicPrefix)
	}
	return ParseWitnessVKey(body)
}

// ParseWitnessVKey reads a bare C2SP vkey, as a witness publishes it.
func ParseWitnessVKey(vkey string) (WitnessPublic, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || !validNoteName(name) || len(hash16) != 8 {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "a witness key is <name>+<hash>+<base64 key>")
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil || hash16 != fmt.Sprintf("%08x", hash) {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "witness key hash %q is not 8 lowercase hex digits", hash16)
	}
	raw, ok := decodeCanonical(base64.StdEncoding, key64)
	if !ok {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "witness key body is not canonical base64")
	}
	if len(raw) != 1+ed25519.PublicKeySize || raw[0] != algCosignatureV1 {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed,
			"witness keys are Ed25519 cosignature/v1 keys (type 0x04, 33 bytes); convert a plain Ed25519 note key (type 0x01) first")
	}
	w := WitnessPublic{name: name}
	copy(w.key[:], raw[1:])
	w.hash = witnessKeyHash(name, raw)
	if uint32(hash) != w.hash {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "witness key hash %s does not match its name and key (%08x)", hash16, w.hash)
	}
	return w, nil
}

// NewWitnessPublic makes a witness key from its name and Ed25519 key.
func NewWitnessPublic(name string, pub ed25519.PublicKey) (WitnessPublic, error) {
	if !validNoteName(name) || len(pub) != ed25519.PublicKeySize {
		return WitnessPublic{}, errcode.New(errcode.KeyMalformed, "a witness key needs a name without spaces or '+' and an Ed25519 key")
	}
	w := WitnessPublic{name: name}
	copy(w.key[:], pub)
	w.hash = witnessKeyHash(name, append([]byte{algCosignatureV1}, pub...))
	return w, nil
}

// witnessKeyHash is the signed-note key hash: the first four bytes of SHA-256(name || "\n" || key).
func witnessKeyHash(name string, typedKey []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(typedKey)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// validNoteName is signed-note's rule for key names: non-empty UTF-8 with no space and no '+'.
func validNoteName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// VKey is the key's C2SP vkey text, as the witness publishes it.
func (w WitnessPublic) VKey() string {
	return fmt.Sprintf("%s+%08x+%s", w.name, w.hash, base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, w.key[:]...)))
}

func (w WitnessPublic) String() string { return witnessPublicPrefix + w.VKey() }

// Name is the witness's name, as its cosignature lines carry it.
func (w WitnessPublic) Name() string { return w.name }

// Equal compares two witness keys in constant time.
func (w WitnessPublic) Equal(o WitnessPublic) bool {
	return w.name == o.name && subtle.ConstantTimeCompare(w.key[:], o.key[:]) == 1
}

func (w WitnessPublic) IsZero() bool { return w.name == "" }

// Verifier verifies the witness's cosignature/v1 lines on a signed note (C2SP tlog-cosignature): the
// signature is an 8-byte big-endian timestamp and an Ed25519 signature over "cosignature/v1\n",
// "time <timestamp>\n" and the note's text. It is written here, a dozen lines, rather than taken from
// transparency-dev/formats/note, whose verifier links an ML-DSA implementation into every node for a
// key type no witness deploys yet; the tests check it against that package's signer.
func (w WitnessPublic) Verifier() note.Verifier {
	return cosignatureV1{name: w.name, hash: w.hash, key: ed25519.PublicKey(w.key[:])}
}

type cosignatureV1 struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v cosignatureV1) Name() string    { return v.name }
func (v cosignatureV1) KeyHash() uint32 { return v.hash }

func (v cosignatureV1) Verify(msg, sig []byte) bool {
	// A cosignature is over a checkpoint: its text has at least origin, size and root lines.
	if len(sig) != 8+ed25519.SignatureSize || strings.Count(string(msg), "\n") < 3 {
		return false
	}
	signed := fmt.Appendf(nil, "cosignature/v1\ntime %d\n", binary.BigEndian.Uint64(sig))
	return ed25519.Verify(v.key, append(signed, msg...), sig[8:])
}
