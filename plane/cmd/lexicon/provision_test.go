package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestNodesProvisionWaits: `lexicon nodes provision` sends the request with its labels and DNS zone,
// and --wait prints the timeline as it grows and exits 0 when the node joined, 9 when it failed; bad
// input is refused with the plane's code.
func TestNodesProvisionWaits(t *testing.T) {
	var mu sync.Mutex
	var got api.ProvisionRequest
	shows := 0
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		now := time.Now().UTC()
		ev := func(state, detail string) api.ProvisioningEvent {
			return api.ProvisioningEvent{At: now, Actor: "plane", State: state, Detail: detail}
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == api.Prefix+"/provisionings":
			b, _ := io.ReadAll(r.Body)
			got = api.ProvisionRequest{}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Errorf("body %q: %v", b, err)
			}
			if got.Region == "mars-1" {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(errcode.New(errcode.ProvisionUnknownRegion, "account lin has no region \"mars-1\"").Envelope())
				return
			}
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(api.Provisioning{ID: "prov_1", Name: got.Name, State: api.ProvCreating})
		case r.Method == http.MethodGet && r.URL.Path == api.Prefix+"/provisionings/prov_1":
			shows++
			p := api.Provisioning{ID: "prov_1", Name: "web-1", State: api.ProvInstalling,
				Events: []api.ProvisioningEvent{ev("creating", "provision web-1"), ev("installing", "the instance is running")}}
			if shows > 1 {
				p.Events = append(p.Events, ev("joined", "approved join j1"))
				p.State = api.ProvJoined
				if fail {
					p.State, p.Reason, p.Cleanup, p.InstanceID = api.ProvCleanedUp, "timed out", "deleted", "i-1"
				}
			}
			_ = json.NewEncoder(w).Encode(p)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("LEXICON_TOKEN", "lx_test")
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), "lexicon", "", commands(), append(args, "--plane", srv.URL), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	base := []string{"nodes", "provision", "--account", "lin", "--region", "us-east", "--type", "g6-nanode-1", "--image", "debian-13",
		"--name", "web-1", "--labels", "role=web,zone=a", "--label", "tier=1", "--dns-account", "bind", "--zone", "example.org"}
	code, stdout, stderr := run(append(base, "--wait")...)
	if code != 0 || !strings.Contains(stderr, "approved join j1") || !strings.Contains(stdout, "state joined") {
		t.Fatalf("provision --wait: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.Count(stderr, "the instance is running") != 1 {
		t.Errorf("the timeline was printed more than once: %q", stderr)
	}
	mu.Lock()
	if got.Labels["role"] != "web" || got.Labels["zone"] != "a" || got.Labels["tier"] != "1" || got.DNSAccount != "bind" || got.Zone != "example.org" {
		t.Errorf("request: %+v", got)
	}
	shows, fail = 0, true
	mu.Unlock()
	code, _, _ = run(append(base, "--wait", "-o", "json")...)
	if code != ExitProvisionFailed {
		t.Fatalf("a failed provisioning exits %d, want %d", code, ExitProvisionFailed)
	}
	code, _, stderr = run("nodes", "provision", "--account", "lin", "--region", "mars-1", "--type", "t", "--image", "i", "--name", "web-1")
	if code == 0 || !strings.Contains(stderr, errcode.ProvisionUnknownRegion) {
		t.Fatalf("unknown region: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run("nodes", "provision", "--account", "lin", "--name", "web-1")
	if code != 2 || !strings.Contains(stderr, "--") {
		t.Fatalf("missing flags: exit %d, stderr %q", code, stderr)
	}
}
