package ui_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// trusted is a plane with a trust folder holding pub, so releases signed by pub can be published.
type trusted struct {
	*plane
	pub keys.PublisherPrivate
}

func newTrusted(t *testing.T) *trusted {
	t.Helper()
	pub := keys.NewPublisher()
	dir := filepath.Join(t.TempDir(), "trust")
	if err := registry.InitTrust(dir, []keys.PublisherPublic{pub.Public()}, nil); err != nil {
		t.Fatal(err)
	}
	return &trusted{plane: newPlaneWith(t, wire.Config{TrustDir: dir}), pub: pub}
}

// releaseTar builds a release of look words (name: module bytes after the wasm header) signed by key
// and returns it packed as lexicon releases publish sends it.
func releaseTar(t *testing.T, key keys.PublisherPrivate, seq uint64, words map[string]string) []byte {
	t.Helper()
	return buildReleaseTar(t, key, seq, words, nil)
}

// releaseTarWithAgent is releaseTar pinning an agent binary for linux/amd64 too.
func releaseTarWithAgent(t *testing.T, key keys.PublisherPrivate, seq uint64, words map[string]string) []byte {
	t.Helper()
	agent := filepath.Join(t.TempDir(), "lexicon-agent")
	must(t, os.WriteFile(agent, []byte("\x7fELF agent"), 0o755))
	return buildReleaseTar(t, key, seq, words, map[string]string{"linux/amd64": agent})
}

func buildReleaseTar(t *testing.T, key keys.PublisherPrivate, seq uint64, words, agents map[string]string) []byte {
	t.Helper()
	mods := filepath.Join(t.TempDir(), "modules")
	for name, body := range words {
		d := filepath.Join(mods, name)
		mf := fmt.Sprintf(`{"schema":"lexicon/manifest/v1","name":%q,"kind":"word","version":"1.0.0","class":"look","summary":"test",`+
			`"params":{"type":"object","additionalProperties":false,"properties":{}},"output":{"type":"object"},"module":{"file":"%s.wasm"}}`, name, name)
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "manifest.json"), []byte(mf), 0o644))
		must(t, os.WriteFile(filepath.Join(d, name+".wasm"), []byte("\x00asm\x01\x00\x00\x00"+body), 0o644))
	}
	out := filepath.Join(t.TempDir(), "release")
	if _, err := registry.Build(registry.BuildOptions{Key: key, ModulesDir: mods, Release: fmt.Sprintf("1.%d.0", seq), Sequence: seq, OutDir: out,
		Agents: agents}); err != nil {
		t.Fatal(err)
	}
	return packRelease(t, out)
}

