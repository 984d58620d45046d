package httpsig

import (
	"bufio"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// RFC 9421 Appendix B.1.4, test-key-ed25519.
const (
	rfcPrivatePEM = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
`
	rfcPublicPEM = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=
-----END PUBLIC KEY-----
`
)

// RFC 9421 Appendix B.2, test-request, exactly as it travels.
const rfcTestRequest = "POST /foo?param=Value&Pet=dog HTTP/1.1\r\n" +
	"Host: example.com\r\n" +
	"Date: Tue, 20 Apr 2021 02:07:55 GMT\r\n" +
	"Content-Type: application/json\r\n" +
	"Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:\r\n" +
	"Content-Length: 18\r\n" +
	"\r\n" +
	`{"hello": "world"}`

// RFC 9421 Appendix B.2.6, signing a request using ed25519 (RFC 8792 line wrapping undone).
const (
	rfcB26Input = `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
	rfcB26Sig   = `sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:`
	rfcB26Base  = `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
)

// rfcKey returns the RFC's test key as a node key, checking that its public half is the RFC's.
func rfcKey(t testing.TB) keys.NodePrivate {
	t.Helper()
	block, _ := pem.Decode([]byte(rfcPrivatePEM))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	priv := k.(ed25519.PrivateKey)
	node, err := keys.ParseNodePrivate("node-private:" + base64.RawURLEncoding.EncodeToString(priv.Seed()))
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode([]byte(rfcPublicPEM))
	pk, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !pk.(ed25519.PublicKey).Equal(node.Public().Ed25519()) {
		t.Fatal("RFC private and public test keys do not pair")
	}
	return node
}

// TestRFC9421B26 reproduces Appendix B.2.6 byte for byte: the signature base our code builds from the
// test request as a server reads it, the Signature-Input serialisation, and the (deterministic)
// ed25519 signature, which must also verify with the RFC's public key.
func TestRFC9421B26(t *testing.T) {
	key := rfcKey(t)
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(rfcTestRequest)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := serverMessage(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := parseDictionary(rfcB26Input)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := serializeDictionary(ms); err != nil || again != rfcB26Input {
		t.Fatalf("Signature-Input does not re-serialise to itself:\n got %s\nwant %s (%v)", again, rfcB26Input, err)
	}
	il := ms[0].val.(innerList)
	base, err := signatureBase(m, il)
	if err != nil {
		t.Fatal(err)
	}
	if string(base) != rfcB26Base {
		t.Fatalf("signature base differs:\n got:\n%s\nwant:\n%s", base, rfcB26Base)
	}
	sig := key.Sign(base)
	if got := ms[0].key + "=:" + base64.StdEncoding.EncodeToString(sig) + ":"; got != rfcB26Sig {
		t.Fatalf("signature differs:\n got %s\nwant %s", got, rfcB26Sig)
	}
	want, err := parseSignature(rfcB26Sig, "sig-b26")
	if err != nil {
		t.Fatal(err)
	}
	if !key.Public().Verify(base, want) {
		t.Fatal("the RFC's signature does not verify over our signature base")
	}
	// The channel profile refuses this signature: it covers other components and has no nonce or alg.
	if _, err := parseSignatureInput(rfcB26Input); err == nil {
		t.Fatal("channel profile accepted the RFC's B.2.6 Signature-Input")
	}
}

// TestSignatureBaseShape pins the channel's own signature base, as documented in the package comment.
func TestSignatureBaseShape(t *testing.T) {
	req, _ := http.NewRequest("POST", "https://Plane.Example.com:443/api/v1/agent/claim?x=1", nil)
	req.Header.Set(HeaderContentDigest, ContentDigest(nil))
	m, err := clientMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	il := innerList{params: []param{{"created", int64(1767225600)}, {"nonce", "kZ0u3Yc1TzqSx6m4rN2bWg"}, {"keyid", "SHA256:abc"}, {"alg", Alg}}}
	for _, c := range Covered {
		il.items = append(il.items, item{val: c})
	}
	base, err := signatureBase(m, il)
	if err != nil {
		t.Fatal(err)
	}
	want := `"@method": POST
"@target-uri": https://plane.example.com/api/v1/agent/claim?x=1
"content-digest": sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:
"@signature-params": ("@method" "@target-uri" "content-digest");created=1767225600;nonce="kZ0u3Yc1TzqSx6m4rN2bWg";keyid="SHA256:abc";alg="ed25519"`
	if string(base) != want {
		t.Fatalf("signature base:\n%s\nwant:\n%s", base, want)
	}
}
