package httpsig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var t0 = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z

const claimURL = "https://plane.example.com/api/v1/agent/claim?wait=25"

// fixture is one verifier with its known node keys and nonce store, all on a fixed clock.
type fixture struct {
	node   keys.NodePrivate
	known  map[string]keys.NodePublic
	nonces *MemoryNonces
	v      *Verifier
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{node: keys.NewNode(), known: map[string]keys.NodePublic{}}
	f.known[KeyID(f.node.Public())] = f.node.Public()
	f.nonces = NewMemoryNonces(0, func() time.Time { return t0 })
	f.v = &Verifier{
		Keys: func(_ context.Context, id string) (keys.NodePublic, bool, error) {
			k, ok := f.known[id]
			return k, ok, nil
		},
		Nonces: f.nonces,
	}
	return f
}

// toServer writes a client request to the wire and reads it back as a server would, over TLS when
// the URL is https. It is how every test hands a request to the verifier, so the request line, Host
// and header parsing are net/http's own.
func toServer(t testing.TB, req *http.Request, body []byte) *http.Request {
	t.Helper()
	if body != nil {
		req.Body = nopCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatal(err)
	}
	r, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Scheme == "https" {
		r.TLS = &tls.ConnectionState{}
	}
	return r
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func newReq(t testing.TB, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// signedAt signs a request with the fixture's key at now and returns it as the server reads it.
func (f *fixture) signedAt(t testing.TB, method, url string, body []byte, now time.Time) *http.Request {
	t.Helper()
	req := newReq(t, method, url)
	if err := Sign(req, body, f.node, now); err != nil {
		t.Fatal(err)
	}
	return toServer(t, req, body)
}

// channelList is the channel's inner list with the given parameters.
func channelList(created int64, nonce, keyID string) innerList {
	il := innerList{params: []param{{"created", created}, {"nonce", nonce}, {"keyid", keyID}, {"alg", Alg}}}
	for _, c := range Covered {
		il.items = append(il.items, item{val: c})
	}
	return il
}

// signCustom signs req over an arbitrary inner list, leaving Content-Digest as the caller set it. It
// makes validly signed requests that break the channel profile, so the test shows the profile, not
// the signature, refuses them.
func signCustom(t testing.TB, req *http.Request, key keys.NodePrivate, label string, il innerList) {
	t.Helper()
	m, err := clientMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	base, err := signatureBase(m, il)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	in.WriteString(label + "=")
	if err := serializeInnerList(&in, il); err != nil {
		t.Fatal(err)
	}
	req.Header.Set(HeaderSignatureInput, in.String())
	req.Header.Set(HeaderSignature, label+"=:"+strictStdBase64.EncodeToString(key.Sign(base))+":")
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, method, url string
		body              []byte
	}{
		{"post with body", "POST", claimURL, []byte(`{"idle":true}`)},
		{"get without body", "GET", "https://plane.example.com/api/v1/agent/artifact?sha256=ab", nil},
		{"empty body", "POST", "https://plane.example.com/api/v1/agent/leave", []byte{}},
		{"explicit default port and upper case host", "POST", "https://PLANE.example.com:443/api/v1/agent/result", []byte(`{}`)},
		{"plain http on loopback with port", "POST", "http://127.0.0.1:8080/api/v1/agent/claim", []byte(`{}`)},
		{"ipv6 literal", "POST", "https://[::1]:8443/api/v1/agent/claim", []byte(`{}`)},
		{"escaped path and query", "POST", "https://plane.example.com/api/v1/agent/a%2Fb?q=a+b&r=%C3%A9", []byte(`x`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r := f.signedAt(t, tc.method, tc.url, tc.body, t0)
			proof, err := f.v.Verify(r, tc.body, t0)
			if err != nil {
				t.Fatal(err)
			}
			if proof.KeyID != KeyID(f.node.Public()) || !proof.Key.Equal(f.node.Public()) || !proof.Created.Equal(t0) {
				t.Fatalf("proof %+v does not name the signing key at t0", proof)
			}
			if len(proof.Nonce) < minNonceLen {
				t.Fatalf("nonce %q too short", proof.Nonce)
			}
		})
	}
}

func TestSignWritesDocumentedHeaders(t *testing.T) {
	f := newFixture(t)
	req := newReq(t, "POST", claimURL)
	if err := Sign(req, nil, f.node, t0); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get(HeaderContentDigest); got != "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:" {
		t.Fatalf("Content-Digest of an empty body: %s", got)
	}
	in := req.Header.Get(HeaderSignatureInput)
	wantPrefix := `sig1=("@method" "@target-uri" "content-digest");created=1767225600;nonce="`
	wantSuffix := `";keyid="` + f.node.Public().Fingerprint() + `";alg="ed25519"`
	if !strings.HasPrefix(in, wantPrefix) || !strings.HasSuffix(in, wantSuffix) {
		t.Fatalf("Signature-Input %s", in)
	}
	// Two signatures of one request differ in their nonce.
	again := newReq(t, "POST", claimURL)
	if err := Sign(again, nil, f.node, t0); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get(HeaderSignatureInput) == in {
		t.Fatal("two signatures share a nonce")
	}
}

// TestRefusals runs every refusal with its code. Each case starts from a request signed correctly
// and breaks one thing.
func TestRefusals(t *testing.T) {
	body := []byte(`{"idle":true}`)
	other := keys.NewNode()
	for _, tc := range []struct {
		name string
		code string
		// build returns the request as the server reads it and the body it received.
		build func(t *testing.T, f *fixture) (*http.Request, []byte)
	}{
		{"no signature at all", errcode.ChannelUnsigned, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			return toServer(t, req, body), body
		}},
		{"Signature-Input alone", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Del(HeaderSignature)
			return r, body
		}},
		{"Signature alone", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Del(HeaderSignatureInput)
			return r, body
		}},
		{"Signature-Input on two field lines", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Add(HeaderSignatureInput, r.Header.Get(HeaderSignatureInput))
			return r, body
		}},
		{"Signature on two field lines", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Add(HeaderSignature, r.Header.Get(HeaderSignature))
			return r, body
		}},
		{"oversized Signature-Input", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, r.Header.Get(HeaderSignatureInput)+`;x="`+strings.Repeat("a", maxFieldLen)+`"`)
			return r, body
		}},
		{"malformed Signature-Input", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, `sig1=("@method" "@target-uri" "content-digest";created=1`)
			return r, body
		}},
		{"two signatures", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			in, sig := r.Header.Get(HeaderSignatureInput), r.Header.Get(HeaderSignature)
			r.Header.Set(HeaderSignatureInput, in+", "+strings.Replace(in, "sig1=", "sig2=", 1))
			r.Header.Set(HeaderSignature, sig+", "+strings.Replace(sig, "sig1=", "sig2=", 1))
			return r, body
		}},
		{"repeated dictionary key", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			sig := r.Header.Get(HeaderSignature)
			r.Header.Set(HeaderSignature, sig+", "+sig)
			return r, body
		}},
		{"labels disagree", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignature, strings.Replace(r.Header.Get(HeaderSignature), "sig1=", "sig2=", 1))
			return r, body
		}},
		{"signature bit flipped", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			sig, _ := parseSignature(r.Header.Get(HeaderSignature), Label)
			sig[10] ^= 1
			r.Header.Set(HeaderSignature, Label+"=:"+strictStdBase64.EncodeToString(sig)+":")
			return r, body
		}},
		{"signature too short", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignature, Label+"=:"+strictStdBase64.EncodeToString(make([]byte, 63))+":")
			return r, body
		}},
		{"signature with parameters", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignature, r.Header.Get(HeaderSignature)+";x=1")
			return r, body
		}},
		{"unknown keyid", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			if err := Sign(req, body, other, t0); err != nil {
				t.Fatal(err)
			}
			return toServer(t, req, body), body
		}},
		{"another key signs under a known keyid", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, other, Label, channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public())))
			return toServer(t, req, body), body
		}},
		{"lookup answers with another key", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			// A plane bug that maps a keyid to the wrong row must not let that key prove this keyid.
			f.known[KeyID(other.Public())] = f.node.Public()
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(other.Public())))
			return toServer(t, req, body), body
		}},
		{"covers no content-digest", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.items = il.items[:2]
			req := newReq(t, "POST", claimURL)
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"covers no @target-uri", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.items = []item{{val: "@method"}, {val: "@path"}, {val: "content-digest"}}
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"covers one component more", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.items = append(il.items, item{val: "@authority"})
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"covers a component twice", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.items = []item{{val: "@method"}, {val: "@target-uri"}, {val: "@method"}}
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			r := toServer(t, req, body)
			// signatureBase refuses the duplicate itself, so write the header by hand.
			var in strings.Builder
			in.WriteString(Label + "=")
			_ = serializeInnerList(&in, il)
			r.Header.Set(HeaderSignatureInput, in.String())
			r.Header.Set(HeaderSignature, Label+"=:"+strictStdBase64.EncodeToString(make([]byte, 64))+":")
			return r, body
		}},
		{"component with a parameter", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), `"content-digest"`, `"content-digest";sf`, 1))
			return r, body
		}},
		{"components as tokens", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), `"content-digest"`, `content-digest`, 1))
			return r, body
		}},
		{"another alg", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.params[3].val = "rsa-pss-sha512"
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"alg missing", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.params = il.params[:3]
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"alg as a token", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), `alg="ed25519"`, `alg=ed25519`, 1))
			return r, body
		}},
		{"nonce missing", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "", KeyID(f.node.Public()))
			il.params = append(il.params[:1], il.params[2:]...)
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"nonce too short", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, channelList(t0.Unix(), "short", KeyID(f.node.Public())))
			return toServer(t, req, body), body
		}},
		{"created missing", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.params = il.params[1:]
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"created as a decimal", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, strings.Replace(r.Header.Get(HeaderSignatureInput), "created=1767225600", "created=1767225600.0", 1))
			return r, body
		}},
		{"an expires parameter", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			il := channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public()))
			il.params = append(il.params, param{"expires", t0.Unix() + 60})
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, il)
			return toServer(t, req, body), body
		}},
		{"repeated parameter", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Set(HeaderSignatureInput, r.Header.Get(HeaderSignatureInput)+`;alg="ed25519"`)
			return r, body
		}},
		{"Content-Digest missing", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			r.Header.Del(HeaderContentDigest)
			return r, body
		}},
		{"body altered after signing", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return f.signedAt(t, "POST", claimURL, body, t0), []byte(`{"idle":false}`)
		}},
		{"body dropped after signing", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return f.signedAt(t, "POST", claimURL, body, t0), nil
		}},
		{"body and Content-Digest altered after signing", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			r := f.signedAt(t, "POST", claimURL, body, t0)
			altered := []byte(`{"idle":false}`)
			r.Header.Set(HeaderContentDigest, ContentDigest(altered))
			return r, altered
		}},
		{"signed Content-Digest of sha-512", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, "sha-512=:"+strictStdBase64.EncodeToString(make([]byte, 64))+":")
			signCustom(t, req, f.node, Label, channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public())))
			return toServer(t, req, body), body
		}},
		{"signed Content-Digest with a second algorithm", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Set(HeaderContentDigest, ContentDigest(body)+", sha-512=:"+strictStdBase64.EncodeToString(make([]byte, 64))+":")
			signCustom(t, req, f.node, Label, channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public())))
			return toServer(t, req, body), body
		}},
		{"signed Content-Digest on two field lines", errcode.ChannelDigestMismatch, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			req := newReq(t, "POST", claimURL)
			req.Header.Add(HeaderContentDigest, ContentDigest(body))
			req.Header.Add(HeaderContentDigest, ContentDigest(body))
			signCustom(t, req, f.node, Label, channelList(t0.Unix(), "AAAAAAAAAAAAAAAAAAAAAA", KeyID(f.node.Public())))
			return toServer(t, req, body), body
		}},
		{"clock six minutes ahead", errcode.ChannelClockSkew, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return f.signedAt(t, "POST", claimURL, body, t0.Add(6*time.Minute)), body
		}},
		{"clock six minutes behind", errcode.ChannelClockSkew, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return f.signedAt(t, "POST", claimURL, body, t0.Add(-6*time.Minute)), body
		}},
		{"clock one second past the limit", errcode.ChannelClockSkew, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return f.signedAt(t, "POST", claimURL, body, t0.Add(-MaxSkew-time.Second)), body
		}},
		{"moved to another path", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.RequestURI = "/api/v1/agent/result?wait=25" }), body
		}},
		{"moved to another query", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.RequestURI = "/api/v1/agent/claim?wait=1" }), body
		}},
		{"moved to another host", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.Host = "other.example.com" }), body
		}},
		{"moved to another port", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.Host = "plane.example.com:8443" }), body
		}},
		{"moved to plain http", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.TLS = nil }), body
		}},
		{"moved to another method", errcode.ChannelSignatureInvalid, func(t *testing.T, f *fixture) (*http.Request, []byte) {
			return moved(t, f, body, func(r *http.Request) { r.Method = "PUT" }), body
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r, got := tc.build(t, f)
			_, err := f.v.Verify(r, got, t0)
			testkit.WantCode(t, err, tc.code)
			t.Log(err)
			if f.nonces.Len() != 0 {
				t.Fatalf("a refused request left %d nonces recorded", f.nonces.Len())
			}
		})
	}
}

