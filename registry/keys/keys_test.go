package keys_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rekornote "github.com/sigstore/rekor-tiles/v2/pkg/note"
	fnote "github.com/transparency-dev/formats/note"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestTextFormsRoundTripAndStayDistinct(t *testing.T) {
	pub := keys.NewPublisher()
	node := keys.NewNode()
	p, err := keys.ParsePublisherPublic(pub.Public().String())
	if err != nil || !p.Equal(pub.Public()) {
		t.Fatalf("publisher round trip: %v", err)
	}
	priv, err := keys.ParsePublisherPrivate(pub.String())
	if err != nil || !priv.Public().Equal(pub.Public()) {
		t.Fatalf("publisher private round trip: %v", err)
	}
	n, err := keys.ParseNodePublic(node.Public().String())
	if err != nil || !n.Equal(node.Public()) {
		t.Fatalf("node round trip: %v", err)
	}
	// A node key is never accepted where a publisher key is expected, nor the reverse.
	if _, err := keys.ParsePublisherPublic(node.Public().String()); errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("node key parsed as publisher key: %v", err)
	}
	if _, err := keys.ParseNodePublic(pub.Public().String()); errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("publisher key parsed as node key: %v", err)
	}
	if _, err := keys.ParsePublisherPublic("publisher-key:AAAA"); errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("short key: %v", err)
	}
	if pem := string(pub.Public().PEM()); !strings.HasPrefix(pem, "-----BEGIN PUBLIC KEY-----\n") {
		t.Fatalf("publisher key PEM: %q", pem)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lk, err := keys.NewLogPublic("log.example.test", &ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	back, err := keys.ParseLogPublic(lk.String())
	if err != nil || back.Origin() != "log.example.test" || string(back.ID()) != string(lk.ID()) {
		t.Fatalf("log key round trip: %v", err)
	}
	if _, err := keys.ParseLogPublic(pub.Public().String()); errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("publisher key parsed as log key: %v", err)
	}
}

// TestRetiredPublisherKeysRefused: the publisher keys of before, Ed25519, are refused with their own
// code, so an operator is told to make a new key rather than that a file is damaged.
func TestRetiredPublisherKeysRefused(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	pubText := "publisher-key:" + base64.RawURLEncoding.EncodeToString(ed.Public().(ed25519.PublicKey))
	privText := "publisher-private:" + base64.RawURLEncoding.EncodeToString(ed.Seed())
	if _, err := keys.ParsePublisherPublic(pubText); errcode.Code(err) != errcode.KeyAlgorithmRetired {
		t.Fatalf("Ed25519 publisher key: %v, want %s", err, errcode.KeyAlgorithmRetired)
	}
	if _, err := keys.ParsePublisherPrivate(privText); errcode.Code(err) != errcode.KeyAlgorithmRetired {
		t.Fatalf("Ed25519 publisher private key: %v, want %s", err, errcode.KeyAlgorithmRetired)
	}
	// A P-384 key is no publisher key either, though it is ECDSA.
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(p384)
	if _, err := keys.ParsePublisherPrivate("publisher-private:" + base64.RawURLEncoding.EncodeToString(der)); errcode.Code(err) != errcode.KeyMalformed {
		t.Fatalf("P-384 private key: %v", err)
	}
}

// otherSpelling writes the same bytes another way: the lowest bit of the last character before any
// padding lies past the last byte, and Go's lenient decoder ignores it.
func otherSpelling(text string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
	body := strings.TrimRight(text, "=")
	last := strings.IndexByte(alphabet, body[len(body)-1])
	return body[:len(body)-1] + string(alphabet[last^1]) + text[len(body):]
}

