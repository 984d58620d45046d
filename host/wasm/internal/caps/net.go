package caps

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Network capabilities connect only to a declared host (or one of the node's own names for "@self").
// The name is resolved once, here; addresses no word may reach (unspecified, multicast, link-local such
// as the cloud metadata service at 169.254.169.254, and the clouds' metadata services elsewhere) are
// dropped; and the connection goes to exactly the
// addresses checked, so a DNS answer that changes between check and connect (rebinding) changes
// nothing. No proxy is used and redirects are not followed.

// allowedHost reports whether host:port is declared. A declared name without a port allows only the
// scheme's default port.
func (w *Word) allowedHost(c manifest.Capability, host string, port, defaultPort int) bool {
	for _, d := range c.Hosts {
		if d == manifest.SelfHost {
			for _, s := range w.env.Self {
				if matchHost(s, host, port, defaultPort) {
					return true
				}
			}
			continue
		}
		if matchHost(d, host, port, defaultPort) {
			return true
		}
	}
	return false
}

func matchHost(decl, host string, port, defaultPort int) bool {
	dh, dp, err := net.SplitHostPort(decl)
	if err != nil {
		dh, dp = decl, ""
	}
	if !sameHost(dh, host) {
		return false
	}
	if dp == "" {
		return port == defaultPort
	}
	return dp == strconv.Itoa(port)
}

func sameHost(a, b string) bool {
	a = strings.TrimSuffix(strings.ToLower(strings.Trim(a, "[]")), ".")
	b = strings.TrimSuffix(strings.ToLower(strings.Trim(b, "[]")), ".")
	if ia, err := netip.ParseAddr(a); err == nil {
		ib, err := netip.ParseAddr(b)
		return err == nil && ia.Unmap() == ib.Unmap()
	}
	return a != "" && a == b
}

// metadataAddrs are cloud metadata and credential services at addresses that are not link-local, so
// the link-local rule misses them: each answers an instance's credentials to whoever on the machine
// asks. The link-local ones (169.254.169.254 of most clouds, AWS's 169.254.170.2 and 169.254.170.23,
// Tencent's 169.254.0.23, Scaleway's 169.254.42.42) need no entry.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS instance metadata, IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity agent, IPv6
	netip.MustParseAddr("fd20:ce::254"),    // Google Compute Engine metadata, IPv6
	netip.MustParseAddr("fd00:42::42"),     // Scaleway metadata, IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud metadata (shared address space)
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (VM agent and extension settings)
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud Classic metadata
}

// nat64 is the well-known NAT64 prefix (RFC 6052): an address in it reaches the IPv4 address in its
// last four bytes through the network's translator.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// reachable reports whether a word may connect to ip.
func reachable(ip netip.Addr) bool {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	return ip.IsValid() && !ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsLinkLocalUnicast() &&
		!ip.IsLinkLocalMulticast() && !ip.IsInterfaceLocalMulticast() && !slices.Contains(metadataAddrs, ip)
}

// lookup resolves host to the addresses a word may reach.
func lookup(ctx context.Context, cap, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		found, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "%s: cannot resolve %s", cap, host).With(errcode.DetailHost, host)
		}
		addrs = found
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if reachable(a) {
			ok = append(ok, a.Unmap())
		}
	}
	if len(ok) == 0 {
		return nil, denied(cap, "%s resolves only to addresses words may not reach", host).With(errcode.DetailHost, host)
	}
	return ok, nil
}

// dialChecked connects to the first of addrs that answers.
func dialChecked(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, error) {
	var d net.Dialer
	var first error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// forbiddenHeaders are request headers a word may not set: they belong to the connection.
var forbiddenHeaders = map[string]bool{
	"Host": true, "Connection": true, "Content-Length": true, "Transfer-Encoding": true, "Te": true,
	"Upgrade": true, "Proxy-Authorization": true, "Proxy-Connection": true, "Keep-Alive": true, "Trailer": true,
}

func netHTTP(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.HTTPRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet && method != http.MethodHead {
		return nil, invalid("method", "net.http sends GET or HEAD, not %q", req.Method)
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return nil, invalid("url", "url must be http(s)://host[:port]/path without credentials")
	}
	defaultPort := 80
	if u.Scheme == "https" {
		defaultPort = 443
	}
	host, port := u.Hostname(), defaultPort
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, invalid("url", "port %q is not a port", p)
		}
	}
	if !w.allowedHost(c, host, port, defaultPort) {
		return nil, denied(c.Cap, "%s is not a declared host", net.JoinHostPort(host, strconv.Itoa(port))).
			With(errcode.DetailHost, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	if len(req.Headers) > 32 {
		return nil, invalid("headers", "at most 32 headers")
	}
	hdr := http.Header{}
	for k, v := range req.Headers {
		ck := http.CanonicalHeaderKey(k)
		if forbiddenHeaders[ck] || strings.HasPrefix(ck, "Proxy-") || strings.ContainsAny(v, "\r\n") {
			return nil, invalid("headers", "header %q may not be set by a word", k)
		}
		hdr.Set(ck, v)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout(c, req.TimeoutMS))
	defer cancel()

	var tm capv1.Timing
	start := time.Now()
	ms := func(since time.Time) float64 { return float64(time.Since(since).Microseconds()) / 1000 }
	addrs, err := lookup(ctx, c.Cap, host)
	if err != nil {
		return nil, err
	}
	tm.DNSMS = ms(start)
	var remote string
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			t := time.Now()
			conn, err := dialChecked(ctx, addrs, port)
			tm.ConnectMS = ms(t)
			if conn != nil {
				remote = conn.RemoteAddr().String()
			}
			return conn, err
		},
		TLSClientConfig:        &tls.Config{ServerName: host, RootCAs: w.env.RootCAs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var tlsStart time.Time
	trace := &httptrace.ClientTrace{
		TLSHandshakeStart:    func() { tlsStart = time.Now() },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { tm.TLSMS = ms(tlsStart) },
		GotFirstResponseByte: func() { tm.FirstByteMS = ms(start) },
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, u.String(), nil)
	if err != nil {
		return nil, invalid("url", "cannot build the request: %v", err)
	}
	hreq.Header = hdr
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, netError(c.Cap, host, err, ctx)
	}
	defer resp.Body.Close()
	limit := maxBytes(c)
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil && ctx.Err() != nil {
		return nil, netError(c.Cap, host, err, ctx)
	}
	out := capv1.HTTPResponse{Status: resp.StatusCode, Proto: resp.Proto, Headers: map[string]string{}, RemoteAddr: remote}
	if int64(len(body)) > limit {
		body, out.Truncated = body[:limit], true
	}
	out.Body = body
	for k, v := range resp.Header {
		if len(out.Headers) < 64 && len(v) > 0 {
			out.Headers[k] = truncate(v[0], 1024)
		}
	}
	tm.TotalMS = ms(start)
	out.Timing = tm
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func netError(cap, host string, err error, ctx context.Context) error {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return errcode.Wrap(err, errcode.CapabilityTimeout, "%s: %s did not answer in time", cap, host).With(errcode.DetailHost, host)
	}
	return errcode.Wrap(err, errcode.CapabilityFailed, "%s: %s: %v", cap, host, err).With(errcode.DetailHost, host)
}
