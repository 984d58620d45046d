package caps

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// convergeWord declares the footprint capabilities over root, under the node's bounds b, with the
// agent's folder reserved, staged artifacts kept in state and fetched from plane.
func convergeWord(t *testing.T, root, state string, b *footprint.Bounds, plane Fetcher, reserved ...string) *Dispatcher {
	t.Helper()
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": "converge", "kind": "word", "version": "1.0.0", "class": "change",
		"summary": "converge", "params": json.RawMessage(`{"type":"object","additionalProperties":false}`),
		"output": json.RawMessage(`{"type":"object"}`), "module": map[string]any{"file": "c.wasm"},
		"capabilities": []map[string]any{
			{"cap": "artifact.fetch", "max_bytes": 1 << 20},
			{"cap": "fs.install", "paths": []string{root}},
			{"cap": "fs.digest", "paths": []string{root}},
			{"cap": "footprint.check"},
			{"cap": "account.read", "names": []string{"*"}},
			{"cap": "sysctl.read", "names": []string{"net.*"}},
		},
	}
	raw, _ := json.Marshal(doc)
	m, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{ConvergeDir: state, Artifacts: plane, Reserved: reserved}
	if b != nil {
		env.Converge = func() (*footprint.Bounds, error) { return b, nil }
	}
	w, err := Prepare(m, env)
	if err != nil {
		t.Fatal(err)
	}
	return w.Invocation()
}

