package tlogtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"maps"
	"net/http"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// TileHeight is the tile height of C2SP tlog-tiles: 2^8 hashes a tile.
const TileHeight = 8

// serveRead answers the read side of the log: GET /checkpoint, and GET /tile/<L>/<N>[.p/<W>] as
// C2SP tlog-tiles spells a tile of hashes. Entry bundles (tile/entries/...) are not served: proofs
// need only hashes.
func (l *Log) serveRead(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/checkpoint":
		cp, err := l.Checkpoint(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(cp)
	case strings.HasPrefix(r.URL.Path, "/tile/"):
		// sumdb's tiles are C2SP's with the height in the path: tile/8/<L>/<N>.
		t, err := tlog.ParseTilePath("tile/8/" + strings.TrimPrefix(r.URL.Path, "/tile/"))
		if err != nil || t.L < 0 {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		// The tile's last hash must exist in the tree as it stands: at level L there are size>>(8L) of them.
		if (t.N*(1<<TileHeight) + int64(t.W)) > l.size>>(TileHeight*t.L) {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		data, err := tlog.ReadTileData(t, l.hashReader())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// Checkpoint is the log's latest checkpoint, signed and cosigned as the log serves it.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	root, err := tlog.TreeHash(l.size, l.hashReader())
	if err != nil {
		return nil, err
	}
	return l.sign(ctx, root)
}

// Fork makes a second log with this one's key, origin, witnesses and history so far. Entries added to
// either afterwards are the start of two histories under one key: a split view.
func (l *Log) Fork() *Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &Log{
		origin: l.origin, key: l.key, reg: l.reg, tsa: l.tsa,
		hashes: append([]tlog.Hash(nil), l.hashes...), size: l.size,
		entries: maps.Clone(l.entries), witnesses: append([]*Witness(nil), l.witnesses...),
	}
}

// AddWitness has w cosign every checkpoint the log signs from now on, as a log that waits for its
// witnesses before publishing does.
func (l *Log) AddWitness(w *Witness) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.witnesses = append(l.witnesses, w)
}

// Witness is a test witness: an Ed25519 cosignature/v1 key (C2SP tlog-cosignature). It cosigns what
// its log hands it without keeping any state, so it proves nothing; it is here to test verifiers.
type Witness struct {
	pub    keys.WitnessPublic
	signer note.Signer
}

// NewWitness makes a witness named name.
func NewWitness(name string) *Witness {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	wp, err := keys.NewWitnessPublic(name, pub)
	if err != nil {
		panic(err)
	}
	// vkey is name+hash+key; the signer key is PRIVATE+KEY+name+hash+(type byte and seed).
	vkey := strings.SplitN(wp.VKey(), "+", 3)
	skey := "PRIVATE+KEY+" + name + "+" + vkey[1] + "+" + base64.StdEncoding.EncodeToString(append([]byte{0x04}, priv.Seed()...))
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		panic(err)
	}
	return &Witness{pub: wp, signer: s}
}

// PublicKey is the witness key a verifier's policy names.
func (w *Witness) PublicKey() keys.WitnessPublic { return w.pub }

// Cosign adds w's cosignature to a signed note.
func (w *Witness) Cosign(signed []byte) ([]byte, error) {
	n, err := note.Open(signed, anyVerifier{})
	if err != nil {
		return nil, err
	}
	sig, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	if err != nil {
		return nil, err
	}
	// note.Sign wrote the text, a blank line and w's line: keep the note's lines and add w's.
	return append(signed, sig[len(n.Text)+1:]...), nil
}

// anyVerifier accepts every signature, so note.Open parses a note whose keys it does not know.
type anyVerifier struct{}

func (anyVerifier) Verifier(name string, hash uint32) (note.Verifier, error) {
	return acceptAll{name, hash}, nil
}

type acceptAll struct {
	name string
	hash uint32
}

func (a acceptAll) Name() string                { return a.name }
func (a acceptAll) KeyHash() uint32             { return a.hash }
func (a acceptAll) Verify(msg, sig []byte) bool { return true }

// AppendLeaf appends an opaque leaf, for tests that need a log of some size and no signed entries.
func (l *Log) AppendLeaf(data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	stored, err := tlog.StoredHashes(l.size, data, l.hashReader())
	if err != nil {
		return err
	}
	l.hashes = append(l.hashes, stored...)
	l.size++
	return nil
}
