package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../../build/wasm/recipes/cert_expiry.wasm"

// serve starts a TLS server on loopback whose certificate expires at notAfter, and returns its
// host:port, which the test lists as one of the node's own names.
func serve(t *testing.T, cn string, notAfter time.Time) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(0x5eed), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: notAfter, DNSNames: []string{cn},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, leaf, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://")
}

func TestExpiry(t *testing.T) {
	fresh := serve(t, "www.example.test", time.Now().Add(90*24*time.Hour+time.Hour))
	old := serve(t, "old.example.test", time.Now().Add(5*24*time.Hour+time.Hour))
	gone := serve(t, "gone.example.test", time.Now().Add(-36*time.Hour))
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()

	cases := []struct {
		name    string
		self    []string
		verdict string
		detail  []string
	}{
		{"fresh", []string{fresh}, "pass", []string{"14 days or more: " + fresh + " 90d"}},
		{"one expiring names its certificate", []string{fresh, old}, "fail",
			[]string{old + ": certificate CN=old.example.test (issuer CN=old.example.test, serial 5eed", "5 days left"}},
		{"expired", []string{gone}, "fail", []string{"-2 days left"}},
		{"a name that serves nothing", []string{fresh, closed}, "unknown", []string{closed + ": no certificate read"}},
		{"failing wins over unknown", []string{closed, old}, "fail", []string{"old.example.test"}},
		{"no names", nil, "unknown", []string{"lists no names"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSelf(tc.self...)).Check(nil)
			if v.Verdict != tc.verdict || v.Repair != nil {
				t.Fatalf("%+v", v)
			}
			for _, d := range tc.detail {
				if !strings.Contains(v.Detail, d) {
					t.Fatalf("detail %q lacks %q", v.Detail, d)
				}
			}
		})
	}
}

// TestOnlyOwnNames: a declaration naming a host the node does not call its own is refused by the host,
// so the check fails to run rather than answering about someone else's site.
func TestOnlyOwnNames(t *testing.T) {
	fresh := serve(t, "www.example.test", time.Now().Add(90*24*time.Hour))
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSelf("node.example.test"))
	if res := w.Run(map[string]any{"names": []string{fresh}}); res.Code != "capability.denied" {
		t.Fatalf("%s %s", res.Outcome, res.Code)
	}
}
