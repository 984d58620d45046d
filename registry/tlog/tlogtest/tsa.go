package tlogtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/digitorus/timestamp"
)

// TimestampPath is where the log's timestamp authority answers RFC 3161 requests, as Sigstore's
// timestamp-authority does.
const TimestampPath = "/api/v1/timestamp"

// tsaPolicy is the TSA policy the authority names in its tokens (an arbitrary private OID: no policy
// is promised).
var tsaPolicy = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}

// tsa is an RFC 3161 timestamp authority beside the log, as a Rekor v2 deployment has one: Rekor v2
// entries carry no time, and a signed timestamp is what tells verifiers when the signature existed.
type tsa struct {
	key        *ecdsa.PrivateKey
	leaf, root *x509.Certificate
	serial     atomic.Int64
}

func newTSA(origin string) *tsa {
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	notBefore := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	notAfter := notBefore.AddDate(10, 0, 0)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"Lexicon test log"}, CommonName: origin + " TSA root"},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		panic(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	// RFC 3161 section 2.3: the signing certificate has the timeStamping extended key usage, critical.
	ekuTimestamping, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{Organization: []string{"Lexicon test log"}, CommonName: origin + " TSA"},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: ekuTimestamping}},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &key.PublicKey, rootKey)
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	return &tsa{key: key, leaf: leaf, root: root}
}

// chainPEM is the authority's certificate chain, leaf first, as PEM.
func (a *tsa) chainPEM() []byte {
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.leaf.Raw})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.root.Raw})...)
}

// serveTimestamp answers one RFC 3161 TimeStampReq with a signed TimeStampResp.
func (a *tsa) serveTimestamp(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := timestamp.ParseRequest(body)
	if err != nil {
		http.Error(w, "invalid timestamp request: "+err.Error(), http.StatusBadRequest)
		return
	}
	ts := timestamp.Timestamp{
		HashAlgorithm: req.HashAlgorithm, HashedMessage: req.HashedMessage, Nonce: req.Nonce,
		Time: time.Now().UTC(), Accuracy: time.Second, Policy: tsaPolicy,
		SerialNumber: big.NewInt(a.serial.Add(1)), AddTSACertificate: req.Certificates,
	}
	resp, err := ts.CreateResponseWithOpts(a.leaf, a.key, crypto.SHA256)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/timestamp-reply")
	_, _ = w.Write(resp)
}