// stage puts data in the staging folder as artifact.fetch would.
func stage(t *testing.T, state string, data []byte) string {
	t.Helper()
	s, err := cas.Open(filepath.Join(state, stagedDir))
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func install(path, digest string) map[string]any {
	return map[string]any{"cap": "fs.install", "path": path, "sha256": digest, "mode": 0o640, "owner": "root", "group": "root"}
}

func wantCode(t *testing.T, e *errcode.Body, code string) {
	t.Helper()
	if e == nil || e.Code != code {
		t.Fatalf("want %s, got %+v", code, e)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInstall: folders missing beneath the root are made; a link that leads out of the policy's root,
// a target that is a link, the agent's own folder, bytes altered after staging and setuid modes are all
// refused with nothing written; a temporary file left by a killed run is replaced.
func TestInstall(t *testing.T) {
	root, state := testkit.SafeDir(t), t.TempDir()
	app, secret := filepath.Join(root, "app"), filepath.Join(root, "secret")
	mkfile(t, filepath.Join(secret, "keep"), "secret")
	d := convergeWord(t, root, state, &footprint.Bounds{Paths: []string{app}}, nil, filepath.Join(app, "agent"))
	v1 := stage(t, state, []byte("v1\n"))

	res, e := call(t, d, install(filepath.Join(app, "conf.d", "web.conf"), v1))
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(string(res), `"changed":["content"]`) || read(t, filepath.Join(app, "conf.d", "web.conf")) != "v1\n" {
		t.Fatalf("%s", res)
	}
	if fi, _ := os.Stat(filepath.Join(app, "conf.d", "web.conf")); fi.Mode().Perm() != 0o640 {
		t.Fatal(fi.Mode())
	}
	res, e = call(t, d, install(filepath.Join(app, "conf.d", "web.conf"), v1))
	if e != nil || !strings.Contains(string(res), `"changed":[]`) {
		t.Fatalf("installing the same bytes again changed %s %v", res, e)
	}

	// A link inside the manifest's root but leading out of the policy's.
	if err := os.Symlink(secret, filepath.Join(app, "escape")); err != nil {
		t.Fatal(err)
	}
	_, e = call(t, d, install(filepath.Join(app, "escape", "keep"), v1))
	wantCode(t, e, errcode.FootprintRefused)
	if read(t, filepath.Join(secret, "keep")) != "secret" {
		t.Fatal("written through a link out of the policy's root")
	}
	// A link in the target's place.
	if err := os.Symlink(filepath.Join(secret, "keep"), filepath.Join(app, "link.conf")); err != nil {
		t.Fatal(err)
	}
	_, e = call(t, d, install(filepath.Join(app, "link.conf"), v1))
	wantCode(t, e, errcode.CapabilityDenied)
	// The agent's own folder, which the policy covers.
	_, e = call(t, d, install(filepath.Join(app, "agent", "policy.json"), v1))
	wantCode(t, e, errcode.FootprintRefused)
	if _, err := os.Stat(filepath.Join(app, "agent")); !os.IsNotExist(err) {
		t.Fatal("a folder was made in the agent's own folder")
	}

	// A killed run left its temporary file: the next install replaces it and leaves none.
	target := filepath.Join(app, "conf.d", "web.conf")
	mkfile(t, filepath.Join(app, "conf.d", tempName("web.conf")), "half of a write")
	v2 := stage(t, state, []byte("v2\n"))
	if _, e = call(t, d, install(target, v2)); e != nil {
		t.Fatal(e)
	}
	if left, _ := filepath.Glob(filepath.Join(app, "conf.d", ".lexicon-*")); len(left) != 0 || read(t, target) != "v2\n" {
		t.Fatalf("left %v", left)
	}

	// Staged bytes altered on disk are never written.
	v3 := stage(t, state, []byte("v3\n"))
	if err := os.WriteFile(filepath.Join(state, stagedDir, "sha256", v3), []byte("tampered\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, e = call(t, d, install(target, v3))
	wantCode(t, e, errcode.FootprintDigestMismatch)
	if read(t, target) != "v2\n" {
		t.Fatal("altered staged bytes were written")
	}
	_, e = call(t, d, install(target, strings.Repeat("ab", 32)))
	wantCode(t, e, errcode.CapabilityNotFound)
	req := install(target, v2)
	req["mode"] = 0o4755
	_, e = call(t, d, req)
	wantCode(t, e, errcode.CapabilityInvalid)
}

// TestBoundsRefuseEverythingWithoutPolicy: with no converge bounds (no policy section), every item is
// refused, and a policy that cannot be read refuses saying so.
func TestBoundsRefuseEverythingWithoutPolicy(t *testing.T) {
	root, state := testkit.SafeDir(t), t.TempDir()
	d := convergeWord(t, root, state, nil, nil)
	v1 := stage(t, state, []byte("v1\n"))
	_, e := call(t, d, install(filepath.Join(root, "a"), v1))
	wantCode(t, e, errcode.FootprintRefused)

	fp := footprint.Footprint{Schema: footprint.SchemaName, Files: []footprint.File{{Path: filepath.Join(root, "a"), SHA256: v1, Size: 3, Mode: "0644", Owner: "root", Group: "root"}},
		Firewall: &footprint.Firewall{State: "absent"}}
	res, e := call(t, d, map[string]any{"cap": "footprint.check", "footprint": fp})
	if e != nil {
		t.Fatal(e)
	}
	var out struct {
		Refused []struct{ Item, Code, Reason string }
	}
	json.Unmarshal(res, &out)
	if len(out.Refused) != 2 || out.Refused[0].Code != errcode.FootprintRefused || !strings.Contains(out.Refused[1].Reason, "nft.apply") {
		t.Fatalf("%+v", out.Refused)
	}
}

// fakePlane serves one digest with the bytes given, counting fetches.
type fakePlane struct {
	digest string
	data   []byte
	n      int
}

func (p *fakePlane) Artifact(_ context.Context, q url.Values, limit int64) ([]byte, error) {
	p.n++
	if q.Get("sha256") != p.digest {
		return nil, errcode.New(errcode.ModuleNotFound, "no artifact %s", q.Get("sha256"))
	}
	if int64(len(p.data)) > limit {
		return nil, errcode.New(errcode.RequestTooLarge, "over %d", limit)
	}
	return p.data, nil
}

// TestArtifactFetch: bytes that do not hash to their digest, or are not the size named, are not
// staged; an artifact already staged is not fetched again; a missing one is capability.not_found.
func TestArtifactFetch(t *testing.T) {
	good := []byte("the bytes\n")
	plane := &fakePlane{digest: cas.Sum(good), data: []byte("other bytes\n")}
	state := t.TempDir()
	d := convergeWord(t, testkit.SafeDir(t), state, &footprint.Bounds{}, plane)
	_, e := call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": plane.digest})
	wantCode(t, e, errcode.FootprintDigestMismatch)
	if _, err := os.Stat(filepath.Join(state, stagedDir, "sha256", plane.digest)); !os.IsNotExist(err) {
		t.Fatal("wrong bytes were staged")
	}
	plane.data = good
	_, e = call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": plane.digest, "size": 3})
	wantCode(t, e, errcode.FootprintDigestMismatch)
	res, e := call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": plane.digest, "size": len(good)})
	if e != nil || !strings.Contains(string(res), `"fetched":true`) {
		t.Fatalf("%s %v", res, e)
	}
	res, e = call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": plane.digest})
	if e != nil || !strings.Contains(string(res), `"fetched":false`) || plane.n != 3 {
		t.Fatalf("%s %v, %d fetches", res, e, plane.n)
	}
	_, e = call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": strings.Repeat("0", 64)})
	wantCode(t, e, errcode.CapabilityNotFound)
	_, e = call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": plane.digest[:10]})
	wantCode(t, e, errcode.CapabilityInvalid)
	_, e = call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": strings.Repeat("1", 64), "size": 2 << 20})
	wantCode(t, e, errcode.FootprintTooLarge)
}

// TestAuthorizedKeysNeverFollowLinks: a user who links ~/.ssh/authorized_keys (or ~/.ssh) at another
// file gets neither that file's lines read nor that file written.
func TestAuthorizedKeysNeverFollowLinks(t *testing.T) {
	home := testkit.SafeDir(t)
	secret := filepath.Join(t.TempDir(), "shadow")
	mkfile(t, secret, "root:$6$secret:19000::::::\n")
	u := passwdEntry{name: "web", uid: os.Getuid(), gid: os.Getgid(), home: home}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(home, ".ssh", "authorized_keys")); err != nil {
		t.Fatal(err)
	}
	if keys, err := readAuthorizedKeys(u); err == nil {
		t.Fatalf("read through a link: %q", keys)
	}
	if err := writeAuthorizedKeys(u, []string{"ssh-ed25519 AAAA web"}); err != nil {
		t.Fatal(err)
	}
	if read(t, secret) != "root:$6$secret:19000::::::\n" {
		t.Fatal("wrote through a link")
	}
	if fi, _ := os.Lstat(filepath.Join(home, ".ssh", "authorized_keys")); !fi.Mode().IsRegular() || read(t, filepath.Join(home, ".ssh", "authorized_keys")) != "ssh-ed25519 AAAA web\n" {
		t.Fatal("the link was not replaced by the keys")
	}
	// .ssh itself a link.
	if err := os.RemoveAll(filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	if _, err := readAuthorizedKeys(u); err == nil {
		t.Fatal("read through a linked .ssh")
	}
	if err := writeAuthorizedKeys(u, []string{"ssh-ed25519 AAAA web"}); err == nil {
		t.Fatal("wrote through a linked .ssh")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(secret), "authorized_keys")); !os.IsNotExist(err) {
		t.Fatal("a file appeared beside the secret")
	}
}

// TestSysctlKeysStayInProcSys: a key is dotted words, so no key reaches a file outside /proc/sys.
func TestSysctlKeysStayInProcSys(t *testing.T) {
	d := convergeWord(t, testkit.SafeDir(t), t.TempDir(), &footprint.Bounds{}, nil)
	for _, k := range []string{"net.ipv4/../../../etc/shadow", "net..x", "net", "net.ipv4.*"} {
		_, e := call(t, d, map[string]any{"cap": "sysctl.read", "keys": []string{k}})
		wantCode(t, e, errcode.CapabilityInvalid)
	}
	_, e := call(t, d, map[string]any{"cap": "sysctl.read", "keys": []string{"vm.swappiness"}})
	wantCode(t, e, errcode.CapabilityDenied)
}

// awayPlane answers every fetch with code.
type awayPlane struct {
	code string
	n    int
}

func (p *awayPlane) Artifact(context.Context, url.Values, int64) ([]byte, error) {
	p.n++
	return nil, errcode.New(p.code, "the plane is away")
}

// TestArtifactFetchNamesThePlanesAnswer: what the fetcher finally answered (it asks again itself while
// the plane is away: agent/internal/client) fails the fetch as capability.failed, asked once here.
func TestArtifactFetchNamesThePlanesAnswer(t *testing.T) {
	good := []byte("the bytes\n")
	for _, code := range []string{errcode.PlaneUnreachable, errcode.AuthForbidden} {
		plane := &awayPlane{code: code}
		d := convergeWord(t, testkit.SafeDir(t), t.TempDir(), &footprint.Bounds{}, plane)
		_, e := call(t, d, map[string]any{"cap": "artifact.fetch", "sha256": cas.Sum(good)})
		wantCode(t, e, errcode.CapabilityFailed)
		if plane.n != 1 {
			t.Fatalf("%s: fetched %d times", code, plane.n)
		}
	}
}
