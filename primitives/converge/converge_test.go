package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/host/wasm/wasmtest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const module = "../../build/wasm/converge.wasm"

type report struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Changes []string `json:"changes"`
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Diff    string   `json:"diff"`
}

type output struct {
	Mode    string          `json:"mode"`
	Result  string          `json:"result"`
	Items   []report        `json:"items"`
	Fetched int             `json:"fetched"`
	Pending []capv1.Pending `json:"pending"`
	Counts  struct {
		Unchanged, Changed, Failed, Refused int
	} `json:"counts"`
}

func (o output) status() string {
	var s []string
	for _, it := range o.Items {
		s = append(s, it.ID+"="+it.Status)
	}
	return strings.Join(s, " ")
}

func (o output) item(id string) report {
	for _, it := range o.Items {
		if it.ID == id {
			return it
		}
	}
	return report{}
}

// node is a test node: a root folder fs.install accepts, a plane's artifact route, a fake service
// manager reading unit files from the root, and the folder the footprint capabilities keep state in.
type node struct {
	t      *testing.T
	root   string
	plane  *wasmtest.Artifacts
	sd     *wordtest.FakeSystemd
	state  string
	bounds footprint.Bounds
}

func newNode(t *testing.T) *node {
	root := wordtest.WritableDir(t)
	n := &node{t: t, root: root, plane: wasmtest.NewArtifacts(t), state: filepath.Join(t.TempDir(), "converge"),
		sd: wordtest.NewFakeSystemd(map[string]string{
			"web.service": "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=disabled\n",
		})}
	n.bounds = footprint.Bounds{Paths: []string{root}, Units: []string{"web.service"}}
	return n
}

func (n *node) word(opts ...wordtest.Option) *wordtest.Word {
	all := []wordtest.Option{wordtest.WithSystemd(n.sd), wordtest.WithArtifacts(n.plane), wordtest.WithConvergeDir(n.state),
		wordtest.WithConverge(n.bounds), wordtest.WithReserved(filepath.Join(n.root, "agent")),
		wordtest.Paths(capv1.CapFSDigest, n.root), wordtest.Paths(capv1.CapFSDiff, n.root), wordtest.Paths(capv1.CapFSInstall, n.root)}
	return wordtest.Load(n.t, module, "manifest.json", append(all, opts...)...)
}

// file is a file item whose bytes the plane serves.
func (n *node) file(rel, content, mode string) footprint.File {
	d := n.plane.Put([]byte(content))
	return footprint.File{Path: filepath.Join(n.root, rel), SHA256: d, Size: int64(len(content)), Mode: mode, Owner: "root", Group: "root"}
}

func (n *node) run(w *wordtest.Word, params any) (output, *wasm.Result) {
	n.t.Helper()
	res := w.Run(params)
	var out output
	if len(res.Output) > 0 {
		if err := json.Unmarshal(res.Output, &out); err != nil {
			n.t.Fatal(err)
		}
	}
	return out, res
}

func (n *node) mustRun(w *wordtest.Word, params any) output {
	n.t.Helper()
	out, res := n.run(w, params)
	if res.Outcome != wasm.Completed {
		n.t.Fatalf("%s %s: %s\n%s", res.Outcome, res.Code, res.Message, res.Output)
	}
	return out
}

func apply(fp *footprint.Footprint) map[string]any {
	return map[string]any{"mode": "apply", "footprint": fp}
}

