package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// sourceTree writes a small repository at dir: a word in words/hello (outside the default layout, so
// it needs --map) and a driver in plugins/dns/fake (the default layout).
func sourceTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"go.mod":                         "module example.com/rebuildtest\n\ngo 1.26\n",
		"words/hello/main.go":            "package main\n\nfunc main() { println(\"hello\") }\n",
		"plugins/dns/fake/main.go":       "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"fake driver\") }\n",
		"words/hello/manifest.json":      `{"schema": "lexicon/manifest/v1", "name": "hello", "kind": "word", "version": "1.0.0", "class": "look", "summary": "Says hello.", "params": {"type": "object", "additionalProperties": false}, "output": {"type": "object"}, "module": {"file": "hello.wasm"}}`,
		"plugins/dns/fake/manifest.json": `{"schema": "lexicon/manifest/v1", "name": "fake", "kind": "driver", "version": "1.0.0", "class": "dns", "summary": "A fake.", "platforms": ["` + runtime.GOOS + "/" + runtime.GOARCH + `"], "module": {"file": "lexicon-driver-dns-fake"}}`,
	}
	for name, body := range files {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
}

// stage builds every module of the tree as the Makefile does and stages it as build --modules reads
// it; alter, if set, changes a module's bytes after the build.
func stage(t *testing.T, tree string, alter func(name string, data []byte) []byte) string {
	t.Helper()
	mods := t.TempDir()
	for name, folder := range map[string]string{"hello": "words/hello", "fake": "plugins/dns/fake"} {
		raw, err := os.ReadFile(filepath.Join(tree, folder, "manifest.json"))
		must(t, err)
		m, err := manifest.Parse(raw)
		must(t, err)
		data, err := buildModule(context.Background(), tree, folder, m, filepath.Join(t.TempDir(), name))
		must(t, err)
		if alter != nil {
			data = alter(name, data)
		}
		must(t, os.MkdirAll(filepath.Join(mods, name), 0o755))
		must(t, os.WriteFile(filepath.Join(mods, name, "manifest.json"), raw, 0o644))
		must(t, os.WriteFile(filepath.Join(mods, name, m.Module.File), data, 0o644))
	}
	return mods
}

// TestRebuildCheck builds a release twice from one tree, checked out at two paths (the second under
// git, so a VCS stamp or a build path would show), and gets identical digests; rebuild-check then
// matches every module against the other checkout. A release with one module altered after its build
// is a mismatch with its code and a failing exit; a module with no source folder is reported, not
// failed.
func TestRebuildCheck(t *testing.T) {
	work := t.TempDir()
	treeA, treeB := filepath.Join(work, "a"), filepath.Join(work, "checkout-b")
	sourceTree(t, treeA)
	sourceTree(t, treeB)
	if git, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tree"}} {
			cmd := exec.Command(git, args...)
			cmd.Dir = treeB
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	k := filepath.Join(work, "keys")
	if code, res := runJSON(t, "keygen", "--out", k); code != 0 {
		t.Fatalf("keygen: %v", res)
	}
	release := func(mods, out string) map[string]string {
		t.Helper()
		code, res := runJSON(t, "build", "--key", filepath.Join(k, "publisher.key"), "--modules", mods,
			"--release", "1.0.0", "--sequence", "1", "--out", out)
		if code != 0 {
			t.Fatalf("build: %v", res)
		}
		digests := map[string]string{}
		for _, m := range res["modules"].([]any) {
			m := m.(map[string]any)
			digests[m["name"].(string)] = m["sha256"].(string)
		}
		return digests
	}
	relA, relB := filepath.Join(work, "rel-a"), filepath.Join(work, "rel-b")
	da, db := release(stage(t, treeA, nil), relA), release(stage(t, treeB, nil), relB)
	if len(da) != 2 || da["hello"] != db["hello"] || da["fake"] != db["fake"] {
		t.Fatalf("two builds of one tree differ: %v and %v", da, db)
	}

	code, res := runJSON(t, "rebuild-check", "--release", relA, "--source", treeB, "--map", "hello=words/hello")
	if code != 0 || res["matched"] != float64(2) || res["mismatched"] != float64(0) {
		t.Fatalf("rebuild-check of an honest release: %d %v", code, res)
	}

	tampered := filepath.Join(work, "rel-t")
	release(stage(t, treeA, func(name string, data []byte) []byte {
		if name == "fake" {
			return append(data, 0)
		}
		return data
	}), tampered)
	code, res = runJSON(t, "rebuild-check", "--release", tampered, "--source", treeB, "--map", "hello=words/hello")
	status := moduleStatus(res)
	if code != 1 || status["fake"] != rebuildMismatch+" "+errcode.RebuildMismatch || status["hello"] != rebuildMatch+" " {
		t.Fatalf("rebuild-check of a tampered release: %d %v", code, res)
	}
	code, out, _ := run(t, "rebuild-check", "--release", tampered, "--source", treeB, "--map", "hello=words/hello")
	if code != 1 || !containsAll(out, "MISMATCH", "driver fake@1.0.0", "match            word hello@1.0.0") {
		t.Fatalf("rebuild-check text: %d\n%s", code, out)
	}

	// Without --map the word's folder is not where the layout says: reported, and not a failure.
	code, res = runJSON(t, "rebuild-check", "--release", relA, "--source", treeB)
	status = moduleStatus(res)
	if code != 0 || status["hello"] != rebuildNotRebuildable+" "+errcode.RebuildNoSource || status["fake"] != rebuildMatch+" " {
		t.Fatalf("rebuild-check without the map: %d %v", code, res)
	}
	if code, res := runJSON(t, "rebuild-check", "--release", relA, "--source", treeB, "--map", "hello=../elsewhere"); code != 2 || res["code"] != errcode.UsageInvalid {
		t.Fatalf("--map outside the tree: %d %v", code, res)
	}
}

// moduleStatus maps each module of a rebuild-check answer to "status code".
func moduleStatus(res map[string]any) map[string]string {
	out := map[string]string{}
	mods, _ := res["modules"].([]any)
	for _, m := range mods {
		m, _ := m.(map[string]any)
		name, _ := m["name"].(string)
		status, _ := m["status"].(string)
		code, _ := m["code"].(string)
		out[name] = status + " " + code
	}
	return out
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
