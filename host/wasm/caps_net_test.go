package wasm_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func TestNetHTTP(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Probe", "yes")
		w.Write([]byte(strings.Repeat("b", 5000)))
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's refusal is expected
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain, _ := url.Parse(srv.URL)
	secure, _ := url.Parse(tlsSrv.URL)
	_, tlsPort, _ := net.SplitHostPort(secure.Host)

	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	h := newHost(t, cached(wasm.Config{Self: []string{secure.Host}, RootCAs: roots}))
	p := newProber(t, h, "look", []map[string]any{
		{"cap": "net.http", "hosts": []string{plain.Host, "@self"}, "max_bytes": 1000, "timeout_ms": 300},
	})
	var r capv1.HTTPResponse
	p.must(map[string]any{"cap": "net.http", "url": srv.URL + "/ok"}, &r)
	if r.Status != 200 || len(r.Body) != 1000 || !r.Truncated || r.Headers["X-Probe"] != "yes" || r.Timing.TotalMS <= 0 {
		t.Fatalf("%+v", r)
	}
	p.must(map[string]any{"cap": "net.http", "url": tlsSrv.URL + "/ok", "method": "HEAD"}, &r)
	if r.Status != 200 || len(r.Body) != 0 || r.Timing.TLSMS <= 0 {
		t.Fatalf("TLS to @self: %+v", r)
	}
	p.must(map[string]any{"cap": "net.http", "url": srv.URL + "/moved"}, &r)
	if r.Status != 302 || r.Headers["Location"] != "http://elsewhere.invalid/" {
		t.Fatalf("redirect followed? %+v", r)
	}
	for _, tc := range []struct {
		name, url, method string
		headers           map[string]string
		code              string
	}{
		{"other port of a declared host", "http://127.0.0.1:1/ok", "", nil, errcode.CapabilityDenied},
		{"@self name on a port it does not list", "https://localhost:" + tlsPort + "/", "", nil, errcode.CapabilityDenied},
		{"undeclared host", "http://example.invalid/", "", nil, errcode.CapabilityDenied},
		{"credentials in the URL", "http://user:pw@" + plain.Host + "/ok", "", nil, errcode.CapabilityInvalid},
		{"not http", "ftp://" + plain.Host + "/", "", nil, errcode.CapabilityInvalid},
		{"POST", srv.URL + "/ok", "POST", nil, errcode.CapabilityInvalid},
		{"Host header", srv.URL + "/ok", "", map[string]string{"Host": "internal"}, errcode.CapabilityInvalid},
		{"slow server", srv.URL + "/slow", "", nil, errcode.CapabilityTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := map[string]any{"cap": "net.http", "url": tc.url}
			if tc.method != "" {
				req["method"] = tc.method
			}
			if tc.headers != nil {
				req["headers"] = tc.headers
			}
			if code := p.one(req, nil); code != tc.code {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
	// A server whose certificate the node does not trust is a failure, not a silent success.
	untrusting := newHost(t, cached(wasm.Config{Self: []string{secure.Host}}))
	q := newProber(t, untrusting, "look", []map[string]any{{"cap": "net.http", "hosts": []string{"@self"}}})
	if code := q.one(map[string]any{"cap": "net.http", "url": tlsSrv.URL + "/ok"}, nil); code != errcode.CapabilityFailed {
		t.Fatalf("untrusted certificate: %q", code)
	}
}

// chainServer serves a leaf certificate for names, issued by a throwaway CA and expiring at notAfter.
func chainServer(t *testing.T, names []string, notAfter time.Time) *httptest.Server {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Lexicon Test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, DNSNames: names,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSPeer(t *testing.T) {
	expires := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	srv := chainServer(t, []string{"www.example.test", "example.test"}, expires)
	self := httptest.NewTLSServer(http.NotFoundHandler())
	defer self.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	_, selfPort, _ := net.SplitHostPort(strings.TrimPrefix(self.URL, "https://"))
	h := newHost(t, cached(wasm.Config{Self: []string{host + ":" + port, host + ":" + selfPort}}))
	p := newProber(t, h, "look", []map[string]any{{"cap": "tls.peer", "hosts": []string{"@self"}}})

	var r capv1.TLSPeerResult
	p.must(map[string]any{"cap": "tls.peer", "host": host, "port": atoi(t, port)}, &r)
	if len(r.Chain) != 2 {
		t.Fatalf("chain %+v", r.Chain)
	}
	leaf := r.Chain[0]
	if !leaf.NotAfter.Equal(expires.UTC()) || leaf.SelfSigned || leaf.Issuer != "CN=Lexicon Test CA" ||
		strings.Join(leaf.DNSNames, ",") != "www.example.test,example.test" || leaf.IPAddresses[0] != "127.0.0.1" {
		t.Fatalf("leaf %+v", leaf)
	}
	if !r.Chain[1].SelfSigned || !r.Chain[1].IsCA {
		t.Fatalf("CA %+v", r.Chain[1])
	}
	p.must(map[string]any{"cap": "tls.peer", "host": host, "port": atoi(t, selfPort)}, &r)
	if !r.Chain[0].SelfSigned {
		t.Fatalf("httptest's certificate is self-signed: %+v", r.Chain[0])
	}
	if code := p.one(map[string]any{"cap": "tls.peer", "host": host, "port": 443}, nil); code != errcode.CapabilityDenied {
		t.Fatalf("undeclared port: %q", code)
	}
	if code := p.one(map[string]any{"cap": "tls.peer", "host": host, "port": atoi(t, port), "server_name": "bank.example"}, nil); code != errcode.CapabilityDenied {
		t.Fatalf("undeclared server name: %q", code)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestNetHTTPRefusesMetadataServices: a word whose manifest declares a cloud's metadata or credential
// service by address is refused at that address, before anything connects: the link-local ones and
// those elsewhere (AWS's IPv6 instance metadata, Google's, Alibaba's, Azure's WireServer), as IPv4 and
// as IPv6 through the NAT64 prefix.
func TestNetHTTPRefusesMetadataServices(t *testing.T) {
	hosts := []string{"169.254.169.254", "[fd00:ec2::254]", "[fd00:ec2::23]", "[fd20:ce::254]", "100.100.100.200",
		"168.63.129.16", "[64:ff9b::a9fe:a9fe]"}
	h := newHost(t, cached(wasm.Config{}))
	p := newProber(t, h, "look", []map[string]any{{"cap": "net.http", "hosts": hosts, "timeout_ms": 300}})
	for _, host := range hosts {
		a, res := p.run(map[string]any{"cap": "net.http", "url": "http://" + host + "/latest/meta-data/"})
		if a[0].Error == nil || a[0].Error.Code != errcode.CapabilityDenied || !strings.Contains(a[0].Error.Message, "may not reach") {
			t.Errorf("%s: %+v %s", host, a[0], a[0].Result)
		}
		if len(res.Capabilities) != 1 || res.Capabilities[0].Allowed {
			t.Errorf("%s: recorded %+v", host, res.Capabilities)
		}
	}
}
