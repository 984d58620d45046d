package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// conn holds the flags every command uses to reach the plane.
type conn struct {
	plane, tokenFile, ca string
}

func (c *conn) setup(fs *flag.FlagSet) {
	fs.StringVar(&c.plane, "plane", os.Getenv("LEXICON_PLANE"), "plane URL (env LEXICON_PLANE)")
	fs.StringVar(&c.tokenFile, "token-file", os.Getenv("LEXICON_TOKEN_FILE"), "file holding an admin token (env LEXICON_TOKEN_FILE; or LEXICON_TOKEN)")
	fs.StringVar(&c.ca, "ca", os.Getenv("LEXICON_CA"), "CA certificate of the plane (env LEXICON_CA); default: the system's")
}

// client is an admin API client.
type client struct {
	base  string
	token string
	http  *http.Client
	// tokenFrom and caFrom say where the token and the CA came from, for the errors that blame them.
	tokenFrom, caFrom string
}

func (c *conn) client() (*client, error) {
	if c.plane == "" {
		return nil, errcode.New(errcode.UsageInvalid, "name the plane with --plane URL or LEXICON_PLANE")
	}
	if err := checkPlaneURL(c.plane); err != nil {
		return nil, err
	}
	token, tokenFrom := os.Getenv("LEXICON_TOKEN"), "in LEXICON_TOKEN"
	if c.tokenFile != "" {
		tokenFrom = "in " + c.tokenFile
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read token file %s", c.tokenFile)
		}
		token = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
	}
	hc, caFrom, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	if token == "" {
		// No token given: the session lexicon login kept for this plane, if any.
		tokenFrom = "of lexicon login's session"
		if token, err = sessionToken(context.Background(), trimSlash(c.plane), hc); err != nil {
			return nil, err
		}
	}
	if token == "" {
		return nil, errcode.New(errcode.UsageInvalid, "give a token with --token-file F, LEXICON_TOKEN_FILE or LEXICON_TOKEN (make one with lexicon-plane token create), or sign in with lexicon login")
	}
	return &client{base: trimSlash(c.plane), token: token, http: hc, tokenFrom: tokenFrom, caFrom: caFrom}, nil
}

// httpClient reaches the plane, trusting --ca when it is given; caFrom names the CAs it trusts, for
// the errors that blame them.
func (c *conn) httpClient() (hc *http.Client, caFrom string, err error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	caFrom = "the system's CAs (give the plane's with --ca or LEXICON_CA; lexicon-plane serve prints its path)"
	if c.ca != "" {
		caFrom = "the CA in " + c.ca
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return nil, "", errcode.Wrap(err, errcode.IOFailed, "cannot read CA %s", c.ca)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", errcode.New(errcode.KeyMalformed, "%s holds no PEM certificate", c.ca)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}, caFrom, nil
}

// checkPlaneURL refuses a plane URL the CLI must not send a token to: the plane speaks HTTPS, and
// plain HTTP only on a loopback address (lexicon-plane serve --insecure-http), where the token does
// not cross a network.
func checkPlaneURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http" {
		return errcode.New(errcode.UsageInvalid, "the plane URL %q is not https://HOST[:PORT]", raw)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return errcode.New(errcode.UsageInvalid, "the plane speaks HTTPS: use https://%s (plain HTTP is served only on a loopback address, and a token is never sent in the clear)", u.Host)
	}
	return nil
}

func trimSlash(plane string) string { return strings.TrimRight(plane, "/") }

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// reachError says why a request got no answer. A certificate that did not verify is told apart from
// a plane that is down, naming the CA it was checked against: the fix is another --ca, or another
// name for the plane, not a retry.
func (c *client) reachError(err error) error {
	var cv *tls.CertificateVerificationError
	if !errors.As(err, &cv) {
		return errcode.Wrap(err, errcode.PlaneUnreachable, "cannot reach the plane at %s", c.base)
	}
	var host x509.HostnameError
	if errors.As(err, &host) {
		return errcode.Wrap(err, errcode.PlaneUntrusted, "the plane's certificate is not for the host in %s: reach the plane by a name its certificate holds, or serve one for this name (lexicon-plane serve --tls-names)", c.base)
	}
	var authority x509.UnknownAuthorityError
	if errors.As(err, &authority) {
		return errcode.Wrap(err, errcode.PlaneUntrusted, "the certificate of the plane at %s did not verify against %s: another CA signed it", c.base, c.caFrom)
	}
	return errcode.Wrap(err, errcode.PlaneUntrusted, "the certificate of the plane at %s did not verify against %s", c.base, c.caFrom)
}

// do sends a request and decodes a JSON answer into out; an error envelope becomes a coded error.
func (c *client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	return c.doAt(ctx, method, c.base+api.Prefix+path, body, contentType, out)
}

// get reads a path of the plane outside the admin API (one that takes no token).
func (c *client) get(ctx context.Context, path string, out any) error {
	return c.doAt(ctx, http.MethodGet, c.base+path, nil, "", out)
}

func (c *client) doAt(ctx context.Context, method, target string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "bad plane URL %s", c.base)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.reachError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return errcode.Wrap(err, errcode.PlaneUnreachable, "reading the plane's answer")
	}
	if resp.StatusCode >= 300 {
		e := errcode.Parse(data)
		switch {
		case e != nil && e.Code == errcode.AuthRequired:
			// The CLI sends a token on every request, so the plane's "send a token" means it refused
			// the one sent.
			refused := errcode.New(errcode.AuthRequired, "the plane refused the token %s: it is unknown, revoked or not a Lexicon admin token; make one with lexicon-plane token create", c.tokenFrom)
			refused.Details = e.Details
			return refused
		case e != nil:
			return e
		case resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(c.base, "http:") && bytes.Contains(data, []byte("HTTP request to an HTTPS server")):
			return errcode.New(errcode.UsageInvalid, "the plane at %s speaks HTTPS: use %s", c.base, "https:"+strings.TrimPrefix(c.base, "http:"))
		}
		return errcode.New(errcode.PlaneUnexpected, "the plane answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		// Told in JSON's words: the Go types this CLI decodes into mean nothing to its user.
		return errcode.New(errcode.PlaneUnexpected, "the plane's answer is not the JSON this CLI expects (is it another version?): %s", jsonProblem("the answer", data, err))
	}
	return nil
}

// call sends a request to one route of the admin API: params fill the route's {name} segments in
// order, query is its query (nil for none), and in, when not nil, is the JSON body.
func (c *client) call(ctx context.Context, rt api.Route, params []string, query url.Values, in, out any) error {
	path, err := rt.Path(params...)
	if err != nil {
		return errcode.Wrap(err, errcode.InternalError, "the CLI built a wrong request")
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var body io.Reader
	contentType := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return errcode.Wrap(err, errcode.InternalError, "cannot encode the request")
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	return c.do(ctx, rt.Method, path, body, contentType, out)
}

func short(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
