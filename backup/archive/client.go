package archive

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Client sends the presigned requests of a grant: it needs no credentials and no S3 library, only the
// method, URL and headers the plane signed.
type Client struct {
	http *http.Client
}

// NewClient returns a client verifying TLS servers with roots (nil: the system's). It uses no proxy
// and follows no redirect: a presigned request goes where the plane signed it, or nowhere.
func NewClient(roots *x509.CertPool) *Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       30 * time.Second,
		// Buffers sized for segments of megabytes rather than API calls.
		WriteBufferSize:   256 << 10,
		ReadBufferSize:    256 << 10,
		ForceAttemptHTTP2: false,
	}
	return &Client{http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// CloseIdle closes the connections kept for reuse.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// request builds p's request. The URL is checked here and never appears in an error.
func request(ctx context.Context, p channel.Presigned, body io.Reader, size int64) (*http.Request, error) {
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errcode.New(errcode.BackupGrantInvalid, "the request for %s is not an http(s) URL", p.Key).With(errcode.DetailName, p.Key)
	}
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URL, body)
	if err != nil {
		return nil, errcode.New(errcode.BackupGrantInvalid, "the request for %s cannot be made", p.Key).With(errcode.DetailName, p.Key)
	}
	for k, v := range p.Header {
		if strings.EqualFold(k, "host") {
			continue // the URL's host is the one signed
		}
		req.Header.Set(k, v)
	}
	if body != nil {
		req.ContentLength = size
		// A bucket that refuses the PUT (an existing key, a refused write, a bad signature) can say
		// so before the segment is sent; one that reads a body it will refuse may instead drop the
		// connection, and the node then sees only a reset (backup.target_unreachable).
		req.Header.Set("Expect", "100-continue")
	}
	return req, nil
}

// put sends p with a body of exactly size bytes.
func (c *Client) put(ctx context.Context, p channel.Presigned, body io.Reader, size int64) error {
	if p.Method != http.MethodPut {
		return errcode.New(errcode.BackupGrantInvalid, "the request for %s is a %s, not a PUT", p.Key, p.Method).With(errcode.DetailName, p.Key)
	}
	req, err := request(ctx, p, body, size)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(ctx, p.Key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	return statusError(p.Key, resp)
}

// get sends p and returns the body of a 2xx answer and its length (-1 when not said).
func (c *Client) get(ctx context.Context, p channel.Presigned) (io.ReadCloser, int64, error) {
	if p.Method != http.MethodGet {
		return nil, 0, errcode.New(errcode.BackupGrantInvalid, "the request for %s is a %s, not a GET", p.Key, p.Method).With(errcode.DetailName, p.Key)
	}
	req, err := request(ctx, p, nil, 0)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, transportError(ctx, p.Key, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, 0, statusError(p.Key, resp)
	}
	return resp.Body, resp.ContentLength, nil
}

// transportError is a request that got no answer. net/http's errors quote the URL, and with it the
// signature: only the cause is kept.
func transportError(ctx context.Context, key string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctx.Err() != nil {
		return errcode.Wrap(ctx.Err(), errcode.CapabilityTimeout, "%s: stopped before the bucket answered", key).With(errcode.DetailName, key)
	}
	return errcode.Wrap(err, errcode.BackupTargetUnreachable, "%s: the bucket cannot be reached", key).With(errcode.DetailName, key)
}

// s3Error is the body of an S3 error answer.
type s3Error struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// statusError maps an S3 error answer to a code.
func statusError(key string, resp *http.Response) error {
	var e s3Error
	_ = xml.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	msg := e.Message
	if msg == "" {
		msg = resp.Status
	}
	code := errcode.BackupTargetRefused
	switch {
	case e.Code == "SignatureDoesNotMatch" || e.Code == "InvalidAccessKeyId" || e.Code == "AuthorizationHeaderMalformed" ||
		e.Code == "InvalidToken" || e.Code == "AuthorizationQueryParametersError":
		code = errcode.BackupCredentialsInvalid
	case strings.Contains(strings.ToLower(msg), "expired"):
		code = errcode.BackupGrantInvalid
	case resp.StatusCode == http.StatusPreconditionFailed || e.Code == "PreconditionFailed":
		code = errcode.BackupObjectExists
	case e.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && e.Code == "":
		code = errcode.BackupObjectMissing
	case resp.StatusCode >= 500:
		code = errcode.BackupTargetUnreachable
	}
	err := errcode.New(code, "%s: the bucket answered %d %s: %s", key, resp.StatusCode, e.Code, msg).
		With(errcode.DetailName, key).With(errcode.DetailHTTPStatus, resp.StatusCode)
	if e.Code != "" {
		err = err.With(errcode.DetailProviderCode, e.Code)
	}
	return err
}
