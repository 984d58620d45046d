package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/cli/clitest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestCLI: lexicon-package keeps the command-line convention (help, suggestions, envelope, completion).
func TestCLI(t *testing.T) { clitest.Conformance(t, "lexicon-package", commands()) }

const root = "../../../"

// TestAgentUnitIsTheReleases: the package's unit is the agent's own, byte for byte, so the unit
// restore_agent_unit puts back in /etc/systemd/system is the one the package installed, and the
// package's drop-in applies to either copy.
func TestAgentUnitIsTheReleases(t *testing.T) {
	want, err := os.ReadFile(root + "agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	got, err := assets.ReadFile("debian/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("debian/lexicon-agent/lexicon-agent.service differs from agent/cmd/lexicon-agent/lexicon-agent.service: copy it again")
	}
}

// need finds a Debian tool the test runs; in CI (CI=true) its absence fails the test.
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI (apt-get install lintian, which brings dpkg-deb)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// built holds the binaries each architecture's first binaries call built, for the tests after it; the
// folder is removed when the tests end.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]map[string]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binaries builds the three commands for arch as `make packages` does (CGO off, reproducible flags),
// once per test binary. The host's own architecture gets the real commands; another gets a stand-in,
// since a cross build of the plane costs minutes and packaging never runs the binary (lintian still
// checks its machine).
func binaries(t *testing.T, arch string) map[string]string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if b, ok := built.bins[arch]; ok {
		return b
	}
	if built.dir == "" {
		d, err := os.MkdirTemp("", "lexicon-package-test-")
		must(t, err)
		built.dir, built.bins = d, map[string]map[string]string{}
	}
	dir := filepath.Join(built.dir, arch)
	bins := map[string]string{}
	pkgs := map[string]string{"lexicon-agent": "agent/cmd/lexicon-agent", "lexicon-plane": "plane/cmd/lexicon-plane", "lexicon": "plane/cmd/lexicon"}
	for name, pkg := range pkgs {
		if arch != runtime.GOARCH {
			pkg = "registry/cmd/lexicon-package/testdata/standin"
		}
		bins[name] = filepath.Join(dir, name)
		args := []string{"build", "-trimpath", "-buildvcs=false"}
		if name == "lexicon-agent" {
			args = append(args, "-ldflags=-s -w") // as `make agents` links the agent a release pins
		}
		cmd := exec.Command("go", append(args, "-o", bins[name], "./"+pkg)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s for %s: %v\n%s", pkg, arch, err, out)
		}
	}
	built.bins[arch] = bins
	return bins
}

// run runs lexicon-package in this process with -o json and returns its exit status and answer.
func run(t *testing.T, args ...string) (int, map[string]any) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), "lexicon-package", "", commands(), append([]string{"-o", "json"}, args...), &out, &errOut)
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("lexicon-package %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errOut.String())
	}
	return code, res
}

func makeDebs(t *testing.T, bins map[string]string, arch, out string) {
	t.Helper()
	code, res := run(t, "deb", "--version", "1.2.3", "--arch", arch, "--out", out, "--date", "1767225600",
		"--agent", bins["lexicon-agent"], "--plane", bins["lexicon-plane"], "--cli", bins["lexicon"])
	if code != 0 {
		t.Fatalf("deb for %s: exit %d: %v", arch, code, res)
	}
	var got []string
	for _, p := range res["packages"].([]any) {
		got = append(got, filepath.Base(p.(map[string]any)["path"].(string)))
	}
	want := []string{"lexicon-agent_1.2.3_" + arch + ".deb", "lexicon-plane_1.2.3_" + arch + ".deb", "lexicon-cli_1.2.3_" + arch + ".deb"}
	if !slices.Equal(got, want) {
		t.Fatalf("deb for %s wrote %v, want %v", arch, got, want)
	}
}

// entry is one line of dpkg-deb --contents: mode, owner/group and path.
type entry struct{ mode, owner string }

// contents lists pkg's data as dpkg-deb shows it, by path without the leading "./".
func contents(t *testing.T, dpkgDeb, pkg string) map[string]entry {
	t.Helper()
	out, err := exec.Command(dpkgDeb, "--contents", pkg).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --contents %s: %v", pkg, err)
	}
	m := map[string]entry{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents line %q", line)
		}
		m[strings.TrimSuffix(strings.TrimPrefix(f[5], "./"), "/")] = entry{mode: f[0], owner: f[1]}
	}
	return m
}

func field(t *testing.T, dpkgDeb, pkg, name string) string {
	t.Helper()
	out, err := exec.Command(dpkgDeb, "--field", pkg, name).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --field %s %s: %v", pkg, name, err)
	}
	return strings.TrimSpace(string(out))
}

