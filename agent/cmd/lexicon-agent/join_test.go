package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// TestJoinCarriesProvisioningToken: join --token-file sends the provisioning's one-time token with the
// join request (read from the file, trimmed), and a join without one sends none; --token and
// --token-file together are a usage error.
func TestJoinCarriesProvisioningToken(t *testing.T) {
	var mu sync.Mutex
	var got []channel.JoinRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != channel.PathJoin {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req channel.JoinRequest
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("join body %q: %v", b, err)
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		k, err := keys.ParseNodePublic(req.Key)
		if err != nil {
			t.Errorf("key: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(channel.JoinResponse{JoinID: "join_1", Fingerprint: k.Fingerprint(), Status: channel.JoinPending,
			ExpiresAt: time.Now().Add(time.Hour)})
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "provision-token")
	if err := os.WriteFile(tokenFile, []byte("lxp_token-text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		base := []string{"join", "--plane", srv.URL, "--name", name, "--no-wait", "--state-dir", filepath.Join(dir, name, "state"),
			"--config-dir", filepath.Join(dir, name, "config")}
		code := cli.Run(t.Context(), "lexicon-agent", "", commands(), append(base, args...), &out, &errOut)
		return code, errOut.String()
	}
	if code, stderr := run("a", "--token-file", tokenFile); code != 0 {
		t.Fatalf("join --token-file: exit %d: %s", code, stderr)
	}
	if code, stderr := run("b"); code != 0 {
		t.Fatalf("join: exit %d: %s", code, stderr)
	}
	if code, _ := run("c", "--token", "x", "--token-file", tokenFile); code != 2 {
		t.Fatalf("--token with --token-file: exit %d, want 2", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Token != "lxp_token-text" || got[1].Token != "" {
		t.Fatalf("joins sent: %+v", got)
	}
	if strings.Contains(got[1].Key, "lxp_") {
		t.Fatal("the token leaked into another field")
	}
}

// A join waiting for its decision asks again soon at first, when a provider check decides it, and
// settles at a second, when a person does.
func TestDecisionPollBacksOffToASecond(t *testing.T) {
	want := []time.Duration{25, 50, 100, 200, 400, 800, 1000, 1000}
	for try, w := range want {
		if got := decisionPoll(try); got != w*time.Millisecond {
			t.Errorf("decisionPoll(%d) = %s, want %s", try, got, w*time.Millisecond)
		}
	}
	if got := decisionPoll(1 << 20); got != time.Second {
		t.Errorf("decisionPoll after a long wait = %s", got)
	}
}
