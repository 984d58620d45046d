package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// serve runs `lexicon-plane serve -o json` with args in process until the test ends, and returns its
// ready line.
func serve(t *testing.T, args ...string) readyLine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, w := io.Pipe()
	stderr := &testkit.Buffer{}
	done := make(chan int, 1)
	go func() {
		code := cli.Run(ctx, "lexicon-plane", "", []*cli.Command{serveCmd()}, append([]string{"serve", "-o", "json"}, args...), w, stderr)
		w.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, stderr.String())
		}
	})
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("serve did not start (exit %d): %v\n%s", <-done, err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	var ready readyLine
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return ready
}

// refused runs `lexicon-plane serve -o json` with args under ctx, which must fail with status and code.
func refused(t *testing.T, ctx context.Context, status int, code string, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	got := cli.Run(ctx, "lexicon-plane", "", []*cli.Command{serveCmd()}, append([]string{"serve", "-o", "json"}, args...), &stdout, &stderr)
	var out struct {
		OK   bool   `json:"ok"`
		Code string `json:"code"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || got != status || out.OK || out.Code != code {
		t.Fatalf("serve %v: exit %d, %s (%v), want exit %d with %s\n%s", args, got, stdout.String(), err, status, code, stderr.String())
	}
}

// writeCert makes a self-signed certificate for 127.0.0.1 and returns its files and DER.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, der []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "operator's plane"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "plane.crt"), filepath.Join(dir, "plane.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, der
}

func TestServeWithTheOperatorsCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, der := writeCert(t, dir)
	data := filepath.Join(dir, "data")
	ready := serve(t, "--listen", "127.0.0.1:0", "--data", data, "--tls-cert", certFile, "--tls-key", keyFile)
	if ready.URL != "https://"+ready.Listen || ready.CA != "" || ready.CAFingerprint != "" {
		t.Fatalf("ready line: %+v", ready)
	}
	if _, err := os.Stat(filepath.Join(data, "tls")); !os.IsNotExist(err) {
		t.Fatalf("a local CA was minted beside the operator's certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(ready.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(resp.TLS.PeerCertificates[0].Raw, der) {
		t.Fatalf("healthz: %d, served %q", resp.StatusCode, resp.TLS.PeerCertificates[0].Subject)
	}
	// Plain HTTP to the TLS port is answered with an error, never served.
	plain, err := http.Get("http://" + ready.Listen + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d", plain.StatusCode)
		}
	}
}

func TestServeRefusals(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeCert(t, dir)
	data := filepath.Join(dir, "data")
	// Under a context already ended, so that a plane that wrongly serves stops at once and the test fails
	// rather than hangs.
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	refused(t, ended, 2, errcode.UsageInvalid, "--listen", "0.0.0.0:0", "--data", data, "--insecure-http")
	refused(t, t.Context(), 2, errcode.UsageInvalid, "--listen", "127.0.0.1:0", "--data", data, "--tls-cert", certFile)
	refused(t, t.Context(), 2, errcode.UsageInvalid, "--listen", "127.0.0.1:0", "--data", data, "--tls-key", keyFile)
	refused(t, t.Context(), 1, errcode.IOFailed, "--listen", "127.0.0.1:0", "--data", data, "--tls-cert", keyFile, "--tls-key", keyFile)
	refused(t, ended, 2, errcode.UsageInvalid, "--listen", "127.0.0.1:0", "--data", data, "--insecure-http", "--memory-alert", "1.5")
	refused(t, ended, 2, errcode.UsageInvalid, "--listen", "127.0.0.1:0", "--data", data, "--insecure-http", "--heartbeat-every", "-1s")
	for _, bad := range []string{"proxy.example", "10.0.0.0/33", "fe80::1%eth0", "::ffff:10.0.0.0/8"} {
		refused(t, ended, 2, errcode.UsageInvalid, "--listen", "127.0.0.1:0", "--data", data, "--insecure-http", "--trusted-proxy", bad)
	}

	// On loopback, plain HTTP is served.
	ready := serve(t, "--listen", "127.0.0.1:0", "--data", data, "--insecure-http", "--trusted-proxy", "127.0.0.1", "--trusted-proxy", "10.0.0.0/8")
	if ready.URL != "http://"+ready.Listen || ready.CA != "" {
		t.Fatalf("ready line: %+v", ready)
	}
	resp, err := http.Get(ready.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz over loopback HTTP: %d", resp.StatusCode)
	}
	// A serving plane is ready: its store answers, its migrations are current, its master key loaded.
	resp, err = http.Get(ready.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz of a serving plane: %d", resp.StatusCode)
	}
}

// TestParseProxy: a --trusted-proxy value is a CIDR (its host bits cleared) or one address; a v4-mapped
// CIDR is its IPv4 one, as connections' addresses are compared unmapped.
func TestParseProxy(t *testing.T) {
	for in, want := range map[string]string{"10.1.2.3/8": "10.0.0.0/8", "192.0.2.7": "192.0.2.7/32", "2001:db8::/32": "2001:db8::/32",
		"::1": "::1/128", "::ffff:192.0.2.0/120": "192.0.2.0/24", "::ffff:192.0.2.7": "192.0.2.7/32"} {
		if p, err := parseProxy(in); err != nil || p.String() != want {
			t.Errorf("%s: %v %v, want %s", in, p, err, want)
		}
	}
}
