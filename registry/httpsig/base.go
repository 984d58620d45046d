package httpsig

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// message is what a signature covers, seen the same way by the signer and the verifier. Both build it
// from their own view of the request (the signer from the URL it dials, the verifier from the request
// line and its external base URL) and normalise it the same way, so a proxy's rewriting of what Go
// keeps in r.URL cannot make them disagree.
type message struct {
	method    string
	scheme    string // lowercase
	authority string // lowercase host, default port removed (RFC 9110 section 4.2.3)
	pathQuery string // request-target in origin form: path, and '?' query when present
	header    http.Header
}

// targetURI is RFC 9421's @target-uri: the absolute target URI of RFC 9110 section 7.1.
func (m *message) targetURI() string { return m.scheme + "://" + m.authority + m.pathQuery }

// componentValue derives one covered component (RFC 9421 section 2). Names arrive already checked to
// carry no parameters. Only the derived components the tests and the channel use are known; any other
// "@" name is refused rather than guessed.
func (m *message) componentValue(name string) (string, error) {
	switch name {
	case "@method":
		return m.method, nil
	case "@target-uri":
		return m.targetURI(), nil
	case "@authority":
		return m.authority, nil
	case "@scheme":
		return m.scheme, nil
	case "@path":
		p, _, _ := strings.Cut(m.pathQuery, "?")
		if p == "" {
			p = "/"
		}
		return p, nil
	case "@query":
		_, q, _ := strings.Cut(m.pathQuery, "?")
		return "?" + q, nil
	}
	if strings.HasPrefix(name, "@") {
		return "", fmt.Errorf("derived component %q is not supported", name)
	}
	if name == "" || strings.ToLower(name) != name {
		return "", fmt.Errorf("field name %q is not lowercase", name)
	}
	vals := m.header.Values(name)
	if len(vals) == 0 {
		return "", fmt.Errorf("covered field %q is not in the message", name)
	}
	// RFC 9421 section 2.1: each field line's value trimmed of OWS, lines joined by ", ".
	trimmed := make([]string, len(vals))
	for i, v := range vals {
		trimmed[i] = strings.Trim(v, " \t")
		if strings.ContainsAny(trimmed[i], "\r\n") {
			return "", fmt.Errorf("covered field %q holds a line break", name)
		}
	}
	return strings.Join(trimmed, ", "), nil
}

// signatureBase builds RFC 9421 section 2.5's signature base for the components il names, with il
// itself (its items and parameters) as @signature-params.
func signatureBase(m *message, il innerList) ([]byte, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, it := range il.items {
		name, ok := it.val.(string)
		if !ok {
			return nil, fmt.Errorf("component identifier is not a string")
		}
		if len(it.params) > 0 {
			return nil, fmt.Errorf("component %q has parameters; none are supported", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("component %q is covered twice", name)
		}
		seen[name] = true
		v, err := m.componentValue(name)
		if err != nil {
			return nil, err
		}
		if err := serializeBare(&b, name); err != nil {
			return nil, err
		}
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	b.WriteString(`"@signature-params": `)
	if err := serializeInnerList(&b, il); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// normalizeAuthority lowercases the host and drops the scheme's default port, as RFC 9110 section
// 4.2.3 normalises an http(s) authority. Userinfo is never part of a request's authority and is
// refused.
func normalizeAuthority(scheme, authority string) (string, error) {
	if authority == "" {
		return "", fmt.Errorf("request has no authority")
	}
	if strings.ContainsAny(authority, "@ \t\r\n/?#") {
		return "", fmt.Errorf("authority %q is malformed", authority)
	}
	for i := 0; i < len(authority); i++ {
		if authority[i] >= 0x80 {
			return "", fmt.Errorf("authority %q is not ASCII (use its punycode form)", authority)
		}
	}
	a := strings.ToLower(authority)
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// No port (or an IPv6 literal without one): keep as given.
		return a, nil
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		if strings.Contains(host, ":") {
			return "[" + host + "]", nil
		}
		return host, nil
	}
	return a, nil
}

// clientMessage is the message a client request will put on the wire: Go's transport sends
// req.URL.RequestURI() as the request target and req.Host (or the URL's host) as the authority.
func clientMessage(req *http.Request) (*message, error) {
	if req.URL == nil {
		return nil, fmt.Errorf("request has no URL")
	}
	scheme := strings.ToLower(req.URL.Scheme)
	if scheme != "https" && scheme != "http" {
		return nil, fmt.Errorf("scheme %q is not http or https", req.URL.Scheme)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	authority, err := normalizeAuthority(scheme, host)
	if err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	return &message{method: method, scheme: scheme, authority: authority, pathQuery: req.URL.RequestURI(), header: req.Header}, nil
}

// serverMessage is the message as the server received it. The scheme and authority come from base
// when it is set (the plane's external URL, for a plane behind a proxy or load balancer) and otherwise
// from the connection (TLS or not) and the Host the client sent. The path and query are the request
// line as received (r.RequestURI), never r.URL, which handlers such as http.StripPrefix rewrite.
func serverMessage(r *http.Request, base *url.URL) (*message, error) {
	var scheme, host, prefix string
	if base != nil {
		scheme, host = strings.ToLower(base.Scheme), base.Host
		prefix = strings.TrimSuffix(base.EscapedPath(), "/")
	} else {
		scheme, host = "http", r.Host
		if r.TLS != nil {
			scheme = "https"
		}
	}
	if scheme != "https" && scheme != "http" {
		return nil, fmt.Errorf("scheme %q is not http or https", scheme)
	}
	authority, err := normalizeAuthority(scheme, host)
	if err != nil {
		return nil, err
	}
	pq := r.RequestURI
	switch {
	case pq == "":
		// A request built in process (not read from a connection) has no request line.
		if r.URL == nil {
			return nil, fmt.Errorf("request has no URL")
		}
		pq = r.URL.RequestURI()
	case strings.HasPrefix(pq, "/"):
	default:
		// Absolute form (RFC 9112 section 3.2.2): keep its path and query; its authority is r.Host,
		// which net/http already set from it. Asterisk and authority forms carry no path to sign.
		u, err := url.ParseRequestURI(pq)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("request target %q is not in origin or absolute form", pq)
		}
		pq = u.RequestURI()
	}
	return &message{method: r.Method, scheme: scheme, authority: authority, pathQuery: prefix + pq, header: r.Header}, nil
}