// moved signs a claim correctly, then changes where the server sees it arrive. The untouched request
// must verify, so the refusal is the move's doing.
func moved(t *testing.T, f *fixture, body []byte, move func(*http.Request)) *http.Request {
	t.Helper()
	control := f.signedAt(t, "POST", claimURL, body, t0)
	if _, err := (&Verifier{Keys: f.v.Keys, Nonces: NewMemoryNonces(0, nil)}).Verify(control, body, t0); err != nil {
		t.Fatalf("control request refused: %v", err)
	}
	r := f.signedAt(t, "POST", claimURL, body, t0)
	move(r)
	return r
}

func TestClockSkewDetails(t *testing.T) {
	for _, tc := range []struct {
		offset time.Duration
		want   int64
	}{{6 * time.Minute, 360}, {-10 * time.Minute, -600}} {
		f := newFixture(t)
		_, err := f.v.Verify(f.signedAt(t, "POST", claimURL, nil, t0.Add(tc.offset)), nil, t0)
		testkit.WantCode(t, err, errcode.ChannelClockSkew)
		var e *errcode.Error
		if !errors.As(err, &e) || e.Details["skew_seconds"] != tc.want {
			t.Fatalf("node %s off: details %v, want skew_seconds %d", tc.offset, e.Details, tc.want)
		}
	}
}

