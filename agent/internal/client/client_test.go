package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// plane answers its first refusals artifact requests with refusal, then serves "module bytes". A nil
// refusal closes the connection instead: the plane is unreachable.
func plane(t *testing.T, refusals int64, refusal *errcode.Error) (*Client, *atomic.Int64, *[]time.Duration) {
	t.Helper()
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != channel.PathArtifact || r.Header.Get("Signature") == "" {
			http.Error(w, "unsigned or elsewhere", http.StatusBadRequest)
			return
		}
		if asked.Add(1) > refusals {
			_, _ = w.Write([]byte("module bytes"))
			return
		}
		if refusal == nil {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(errcode.Status(refusal.Code))
		_ = json.NewEncoder(w).Encode(refusal)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "", keys.NewNode())
	if err != nil {
		t.Fatal(err)
	}
	var pauses []time.Duration
	c.pause = func(_ context.Context, d time.Duration) error { pauses = append(pauses, d); return nil }
	return c, &asked, &pauses
}

func fetch(c *Client) ([]byte, error) {
	return c.Artifact(context.Background(), url.Values{"sha256": {"00"}}, 1<<20)
}

// TestArtifactFetchRetries: a plane unreachable for a while (restarting) or answering that it is
// unavailable is asked again, backing off, and the artifact comes once it answers; one that stays away
// past the window fails the fetch with the plane's code; an answer that is not about the plane being
// away is not asked again.
func TestArtifactFetchRetries(t *testing.T) {
	for _, refusal := range []*errcode.Error{nil, errcode.New(errcode.StoreClosed, "the store is closed")} {
		c, asked, pauses := plane(t, 3, refusal)
		data, err := fetch(c)
		if err != nil || string(data) != "module bytes" || asked.Load() != 4 {
			t.Fatalf("%v: %q %v after %d fetches", refusal, data, err, asked.Load())
		}
		if want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}; !slices.Equal(*pauses, want) {
			t.Fatalf("%v: paused %v, want %v", refusal, *pauses, want)
		}
	}

	c, asked, pauses := plane(t, 1<<40, nil)
	if _, err := fetch(c); errcode.Code(err) != errcode.PlaneUnreachable {
		t.Fatalf("a plane away for good: %v", err)
	}
	var total time.Duration
	for _, p := range *pauses {
		total += p
	}
	if total > maxArtifactWait || total < maxArtifactWait-5*time.Second || asked.Load() != int64(len(*pauses))+1 {
		t.Fatalf("paused %v in all (%d pauses) for %d fetches; the window is %v", total, len(*pauses), asked.Load(), maxArtifactWait)
	}

	c, asked, pauses = plane(t, 1<<40, errcode.New(errcode.AuthForbidden, "no"))
	if _, err := fetch(c); errcode.Code(err) != errcode.AuthForbidden || asked.Load() != 1 || len(*pauses) != 0 {
		t.Fatalf("a refusal: %v, asked %d times", err, asked.Load())
	}
}

// An artifact fetch waits out the plane's rate limit as the plane asks, and asks again; a wait over
// what one fetch may spend ends it at once with the plane's code.
func TestArtifactWaitsOutTheRateLimit(t *testing.T) {
	limited := func(ms int) *errcode.Error {
		return errcode.New(errcode.RequestRateLimited, "too many requests").With(errcode.DetailRetryAfterMS, ms)
	}
	c, asked, pauses := plane(t, 2, limited(20))
	if data, err := fetch(c); err != nil || string(data) != "module bytes" || asked.Load() != 3 {
		t.Fatalf("limited twice: %q %v after %d requests", data, err, asked.Load())
	}
	if want := []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}; !slices.Equal(*pauses, want) {
		t.Fatalf("limited twice: paused %v, want %v", *pauses, want)
	}

	c, asked, _ = plane(t, 1, limited(120_000))
	if _, err := fetch(c); errcode.Code(err) != errcode.RequestRateLimited || asked.Load() != 1 {
		t.Fatalf("asked to wait too long: %v after %d requests", err, asked.Load())
	}
}
