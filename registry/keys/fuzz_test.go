package keys_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// wantKeyMalformed fails on a refusal that does not carry key.malformed.
func wantKeyMalformed(t *testing.T, what string, err error) {
	t.Helper()
	if errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("%s refused without key.malformed: %v", what, err)
	}
}

// wantPublisherRefusal fails on a refusal of a publisher key text that carries neither key.malformed
// nor key.algorithm_retired (an Ed25519 body, the publisher key type before P-256).
func wantPublisherRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if c := errcode.Code(err); c != errcode.KeyMalformed && c != errcode.KeyAlgorithmRetired {
		t.Fatalf("%s refused without key.malformed or key.algorithm_retired: %v", what, err)
	}
}

// checkCanonical fails unless the canonical text a parsed key prints is itself a stable form: it parses
// back and prints the same.
func checkCanonical[K interface{ String() string }](t *testing.T, what string, k K, parse func(string) (K, error)) K {
	t.Helper()
	back, err := parse(k.String())
	if err != nil {
		t.Fatalf("%s: its own text %q does not parse: %v", what, k.String(), err)
	}
	if back.String() != k.String() {
		t.Fatalf("%s: text changes on a round trip: %q -> %q", what, k.String(), back.String())
	}
	return back
}

// FuzzParseKeys holds the publisher and node key parsers to their promise on any text: no panic, a
// coded refusal, and a key that parses prints a text that parses back to the same key, of its own type.
func FuzzParseKeys(f *testing.F) {
	pub, node := keys.NewPublisher(), keys.NewNode()
	for _, s := range []string{
		pub.Public().String(), pub.String(), node.Public().String(), node.String(),
		"  " + pub.Public().String() + "\n", "publisher-key:", "publisher-key:AAAA", "node-key:" + strings.Repeat("A", 44),
		"publisher-private:" + strings.Repeat("_", 43), "publisher-key:" + strings.Repeat("A", 43), "log-key:a:b", "",
		otherSpelling(pub.Public().String()), pub.Public().String()[:30] + "\n" + pub.Public().String()[30:],
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A key's text has one spelling: whatever parses is exactly the text the key prints.
		canonical := func(what string, printed string) {
			if printed != strings.TrimSpace(s) {
				t.Fatalf("%s %q parses but prints %q", what, s, printed)
			}
		}
		if p, err := keys.ParsePublisherPublic(s); err != nil {
			wantPublisherRefusal(t, "publisher key", err)
		} else {
			canonical("publisher key", p.String())
			back := checkCanonical(t, "publisher key", p, keys.ParsePublisherPublic)
			if !back.Equal(p) || p.IsZero() != back.IsZero() || !strings.HasPrefix(p.Fingerprint(), "SHA256:") {
				t.Fatalf("publisher key %q: round trip gives another key", s)
			}
			if _, err := keys.ParseNodePublic(p.String()); err == nil {
				t.Fatalf("publisher key %q parses as a node key", s)
			}
		}
		if k, err := keys.ParsePublisherPrivate(s); err != nil {
			wantPublisherRefusal(t, "publisher private key", err)
		} else {
			canonical("publisher private key", k.String())
			back := checkCanonical(t, "publisher private key", k, keys.ParsePublisherPrivate)
			if !back.Public().Equal(k.Public()) {
				t.Fatalf("publisher private key %q: round trip gives another key", s)
			}
			sig, _ := k.Sign([]byte("fuzz"))
			if !k.Public().Verify([]byte("fuzz"), sig) || k.Public().ECDSA() == nil {
				t.Fatalf("publisher private key %q signs what its public key refuses", s)
			}
		}
		if n, err := keys.ParseNodePublic(s); err != nil {
			wantKeyMalformed(t, "node key", err)
		} else {
			canonical("node key", n.String())
			back := checkCanonical(t, "node key", n, keys.ParseNodePublic)
			if !back.Equal(n) || len(n.Ed25519()) != ed25519.PublicKeySize {
				t.Fatalf("node key %q: round trip gives another key", s)
			}
			if _, err := keys.ParsePublisherPublic(n.String()); err == nil {
				t.Fatalf("node key %q parses as a publisher key", s)
			}
		}
		if k, err := keys.ParseNodePrivate(s); err != nil {
			wantKeyMalformed(t, "node private key", err)
		} else {
			canonical("node private key", k.String())
			back := checkCanonical(t, "node private key", k, keys.ParseNodePrivate)
			if !back.Public().Equal(k.Public()) || !k.Public().Verify([]byte("fuzz"), k.Sign([]byte("fuzz"))) {
				t.Fatalf("node private key %q: round trip or signature broken", s)
			}
		}
	})
}

