// Package wasmtest gives tests outside host/wasm (the words' and recipes' own tests) a plane's
// artifact route to fetch from.
package wasmtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Artifacts is a plane's artifact route for tests: it serves blobs by digest at
// channel.PathArtifact?sha256=<hex> as the plane serves stored artifacts (module.not_found for one it
// does not hold), and counts what it served. It is also a wasm.Fetcher that fetches from itself over
// HTTP, as the agent's channel client does from the plane.
type Artifacts struct {
	URL string

	srv    *httptest.Server
	mu     sync.Mutex
	blobs  map[string][]byte
	served []string
}

// NewArtifacts starts the route; it stops when the test ends.
func NewArtifacts(t testing.TB) *Artifacts {
	t.Helper()
	a := StartArtifacts()
	t.Cleanup(a.Close)
	return a
}

// StartArtifacts starts the route on loopback, for a test's child process that has no testing.TB;
// Close stops it.
func StartArtifacts() *Artifacts {
	a := &Artifacts{blobs: map[string][]byte{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	return a
}

// Close stops the route.
func (a *Artifacts) Close() { a.srv.Close() }

// Put holds data and returns its digest.
func (a *Artifacts) Put(data []byte) string {
	d := cas.Sum(data)
	a.PutAs(d, data)
	return d
}

// PutAs serves data for digest d, whatever data hashes to: a plane serving the wrong bytes.
func (a *Artifacts) PutAs(d string, data []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.blobs[d] = append([]byte(nil), data...)
}

// Served lists the digests served so far, in order.
func (a *Artifacts) Served() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.served...)
}

func (a *Artifacts) serve(w http.ResponseWriter, r *http.Request) {
	d := r.URL.Query().Get("sha256")
	if r.Method != http.MethodGet || r.URL.Path != channel.PathArtifact || !cas.ValidDigest(d) {
		writeErr(w, errcode.New(errcode.RequestMalformed, "ask for sha256=<hex>"))
		return
	}
	a.mu.Lock()
	data, ok := a.blobs[d]
	if ok {
		a.served = append(a.served, d)
	}
	a.mu.Unlock()
	if !ok {
		writeErr(w, errcode.New(errcode.ModuleNotFound, "no artifact %s", d).With(errcode.DetailSHA256, d))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

func writeErr(w http.ResponseWriter, e *errcode.Error) {
	b, _ := e.MarshalJSON()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(errcode.Status(e.Code))
	_, _ = w.Write(b)
}

// Artifact fetches from the route as the agent's client does: at most limit bytes, the route's error
// envelope decoded into its code.
func (a *Artifacts) Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+channel.PathArtifact+"?"+query.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.PlaneUnreachable, "cannot reach the test plane")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.PlaneUnreachable, "the test plane broke off")
	}
	if resp.StatusCode != http.StatusOK {
		if e := errcode.Parse(data); e != nil {
			return nil, e
		}
		return nil, errcode.New(errcode.PlaneUnexpected, "the test plane answered %s", resp.Status)
	}
	if int64(len(data)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "artifact is over %d bytes", limit)
	}
	return data, nil
}
