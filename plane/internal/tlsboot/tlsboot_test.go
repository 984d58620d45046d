package tlsboot_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/tlsboot"
)

func TestLocalCA(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	id, err := tlsboot.LocalCA(dir, []string{"127.0.0.1", "localhost"}, now)
	if err != nil || !id.Minted || id.CAFingerprint == "" {
		t.Fatalf("first start: %+v %v", id, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "ca.key")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %o", fi.Mode().Perm())
	}
	again, err := tlsboot.LocalCA(dir, []string{"127.0.0.1", "localhost"}, now)
	if err != nil || again.Minted || again.CAFingerprint != id.CAFingerprint {
		t.Fatalf("second start must reuse the CA: %+v %v", again, err)
	}
	if fp, _ := tlsboot.Fingerprint(id.CAPath); fp != id.CAFingerprint {
		t.Fatalf("Fingerprint(%s) = %s, want %s", id.CAPath, fp, id.CAFingerprint)
	}

	// A client that trusts the CA file completes a handshake for the plane's address.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", again.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(id.CAPath)
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("handshake with the local CA: %v", err)
	}
	conn.Close()

	// A new host name renews the server certificate under the same CA.
	renewed, err := tlsboot.LocalCA(dir, []string{"127.0.0.1", "plane.example.test"}, now)
	if err != nil || renewed.CAFingerprint != id.CAFingerprint {
		t.Fatalf("renew: %v", err)
	}
	leaf := renewed.Config.Certificates[0].Leaf
	if err := leaf.VerifyHostname("plane.example.test"); err != nil {
		t.Fatalf("renewed certificate does not cover the new name: %v", err)
	}
}
