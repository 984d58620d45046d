package server_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// trustedPlane is a plane (newPlane) whose trust folder holds pub, with a token per role.
type trustedPlane struct {
	*plane
	pub    keys.PublisherPrivate
	tokens map[store.Role]string
	seq    uint64
}

func newTrustedPlane(t *testing.T, cfg wire.Config) *trustedPlane {
	t.Helper()
	pub := keys.NewPublisher()
	cfg.TrustDir = filepath.Join(t.TempDir(), "trust")
	if err := registry.InitTrust(cfg.TrustDir, []keys.PublisherPublic{pub.Public()}, nil); err != nil {
		t.Fatal(err)
	}
	p := &trustedPlane{plane: newPlane(t, cfg), pub: pub, tokens: map[store.Role]string{}}
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator, store.RoleAdmin} {
		tok, hash := tokens.Mint()
		if _, err := p.st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "tok-" + string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	return p
}

// admin sends an admin request as role and returns the status, the error code and the body.
func (p *trustedPlane) admin(role store.Role, method, path string, body []byte) (int, string, []byte) {
	p.t.Helper()
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.url+"/api/v1/admin"+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.tokens[role])
	return exchange(p.t, req)
}

// want fails the test unless the admin request answers status with code ("" for a success), and
// decodes a success into out unless out is nil.
func (p *trustedPlane) want(status int, code string, role store.Role, method, path string, body []byte, out any) {
	p.t.Helper()
	got, gotCode, data := p.admin(role, method, path, body)
	if got != status || gotCode != code {
		p.t.Fatalf("%s %s as %s: %d %q, want %d %q: %s", method, path, role, got, gotCode, status, code, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// artifact asks the agent route for query, signed by the plane's node, and returns the status, the
// error code and the body.
func (p *plane) artifact(query string) (int, string, []byte) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+channel.PathArtifact+"?"+query, nil)
	if err := httpsig.Sign(req, nil, p.key, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env errcode.Envelope
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(data, &env)
	}
	return resp.StatusCode, env.Error.Code, data
}

// testWord is a word module of a test release; wallMS is its manifest's wall_time_ms (0: none).
type testWord struct {
	name   string
	class  manifest.Class
	wallMS int64
	params string // the params schema's properties; "" is {"n": {"type": "integer"}}
	module string // the module's bytes after the wasm header; "" is the word's name
	caps   string // the manifest's capabilities array; "" declares none
}

// testRelease is a built release folder and the words it pins, as a node reports them.
type testRelease struct {
	dir   string
	words map[string]channel.Word
}

// build signs a release of words, and of agent binaries by platform ("linux/amd64": path), with key.
// Each word's module is a few bytes no host would run: the plane never runs them.
func (p *trustedPlane) build(key keys.PublisherPrivate, words []testWord, agents map[string]string) testRelease {
	p.t.Helper()
	mods := filepath.Join(p.t.TempDir(), "modules")
	for _, w := range words {
		d := filepath.Join(mods, w.name)
		if w.params == "" {
			w.params = `{"n":{"type":"integer"}}`
		}
		mf := fmt.Sprintf(`{"schema":"lexicon/manifest/v1","name":%q,"kind":"word","version":"1.0.0","class":%q,"summary":"test",`+
			`"params":{"type":"object","additionalProperties":false,"properties":%s},"output":{"type":"object"},`+
			`"limits":{"wall_time_ms":%d},"module":{"file":"%s.wasm"}%s}`, w.name, w.class, w.params, w.wallMS, w.name, capsField(w.caps))
		if err := os.MkdirAll(d, 0o755); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "manifest.json"), []byte(mf), 0o644); err != nil {
			p.t.Fatal(err)
		}
		if w.module == "" {
			w.module = w.name
		}
		if err := os.WriteFile(filepath.Join(d, w.name+".wasm"), []byte("\x00asm\x01\x00\x00\x00"+w.module), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	p.seq++
	out := filepath.Join(p.t.TempDir(), "release")
	res, err := registry.Build(registry.BuildOptions{Key: key, ModulesDir: mods, Release: fmt.Sprintf("1.%d.0", p.seq), Sequence: p.seq, Agents: agents, OutDir: out})
	if err != nil {
		p.t.Fatal(err)
	}
	rel := testRelease{dir: out, words: map[string]channel.Word{}}
	for _, m := range res.Modules {
		rel.words[m.Name] = channel.Word{Name: m.Name, Version: m.Version, Digest: m.SHA256, Class: m.Class}
	}
	return rel
}

func capsField(caps string) string {
	if caps == "" {
		return ""
	}
	return `,"capabilities":` + caps
}

// publish builds a release signed by the trusted publisher and publishes it as an admin.
func (p *trustedPlane) publish(words []testWord, agents map[string]string) testRelease {
	p.t.Helper()
	rel := p.build(p.pub, words, agents)
	p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/releases", tarRelease(p.t, rel.dir), nil)
	return rel
}

// tarRelease packs a release folder as `lexicon releases publish` sends it.
func tarRelease(t testing.TB, dir string) []byte {
	t.Helper()
	blobs, err := cas.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := blobs.List()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range append([]string{registry.BundleFile}, prefix(list)...) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// TestPublishRefusesUntrustedAndTampered publishes a release signed by a key outside the plane's trust
// and one with a module altered after signing: each is refused with its code, and nothing of either is
// stored. The same release untouched is then taken, so the refusals are the trust check's doing.
func TestPublishRefusesUntrustedAndTampered(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	words := []testWord{{name: "probe", class: manifest.ClassLook}}
	agent := filepath.Join(t.TempDir(), "lexicon-agent")
	if err := os.WriteFile(agent, []byte("\x7fELF agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	agents := map[string]string{"linux/amd64": agent}

	stranger := p.build(keys.NewPublisher(), words, agents)
	tampered := p.build(p.pub, words, agents)
	probe := tampered.words["probe"].Digest
	if err := os.WriteFile(filepath.Join(tampered.dir, "sha256", probe), []byte("\x00asm\x01\x00\x00\x00evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rel  testRelease
		code string
	}{
		{"signed outside the trust", stranger, errcode.StatementSignatureInvalid},
		{"module altered after signing", tampered, errcode.ModuleDigestMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.want(http.StatusUnprocessableEntity, tc.code, store.RoleAdmin, http.MethodPost, "/releases", tarRelease(t, tc.rel.dir), nil)
			var list struct{ Releases []store.Release }
			p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases", nil, &list)
			if len(list.Releases) != 0 {
				t.Fatalf("a refused release is listed: %+v", list.Releases)
			}
			for _, q := range []string{"sha256=" + tc.rel.words["probe"].Digest, "sha256=" + cas.Sum([]byte("\x7fELF agent"))} {
				if status, code, _ := p.artifact(q); status != http.StatusNotFound || code != errcode.ModuleNotFound {
					t.Fatalf("artifact?%s of a refused release: %d %s", q, status, code)
				}
			}
			for _, q := range []string{"statement=current", "agent=linux-amd64"} {
				if status, code, _ := p.artifact(q); status != http.StatusNotFound || code != errcode.ReleaseNotFound {
					t.Fatalf("artifact?%s after a refused release: %d %s", q, status, code)
				}
			}
		})
	}

	// The trust check is what refused them: a good release of the same words is taken and served.
	good := p.publish(words, agents)
	if status, _, data := p.artifact("sha256=" + good.words["probe"].Digest); status != http.StatusOK || string(data) != "\x00asm\x01\x00\x00\x00probe" {
		t.Fatalf("module of the published release: %d %q", status, data)
	}
}

// TestArtifactServesThePinnedAgent asks the artifact route for an agent binary by platform: it serves
// the bytes the current release pins, and refuses a platform the release has no agent for.
func TestArtifactServesThePinnedAgent(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	if status, code, _ := p.artifact("agent=linux-amd64"); status != http.StatusNotFound || code != errcode.ReleaseNotFound {
		t.Fatalf("agent before any release: %d %s", status, code)
	}
	dir := t.TempDir()
	bins := map[string]string{}
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		path := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-"))
		if err := os.WriteFile(path, []byte("\x7fELF agent for "+platform), 0o755); err != nil {
			t.Fatal(err)
		}
		bins[platform] = path
	}
	p.publish([]testWord{{name: "probe", class: manifest.ClassLook}}, bins)

	for _, platform := range []string{"linux-amd64", "linux-arm64"} {
		status, _, data := p.artifact("agent=" + platform)
		if want := "\x7fELF agent for " + strings.ReplaceAll(platform, "-", "/"); status != http.StatusOK || string(data) != want {
			t.Fatalf("agent=%s: %d %q, want %q", platform, status, data, want)
		}
	}
	for _, q := range []string{"agent=linux-riscv64", "agent=linux/amd64", "agent=", "agent=../linux-amd64"} {
		if status, code, _ := p.artifact(q); status != http.StatusNotFound || code != errcode.ArtifactNotPinned {
			t.Fatalf("artifact?%s: %d %s", q, status, code)
		}
	}
	// Publishing a release without agents offers it: the node is still served its target's agent.
	p.publish([]testWord{{name: "probe", class: manifest.ClassLook}}, nil)
	if status, _, data := p.artifact("agent=linux-amd64"); status != http.StatusOK || string(data) != "\x7fELF agent for linux/amd64" {
		t.Fatalf("agent after a release was only offered: %d %q", status, data)
	}
	// Once a rollout moves the node's target to it, the node is served none, even though an earlier
	// release pinned them.
	if _, err := p.st.NodeTargetSet(t.Context(), store.NodeTargetSetParams{ID: p.node.ID, Sequence: 2}); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := p.artifact("agent=linux-amd64"); status != http.StatusNotFound || code != errcode.ArtifactNotPinned {
		t.Fatalf("agent after its target moved to a release without agents: %d %s", status, code)
	}
}

// TestPublishChecksEveryWordsContract: a release that breaks the contract of a word the current
// release has is refused, even when it also brings a new word, and nothing of it is stored.
func TestPublishChecksEveryWordsContract(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	p.publish([]testWord{{name: "zeta", class: manifest.ClassLook}}, nil)
	broken := p.build(p.pub, []testWord{
		{name: "anew", class: manifest.ClassLook},
		{name: "zeta", class: manifest.ClassLook, params: `{"n":{"type":"string"}}`},
	}, nil)
	p.want(http.StatusBadRequest, errcode.ContractBroken, store.RoleAdmin, http.MethodPost, "/releases", tarRelease(t, broken.dir), nil)
	var list struct{ Releases []store.Release }
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases", nil, &list)
	if len(list.Releases) != 1 {
		t.Fatalf("%d releases listed, want the first one only", len(list.Releases))
	}
}

// TestPublishChecksWordsAgainstEveryRelease: a word dropped in release 2 and brought back in release 3
// with another class, or with other params, is refused against release 1, which last held it, and
// nothing of it is stored; brought back unchanged, it is taken.
func TestPublishChecksWordsAgainstEveryRelease(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	p.publish([]testWord{{name: "zeta", class: manifest.ClassLook}, {name: "other", class: manifest.ClassLook}}, nil)
	p.publish([]testWord{{name: "other", class: manifest.ClassLook}}, nil)
	for _, back := range []testWord{
		{name: "zeta", class: manifest.ClassDestructive},
		{name: "zeta", class: manifest.ClassLook, params: `{"n":{"type":"string"}}`},
	} {
		rel := p.build(p.pub, []testWord{{name: "other", class: manifest.ClassLook}, back}, nil)
		status, code, body := p.admin(store.RoleAdmin, http.MethodPost, "/releases", tarRelease(t, rel.dir))
		var env errcode.Envelope
		_ = json.Unmarshal(body, &env)
		if status != http.StatusBadRequest || code != errcode.ContractBroken || env.Error.Details["word"] != "zeta" || env.Error.Details["sequence"] != float64(1) {
			t.Fatalf("zeta brought back as %+v: %d %s %s", back, status, code, body)
		}
		var list struct{ Releases []store.Release }
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases", nil, &list)
		if len(list.Releases) != 2 {
			t.Fatalf("%d releases listed after a refused publish, want 2", len(list.Releases))
		}
	}
	p.publish([]testWord{{name: "other", class: manifest.ClassLook}, {name: "zeta", class: manifest.ClassLook}}, nil)
}

// TestReleaseShowAndDiff reads two published releases' module tables and the diff between them, which
// is the one lexicon-release diff makes of their folders; the publish answer carries the verdicts.
func TestReleaseShowAndDiff(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	dir := t.TempDir()
	agent := func(name, body string) map[string]string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return map[string]string{"linux/amd64": path}
	}
	one := p.build(p.pub, []testWord{{name: "probe", class: manifest.ClassLook}, {name: "gone", class: manifest.ClassChange}}, agent("a1", "\x7fELF one"))
	var published api.Release
	p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/releases", tarRelease(t, one.dir), &published)
	if len(published.Checks) == 0 {
		t.Fatal("the publish answer has no verdicts")
	}
	for _, c := range published.Checks {
		if !c.OK {
			t.Fatalf("a published release's check %+v", c)
		}
	}
	two := p.publish([]testWord{{name: "probe", class: manifest.ClassLook, module: "probe v2"}, {name: "anew", class: manifest.ClassLook}}, agent("a2", "\x7fELF two"))

	var d api.ReleaseDetail
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases/1", nil, &d)
	if d.Sequence != 1 || len(d.Modules) != 2 || len(d.Agents) != 1 || d.Agents[0].Platform != "linux-amd64" {
		t.Fatalf("release 1: %+v", d)
	}
	for _, m := range d.Modules {
		if m.Kind != "word" || m.Module != one.words[m.Name].Digest {
			t.Errorf("release 1 row %+v", m)
		}
	}

	var diff api.ReleaseDiff
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases/1/diff/2", nil, &diff)
	want, err := registry.DiffReleases(one.dir, two.dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff.From.Sequence != 1 || diff.To.Sequence != 2 || len(diff.Added) != len(want.Added) || len(diff.Removed) != len(want.Removed) ||
		len(diff.Changed) != len(want.Changed) || len(diff.Agents) != len(want.Agents) || len(diff.Broken) != 0 {
		t.Fatalf("diff 1→2: %+v\nlexicon-release diff: %+v", diff, want)
	}
	if diff.Added[0].Name != "anew" || diff.Removed[0].Name != "gone" || diff.Changed[0].Name != "probe" || !diff.Changed[0].ModuleChanged {
		t.Fatalf("diff 1→2: %+v", diff)
	}

	p.want(http.StatusBadRequest, errcode.RequestMalformed, store.RoleViewer, http.MethodGet, "/releases/one", nil, nil)
	p.want(http.StatusNotFound, errcode.ReleaseNotFound, store.RoleViewer, http.MethodGet, "/releases/9", nil, nil)
	p.want(http.StatusNotFound, errcode.ReleaseNotFound, store.RoleViewer, http.MethodGet, "/releases/1/diff/9", nil, nil)
}

// TestReleaseExpiryListedAndShown: GET /releases and GET /releases/{sequence} answer each release's
// expiry as its signed statement states it.
func TestReleaseExpiryListedAndShown(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	p.publish([]testWord{{name: "probe", class: manifest.ClassLook}}, nil)
	var list api.ReleaseList
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases", nil, &list)
	if len(list.Releases) != 1 || !list.Releases[0].ExpiresAt.After(time.Now()) {
		t.Fatalf("the list's expiry: %+v", list.Releases)
	}
	var one api.ReleaseDetail
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/releases/1", nil, &one)
	if !one.ExpiresAt.Equal(list.Releases[0].ExpiresAt) {
		t.Fatalf("show's expiry %v, the list's %v", one.ExpiresAt, list.Releases[0].ExpiresAt)
	}
}

// TestNodeUpdatingShownNotStaleCurrent: a node whose target release pins another agent than the one
// it last reported is "in_progress" while it reports and "silent" once it has not reported for
// api.UpdateSilentAfter, whatever its own last report said ("current", for the agent it ran before).
func TestNodeUpdatingShownNotStaleCurrent(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	now := time.Now()
	n := storetest.Node(t, p.st, "web-9", "0.0.1", now)
	agent := filepath.Join(t.TempDir(), "lexicon-agent")
	if err := os.WriteFile(agent, []byte("\x7fELF agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.publish([]testWord{{name: "probe", class: manifest.ClassLook}}, map[string]string{"linux/amd64": agent})
	report := func(at time.Time) api.Node {
		t.Helper()
		if _, err := p.st.NodeReport(t.Context(), store.NodeReportParams{ID: n.ID, Now: at, AgentVersion: "0.0.1", Idle: true,
			Update: store.NodeUpdate{State: "current"}}); err != nil {
			t.Fatal(err)
		}
		var got api.Node
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/web-9", nil, &got)
		return got
	}
	if got := report(time.Now()); got.TargetSequence != 1 || got.Updating != api.UpdatingInProgress || got.UpdatingTo == "" {
		t.Fatalf("a node moving to its target's agent: target %d, updating %q to %q", got.TargetSequence, got.Updating, got.UpdatingTo)
	}
	if got := report(time.Now().Add(-api.UpdateSilentAfter - time.Second)); got.Updating != api.UpdatingSilent {
		t.Fatalf("a node silent since its update: %q", got.Updating)
	}
	var list api.NodeList
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes", nil, &list)
	for _, l := range list.Nodes {
		if l.Name == "web-9" && l.Updating != api.UpdatingSilent {
			t.Fatalf("the list says %q", l.Updating)
		}
	}
}
