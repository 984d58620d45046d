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

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestCloudCommandsSendWhatTheyAreGiven: create sends user data and tags from its flags, delete sends
// nothing without --confirm and the label with it, and the plane's refusals (a mismatched label, a
// feature the driver lacks, naming the drivers that have it) reach stderr with their codes.
func TestCloudCommandsSendWhatTheyAreGiven(t *testing.T) {
	var mu sync.Mutex
	sent := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent[r.Method+" "+strings.TrimPrefix(r.URL.Path, api.Prefix)] = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case api.Prefix + "/cloud/lab/instances":
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(api.Instance{ID: "m-1", Label: "web-1", Status: "provisioning", Tags: []string{"blue"}})
		case api.Prefix + "/cloud/lab/instances/m-1/delete":
			var req api.CloudDeleteRequest
			_ = json.Unmarshal(b, &req)
			if req.Confirm != "web-1" {
				w.WriteHeader(http.StatusConflict)
				_ = json.NewEncoder(w).Encode(errcode.New(errcode.CloudConfirmMismatch, "instance m-1 is labelled \"web-1\": nothing was deleted").Envelope())
				return
			}
			_ = json.NewEncoder(w).Encode(api.Instance{ID: "m-1", Label: "web-1"})
		case api.Prefix + "/cloud/plain/swap-ipv4":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(errcode.New(errcode.CloudUnsupported,
				"the driver of account plain does not support IPv4 swap; enabled drivers that have it: cloud-hetzner").
				With(errcode.DetailDrivers, []string{"cloud-hetzner"}).Envelope())
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
	ud := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(ud, []byte("#cloud-config\nruncmd: [true]\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := run("cloud", "create", "--account", "lab", "--region", "r", "--type", "t", "--image", "i", "--label", "web-1",
		"--tag", "blue", "--tag", "lexicon-prov-1", "--user-data-file", ud, "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"id": "m-1"`) {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var create api.CloudCreateRequest
	if err := json.Unmarshal(sent["POST /cloud/lab/instances"], &create); err != nil || create.UserData != "#cloud-config\nruncmd: [true]\n" ||
		strings.Join(create.Tags, ",") != "blue,lexicon-prov-1" || create.Label != "web-1" {
		t.Fatalf("create sent %+v (%v)", create, err)
	}

	if code, _, stderr := run("cloud", "delete", "--account", "lab", "m-1"); code != 2 || !strings.Contains(stderr, "--confirm") {
		t.Fatalf("delete without --confirm: exit %d, stderr %q", code, stderr)
	}
	if _, ok := sent["POST /cloud/lab/instances/m-1/delete"]; ok {
		t.Fatal("a delete without --confirm reached the plane")
	}
	if code, _, stderr := run("cloud", "delete", "--account", "lab", "m-1", "--confirm", "web-2"); code != 1 || !strings.Contains(stderr, errcode.CloudConfirmMismatch) {
		t.Fatalf("delete with the wrong label: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, stderr := run("cloud", "delete", "--account", "lab", "m-1", "--confirm", "web-1"); code != 0 || !strings.Contains(stdout, "deleted instance m-1") {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run("cloud", "swap-ipv4", "--account", "plain", "a", "b"); code != 1 ||
		!strings.Contains(stderr, errcode.CloudUnsupported) || !strings.Contains(stderr, "cloud-hetzner") {
		t.Fatalf("swap on a driver without it: exit %d, stderr %q", code, stderr)
	}
}

// TestAuditShowsPendingCalls: a call recorded before the driver was asked and never finished shows as
// pending, without a duration.
func TestAuditShowsPendingCalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.DriverCallList{Calls: []api.DriverCall{
			{ID: "call_2", Actor: "ops", Account: "lab", Driver: "cloud-linode", Operation: "cloud.delete_instance", Target: "123", Code: api.DriverCallPending},
			{ID: "call_1", Actor: "ops", Account: "lab", Driver: "cloud-linode", Operation: "cloud.get_instance", Target: "123", Code: "ok", DurationMS: 42},
		}})
	}))
	t.Cleanup(srv.Close)
	t.Setenv("LEXICON_TOKEN", "lx_test")
	var out, errOut bytes.Buffer
	if code := cli.Run(t.Context(), "lexicon", "", commands(), []string{"drivers", "audit", "--plane", srv.URL}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "pending") || !strings.Contains(lines[0], " - 123") || !strings.Contains(lines[1], "42ms") {
		t.Fatalf("audit:\n%s", out.String())
	}
}
