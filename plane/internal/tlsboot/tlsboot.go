// Package tlsboot gives the plane its TLS identity: the operator's certificate, or a local CA minted on
// first start whose fingerprint an admin hands to agents.
package tlsboot

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Files of a local CA, in the plane's data folder.
const (
	CAFile     = "ca.crt"
	caKeyFile  = "ca.key"
	certFile   = "server.crt"
	keyFile    = "server.key"
	renewAhead = 30 * 24 * time.Hour
)

// Identity is the plane's TLS configuration and, for a local CA, what agents need to trust it.
type Identity struct {
	Config        *tls.Config
	CAPath        string // empty when the operator supplied the certificate
	CAFingerprint string // SHA-256 of the CA certificate, hex with colons
	Minted        bool   // a new CA was made on this start
}

// FromFiles loads the operator's certificate and key.
func FromFiles(cert, key string) (*Identity, error) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot load TLS certificate %s and key %s", cert, key)
	}
	return &Identity{Config: serverConfig(pair)}, nil
}

// LocalCA loads or mints a CA in dir and a server certificate it signs for hosts. The server
// certificate is renewed when it nears expiry or does not cover every host.
func LocalCA(dir string, hosts []string, now time.Time) (*Identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", dir)
	}
	id := &Identity{CAPath: filepath.Join(dir, CAFile)}
	caCert, caKey, err := loadPair(dir, CAFile, caKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		caCert, caKey, err = mint(dir, CAFile, caKeyFile, nil, nil, nil, now, 10*365*24*time.Hour)
		id.Minted = true
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(caCert.Raw)
	id.CAFingerprint = colonHex(sum[:])

	srv, srvKey, err := loadPair(dir, certFile, keyFile)
	if err != nil || id.Minted || now.Add(renewAhead).After(srv.NotAfter) || !covers(srv, hosts) || srv.CheckSignatureFrom(caCert) != nil {
		srv, srvKey, err = mint(dir, certFile, keyFile, hosts, caCert, caKey, now, 365*24*time.Hour)
		if err != nil {
			return nil, err
		}
	}
	pair := tls.Certificate{Certificate: [][]byte{srv.Raw, caCert.Raw}, PrivateKey: srvKey, Leaf: srv}
	id.Config = serverConfig(pair)
	return id, nil
}

func serverConfig(pair tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func colonHex(b []byte) string {
	h := strings.ToUpper(hex.EncodeToString(b))
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// Fingerprint is the SHA-256 of a PEM certificate file, as LocalCA prints it.
func Fingerprint(pemFile string) (string, error) {
	data, err := os.ReadFile(pemFile)
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read %s", pemFile)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return "", errcode.New(errcode.KeyMalformed, "%s holds no PEM certificate", pemFile)
	}
	sum := sha256.Sum256(block.Bytes)
	return colonHex(sum[:]), nil
}

func covers(c *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(c.DNSNames, h) {
			return false
		}
	}
	return true
}

func loadPair(dir, certName, keyName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, certName))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := keys.ReadPrivate(filepath.Join(dir, keyName))
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errcode.New(errcode.KeyMalformed, "%s or %s in %s is not PEM", certName, keyName, dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.KeyMalformed, "%s is not a certificate", certName)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.KeyMalformed, "%s is not an EC private key", keyName)
	}
	return cert, key, nil
}

// mint makes a key and certificate: a CA when parent is nil, else a server certificate for hosts.
func mint(dir, certName, keyName string, hosts []string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, now time.Time, life time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.IOFailed, "cannot make a key")
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(life),
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.Subject = pkix.Name{CommonName: "Lexicon plane local CA"}
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.MaxPathLenZero = true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	} else {
		tmpl.Subject = pkix.Name{CommonName: "lexicon-plane"}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.IOFailed, "cannot sign %s", certName)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.IOFailed, "cannot encode %s", keyName)
	}
	keyPath := filepath.Join(dir, keyName)
	_ = os.Remove(keyPath)
	if err := keys.WritePrivate(keyPath, strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", certName)
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}
