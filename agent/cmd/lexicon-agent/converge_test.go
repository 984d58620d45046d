package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// TestConvergeAsTheAgentRunsIt runs the converge word in the host run configures: its files come from
// the plane through the agent's own signed channel client, the bounds from the node's policy file, read
// again for each converge (a narrowed policy holds without a restart), and the agent's own folders are
// never written, whatever the policy says.
func TestConvergeAsTheAgentRunsIt(t *testing.T) {
	page := []byte("<h1>converged</h1>\n")
	digest := cas.Sum(page)
	var mu sync.Mutex
	var served []string
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != channel.PathArtifact || r.URL.Query().Get("sha256") != digest || r.Header.Get(httpsig.HeaderSignatureInput) == "" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(errcode.New(errcode.ModuleNotFound, "no such artifact, or an unsigned request"))
			return
		}
		mu.Lock()
		served = append(served, digest)
		mu.Unlock()
		w.Write(page)
	}))
	defer plane.Close()

	d := dirs{state: filepath.Join(t.TempDir(), "state"), config: t.TempDir()}
	sd, err := state.Open(d.state)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sd.Key(); err != nil {
		t.Fatal(err)
	}
	c, err := planeClient(sd, state.Pairing{Plane: plane.URL})
	if err != nil {
		t.Fatal(err)
	}
	root := testkit.SafeDir(t)
	writePolicy := func(paths ...string) {
		b, _ := json.Marshal(map[string]any{"classes": map[string]string{"change": "accept"}, "converge": footprint.Bounds{Paths: paths}})
		if err := os.WriteFile(d.policyFile(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(root, d.config)

	fetcher := &planeFetcher{}
	cfg := d.hostConfig(sd, policy.Load(d.policyFile()), fetcher, slog.New(slog.DiscardHandler))
	cfg.Isolation, cfg.CacheDir, cfg.CacheKeyFile = wasm.InProcess, "", ""
	h, err := wasm.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	module, err := os.ReadFile("../../../build/wasm/converge.wasm")
	if err != nil {
		t.Fatalf("make wasm first: %v", err)
	}
	mb, err := os.ReadFile("../../../primitives/converge/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Capabilities {
		switch m.Capabilities[i].Cap {
		case "fs.digest", "fs.diff", "fs.install":
			m.Capabilities[i].Paths = []string{root, d.config}
		}
	}
	mod, err := h.Load(context.Background(), m, module, cas.Sum(module))
	if err != nil {
		t.Fatal(err)
	}
	file := func(path string) footprint.File {
		return footprint.File{Path: path, SHA256: digest, Size: int64(len(page)), Mode: "0644", Owner: "root", Group: "root"}
	}
	run := func(files ...footprint.File) *wasm.Result {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"footprint": footprint.Footprint{Schema: footprint.SchemaName, Files: files}})
		return mod.Run(context.Background(), b)
	}

	// Not joined yet: nowhere to fetch from.
	if res := run(file(filepath.Join(root, "index.html"))); res.Code != errcode.FootprintItemsFailed || !strings.Contains(string(res.Output), "not joined") {
		t.Fatalf("%s %s %s", res.Code, res.Message, res.Output)
	}
	fetcher.c.Store(c)
	if res := run(file(filepath.Join(root, "index.html"))); res.Outcome != wasm.Completed {
		t.Fatalf("%s %s %s", res.Code, res.Message, res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "index.html")); string(b) != string(page) || len(served) != 1 {
		t.Fatalf("%q, served %d", b, len(served))
	}
	if _, err := os.Stat(filepath.Join(sd.ConvergeDir(), "footprint.json")); err != nil {
		t.Fatalf("the converged footprint is not recorded in the state folder: %v", err)
	}

	// The policy names the config folder, but it is the agent's own: refused, nothing written.
	res := run(file(filepath.Join(d.config, "policy.json")))
	if res.Code != errcode.FootprintRefused || !strings.Contains(res.Message, "agent's own folder") {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	// The owner narrows the policy: the next converge is held to it, with the same host.
	writePolicy(filepath.Join(root, "only-here"))
	res = run(file(filepath.Join(root, "index2.html")))
	if res.Code != errcode.FootprintRefused {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	if _, err := os.Stat(filepath.Join(root, "index2.html")); !os.IsNotExist(err) {
		t.Fatal("written beyond the narrowed policy")
	}
}

// TestHostConfigCarriesThePolicy: the word host `run` builds carries every narrowing the node's policy
// holds (packages, backup, converge), so no capability reaches further under `run` than under `word run`.
func TestHostConfigCarriesThePolicy(t *testing.T) {
	d := dirs{state: filepath.Join(t.TempDir(), "state"), config: t.TempDir()}
	sd, err := state.Open(d.state)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"classes": {"change": "accept"}, "packages": {"operations": ["query"]}, "backup": {"paths": ["/srv/app"]},
		"converge": {"paths": ["/etc/nginx"]}}`
	if err := os.WriteFile(d.policyFile(), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := policy.Load(d.policyFile())
	if err := pol.Problem(); err != nil {
		t.Fatal(err)
	}
	cfg := d.hostConfig(sd, pol, &planeFetcher{}, slog.New(slog.DiscardHandler))
	if cfg.PackagePolicy == nil || cfg.PackagePolicy.AllowsOperation(capv1.CapPkgUpgrade) || !cfg.PackagePolicy.AllowsOperation(capv1.CapPkgQuery) {
		t.Errorf("the package policy does not reach the host: %+v", cfg.PackagePolicy)
	}
	if cfg.Backup == nil || !cfg.Backup.Policy.AllowsPath("/srv/app/x") || cfg.Backup.Policy.AllowsPath("/etc/x") {
		t.Errorf("the backup section does not reach the host: %+v", cfg.Backup)
	}
	b, err := cfg.Converge()
	if err != nil || len(b.Paths) != 1 || b.Paths[0] != "/etc/nginx" {
		t.Errorf("converge bounds %+v, %v", b, err)
	}
}