// FuzzParseLogPublic: any text is a log key or a key.malformed refusal. A log key that parses has a
// host-name origin, an Ed25519 or P-256 key, and a text that parses back to the same origin and id.
func FuzzParseLogPublic(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lk, err := keys.NewLogPublic("log.example.test", &ec.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	ed, err := keys.NewLogPublic("rekor.example.test", edPub)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		lk.String(), ed.String(), " " + lk.String() + "\n", "log-key:", "log-key:origin", "log-key:a/b:" + strings.SplitN(lk.String(), ":", 3)[2],
		"log-key:a:%%%", "log-key:a:AAAA", keys.NewPublisher().Public().String(), otherSpelling(lk.String()),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := keys.ParseLogPublic(s)
		if err != nil {
			wantKeyMalformed(t, "log key", err)
			return
		}
		if l.Origin() == "" || strings.ContainsAny(l.Origin(), ": /\n") {
			t.Fatalf("log key %q has origin %q", s, l.Origin())
		}
		switch k := l.Key().(type) {
		case ed25519.PublicKey:
		case *ecdsa.PublicKey:
			if k.Curve != elliptic.P256() {
				t.Fatalf("log key %q is on %s", s, k.Curve.Params().Name)
			}
		default:
			t.Fatalf("log key %q is a %T", s, l.Key())
		}
		if l.String() != strings.TrimSpace(s) {
			t.Fatalf("log key %q parses but prints %q", s, l.String())
		}
		back := checkCanonical(t, "log key", l, keys.ParseLogPublic)
		if back.Origin() != l.Origin() || !bytes.Equal(back.ID(), l.ID()) || len(l.ID()) != 32 || l.IsZero() {
			t.Fatalf("log key %q: round trip gives another key", s)
		}
	})
}

// FuzzParseWitnessPublic: any text is a witness key or a key.malformed refusal. A witness key that
// parses prints back as it was written and verifies as the same key.
func FuzzParseWitnessPublic(f *testing.F) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	w, err := keys.NewWitnessPublic("witness.example", pub)
	if err != nil {
		f.Fatal(err)
	}
	vkey := w.VKey()
	for _, s := range []string{
		w.String(), " " + w.String() + "\n", "witness-key:", "witness-key:" + strings.Replace(vkey, "+", "+0", 1),
		"witness-key:a+00000000+BA==", "witness-key:a b+00000000+" + strings.SplitN(vkey, "+", 3)[2], vkey,
		"witness-key:" + strings.ToUpper(vkey), otherSpelling(w.String()),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := keys.ParseWitnessPublic(s)
		if err != nil {
			wantKeyMalformed(t, "witness key", err)
			return
		}
		if k.String() != strings.TrimSpace(s) {
			t.Fatalf("witness key %q parses but prints %q", s, k.String())
		}
		back := checkCanonical(t, "witness key", k, keys.ParseWitnessPublic)
		if !back.Equal(k) || back.Verifier().KeyHash() != k.Verifier().KeyHash() || k.IsZero() {
			t.Fatalf("witness key %q: round trip gives another key", s)
		}
	})
}
