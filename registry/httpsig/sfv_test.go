package httpsig

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestParseDictionary(t *testing.T) {
	for _, tc := range []struct {
		in, canonical string // canonical "" means refused
	}{
		{`a=1`, `a=1`},
		{`  a=1 ,	b=?0,c`, `a=1, b=?0, c`},
		{`a=("x" "y";p);q=:AAE=:`, `a=("x" "y";p);q=:AAE=:`},
		{`a=(  "x"   "y" )`, `a=("x" "y")`},
		{`a=()`, `a=()`},
		{`a="q\"\\"`, `a="q\"\\"`},
		{`a=tok/en:x*`, `a=tok/en:x*`},
		{`a=-999999999999999`, `a=-999999999999999`},
		{`a=::`, `a=::`},
		{`*a.b_c-d=1;k`, `*a.b_c-d=1;k`},
		{`a=?1;b=?0`, `a;b=?0`},
		{``, ``},
		{`a=1,`, ``},
		{`a=1,,b=2`, ``},
		{`a=1, a=2`, ``},           // repeated key: RFC 8941 keeps the last, we refuse
		{`a=1;p=1;p=2`, ``},        // repeated parameter
		{`a=1.5`, ``},              // decimal
		{`a=1000000000000000`, ``}, // 16 digits
		{`A=1`, ``},
		{`a=(1`, ``},
		{`a=(1"x")`, ``},
		{`a="unterminated`, ``},
		{`a="\x"`, ``},
		{"a=\"\u00e9\"", ``},
		{"a=\"tab\there\"", ``},
		{`a=:AAE:`, ``},  // unpadded
		{`a=:AAF=:`, ``}, // non-canonical trailing bits
		{`a=:A A=:`, ``}, // space in base64
		{`a=?2`, ``},
		{`a=@`, ``},
		{`a=1 b=2`, ``},
		{`a=1;`, ``},
		{`a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9`, ``}, // more than maxMembers
	} {
		t.Run(tc.in, func(t *testing.T) {
			ms, err := parseDictionary(tc.in)
			if tc.canonical == "" {
				if err == nil {
					t.Fatalf("accepted %q as %+v", tc.in, ms)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := serializeDictionary(ms)
			if err != nil || got != tc.canonical {
				t.Fatalf("serialised %q, want %q (%v)", got, tc.canonical, err)
			}
		})
	}
	if _, err := parseDictionary("a=" + strings.Repeat("1", maxFieldLen)); err == nil {
		t.Fatal("oversized field accepted")
	}
}

// FuzzParseDictionary: the parser never panics, and whatever it accepts serialises to a canonical form
// that parses back to the same canonical form.
func FuzzParseDictionary(f *testing.F) {
	for _, s := range []string{
		rfcB26Input, rfcB26Sig, ContentDigest(nil),
		`sig1=("@method" "@target-uri" "content-digest");created=1767225600;nonce="kZ0u3Yc1TzqSx6m4rN2bWg";keyid="SHA256:abc";alg="ed25519"`,
		`a=?1;b=?0, c=tok/en, d=(1 2;x);y=:AA==:`, `a="\"\\"`, `a=-1.5`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseDictionary(s)
		if err != nil {
			return
		}
		c1, err := serializeDictionary(ms)
		if err != nil {
			t.Fatalf("accepted %q but cannot serialise it: %v", s, err)
		}
		ms2, err := parseDictionary(c1)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c1, s, err)
		}
		if c2, _ := serializeDictionary(ms2); c2 != c1 {
			t.Fatalf("canonical form unstable: %q then %q", c1, c2)
		}
	})
}

// FuzzChannelHeaders: the channel parsers never panic, and what they accept keeps the profile's
// promises.
func FuzzChannelHeaders(f *testing.F) {
	f.Add(`sig1=("@method" "@target-uri" "content-digest");created=1767225600;nonce="kZ0u3Yc1TzqSx6m4rN2bWg";keyid="SHA256:abc";alg="ed25519"`,
		`sig1=:`+strictStdBase64.EncodeToString(make([]byte, 64))+`:`, ContentDigest(nil))
	f.Add(rfcB26Input, rfcB26Sig, `sha-512=:AA==:`)
	f.Fuzz(func(t *testing.T, input, sig, digest string) {
		if si, err := parseSignatureInput(input); err == nil {
			if checkCovered(si.list.items) != nil || !validNonce(si.nonce) || si.keyID == "" {
				t.Fatalf("accepted %q breaking the profile: %+v", input, si)
			}
			if s, err := parseSignature(sig, si.label); err == nil && len(s) != 64 {
				t.Fatalf("accepted a %d-byte signature", len(s))
			}
		}
		if d, err := parseContentDigest(digest); err == nil && len(d) != 32 {
			t.Fatalf("accepted a %d-byte digest", len(d))
		}
	})
}

// FuzzVerify feeds arbitrary header values to the verifier: it never panics, never accepts (no key
// can sign these), and every refusal carries a channel code.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f)
	r := fx.signedAt(f, "POST", claimURL, []byte(`{}`), t0)
	f.Add(r.Header.Get(HeaderSignatureInput), r.Header.Get(HeaderSignature), r.Header.Get(HeaderContentDigest), "/api/v1/agent/claim", []byte(`{}`))
	f.Add("", "", "", "*", []byte(nil))
	f.Fuzz(func(t *testing.T, input, sig, digest, target string, body []byte) {
		req := &http.Request{Method: "POST", Host: "plane.example.com", RequestURI: target, Header: http.Header{}}
		for k, v := range map[string]string{HeaderSignatureInput: input, HeaderSignature: sig, HeaderContentDigest: digest} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		_, err := fx.v.Verify(req, body, t0)
		switch errcode.Code(err) {
		case errcode.ChannelUnsigned, errcode.ChannelSignatureInvalid, errcode.ChannelDigestMismatch,
			errcode.ChannelClockSkew, errcode.ChannelReplayed:
		default:
			t.Fatalf("Verify returned %v", err)
		}
	})
}
