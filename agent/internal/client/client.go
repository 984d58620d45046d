// Package client is the agent's side of the channel: outbound HTTPS to the plane, every request after
// join signed with the node key, answers decoded from the channel's wire types.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Client talks to one plane.
type Client struct {
	base   string
	signed *http.Client
	plain  *http.Client
	pause  func(context.Context, time.Duration) error // between an artifact's tries: waitFor
}

// New makes a client for the plane at base, trusting caFile (or the system roots when empty), signing
// with key.
func New(base, caFile string, key keys.NodePrivate) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errcode.New(errcode.UsageInvalid, "plane URL %q must be https://host[:port]", base)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read the plane's CA %s", caFile)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errcode.New(errcode.KeyMalformed, "%s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		base:  strings.TrimRight(base, "/"),
		pause: waitFor,
		plain: &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: noRedirect},
	}
	if !key.IsZero() {
		c.signed = &http.Client{
			Transport:     httpsig.NewSigner(key, nil).Transport(tr),
			Timeout:       channel.ClaimWait + 35*time.Second, // a claim is held up to ClaimWait
			CheckRedirect: noRedirect,
		}
	}
	return c, nil
}

// Join asks to pair; it is the one unsigned request.
func (c *Client) Join(ctx context.Context, req channel.JoinRequest) (channel.JoinResponse, error) {
	var out channel.JoinResponse
	return out, c.post(ctx, c.plain, channel.PathJoin, req, &out)
}

// JoinStatus asks how the join stands, signed by the key that asked.
func (c *Client) JoinStatus(ctx context.Context, joinID string) (channel.JoinStatusResponse, error) {
	var out channel.JoinStatusResponse
	return out, c.post(ctx, c.signed, channel.PathJoinStatus, channel.JoinStatusRequest{JoinID: joinID}, &out)
}

// Claim long-polls for a job.
func (c *Client) Claim(ctx context.Context, req channel.ClaimRequest) (channel.ClaimResponse, error) {
	var out channel.ClaimResponse
	return out, c.post(ctx, c.signed, channel.PathClaim, req, &out)
}

// Result reports how a job ended.
func (c *Client) Result(ctx context.Context, req channel.ResultRequest) (channel.ResultResponse, error) {
	var out channel.ResultResponse
	return out, c.post(ctx, c.signed, channel.PathResult, req, &out)
}

// JobStatus asks the plane the state of a job it handed to this node.
func (c *Client) JobStatus(ctx context.Context, jobID string) (channel.JobStatusResponse, error) {
	var out channel.JobStatusResponse
	return out, c.post(ctx, c.signed, channel.PathJobStatus, channel.JobStatusRequest{JobID: jobID}, &out)
}

// Leave sends the node's one signed goodbye.
func (c *Client) Leave(ctx context.Context, reason string) (channel.LeaveResponse, error) {
	var out channel.LeaveResponse
	return out, c.post(ctx, c.signed, channel.PathLeave, channel.LeaveRequest{Reason: reason}, &out)
}

// Artifact fetches the current statement (statement=current), a module (sha256=<hex>) or an agent
// binary, reading at most limit bytes.
//
// A fetch the plane could not answer now is asked again, for up to maxArtifactWait of waiting in all
// and within ctx (a job's budget): while the plane is unreachable or unavailable (a plane restarting:
// an upgrade, a replica replaced), backing off from 250 ms to 5 s; and when it is rate limited, as long
// as it asks. A restart would otherwise fail a converge midway, and a new node, whose manifests and
// modules are about 50 requests against a burst of 40, would leave a refused module out of its
// vocabulary until the next statement. A GET by digest is safe to ask again, and each try is signed
// anew. Any other answer is final.
func (c *Client) Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error) {
	var waited time.Duration
	backoff := 250 * time.Millisecond
	for {
		data, err := c.artifact(ctx, query, limit)
		wait, limited, ok := retryAfter(err, backoff)
		if !ok || waited+wait > maxArtifactWait {
			return data, err
		}
		if c.pause(ctx, wait) != nil {
			return nil, err
		}
		waited += wait
		if !limited {
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// maxArtifactWait bounds what one artifact fetch spends waiting to ask again.
const maxArtifactWait = time.Minute

// retryAfter is how long to wait before asking again after err: the plane's own wait when it rate
// limited the fetch (limited; at least 10 ms), backoff when it was away. ok is false for any other
// outcome.
func retryAfter(err error, backoff time.Duration) (wait time.Duration, limited, ok bool) {
	var e *errcode.Error
	if !errors.As(err, &e) {
		return 0, false, false
	}
	switch {
	case e.Code == errcode.RequestRateLimited:
		ms, _ := e.Details[errcode.DetailRetryAfterMS].(float64)
		return max(time.Duration(ms)*time.Millisecond, 10*time.Millisecond), true, true
	case e.Code == errcode.PlaneUnreachable || errcode.Status(e.Code) == http.StatusServiceUnavailable:
		return backoff, false, true
	}
	return 0, false, false
}

// waitFor waits d, or returns ctx's error.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+channel.PathArtifact+"?"+query.Encode(), nil)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.UsageInvalid, "bad artifact request")
	}
	resp, err := c.signed.Do(req)
	if err != nil {
		return nil, unreachable(err, c.base)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, unreachable(err, c.base)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, answerError(resp, data)
	}
	if int64(len(data)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "artifact is over %d bytes", limit)
	}
	return data, nil
}

func (c *Client) post(ctx context.Context, hc *http.Client, path string, in, out any) error {
	if hc == nil {
		return errcode.New(errcode.AgentNotJoined, "no node key to sign with")
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "bad request to %s", path)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return unreachable(err, c.base)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return unreachable(err, c.base)
	}
	if resp.StatusCode >= 300 {
		return answerError(resp, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return errcode.Wrap(err, errcode.PlaneUnexpected, "the plane's answer to %s is not the JSON expected", path)
	}
	return nil
}

func unreachable(err error, base string) error {
	return errcode.Wrap(err, errcode.PlaneUnreachable, "cannot reach the plane at %s", base)
}

func answerError(resp *http.Response, data []byte) error {
	if e := errcode.Parse(data); e != nil {
		return e
	}
	return errcode.New(errcode.PlaneUnexpected, "the plane answered %s", resp.Status)
}
