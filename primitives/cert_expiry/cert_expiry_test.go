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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/cert_expiry.wasm"

// serve starts a TLS server on loopback whose leaf names names (and ips) and expires at notAfter;
// selfSigned makes the leaf its own issuer, otherwise a throwaway CA issues it.
func serve(t *testing.T, names []string, ips []net.IP, notAfter time.Time, selfSigned bool) (host string, port int) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: notAfter, DNSNames: names, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	issuer, issuerKey := leaf, key
	var caDER []byte
	if !selfSigned {
		caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test Issuing CA"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		caDER, _ = x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
		issuer, _ = x509.ParseCertificate(caDER)
		issuerKey = caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, issuer, &key.PublicKey, issuerKey)
	if err != nil {
		t.Fatal(err)
	}
	chain := [][]byte{der}
	if caDER != nil {
		chain = append(chain, caDER)
	}
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: chain, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h, p, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	port, _ = strconv.Atoi(p)
	return h, port
}

type expiry struct {
	Status     string
	DaysLeft   int `json:"days_left"`
	Issuer     string
	Names      []string
	CoversHost bool `json:"covers_host"`
	SelfSigned bool `json:"self_signed"`
}

func TestExpiry(t *testing.T) {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	cases := []struct {
		name       string
		names      []string
		ips        []net.IP
		in         time.Duration
		selfSigned bool
		want       expiry
	}{
		{"healthy and covering", []string{"www.example.test"}, loopback, 90*24*time.Hour + time.Hour, false,
			expiry{Status: "ok", DaysLeft: 90, Issuer: "CN=Test Issuing CA", CoversHost: true}},
		{"expiring soon, another name", []string{"*.example.test"}, nil, 5*24*time.Hour + time.Hour, false,
			expiry{Status: "expiring", DaysLeft: 5, Issuer: "CN=Test Issuing CA"}},
		{"expired and self-signed", []string{"old.example.test"}, loopback, -36 * time.Hour, true,
			expiry{Status: "expired", DaysLeft: -2, Issuer: "CN=old.example.test", CoversHost: true, SelfSigned: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, port := serve(t, tc.names, tc.ips, time.Now().Add(tc.in), tc.selfSigned)
			w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSelf(net.JoinHostPort(host, strconv.Itoa(port))))
			var e expiry
			w.Must(map[string]any{"host": host, "port": port}, &e)
			if e.Names[0] != tc.names[0] {
				t.Fatalf("names %v", e.Names)
			}
			e.Names = nil
			if e.Status != tc.want.Status || e.DaysLeft != tc.want.DaysLeft || e.Issuer != tc.want.Issuer ||
				e.SelfSigned != tc.want.SelfSigned || e.CoversHost != tc.want.CoversHost {
				t.Fatalf("%+v, want %+v", e, tc.want)
			}
		})
	}
}

func TestOnlyOwnNames(t *testing.T) {
	host, port := serve(t, []string{"a.example.test"}, nil, time.Now().Add(time.Hour), false)
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSelf("node.example.test:443"))
	if res := w.Run(map[string]any{"host": host, "port": port}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("a name not the node's: %s", res.Code)
	}
}