// packRelease packs a release folder as lexicon releases publish sends it.
func packRelease(t *testing.T, out string) []byte {
	t.Helper()
	blobs, err := cas.Open(out)
	must(t, err)
	list, err := blobs.List()
	must(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range append([]string{registry.BundleFile}, prefixed(list)...) {
		data, err := os.ReadFile(filepath.Join(out, name))
		must(t, err)
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(data)
		must(t, err)
	}
	must(t, tw.Close())
	return buf.Bytes()
}

func prefixed(list []string) []string {
	out := make([]string, len(list))
	for i, b := range list {
		out[i] = "sha256/" + b
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// upload posts the publish form with data as its file, and csrf as the form's token.
func (b *browser) upload(data []byte, csrf string, want int) string {
	b.p.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf != "" {
		must(b.p.t, mw.WriteField("csrf", csrf))
	}
	fw, err := mw.CreateFormFile("release", "release.tar")
	must(b.p.t, err)
	_, _ = fw.Write(data)
	must(b.p.t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, b.p.ts.URL+"/ui/releases", &body)
	must(b.p.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := b.c.Do(req)
	must(b.p.t, err)
	defer res.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(res.Body)
	if res.StatusCode != want {
		b.p.t.Fatalf("upload: %d, want %d\n%s", res.StatusCode, want, out.String())
	}
	b.pages["POST /ui/releases"] = out.String()
	return out.String()
}

// TestReleases publishes by upload on the page (the verdicts shown, line by line, whether taken or
// refused), reads a release's words and the diff between two, and holds a viewer and a missing CSRF
// token to the API's answers.
func TestReleases(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)
	b := p.browser()
	b.signIn(admin)
	if list := b.get("/ui/releases", http.StatusOK); !strings.Contains(list, `id="publish-form"`) || !strings.Contains(list, "No release is published yet.") {
		t.Fatalf("the releases page before any release:\n%s", list)
	}

	published := b.upload(releaseTar(t, p.pub, 1, map[string]string{"probe": "v1", "gone": "g"}), b.csrf, http.StatusCreated)
	for _, want := range []string{`id="published"`, `id="checks"`, "passed", "probe", "gone", "This release pins no agent binary."} {
		if !strings.Contains(published, want) {
			t.Fatalf("the answer to a published upload lacks %q:\n%s", want, published)
		}
	}
	if strings.Contains(published, "failed") {
		t.Fatalf("a published release shows a failed check:\n%s", published)
	}

	b.get("/ui/releases", http.StatusOK)
	refused := b.upload(releaseTar(t, keys.NewPublisher(), 2, map[string]string{"probe": "v1"}), b.csrf, http.StatusUnprocessableEntity)
	for _, want := range []string{`id="publish-refused"`, errcode.StatementSignatureInvalid, `id="checks"`, "failed", "skipped"} {
		if !strings.Contains(refused, want) {
			t.Fatalf("the answer to a refused upload lacks %q:\n%s", want, refused)
		}
	}
	b.get("/ui/releases", http.StatusOK)
	bad := b.upload([]byte("not a tar"), b.csrf, http.StatusBadRequest)
	if !strings.Contains(bad, errcode.RequestMalformed) {
		t.Fatalf("a file that is no tar:\n%s", bad)
	}

	b.get("/ui/releases", http.StatusOK)
	b.upload(releaseTar(t, p.pub, 2, map[string]string{"probe": "v2", "anew": "n"}), b.csrf, http.StatusCreated)
	if list := b.get("/ui/releases", http.StatusOK); !strings.Contains(list, `href="/ui/releases/2"`) || !strings.Contains(list, `href="/ui/releases/1"`) {
		t.Fatalf("the list after two releases:\n%s", list)
	}
	// Each release's expiry, read from its signed statement, is on the list and its page.
	if list := b.get("/ui/releases", http.StatusOK); len(regexp.MustCompile(`class="expires">\d{4}-\d\d-\d\d `).FindAllString(list, -1)) != 2 {
		t.Fatalf("the list does not show both releases' expiry:\n%s", list)
	}
	one := b.get("/ui/releases/1", http.StatusOK)
	if !regexp.MustCompile(`id="expires">\d{4}-`).MatchString(one) {
		t.Fatalf("release 1's page does not show its expiry:\n%s", one)
	}
	if !strings.Contains(one, "gone") || strings.Contains(one, "anew") || strings.Contains(one, `id="published"`) {
		t.Fatalf("release 1's page:\n%s", one)
	}
	diff := b.get("/ui/releases/diff", http.StatusOK) // the two newest, by default
	for _, want := range []string{"sequence 1", "sequence 2", `class="added"><td>+</td><td>word</td><td>anew`, `class="removed"><td>−</td><td>word</td><td>gone`,
		`class="changed"><td>~</td><td>word</td><td>probe`, "module changed", `id="contracts-kept"`} {
		if !strings.Contains(diff, want) {
			t.Fatalf("the diff 1→2 lacks %q:\n%s", want, diff)
		}
	}
	b.get("/ui/releases/diff?from=2&to=1", http.StatusOK)
	if body := b.get("/ui/releases/9", http.StatusNotFound); !strings.Contains(body, errcode.ReleaseNotFound) {
		t.Fatalf("a release that is not there: %s", body)
	}
	if body := b.get("/ui/releases/diff?from=x&to=1", http.StatusBadRequest); !strings.Contains(body, errcode.RequestMalformed) {
		t.Fatalf("a diff from no sequence: %s", body)
	}

	// No CSRF token, no upload; a viewer sees no form and is refused as the API refuses them.
	b.get("/ui/releases", http.StatusOK)
	if body := b.upload(releaseTar(t, p.pub, 3, map[string]string{"probe": "v2"}), "", http.StatusForbidden); !strings.Contains(body, errcode.AuthCSRF) {
		t.Fatalf("an upload without the CSRF token: %s", body)
	}
	v := p.browser()
	v.signIn(viewer)
	for _, path := range []string{"/ui/releases", "/ui/releases/1", "/ui/releases/diff"} {
		body := v.get(path, http.StatusOK)
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/ui/signout" {
				t.Errorf("%s offers a viewer the form %s", path, m[1])
			}
		}
	}
	if body := v.upload(releaseTar(t, p.pub, 3, map[string]string{"probe": "v2"}), v.csrf, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer's upload: %s", body)
	}
	if st, err := p.store.ReleaseList(t.Context(), store.ReleaseListParams{Limit: 10}); err != nil || len(st) != 2 {
		t.Fatalf("releases stored: %d %v", len(st), err)
	}
}