// TestNonCanonicalTextRefused: a key's text has one spelling. The same bytes written with stray bits
// after the last byte, or with a line break inside, are key.malformed, so one key cannot be held, listed
// or compared by text under two names.
func TestNonCanonicalTextRefused(t *testing.T) {
	pub, node := keys.NewPublisher(), keys.NewNode()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lk, err := keys.NewLogPublic("log.example.test", &ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	parsers := map[string]func(string) error{
		"publisher-key":     func(s string) error { _, err := keys.ParsePublisherPublic(s); return err },
		"publisher-private": func(s string) error { _, err := keys.ParsePublisherPrivate(s); return err },
		"node-key":          func(s string) error { _, err := keys.ParseNodePublic(s); return err },
		"node-private":      func(s string) error { _, err := keys.ParseNodePrivate(s); return err },
		"log-key":           func(s string) error { _, err := keys.ParseLogPublic(s); return err },
	}
	for name, text := range map[string]string{
		"publisher-key": pub.Public().String(), "publisher-private": pub.String(),
		"node-key": node.Public().String(), "node-private": node.String(), "log-key": lk.String(),
	} {
		parse := parsers[name]
		if err := parse(text); err != nil {
			t.Fatalf("%s: its own text is refused: %v", name, err)
		}
		mid := len(text) - 10
		bad := map[string]string{"a line break inside": text[:mid] + "\r\n" + text[mid:]}
		// A publisher key's bodies (a 33-byte point, 138 bytes of PKCS #8) fill their last character
		// exactly: there are no spare bits to spell the same bytes another way.
		if !strings.HasPrefix(name, "publisher-") {
			bad["stray bits after the last byte"] = otherSpelling(text)
		}
		for what, bad := range bad {
			if err := parse(bad); errcode.Code(err) != errcode.KeyMalformed {
				t.Errorf("%s with %s (%q): %v, want %s", name, what, bad, err, errcode.KeyMalformed)
			}
		}
	}
}

func TestSignatures(t *testing.T) {
	pub := keys.NewPublisher()
	sig, digest := pub.Sign([]byte("statement"))
	if !pub.Public().Verify([]byte("statement"), sig) || pub.Public().Verify([]byte("statemenT"), sig) ||
		keys.NewPublisher().Public().Verify([]byte("statement"), sig) {
		t.Fatal("publisher sign/verify wrong")
	}
	if want := sha256.Sum256([]byte("statement")); string(digest) != string(want[:]) {
		t.Fatal("Sign does not return the SHA-256 it signed")
	}
	node := keys.NewNode()
	s := node.Sign([]byte("request"))
	if !node.Public().Verify([]byte("request"), s) || keys.NewNode().Public().Verify([]byte("request"), s) {
		t.Fatal("node sign/verify wrong")
	}
}

func TestFingerprintMatchesSSHKeygen(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh-keygen missing in CI")
		}
		t.Skip("ssh-keygen not installed")
	}
	node := keys.NewNode()
	path := filepath.Join(t.TempDir(), "node.pub")
	if err := os.WriteFile(path, []byte(node.Public().AuthorizedKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ssh-keygen", "-lf", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[1] != node.Public().Fingerprint() {
		t.Fatalf("ssh-keygen says %q, we say %s", out, node.Public().Fingerprint())
	}
	// A publisher key's PEM, converted by ssh-keygen itself, has the fingerprint we print.
	pub := keys.NewPublisher().Public()
	pemPath := filepath.Join(t.TempDir(), "publisher.pem")
	if err := os.WriteFile(pemPath, pub.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	sshForm, err := exec.Command("ssh-keygen", "-i", "-m", "PKCS8", "-f", pemPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, sshForm, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = exec.Command("ssh-keygen", "-lf", path).Output(); err != nil {
		t.Fatal(err)
	}
	if fields = strings.Fields(string(out)); len(fields) < 2 || fields[1] != pub.Fingerprint() {
		t.Fatalf("ssh-keygen says %q of the publisher key, we say %s", out, pub.Fingerprint())
	}
}

func TestFileTrust(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "held.pub")
	if err := keys.WritePublic(good, keys.NewPublisher().Public().String()); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.ReadTrusted(good); err != nil {
		t.Fatalf("good file refused: %v", err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) string
	}{
		{"group-writable file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "k.pub")
			os.WriteFile(p, []byte("x"), 0o664)
			os.Chmod(p, 0o664)
			return p
		}},
		{"other-writable file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "k.pub")
			os.WriteFile(p, []byte("x"), 0o644)
			os.Chmod(p, 0o646)
			return p
		}},
		{"other-writable folder", func(t *testing.T) string {
			d := t.TempDir()
			os.Chmod(d, 0o777)
			p := filepath.Join(d, "k.pub")
			os.WriteFile(p, []byte("x"), 0o644)
			return p
		}},
		{"symlink", func(t *testing.T) string {
			d := t.TempDir()
			p := filepath.Join(d, "k.pub")
			os.Symlink(good, p)
			return p
		}},
		{"owned by another user", func(t *testing.T) string {
			if os.Getuid() != 0 {
				t.Skip("only root can give a file away")
			}
			p := filepath.Join(t.TempDir(), "k.pub")
			os.WriteFile(p, []byte("x"), 0o644)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keys.ReadTrusted(tc.setup(t))
			if errcode.Code(err) != errcode.KeyFileUntrusted {
				t.Fatalf("err = %v, want key.file_untrusted", err)
			}
		})
	}
}

func TestPrivateKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "publisher.key")
	k := keys.NewPublisher()
	if err := keys.WritePrivate(path, k.String()); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	if err := keys.WritePrivate(path, keys.NewPublisher().String()); err == nil {
		t.Fatal("WritePrivate overwrote a key")
	}
	back, err := keys.ReadPublisherPrivateFile(path)
	if err != nil || !back.Public().Equal(k.Public()) {
		t.Fatalf("read back: %v", err)
	}
	os.Chmod(path, 0o640)
	if _, err := keys.ReadPublisherPrivateFile(path); errcode.Code(err) != errcode.KeyFileUntrusted {
		t.Fatalf("group-readable private key: %v", err)
	}
}

// TestWitnessVerifierMatchesFormats: the cosignature/v1 verifier accepts what transparency-dev's
// signer makes, for this key and this text only.
func TestWitnessVerifierMatchesFormats(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w, err := keys.NewWitnessPublic("w.example", pub)
	if err != nil {
		t.Fatal(err)
	}
	hash := strings.SplitN(w.VKey(), "+", 3)[1]
	signer, err := fnote.NewSignerForCosignatureV1("PRIVATE+KEY+w.example+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{4}, priv.Seed()...)))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("log.example\n42\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n")
	sig, err := signer.Sign(text)
	if err != nil {
		t.Fatal(err)
	}
	v := w.Verifier()
	if v.Name() != signer.Name() || v.KeyHash() != signer.KeyHash() || !v.Verify(text, sig) {
		t.Fatalf("formats' cosignature does not verify (hash %08x, signer's %08x)", v.KeyHash(), signer.KeyHash())
	}
	ref, err := fnote.NewVerifierForCosignatureV1(w.VKey())
	if err != nil || !ref.Verify(text, sig) {
		t.Fatalf("reference verifier: %v", err)
	}
	other := bytes.Replace(text, []byte("42"), []byte("43"), 1)
	bad := bytes.Clone(sig)
	bad[3] ^= 1 // another timestamp
	for name, c := range map[string]struct{ msg, sig []byte }{
		"other text": {other, sig}, "other time": {text, bad}, "short": {text, sig[:70]}, "not a checkpoint": {[]byte("x\n"), sig},
	} {
		if v.Verify(c.msg, c.sig) {
			t.Errorf("%s verifies", name)
		}
	}
}

// TestLogIDIsRekors: a log key's id is the one a Rekor v2 log of that key writes into its entries.
func TestLogIDIsRekors(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, pub := range []any{&ec.PublicKey, edPub} {
		lk, err := keys.NewLogPublic("log.example.test", pub)
		if err != nil {
			t.Fatal(err)
		}
		_, want, err := rekornote.KeyHash("log.example.test", pub)
		if err != nil {
			t.Fatal(err)
		}
		if string(lk.ID()) != string(want) {
			t.Fatalf("%T log id %x, Rekor's %x", pub, lk.ID(), want)
		}
	}
}
