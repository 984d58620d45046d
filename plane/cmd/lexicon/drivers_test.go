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

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestDriversEnableSendsConsent: `lexicon drivers enable` sends the consent to run unconfined only
// with --unconfined, shows it in the answer, and passes the plane's driver.unconfined refusal through
// with its advice.
func TestDriversEnableSendsConsent(t *testing.T) {
	var mu sync.Mutex
	var bodies []api.DriverEnable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != api.Prefix+"/drivers/dns-memory/enable" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req api.DriverEnable
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		mu.Lock()
		bodies = append(bodies, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !req.Unconfined {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(errcode.New(errcode.DriverUnconfined,
				"driver dns-memory cannot be confined; pass --unconfined to lexicon drivers enable to accept that").Envelope())
			return
		}
		_ = json.NewEncoder(w).Encode(api.Driver{Name: "dns-memory", Enabled: true, Pinned: true, Unconfined: true, ChangedBy: "ops"})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("LEXICON_TOKEN", "lx_test")
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), "lexicon", "", commands(), append(args, "--plane", srv.URL), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, _, stderr := run("drivers", "enable", "dns-memory")
	if code == 0 || !strings.Contains(stderr, errcode.DriverUnconfined) || !strings.Contains(stderr, "--unconfined") {
		t.Fatalf("without --unconfined: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := run("drivers", "enable", "dns-memory", "--unconfined")
	if code != 0 || !strings.Contains(stdout, "enabled unconfined") {
		t.Fatalf("with --unconfined: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0].Unconfined || !bodies[1].Unconfined {
		t.Fatalf("bodies %+v", bodies)
	}
}