func fpOf(files []footprint.File, units ...footprint.Unit) *footprint.Footprint {
	return &footprint.Footprint{Schema: footprint.SchemaName, Files: files, Units: units}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConvergeThenNothing: a first converge writes the files (mode and owner as declared), starts
// and enables the unit, and fetches each file once; a second changes nothing and fetches nothing.
func TestConvergeThenNothing(t *testing.T) {
	n := newNode(t)
	conf := n.file("web/web.conf", "listen 80\n", "0640")
	page := n.file("www/index.html", "<h1>hi</h1>\n", "0644")
	fp := fpOf([]footprint.File{conf, page}, footprint.Unit{Name: "web.service", Enabled: true, Started: true, Files: []string{conf.Path}})
	w := n.word()
	out := n.mustRun(w, apply(fp))
	if out.Result != "converged" || out.status() != "file:"+conf.Path+"=changed file:"+page.Path+"=changed unit:web.service=changed" || out.Fetched != 2 {
		t.Fatalf("%s %s fetched %d", out.Result, out.status(), out.Fetched)
	}
	if got := readFile(t, conf.Path); got != "listen 80\n" {
		t.Fatal(got)
	}
	if fi, _ := os.Stat(conf.Path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if a := strings.Join(n.sd.Actions(), ","); a != "daemon-reload,enable web.service,start web.service" {
		t.Fatalf("actions %s", a)
	}
	if len(n.plane.Served()) != 2 {
		t.Fatalf("served %v", n.plane.Served())
	}

	out = n.mustRun(n.word(), apply(fp))
	if out.Counts.Unchanged != 3 || out.Counts.Changed != 0 || out.Fetched != 0 {
		t.Fatalf("second run: %s fetched %d", out.status(), out.Fetched)
	}
	if len(n.plane.Served()) != 2 || len(n.sd.Actions()) != 3 {
		t.Fatalf("the second run fetched %v or acted %v", n.plane.Served(), n.sd.Actions())
	}
}

// TestFileChangeRestartsUnit: changing a unit's file restarts a running unit (or reloads it), and a
// change of mode alone rewrites nothing and fetches nothing.
func TestFileChangeRestartsUnit(t *testing.T) {
	n := newNode(t)
	n.sd.AddUnit("web.service", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n")
	n.sd.AddUnit("api.service", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n")
	n.bounds.Units = []string{"web.service", "api.service"}
	conf := n.file("web.conf", "v1\n", "0644")
	api := n.file("api.conf", "v1\n", "0644")
	units := []footprint.Unit{{Name: "web.service", Enabled: true, Started: true, Files: []string{conf.Path}},
		{Name: "api.service", Enabled: true, Started: true, Files: []string{api.Path}, OnChange: "reload"}}
	n.mustRun(n.word(), apply(fpOf([]footprint.File{conf, api}, units...)))
	if a := strings.Join(n.sd.Actions(), ","); a != "restart web.service,reload api.service" {
		t.Fatalf("first: %s", a)
	}
	conf2 := n.file("web.conf", "v2\n", "0644")
	out := n.mustRun(n.word(), apply(fpOf([]footprint.File{conf2, api}, units...)))
	if a := strings.Join(n.sd.Actions(), ","); a != "restart web.service,reload api.service,restart web.service" {
		t.Fatalf("second: %s (%s)", a, out.status())
	}
	if it := out.item("unit:web.service"); it.Status != "changed" || !slices.Equal(it.Changes, []string{"restart"}) {
		t.Fatalf("%+v", it)
	}
	served := len(n.plane.Served())
	api.Mode = "0600"
	out = n.mustRun(n.word(), apply(fpOf([]footprint.File{conf2, api}, units...)))
	if it := out.item("file:" + api.Path); it.Status != "changed" || !slices.Equal(it.Changes, []string{"mode"}) || len(n.plane.Served()) != served {
		t.Fatalf("%+v served %d", it, len(n.plane.Served()))
	}
}

// TestPlan changes nothing and shows a unified diff for each file whose content differs.
func TestPlan(t *testing.T) {
	n := newNode(t)
	conf := n.file("web.conf", "a\nb\nc\n", "0644")
	n.mustRun(n.word(), apply(fpOf([]footprint.File{conf})))
	conf2 := n.file("web.conf", "a\nB\nc\n", "0644")
	fresh := n.file("new.conf", "new\n", "0644")
	out := n.mustRun(n.word(), map[string]any{"mode": "plan", "footprint": fpOf([]footprint.File{conf2, fresh})})
	if out.Result != "planned" || out.status() != "file:"+conf2.Path+"=would_change file:"+fresh.Path+"=would_change" {
		t.Fatal(out.status())
	}
	wantDiff := "--- a" + conf.Path + "\n+++ b" + conf.Path + "\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
	if d := out.item("file:" + conf.Path).Diff; d != wantDiff {
		t.Fatalf("diff\n%s\nwant\n%s", d, wantDiff)
	}
	if d := out.item("file:" + fresh.Path).Diff; !strings.HasPrefix(d, "--- /dev/null\n") || !strings.Contains(d, "+new\n") {
		t.Fatal(d)
	}
	if readFile(t, conf.Path) != "a\nb\nc\n" {
		t.Fatal("plan changed a file")
	}
	if _, err := os.Stat(fresh.Path); !os.IsNotExist(err) {
		t.Fatal("plan made a file")
	}
	// The plan staged what it fetched: the apply after it fetches nothing more.
	served := len(n.plane.Served())
	out = n.mustRun(n.word(), apply(fpOf([]footprint.File{conf2, fresh})))
	if out.Fetched != 0 || len(n.plane.Served()) != served || readFile(t, conf.Path) != "a\nB\nc\n" {
		t.Fatalf("fetched %d, served %d then %d", out.Fetched, served, len(n.plane.Served()))
	}
}

// TestRefusedOutsideBounds: a file beneath no root of the node's policy refuses the whole footprint:
// the job fails footprint.refused, its report names the item, and nothing is fetched or written.
func TestRefusedOutsideBounds(t *testing.T) {
	n := newNode(t)
	inside := n.file("ok/a.conf", "a\n", "0644")
	n.bounds.Paths = []string{filepath.Join(n.root, "ok")}
	outside := n.file("other/b.conf", "b\n", "0644")
	out, res := n.run(n.word(), apply(fpOf([]footprint.File{inside, outside})))
	if res.Outcome != wasm.Failed || res.Code != errcode.FootprintRefused {
		t.Fatalf("%s %s %s", res.Outcome, res.Code, res.Message)
	}
	if out.Result != "refused" || out.status() != "file:"+inside.Path+"=skipped file:"+outside.Path+"=refused" {
		t.Fatal(out.status())
	}
	if it := out.item("file:" + outside.Path); !strings.Contains(it.Message, "node's policy") {
		t.Fatal(it.Message)
	}
	if _, err := os.Stat(inside.Path); !os.IsNotExist(err) || len(n.plane.Served()) != 0 {
		t.Fatal("a refused footprint touched something")
	}

	// The agent's own folder is refused whatever the policy says.
	n.bounds.Paths = []string{n.root}
	own := n.file("agent/policy.json", `{"classes": {}}`, "0600")
	_, res = n.run(n.word(), apply(fpOf([]footprint.File{own})))
	if res.Code != errcode.FootprintRefused || !strings.Contains(res.Message, "agent's own folder") {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
}

// TestTooLarge: a file over the node's max_file_bytes, or over the word's own max_bytes, is refused
// before anything is fetched.
func TestTooLarge(t *testing.T) {
	n := newNode(t)
	big := n.file("big.bin", strings.Repeat("x", 4096), "0644")
	n.bounds.MaxFileBytes = 1024
	out, res := n.run(n.word(), apply(fpOf([]footprint.File{big})))
	if res.Code != errcode.FootprintTooLarge || out.item("file:"+big.Path).Code != errcode.FootprintTooLarge {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	n.bounds.MaxFileBytes = 0
	w := n.word(wordtest.WithManifest(func(m *manifest.Manifest) {
		for i := range m.Capabilities {
			if m.Capabilities[i].Cap == capv1.CapArtifactFetch {
				m.Capabilities[i].MaxBytes = 1024
			}
		}
	}))
	_, res = n.run(w, apply(fpOf([]footprint.File{big})))
	if res.Code != errcode.FootprintTooLarge || !strings.Contains(res.Message, "converge word's limit") {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
	if len(n.plane.Served()) != 0 {
		t.Fatal("fetched a file over the limit")
	}
}

// TestBadFootprint: a footprint that fails the published schema is refused by the host before the
// word runs, naming the member; one breaking a rule the schema cannot say is refused by the word.
func TestBadFootprint(t *testing.T) {
	n := newNode(t)
	w := n.word()
	_, res := n.run(w, map[string]any{"footprint": map[string]any{"schema": footprint.SchemaName,
		"files": []map[string]any{{"path": filepath.Join(n.root, "a"), "sha256": strings.Repeat("0", 64), "size": 1, "mode": "4755", "owner": "root", "group": "root"}}}})
	if res.Outcome != wasm.Refused || res.Code != errcode.WordParamInvalid || res.Details[errcode.DetailField] != "/footprint/files/0/mode" {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	f := n.file("a", "a", "0644")
	_, res = n.run(w, apply(fpOf([]footprint.File{f, f})))
	if res.Code != errcode.FootprintInvalid || res.Details[errcode.DetailField] != "/footprint/files/1/path" {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
	_, res = n.run(w, map[string]any{"items": []string{"file:/etc/x"}})
	if res.Code != errcode.FootprintNoRecord {
		t.Fatalf("%s %s", res.Code, res.Message)
	}
}

// TestDigestMismatch: bytes from the plane that do not hash to the file's digest fail the item and
// write nothing; the other items converge.
func TestDigestMismatch(t *testing.T) {
	n := newNode(t)
	good := n.file("good.conf", "good\n", "0644")
	bad := footprint.File{Path: filepath.Join(n.root, "bad.conf"), SHA256: cas.Sum([]byte("expected\n")), Size: 9, Mode: "0644", Owner: "root", Group: "root"}
	n.plane.PutAs(bad.SHA256, []byte("tampered\n"))
	out, res := n.run(n.word(), apply(fpOf([]footprint.File{good, bad})))
	if res.Code != errcode.FootprintItemsFailed || out.item("file:"+bad.Path).Code != errcode.FootprintDigestMismatch || out.item("file:"+good.Path).Status != "changed" {
		t.Fatalf("%s %s: %s", res.Code, res.Message, out.status())
	}
	if _, err := os.Stat(bad.Path); !os.IsNotExist(err) {
		t.Fatal("wrote bytes that do not match their digest")
	}
}

// TestRepairItems converges named items of the footprint the node recorded, which is what the enforce
// recipe's repair asks: a file edited by hand is put back, and its unit restarted.
func TestRepairItems(t *testing.T) {
	n := newNode(t)
	conf := n.file("web.conf", "v1\n", "0644")
	page := n.file("page.html", "p\n", "0644")
	unit := footprint.Unit{Name: "web.service", Enabled: true, Started: true, Files: []string{conf.Path}}
	n.mustRun(n.word(), apply(fpOf([]footprint.File{conf, page}, unit)))
	if err := os.WriteFile(conf.Path, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(n.sd.Actions())
	out := n.mustRun(n.word(), map[string]any{"items": []string{"file:" + conf.Path}})
	if out.status() != "file:"+conf.Path+"=changed unit:web.service=changed" || readFile(t, conf.Path) != "v1\n" {
		t.Fatalf("%s: %q", out.status(), readFile(t, conf.Path))
	}
	if a := n.sd.Actions()[before:]; !slices.Equal(a, []string{"restart web.service"}) {
		t.Fatal(a)
	}
	// The record is still the whole footprint.
	out = n.mustRun(n.word(), map[string]any{"items": []string{"file:" + page.Path}})
	if out.status() != "file:"+page.Path+"=unchanged" {
		t.Fatal(out.status())
	}
	_, res := n.run(n.word(), map[string]any{"items": []string{"file:/nowhere"}})
	if res.Code != errcode.FootprintInvalid || res.Details[errcode.DetailField] != "/items/0" {
		t.Fatalf("%s %v", res.Code, res.Details)
	}
}

// aptNode is a node whose package manager is real apt and dpkg on its own Debian root with the fixture
// repository (apttest): liblexfix1, lexfix-daemon, lexfix-tool 1.0 and lexfix-held 1.0 (held)
// installed.
func aptNode(t *testing.T) (*node, *apttest.Root) {
	n := newNode(t)
	n.bounds.Packages = []string{"liblexfix*", "lexfix-*"}
	return n, apttest.NewRoot(t)
}

func (n *node) aptWord(r *apttest.Root, opts ...wordtest.Option) *wordtest.Word {
	return n.word(append([]wordtest.Option{wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir})}, opts...)...)
}

func pkgs(ps ...footprint.Package) *footprint.Footprint {
	return &footprint.Footprint{Schema: footprint.SchemaName, Packages: ps}
}

// TestPackages: package items go through pkg.ensure to real apt and dpkg. A package is installed, one
// brought to a declared version, one removed, one already as declared left alone, all in one run with
// the footprint's file; a second apply changes nothing; a plan changes nothing.
func TestPackages(t *testing.T) {
	n, r := aptNode(t)
	conf := n.file("tool.conf", "tool\n", "0644")
	fp := pkgs(footprint.Package{Name: apttest.Lib, State: "present"}, footprint.Package{Name: apttest.Tool, State: "present", Version: "1.1"},
		footprint.Package{Name: apttest.Extra, State: "present"}, footprint.Package{Name: apttest.Daemon, State: "absent"})
	fp.Files = []footprint.File{conf}

	out, res := n.run(n.aptWord(r), map[string]any{"mode": "plan", "footprint": fp})
	if res.Outcome != wasm.Completed || out.status() != "package:liblexfix1=unchanged package:lexfix-tool=would_change package:lexfix-extra=would_change package:lexfix-daemon=would_change file:"+conf.Path+"=would_change" {
		t.Fatalf("plan: %s %s: %s", res.Code, res.Message, out.status())
	}
	if v := r.Version(t, apttest.Tool); v != "1.0 installed" {
		t.Fatalf("the plan changed lexfix-tool: %q", v)
	}

	out = n.mustRun(n.aptWord(r), apply(fp))
	if out.status() != "package:liblexfix1=unchanged package:lexfix-tool=changed package:lexfix-extra=changed package:lexfix-daemon=changed file:"+conf.Path+"=changed" {
		t.Fatal(out.status())
	}
	if c := out.item("package:lexfix-tool").Changes; len(c) != 1 || c[0] != "version 1.0, not 1.1" {
		t.Fatalf("%q", c)
	}
	for p, want := range map[string]string{apttest.Lib: "1.0 installed", apttest.Tool: "1.1 installed", apttest.Extra: "1.0 installed"} {
		if v := r.Version(t, p); v != want {
			t.Fatalf("%s is %q, want %q", p, v, want)
		}
	}
	if v := r.Version(t, apttest.Daemon); strings.HasSuffix(v, " installed") {
		t.Fatalf("lexfix-daemon is still %q", v)
	}

	out = n.mustRun(n.aptWord(r), apply(fp))
	if out.Counts.Changed != 0 || out.Counts.Unchanged != 5 {
		t.Fatal(out.status())
	}

	// A declared version older than the installed one is installed: the footprint says which.
	out = n.mustRun(n.aptWord(r), apply(pkgs(footprint.Package{Name: apttest.Tool, State: "present", Version: "1.0"})))
	if out.status() != "package:lexfix-tool=changed" || r.Version(t, apttest.Tool) != "1.0 installed" {
		t.Fatalf("%s: %q", out.status(), r.Version(t, apttest.Tool))
	}
}

// TestPackagesBounded: what the package manager would do beyond the footprint, or beyond the node's
// bounds, fails the package items before anything runs, each with its code; a package outside the
// bounds refuses the whole converge.
func TestPackagesBounded(t *testing.T) {
	n, r := aptNode(t)
	unchanged := func(t *testing.T) {
		t.Helper()
		for p, want := range map[string]string{apttest.Lib: "1.0 installed", apttest.Daemon: "1.0 installed", apttest.Held: "1.0 installed"} {
			if v := r.Version(t, p); v != want {
				t.Fatalf("%s is %q, want %q", p, v, want)
			}
		}
		if v := r.Version(t, apttest.Plugin); v != "" {
			t.Fatalf("lexfix-plugin is %q", v)
		}
	}
	for _, c := range []struct {
		name   string
		bounds []string
		pkg    footprint.Package
		code   string
	}{
		// Removing the library would remove the daemon too, which the footprint does not declare absent.
		{"would remove", nil, footprint.Package{Name: apttest.Lib, State: "absent"}, errcode.PkgWouldRemove},
		{"held", nil, footprint.Package{Name: apttest.Held, State: "present", Version: "1.1"}, errcode.PkgHeld},
		// lexfix-plugin 1.1 needs lexfix-extra, which these bounds leave out.
		{"dependency out of bounds", []string{"lexfix-plugin"}, footprint.Package{Name: apttest.Plugin, State: "present", Version: "1.1"}, errcode.FootprintRefused},
		{"no such version", nil, footprint.Package{Name: apttest.Tool, State: "present", Version: "9.9"}, errcode.PkgUnresolvable},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.bounds != nil {
				n.bounds.Packages = c.bounds
				defer func() { n.bounds.Packages = []string{"liblexfix*", "lexfix-*"} }()
			}
			out, res := n.run(n.aptWord(r), apply(pkgs(c.pkg)))
			id := "package:" + c.pkg.Name
			if res.Code != errcode.FootprintItemsFailed || out.item(id).Status != "failed" || out.item(id).Code != c.code {
				t.Fatalf("%s %s: %+v", res.Code, res.Message, out.Items)
			}
			unchanged(t)
		})
	}

	// A held package fails alone: the rest of the packages are asked for again and converge.
	out, res := n.run(n.aptWord(r), apply(pkgs(footprint.Package{Name: apttest.Held, State: "present", Version: "1.1"}, footprint.Package{Name: apttest.Tool, State: "present", Version: "1.1"})))
	if res.Code != errcode.FootprintItemsFailed || out.status() != "package:lexfix-held=failed package:lexfix-tool=changed" || out.item("package:lexfix-held").Code != errcode.PkgHeld {
		t.Fatalf("%s: %s", res.Code, out.status())
	}
	if v := r.Version(t, apttest.Tool); v != "1.1 installed" {
		t.Fatalf("lexfix-tool is %q", v)
	}
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", "--allow-downgrades", apttest.Tool+"=1.0")

	// A package outside the bounds refuses the converge before anything is looked at.
	n.bounds.Packages = []string{"lexfix-*"}
	out, res = n.run(n.aptWord(r), apply(pkgs(footprint.Package{Name: apttest.Lib, State: "absent"}, footprint.Package{Name: apttest.Tool, State: "present", Version: "1.1"})))
	if res.Code != errcode.FootprintRefused || out.status() != "package:liblexfix1=refused package:lexfix-tool=skipped" {
		t.Fatalf("%s: %s", res.Code, out.status())
	}
	// So does a node whose package policy leaves the operation out.
	out, res = n.run(n.aptWord(r, wordtest.WithPackagePolicy(manifest.NodePackages{Operations: []string{"query"}})),
		apply(pkgs(footprint.Package{Name: apttest.Tool, State: "present", Version: "1.1"})))
	if res.Code != errcode.FootprintRefused || out.status() != "package:lexfix-tool=refused" {
		t.Fatalf("%s: %s", res.Code, out.status())
	}
	if v := r.Version(t, apttest.Tool); v != "1.0 installed" {
		t.Fatalf("lexfix-tool is %q", v)
	}
	unchanged(t)
}

// TestPackagesUnknown: a node without a package manager fails its package items with
// capability.unknown, and the rest converges.
func TestPackagesUnknown(t *testing.T) {
	n := newNode(t)
	n.bounds.Packages = []string{"nginx"}
	conf := n.file("a.conf", "a\n", "0644")
	fp := fpOf([]footprint.File{conf})
	fp.Packages = []footprint.Package{{Name: "nginx", State: "present"}}
	out, res := n.run(n.word(), apply(fp))
	if res.Code != errcode.FootprintItemsFailed || out.item("package:nginx").Code != errcode.CapabilityUnknown || out.item("file:"+conf.Path).Status != "changed" {
		t.Fatalf("%s: %s", res.Code, out.status())
	}
}

func TestMain(m *testing.M) { wordtest.Main(m) }

func artifactsFor(tb testing.TB) *wasmtest.Artifacts { return wasmtest.NewArtifacts(tb) }

// TestManifestCarriesTheSchema: the footprint schema in the word's params is the published one, so the
// host refuses exactly what the format refuses.
func TestManifestCarriesTheSchema(t *testing.T) {
	raw, err := os.ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Params struct {
			Defs map[string]json.RawMessage `json:"$defs"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var published, carried map[string]any
	if err := json.Unmarshal(footprint.Schema(), &published); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m.Params.Defs["footprint"], &carried); err != nil {
		t.Fatal(err)
	}
	delete(published, "$schema")
	a, _ := json.Marshal(published)
	b, _ := json.Marshal(carried)
	if string(a) != string(b) {
		t.Fatal("primitives/converge/manifest.json's $defs.footprint is not sdk/footprint/footprint.schema.json: copy it again")
	}
}
