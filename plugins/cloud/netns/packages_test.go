package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// wordResult is what lexicon-agent word run -o json prints.
type wordResult struct {
	OK      bool            `json:"ok"`
	Outcome string          `json:"outcome"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details map[string]any  `json:"details"`
	Output  json.RawMessage `json:"output"`
}

// report is the part of packages_report's output the test reads.
type report struct {
	OS struct {
		ID        string `json:"id"`
		VersionID string `json:"version_id"`
	} `json:"os"`
	SecurityUpgrades []struct {
		Name string `json:"name"`
		Held bool   `json:"held"`
	} `json:"security_upgrades"`
	HalfConfigured []struct {
		Name string `json:"name"`
	} `json:"half_configured"`
	StaleProcesses []struct {
		PID     int    `json:"pid"`
		Command string `json:"command"`
		Unit    string `json:"unit"`
	} `json:"stale_processes"`
	StaleServices []struct {
		Unit string `json:"unit"`
	} `json:"stale_services"`
}

func (r report) waiting() []string {
	var out []string
	for _, u := range r.SecurityUpgrades {
		if !u.Held {
			out = append(out, u.Name)
		}
	}
	return out
}

func (r report) stale() []string {
	var out []string
	for _, p := range r.StaleProcesses {
		out = append(out, p.Command)
	}
	return out
}

// machine is a debian-12 instance the test runs commands and words in.
type machine struct {
	t  *testing.T
	d  *Driver
	id string
}

// exec runs argv in the instance, as a root shell on it would.
func (m machine) exec(argv ...string) (string, error) {
	m.t.Helper()
	rec, err := m.d.cfg.state.load(m.id)
	if err != nil {
		m.t.Fatal(err)
	}
	cmd := m.d.cfg.tools.inInstance(m.d.cfg.state.path, rec, "exec", argv...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %v\n%s%s", strings.Join(argv, " "), err, out.String(), stderr.String())
	}
	return out.String(), nil
}

func (m machine) must(argv ...string) string {
	m.t.Helper()
	out, err := m.exec(argv...)
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

// word runs a word of the release with the real agent in the instance.
func (m machine) word(name, params string) wordResult {
	m.t.Helper()
	start := time.Now()
	defer func() { m.t.Logf("%s took %s", name, time.Since(start).Round(time.Millisecond)) }()
	out, _ := m.exec("/usr/local/bin/lexicon-agent", "word", "run", "--release", "/var/lib/lexicon-agent/release",
		"--trust", "/etc/lexicon-agent/trust", "--word", name, "--params", params, "-o", "json")
	var r wordResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		m.t.Fatalf("%s: %v\n%s", name, err, out)
	}
	return r
}

func (m machine) report() report {
	m.t.Helper()
	res := m.word("packages_report", "{}")
	if !res.OK {
		m.t.Fatalf("packages_report: %s %s", res.Code, res.Message)
	}
	var r report
	if err := json.Unmarshal(res.Output, &r); err != nil {
		m.t.Fatal(err)
	}
	return r
}

func (m machine) version(pkg string) string {
	m.t.Helper()
	out, _ := m.exec("dpkg-query", "-W", "-f", "${Version} ${db:Status-Status}", pkg)
	return out
}

// setPolicy writes the node's policy into its config folder (as its admin would).
func (m machine) setPolicy(policy string) {
	m.t.Helper()
	p := filepath.Join(m.d.cfg.state.dir(m.id), "fs", "etc-lexicon-agent", "policy.json")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// goBuild builds a command of this module, without cgo so it runs in the Debian root whatever this
// machine's C library is.
func goBuild(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = "../../.."
	if pkg == "agent/cmd/lexicon-agent" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// release signs the three package words, built by make wasm, into a release the instance verifies.
// restart_services' allow-list gains the fixture's daemon, as a derived release adds a site's units.
func release(t *testing.T) (rel, trust string) {
	t.Helper()
	tool := goBuild(t, "registry/cmd/lexicon-release")
	dir := t.TempDir()
	modules := filepath.Join(dir, "modules")
	for _, name := range []string{"packages_report", "install_security_updates", "restart_services"} {
		m, err := os.ReadFile(filepath.Join("../../../primitives", name, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if name == "restart_services" {
			m = bytes.ReplaceAll(m, []byte(`"unattended-upgrades.service"]`), []byte(`"unattended-upgrades.service", "lexfix-*.service"]`))
		}
		wasm, err := os.ReadFile(filepath.Join("../../../build/wasm", name+".wasm"))
		if err != nil {
			t.Fatalf("build the words first (make wasm): %v", err)
		}
		d := filepath.Join(modules, "word-"+name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "manifest.json"), m, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys, rel, trust := filepath.Join(dir, "keys"), filepath.Join(dir, "release"), filepath.Join(dir, "trust")
	for _, args := range [][]string{
		{"keygen", "--out", keys},
		{"build", "--key", filepath.Join(keys, "publisher.key"), "--modules", modules, "--release", "1.0.0", "--sequence", "1", "--out", rel},
		{"trust", "init", "--out", trust, "--key", filepath.Join(keys, "publisher.pub")},
	} {
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			t.Fatalf("lexicon-release %s: %v\n%s", args[0], err, out)
		}
	}
	return rel, trust
}

// The node side of patching, end to end: a real agent in a debian-12 instance, its packages from a
// real apt repository served on the instance's gateway, runs packages_report, install_security_updates
// and restart_services, and the report follows the machine: a security fix waiting, installed, the
// daemon on replaced code, restarted, clean. A policy refusing the archive or the package is a clear
// code with nothing changed; another apt run holding the lock is pkg.locked while it still holds it;
// a fix whose postinst fails is pkg.failed naming it, and reported half-configured.
func TestPackagesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent and runs apt in an instance")
	}
	needNamespaces(t)
	debian := apttest.DebianRoot(t)
	repo := apttest.Repo(t)
	key, err := os.ReadFile(filepath.Join(repo, apttest.KeyringName))
	if err != nil {
		t.Fatal(err)
	}
	agentBin := goBuild(t, "agent/cmd/lexicon-agent")
	agent, err := os.ReadFile(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(agent)
	rel, trust := release(t)

	// The repository and the agent, over HTTP on every address: instances reach it on their gateway.
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debian/", http.StripPrefix("/debian", http.FileServer(http.Dir(repo))))
	mux.HandleFunc("/agent", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(agent) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	const gateway = "10.213.111.1"
	base := "http://" + gateway + ":" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	ud := fmt.Sprintf(`#cloud-config
