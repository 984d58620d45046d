package caps

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"strconv"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func tlsPeer(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.TLSPeer
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Host == "" {
		return nil, invalid("host", "tls.peer needs a host")
	}
	port := req.Port
	if port == 0 {
		port = 443
	}
	if port < 1 || port > 65535 {
		return nil, invalid("port", "port %d is not a port", port)
	}
	hp := net.JoinHostPort(req.Host, strconv.Itoa(port))
	if !w.allowedHost(c, req.Host, port, 443) {
		return nil, denied(c.Cap, "%s is not a declared host", hp).With(errcode.DetailHost, hp)
	}
	sn := req.ServerName
	if sn == "" {
		sn = req.Host
	} else if !w.allowedHost(c, sn, port, 443) {
		return nil, denied(c.Cap, "server name %s is not a declared host", sn).With(errcode.DetailHost, sn)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout(c, req.TimeoutMS))
	defer cancel()
	addrs, err := lookup(ctx, c.Cap, req.Host)
	if err != nil {
		return nil, err
	}
	conn, err := dialChecked(ctx, addrs, port)
	if err != nil {
		return nil, netError(c.Cap, hp, err, ctx)
	}
	defer conn.Close()
	if ip := net.ParseIP(sn); ip != nil {
		sn = "" // SNI carries names only
	}
	// Unverified on purpose: the point is to see an expired, self-signed or wrong chain, not to trust it.
	tc := tls.Client(conn, &tls.Config{ServerName: sn, InsecureSkipVerify: true, MinVersion: tls.VersionTLS10})
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, netError(c.Cap, hp, err, ctx)
	}
	st := tc.ConnectionState()
	out := capv1.TLSPeerResult{Version: tls.VersionName(st.Version), RemoteAddr: conn.RemoteAddr().String(), Chain: []capv1.Certificate{}}
	for _, cert := range st.PeerCertificates {
		out.Chain = append(out.Chain, certificate(cert))
	}
	return out, nil
}

func certificate(c *x509.Certificate) capv1.Certificate {
	sum := sha256.Sum256(c.Raw)
	out := capv1.Certificate{
		Subject: c.Subject.String(), Issuer: c.Issuer.String(),
		DNSNames: append([]string{}, c.DNSNames...), IPAddresses: []string{},
		NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC(),
		Serial: c.SerialNumber.Text(16), IsCA: c.IsCA, SHA256: hex.EncodeToString(sum[:]),
	}
	for _, ip := range c.IPAddresses {
		out.IPAddresses = append(out.IPAddresses, ip.String())
	}
	// Signed by its own key: CheckSignatureFrom would also demand CA constraints a self-signed leaf lacks.
	out.SelfSigned = string(c.RawIssuer) == string(c.RawSubject) &&
		c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
	return out
}
