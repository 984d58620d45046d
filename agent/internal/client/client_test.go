package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// An artifact fetch waits out the plane's rate limit as the plane asks, and asks again; a wait over
// what one fetch may spend, and every other refusal, end it at once with the plane's code.
func TestArtifactWaitsOutTheRateLimit(t *testing.T) {
	cases := []struct {
		name      string
		refusals  int64 // answers refused before the artifact is served
		refusal   *errcode.Error
		wantCode  string
		wantAsked int64
	}{
		{"limited twice", 2, errcode.New(errcode.RequestRateLimited, "too many requests").With(errcode.DetailRetryAfterMS, 20), "", 3},
		{"asked to wait too long", 1, errcode.New(errcode.RequestRateLimited, "too many requests").With(errcode.DetailRetryAfterMS, 40_000), errcode.RequestRateLimited, 1},
		{"not found", 1, errcode.New(errcode.ModuleNotFound, "no such module"), errcode.ModuleNotFound, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != channel.PathArtifact || r.Header.Get("Signature") == "" {
					http.Error(w, "unsigned or elsewhere", http.StatusBadRequest)
					return
				}
				if asked.Add(1) <= tc.refusals {
					w.WriteHeader(http.StatusTooManyRequests)
					_ = json.NewEncoder(w).Encode(tc.refusal)
					return
				}
				_, _ = w.Write([]byte("module bytes"))
			}))
			defer srv.Close()
			c, err := New(srv.URL, "", keys.NewNode())
			if err != nil {
				t.Fatal(err)
			}
			data, err := c.Artifact(context.Background(), url.Values{"sha256": {"00"}}, 1<<20)
			if errcode.Code(err) != tc.wantCode || asked.Load() != tc.wantAsked {
				t.Fatalf("Artifact: %v after %d requests, want code %q after %d", err, asked.Load(), tc.wantCode, tc.wantAsked)
			}
			if err == nil && string(data) != "module bytes" {
				t.Fatalf("Artifact returned %q", data)
			}
		})
	}
}