func TestClockSkewLimitIsInclusive(t *testing.T) {
	for _, d := range []time.Duration{MaxSkew, -MaxSkew} {
		f := newFixture(t)
		r := f.signedAt(t, "POST", claimURL, nil, t0.Add(d))
		if _, err := f.v.Verify(r, nil, t0); err != nil {
			t.Fatalf("created %s from now: %v", d, err)
		}
	}
}

func TestReplayRefused(t *testing.T) {
	f := newFixture(t)
	body := []byte(`{"outcome":"completed"}`)
	r := f.signedAt(t, "POST", "https://plane.example.com/api/v1/agent/result", body, t0)
	replay := r.Clone(context.Background())
	if _, err := f.v.Verify(r, body, t0); err != nil {
		t.Fatal(err)
	}
	_, err := f.v.Verify(replay, body, t0.Add(time.Minute))
	testkit.WantCode(t, err, errcode.ChannelReplayed)
	// Past the window the nonce may be forgotten, and created alone refuses the replay.
	f.nonces.now = func() time.Time { return t0.Add(MaxSkew + nonceGrace + time.Second) }
	_, err = f.v.Verify(replay, body, t0.Add(MaxSkew+nonceGrace+time.Second))
	testkit.WantCode(t, err, errcode.ChannelClockSkew)
}

func TestLookupAndStoreFailuresPassThrough(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("store down")
	v := &Verifier{Keys: func(context.Context, string) (keys.NodePublic, bool, error) { return keys.NodePublic{}, false, boom }, Nonces: f.nonces}
	if _, err := v.Verify(f.signedAt(t, "POST", claimURL, nil, t0), nil, t0); !errors.Is(err, boom) {
		t.Fatalf("lookup failure: %v", err)
	}
	full := NewMemoryNonces(1, func() time.Time { return t0 })
	v = &Verifier{Keys: f.v.Keys, Nonces: full}
	if _, err := v.Verify(f.signedAt(t, "POST", claimURL, nil, t0), nil, t0); err != nil {
		t.Fatal(err)
	}
	_, err := v.Verify(f.signedAt(t, "POST", claimURL, nil, t0), nil, t0)
	testkit.WantCode(t, err, errcode.ChannelBusy)
}