// control is one control member of pkg ("" when it has none).
func control(t *testing.T, dpkgDeb, pkg, member string) string {
	t.Helper()
	out, err := exec.Command(dpkgDeb, "--info", pkg, member).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// TestPackages builds the three packages for amd64 and arm64 through the command, checks each with
// dpkg-deb (fields, paths, modes, owners, conffiles, maintainer scripts, the binary's bytes), runs
// lintian on all six (no error or warning beyond the packages' own overrides), and checks that the
// same inputs make the same bytes.
func TestPackages(t *testing.T) {
	dpkgDeb, lintian := need(t, "dpkg-deb"), need(t, "lintian")
	out := filepath.Join(t.TempDir(), "packages")
	bins := map[string]map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		bins[arch] = binaries(t, arch)
		makeDebs(t, bins[arch], arch, out)
	}

	type want struct {
		binary, depends, recommends, conflicts, conffiles string
		libexec                                           string // where the binary is when /usr/bin only links to it
		entries                                           map[string]entry
		scripts                                           bool
	}
	doc := func(p string) map[string]entry {
		return map[string]entry{
			"usr/share/doc/" + p + "/copyright":    {"-rw-r--r--", "root/root"},
			"usr/share/doc/" + p + "/changelog.gz": {"-rw-r--r--", "root/root"},
			"usr/share/lintian/overrides/" + p:     {"-rw-r--r--", "root/root"},
		}
	}
	packages := map[string]want{
		"lexicon-agent": {binary: "lexicon-agent", libexec: "usr/lib/lexicon-agent", entries: map[string]entry{
			"lib/systemd/system/lexicon-agent.service":                {"-rw-r--r--", "root/root"},
			"lib/systemd/system/lexicon-agent.service.d/package.conf": {"-rw-r--r--", "root/root"},
			"etc/lexicon-agent":     {"drwx------", "root/root"},
			"var/lib/lexicon-agent": {"drwx------", "root/root"},
		}, scripts: true},
		"lexicon-plane": {binary: "lexicon-plane", depends: "adduser", recommends: "lexicon-cli", conffiles: "/etc/default/lexicon-plane\n",
			entries: map[string]entry{
				"lib/systemd/system/lexicon-plane.service": {"-rw-r--r--", "root/root"},
				"etc/default/lexicon-plane":                {"-rw-r--r--", "root/root"},
			}, scripts: true},
		"lexicon-cli": {binary: "lexicon", conflicts: "lexicon", entries: map[string]entry{}},
	}
	for _, arch := range []string{"amd64", "arm64"} {
		for name, w := range packages {
			t.Run(name+"_"+arch, func(t *testing.T) {
				pkg := filepath.Join(out, name+"_1.2.3_"+arch+".deb")
				for f, v := range map[string]string{"Package": name, "Version": "1.2.3", "Architecture": arch,
					"Depends": w.depends, "Recommends": w.recommends, "Conflicts": w.conflicts, "Section": "admin", "Priority": "optional"} {
					if got := field(t, dpkgDeb, pkg, f); got != v {
						t.Errorf("%s: %q, want %q", f, got, v)
					}
				}
				got := contents(t, dpkgDeb, pkg)
				wantEntries := doc(name)
				bin := "usr/bin/" + w.binary
				if w.libexec != "" {
					bin = w.libexec + "/" + w.binary
					wantEntries["usr/bin/"+w.binary] = entry{"lrwxrwxrwx", "root/root"}
				}
				wantEntries[bin] = entry{"-rwxr-xr-x", "root/root"}
				for p, e := range w.entries {
					wantEntries[p] = e
				}
				for p, e := range wantEntries {
					if got[p] != e {
						t.Errorf("%s: %v, want %v", p, got[p], e)
					}
				}
				// Nothing else: every other entry is a parent folder, root's and 0755.
				for p, e := range got {
					if _, ok := wantEntries[p]; !ok && e != (entry{"drwxr-xr-x", "root/root"}) {
						t.Errorf("unexpected entry %s %v", p, e)
					}
				}
				// The plane's data folder is not in the archive: postinst makes it its account's, which
				// dpkg would reset to root's on every upgrade if the package shipped it.
				if _, ok := got["var/lib/lexicon-plane"]; ok {
					t.Error("the package ships var/lib/lexicon-plane")
				}
				if got := control(t, dpkgDeb, pkg, "conffiles"); got != w.conffiles {
					t.Errorf("conffiles %q, want %q", got, w.conffiles)
				}
				for _, s := range []string{"postinst", "prerm", "postrm"} {
					script := control(t, dpkgDeb, pkg, s)
					if (script != "") != w.scripts {
						t.Fatalf("%s present: %v, want %v", s, script != "", w.scripts)
					}
					if script == "" {
						continue
					}
					if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
						t.Errorf("%s does not parse: %v\n%s", s, err, out)
					}
					// Nothing starts or enables a service on install: a node joins first, a plane is
					// configured first. Only an upgrade restarts what already ran.
					for _, line := range strings.Split(script, "\n") {
						if strings.HasPrefix(strings.TrimSpace(line), "#") {
							continue
						}
						for _, forbidden := range []string{"enable", "deb-systemd-invoke start", "deb-systemd-invoke restart"} {
							if strings.Contains(line, forbidden) {
								t.Errorf("%s runs %q: %s", s, forbidden, line)
							}
						}
					}
				}
				if name == "lexicon-plane" {
					post := control(t, dpkgDeb, pkg, "postinst")
					for _, want := range []string{"adduser --system --group --home /var/lib/lexicon-plane", "chown lexicon-plane:lexicon-plane /var/lib/lexicon-plane\n", "chmod 0700 \"$DPKG_ROOT/var/lib/lexicon-plane\"\n"} {
						if !strings.Contains(post, want) {
							t.Errorf("postinst lacks %q", want)
						}
					}
				}
				// The packaged binary is the built one, byte for byte (for the agent: what a release pins).
				x := t.TempDir()
				if out, err := exec.Command(dpkgDeb, "-x", pkg, x).CombinedOutput(); err != nil {
					t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
				}
				if sum(t, filepath.Join(x, bin)) != sum(t, bins[arch][w.binary]) {
					t.Errorf("%s is not the binary given", bin)
				}
			})
		}
	}

	t.Run("lintian", func(t *testing.T) {
		debs, _ := filepath.Glob(filepath.Join(out, "*.deb"))
		cmd := exec.Command(lintian, append([]string{"--no-cfg", "--pedantic"}, debs...)...)
		res, _ := cmd.CombinedOutput() // its status follows --fail-on; the tags are what count
		var bad []string
		for _, line := range strings.Split(string(res), "\n") {
			if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
				bad = append(bad, line)
			}
		}
		if len(bad) > 0 {
			t.Fatalf("lintian (accepted tags belong in debian/<package>/lintian-overrides, with a reason):\n%s", strings.Join(bad, "\n"))
		}
		if len(debs) != 6 {
			t.Fatalf("lintian saw %d packages", len(debs))
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "again")
		code, res := run(t, "deb", "--version", "1.2.3", "--arch", "arm64", "--out", again, "--date", "1767225600",
			"--agent", bins["arm64"]["lexicon-agent"], "--plane", bins["arm64"]["lexicon-plane"], "--cli", bins["arm64"]["lexicon"])
		if code != 0 {
			t.Fatalf("deb: %v", res)
		}
		for _, name := range []string{"lexicon-agent", "lexicon-plane", "lexicon-cli"} {
			f := name + "_1.2.3_arm64.deb"
			if sum(t, filepath.Join(out, f)) != sum(t, filepath.Join(again, f)) {
				t.Errorf("%s differs between two runs on the same inputs", f)
			}
		}
	})
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestRefusals: a binary of another machine (even one of several), a version Debian cannot order, an
// unknown architecture and no binary at all are usage errors, and nothing is written, not even --out.
func TestRefusals(t *testing.T) {
	bins := binaries(t, "arm64")
	if runtime.GOARCH == "arm64" {
		bins = binaries(t, "amd64")
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	out := filepath.Join(t.TempDir(), "packages")
	for name, args := range map[string][]string{
		"wrong machine":   {"--version", "1.2.3", "--arch", runtime.GOARCH, "--agent", bins["lexicon-agent"]},
		"one of several":  {"--version", "1.2.3", "--arch", other, "--agent", bins["lexicon-agent"], "--cli", "deb.go"},
		"not a binary":    {"--version", "1.2.3", "--arch", other, "--agent", "deb.go"},
		"bad version":     {"--version", "v1.2.3", "--arch", other, "--agent", bins["lexicon-agent"]},
		"unknown arch":    {"--version", "1.2.3", "--arch", "riscv64", "--agent", bins["lexicon-agent"]},
		"no binary":       {"--version", "1.2.3", "--arch", other},
		"date not a time": {"--version", "1.2.3", "--arch", other, "--agent", bins["lexicon-agent"], "--date", "yesterday"},
	} {
		t.Run(name, func(t *testing.T) {
			code, res := run(t, append([]string{"deb", "--out", out}, args...)...)
			if code != 2 || res["code"] != errcode.UsageInvalid {
				t.Fatalf("exit %d, %v; want 2 and %s", code, res, errcode.UsageInvalid)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("made %s", out)
			}
		})
	}
}

func TestDebVersion(t *testing.T) {
	for in, want := range map[string]string{"1.2.3": "1.2.3", "0.1.0": "0.1.0", "1.2.3-rc.1": "1.2.3~rc.1", "1.2.3+git5": "1.2.3+git5"} {
		if got, err := debVersion(in); err != nil || got != want {
			t.Errorf("debVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "v1.2.3", "1.2.3 ", "1.2_3", "1.2.3-rc-1/x"} {
		if _, err := debVersion(in); err == nil {
			t.Errorf("debVersion(%q) accepted", in)
		}
	}
}

// TestMaintainerScriptsUseDPKGRoot installs the agent and the plane into an empty root with dpkg --root
// and --force-script-chrootless, so that their maintainer scripts run on this machine with DPKG_ROOT
// set, then installs them again (an upgrade's configure) and purges them: every folder the scripts
// make, chown, chmod or remove is the root's, the plane's account is made in the root's files, and
// nothing of this machine is touched.
func TestMaintainerScriptsUseDPKGRoot(t *testing.T) {
	dpkg := need(t, "dpkg")
	need(t, "useradd")
	out := filepath.Join(t.TempDir(), "packages")
	makeDebs(t, binaries(t, runtime.GOARCH), runtime.GOARCH, out)
	deb := func(name string) string { return filepath.Join(out, name+"_1.2.3_"+runtime.GOARCH+".deb") }
	dir := t.TempDir()
	// An empty package database, and the accounts every Debian root starts with.
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for name, data := range map[string]string{"var/lib/dpkg/status": "", "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group": "root:x:0:\n", "etc/shadow": "root:*:20000:0:99999:7:::\n", "etc/gshadow": "root:*::\n"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	hostPasswd, err := os.ReadFile("/etc/passwd")
	must(t, err)
	dpkgIn := func(args ...string) {
		t.Helper()
		// The plane's Depends (adduser) is this machine's to have, not the empty root's.
		cmd := exec.Command(dpkg, append([]string{"--root=" + dir, "--force-script-chrootless", "--force-depends"}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dpkg %v: %v\n%s", args, err, b)
		}
	}
	mode := func(p string) (os.FileMode, uint32, uint32) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, p))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		return fi.Mode().Perm(), st.Uid, st.Gid
	}

	dpkgIn("--install", deb("lexicon-agent"), deb("lexicon-plane"))
	for _, p := range []string{"etc/lexicon-agent", "var/lib/lexicon-agent"} {
		if m, uid, gid := mode(p); m != 0o700 || uid != 0 || gid != 0 {
			t.Errorf("%s: %v %d:%d, want 0700 root's", p, m, uid, gid)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "etc/passwd"))
	must(t, err)
	if !strings.Contains(string(passwd), "\nlexicon-plane:x:") {
		t.Fatalf("the root's passwd has no lexicon-plane account:\n%s", passwd)
	}
	// Root's until the first start, when systemd gives it to the unit's User= (StateDirectory=).
	if m, u, g := mode("var/lib/lexicon-plane"); m != 0o700 || u != 0 || g != 0 {
		t.Errorf("var/lib/lexicon-plane: %v %d:%d, want 0700", m, u, g)
	}

	// Again, as an upgrade: the admin's modes stay, the account is not made twice.
	must(t, os.Chmod(filepath.Join(dir, "etc/lexicon-agent"), 0o750))
	dpkgIn("--install", deb("lexicon-agent"), deb("lexicon-plane"))
	if m, _, _ := mode("etc/lexicon-agent"); m != 0o750 {
		t.Errorf("an upgrade changed etc/lexicon-agent to %v", m)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "etc/passwd")); !bytes.Equal(again, passwd) {
		t.Errorf("an upgrade changed the root's passwd:\n%s", again)
	}

	// What the node made of itself, and the unit the agent_supervision recipe restored: purge removes it all.
	for _, p := range []string{"var/lib/lexicon-agent/node.key", "etc/lexicon-agent/policy.json", "var/lib/lexicon-plane/plane.db",
		"etc/systemd/system/lexicon-agent.service"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o600))
	}
	dpkgIn("--purge", "lexicon-agent", "lexicon-plane")
	for _, p := range []string{"var/lib/lexicon-agent", "etc/lexicon-agent", "var/lib/lexicon-plane", "etc/systemd/system/lexicon-agent.service"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("purge left %s (%v)", p, err)
		}
	}
	if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, hostPasswd) {
		t.Error("installing into another root changed this machine's /etc/passwd")
	}
}
