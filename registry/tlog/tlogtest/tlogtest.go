// Package tlogtest runs an in-process transparency log with Rekor v2's write API, for tests and demos.
//
// It speaks POST /api/v2/log/entries like Rekor v2: it validates a hashedrekord request (including its
// signature), appends the canonical entry to an RFC 6962 Merkle tree, and answers with the entry, an
// inclusion proof and a C2SP signed-note checkpoint. It serves its read side as Rekor v2 does, C2SP
// tlog-tiles (GET /checkpoint and GET /tile/<L>/<N>[.p/<W>]), from which readers build consistency
// proofs. Beside it, as a Rekor v2 deployment has one, an RFC 3161 timestamp authority answers POST
// /api/v1/timestamp. Test witnesses (NewWitness) may cosign every checkpoint it signs, and Fork makes a
// second log with the same key and history so far, to show two readers two histories. It keeps
// everything in memory.
package tlogtest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	rekorpb "github.com/sigstore/rekor-tiles/v2/pkg/generated/protobuf"
	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	"github.com/sigstore/rekor-tiles/v2/pkg/types/hashedrekord"
	"github.com/sigstore/sigstore/pkg/signature"
	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// Log is an in-memory Rekor v2 style log.
type Log struct {
	origin string
	key    *ecdsa.PrivateKey
	reg    *signature.AlgorithmRegistryConfig

	tsa *tsa

	mu        sync.Mutex
	hashes    []tlog.Hash
	size      int64
	entries   map[[32]byte]int64 // request digest -> index, to answer duplicates with 409 as Rekor does
	witnesses []*Witness
}

// New makes an empty log whose checkpoints name origin.
func New(origin string) *Log {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	reg, err := signature.NewAlgorithmRegistryConfig([]protocommon.PublicKeyDetails{
		protocommon.PublicKeyDetails_PKIX_ED25519_PH,
		protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256,
	})
	if err != nil {
		panic(err)
	}
	return &Log{origin: origin, key: k, reg: reg, tsa: newTSA(origin), entries: map[[32]byte]int64{}}
}

// TimestampChainPEM is the certificate chain of the log's timestamp authority, leaf first: what a
// verifier's trusted root names as a timestamp authority.
func (l *Log) TimestampChainPEM() []byte { return l.tsa.chainPEM() }

// PublicKey is the log key a verifier must hold.
func (l *Log) PublicKey() keys.LogPublic {
	k, err := keys.NewLogPublic(l.origin, &l.key.PublicKey)
	if err != nil {
		panic(err)
	}
	return k
}

// Size is the number of entries in the log.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Server serves the log's write API; close it when done.
func (l *Log) Server() *httptest.Server {
	return httptest.NewServer(l)
}

// ServeHTTP answers POST /api/v2/log/entries, GET of the checkpoint and tiles, and POST
// /api/v1/timestamp for the timestamp authority.
func (l *Log) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == TimestampPath {
		l.tsa.serveTimestamp(w, r)
		return
	}
	if r.Method == http.MethodGet {
		l.serveRead(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/log/entries" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req rekorpb.CreateEntryRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, "invalid request: "+err.Error(), http.StatusBadRequest)
		return
	}
	hr := req.GetHashedRekordRequestV002()
	if hr == nil {
		http.Error(w, "only hashedrekord v0.0.2 entries are accepted", http.StatusBadRequest)
		return
	}
	tle, status, err := l.Add(r.Context(), hr)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	out, err := protojson.Marshal(tle)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

func (l *Log) hashReader() tlog.HashReader {
	return tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			out[i] = l.hashes[x]
		}
		return out, nil
	})
}

// sign makes the checkpoint of the current tree, signed by the log and cosigned by its witnesses. The
// caller holds mu.
func (l *Log) sign(ctx context.Context, rootHash tlog.Hash) ([]byte, error) {
	cp := flog.Checkpoint{Origin: l.origin, Size: uint64(l.size), Hash: rootHash[:]}.Marshal()
	sv, err := signature.LoadECDSASignerVerifier(l.key, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	ns, err := rekornote.NewNoteSigner(ctx, l.origin, sv)
	if err != nil {
		return nil, err
	}
	signers := []note.Signer{ns}
	for _, w := range l.witnesses {
		signers = append(signers, w.signer)
	}
	return note.Sign(&note.Note{Text: string(cp)}, signers...)
}

// Add validates and appends an entry, returning it with its proof and the HTTP status Rekor would
// answer.
func (l *Log) Add(ctx context.Context, req *rekorpb.HashedRekordRequestV002) (*protorekor.TransparencyLogEntry, int, error) {
	entry, err := hashedrekord.ToLogEntry(req, l.reg) // the same validation and signature check Rekor v2 does
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	raw, err := protojson.Marshal(entry)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	body, err := jsoncanonicalizer.Transform(raw)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := sha256.Sum256(body)
	if idx, dup := l.entries[key]; dup {
		return nil, http.StatusConflict, fmt.Errorf("an equivalent entry already exists in the transparency log with index %d", idx)
	}
	stored, err := tlog.StoredHashes(l.size, body, l.hashReader())
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	l.hashes = append(l.hashes, stored...)
	idx := l.size
	l.size++
	l.entries[key] = idx
	rootHash, err := tlog.TreeHash(l.size, l.hashReader())
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	proof, err := tlog.ProveRecord(l.size, idx, l.hashReader())
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	signed, err := l.sign(ctx, rootHash)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	hashes := make([][]byte, len(proof))
	for i := range proof {
		hashes[i] = proof[i][:]
	}
	der, _ := x509.MarshalPKIXPublicKey(&l.key.PublicKey)
	logID := sha256.Sum256(der)
	return &protorekor.TransparencyLogEntry{
		LogIndex:    idx,
		LogId:       &protocommon.LogId{KeyId: logID[:]},
		KindVersion: &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.2"},
		InclusionProof: &protorekor.InclusionProof{
			LogIndex: idx, TreeSize: l.size, RootHash: rootHash[:], Hashes: hashes,
			Checkpoint: &protorekor.Checkpoint{Envelope: string(signed)},
		},
		CanonicalizedBody: body,
	}, http.StatusCreated, nil
}