write_files:
  - path: /etc/apt/keyrings/lexfix.gpg
    encoding: b64
    content: %s
  - path: /etc/apt/sources.list.d/lexfix.list
    encoding: b64
    content: %s
runcmd:
  - apt-get update -q
  - [apt-get, install, -y, -q, --no-install-recommends, liblexfix1=1.0, lexfix-daemon=1.0, lexfix-held=1.0, lexfix-tool=1.0]
  - apt-mark hold lexfix-held
  - curl -fsS -o /usr/local/bin/lexicon-agent.new %s/agent
  - echo "%s  /usr/local/bin/lexicon-agent.new" | sha256sum -c -
  - install -m 0755 /usr/local/bin/lexicon-agent.new /usr/local/bin/lexicon-agent
  - rm /usr/local/bin/lexicon-agent.new
`, base64.StdEncoding.EncodeToString(key),
		base64.StdEncoding.EncodeToString([]byte(apttest.SourcesList(base+"/debian", "/etc/apt/keyrings/lexfix.gpg"))),
		base, hex.EncodeToString(sum[:]))

	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.111.0/24", Images: map[string]string{"debian-12": debian}})
	created := time.Now()
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "debian-12", Label: "patched", UserData: ud})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	t.Logf("provisioned in %s", time.Since(created).Round(time.Millisecond))
	m := machine{t: t, d: d, id: in.ID}
	own := filepath.Join(d.cfg.state.dir(in.ID), "fs")
	for src, dst := range map[string]string{rel: filepath.Join(own, "var-lib-lexicon-agent", "release"), trust: filepath.Join(own, "etc-lexicon-agent", "trust")} {
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}

	// The instance is its own Debian 12: its dpkg is not the host's.
	if v := m.version(apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 in the instance is %q", v)
	}
	if out, _ := exec.Command("dpkg-query", "-W", apttest.Lib).CombinedOutput(); strings.Contains(string(out), "1.0") {
		t.Fatalf("the fixture reached the host's own dpkg: %s", out)
	}
	if out := m.must("systemctl", "is-active", apttest.DaemonUnit); strings.TrimSpace(out) != "active" {
		t.Fatalf("the daemon is %q", out)
	}

	// 1. The report: the library's security fix waits; the daemon runs current code.
	r := m.report()
	if r.OS.ID != "debian" || r.OS.VersionID != "12" || !slices.Equal(r.waiting(), []string{apttest.Lib}) || len(r.StaleProcesses) != 0 {
		t.Fatalf("first report: %+v", r)
	}

	// 2. Bad input: a policy refusing the archive the manifest allows, then one refusing the
	// package's name. Each a clear code; nothing installed.
	m.setPolicy(`{"classes": {"look": "accept", "change": "accept"}, "packages": {"origins": ["origin=Debian,label=Debian-Security,site=security.debian.org"]}}`)
	res := m.word("install_security_updates", "{}")
	if res.Code != errcode.PkgOriginRefused || res.Details[errcode.DetailReason] != "policy" || res.Details[errcode.DetailPackage] != apttest.Lib {
		t.Fatalf("origin refused by the policy: %s %s %v", res.Code, res.Message, res.Details)
	}
	m.setPolicy(`{"classes": {"look": "accept", "change": "accept"}, "packages": {"names": ["openssl", "libssl*"]}}`)
	if res := m.word("install_security_updates", "{}"); res.Code != errcode.PkgNameRefused || res.Details[errcode.DetailPackage] != apttest.Lib {
		t.Fatalf("name refused by the policy: %s %s %v", res.Code, res.Message, res.Details)
	}
	if v := m.version(apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q after refusals", v)
	}
	m.setPolicy(`{"classes": {"look": "accept", "change": "accept"}, "packages": {"origins": ["origin=Debian,label=Debian-Security"]}}`)

	// 3. The fixes: the library upgraded, the held package and the ordinary update left alone.
	res = m.word("install_security_updates", "{}")
	if !res.OK {
		t.Fatalf("install_security_updates: %s %s", res.Code, res.Message)
	}
	var installed struct {
		Installed []struct{ Name, From, To string }
		HeldBack  []string `json:"held_back"`
	}
	if err := json.Unmarshal(res.Output, &installed); err != nil {
		t.Fatal(err)
	}
	if len(installed.Installed) != 1 || installed.Installed[0].Name != apttest.Lib || installed.Installed[0].To != "1.1" || !slices.Equal(installed.HeldBack, []string{apttest.Held}) {
		t.Fatalf("installed %+v", installed)
	}
	if m.version(apttest.Tool) != "1.0 installed" {
		t.Fatal("the ordinary update was installed")
	}

	// 4. The daemon runs the replaced library, and the report names its unit (from its cgroup, as on
	// a machine run by systemd).
	if r := m.report(); len(r.waiting()) != 0 || !slices.Equal(r.stale(), []string{"lexfix-daemon"}) ||
		r.StaleProcesses[0].Unit != apttest.DaemonUnit || len(r.StaleServices) != 1 || r.StaleServices[0].Unit != apttest.DaemonUnit {
		t.Fatalf("after the fix: waiting %v, stale %+v, services %+v", r.waiting(), r.StaleProcesses, r.StaleServices)
	}

	// 5. restart_services restarts it, through the instance's service manager, without being told
	// which unit: the machine names it.
	res = m.word("restart_services", `{}`)
	var restarted struct {
		Restarted []struct {
			Unit                string
			BeforePID, AfterPID int `json:"-"`
		}
		StillStale []int `json:"still_stale"`
	}
	if err := json.Unmarshal(res.Output, &restarted); err != nil || !res.OK {
		t.Fatalf("restart_services: %s %s %v", res.Code, res.Message, err)
	}
	if len(restarted.Restarted) != 1 || restarted.Restarted[0].Unit != apttest.DaemonUnit || len(restarted.StillStale) != 0 {
		out, _ := m.exec("systemctl", "show", apttest.DaemonUnit)
		ls, _ := exec.Command("ls", "-la", filepath.Join(d.cfg.state.dir(in.ID), "run")).CombinedOutput()
		log, _ := os.ReadFile(filepath.Join(d.cfg.state.dir(in.ID), "run", apttest.DaemonUnit+".log"))
		t.Fatalf("restart_services: %s\nshow: %s\n%s\n%s", res.Output, out, ls, log)
	}

	// 6. Clean: no fix waiting but the held one's, nothing on replaced code.
	if r := m.report(); len(r.waiting()) != 0 || len(r.StaleProcesses) != 0 {
		t.Fatalf("clean report: %+v", r)
	}

	// 7. Another apt run holds the lock: pkg.locked, answered while that run still holds it.
	merged := filepath.Join(d.cfg.state.rootfs(in.ID), "merged")
	rec, err := d.cfg.state.load(in.ID)
	if err != nil {
		t.Fatal(err)
	}
	release := apttest.HoldLock(t, merged, d.cfg.tools.inInstance(d.cfg.state.path, rec, "exec", "apt-get", "install", "-y", "-q", apttest.Slow+"=1.0"))
	res = m.word("install_security_updates", "{}")
	if res.Code != errcode.PkgLocked || res.Details[errcode.DetailCommand] == nil {
		t.Fatalf("beside another run: %s %s %v", res.Code, res.Message, res.Details)
	}
	release()

	// 8. A fix whose postinst fails: pkg.failed naming it; the report shows it half-configured.
	m.must("apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
	res = m.word("install_security_updates", "{}")
	if res.Code != errcode.PkgFailed || !slices.Contains(res.Details[errcode.DetailPackages].([]any), any(apttest.Broken)) {
		t.Fatalf("failing postinst: %s %s %v", res.Code, res.Message, res.Details)
	}
	if r := m.report(); len(r.HalfConfigured) != 1 || r.HalfConfigured[0].Name != apttest.Broken {
		t.Fatalf("half-configured: %+v", r.HalfConfigured)
	}
}
