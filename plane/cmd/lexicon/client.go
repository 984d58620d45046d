package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"io"
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
}

func (c *conn) client() (*client, error) {
	if c.plane == "" {
		return nil, errcode.New(errcode.UsageInvalid, "name the plane with --plane URL or LEXICON_PLANE")
	}
	token := os.Getenv("LEXICON_TOKEN")
	if c.tokenFile != "" {
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read token file %s", c.tokenFile)
		}
		token = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
	}
	if token == "" {
		return nil, errcode.New(errcode.UsageInvalid, "give a token with --token-file F, LEXICON_TOKEN_FILE or LEXICON_TOKEN (make one with lexicon-plane token create)")
	}
	hc, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	return &client{base: strings.TrimRight(c.plane, "/"), token: token, http: hc}, nil
}

// httpClient reaches the plane, trusting --ca when it is given.
func (c *conn) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.ca != "" {
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read CA %s", c.ca)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errcode.New(errcode.KeyMalformed, "%s holds no PEM certificate", c.ca)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Minute}, nil
}

// do sends a request and decodes a JSON answer into out; an error envelope becomes a coded error.
func (c *client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+api.Prefix+path, body)
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "bad plane URL %s", c.base)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return errcode.Wrap(err, errcode.PlaneUnreachable, "cannot reach the plane at %s", c.base)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return errcode.Wrap(err, errcode.PlaneUnreachable, "reading the plane's answer")
	}
	if resp.StatusCode >= 300 {
		if e := errcode.Parse(data); e != nil {
			return e
		}
		return errcode.New(errcode.PlaneUnexpected, "the plane answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errcode.Wrap(err, errcode.PlaneUnexpected, "the plane's answer is not the JSON expected")
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
