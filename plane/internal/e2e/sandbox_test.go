package e2e_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// The agent under its own unit: a real systemd, PID 1 of its own PID, mount and cgroup namespaces,
// runs the unit the release ships, unchanged, so that every setting of its sandbox (ProtectSystem=,
// the capability bounding set, the system call filter, the address families...) is applied by systemd
// itself to the real agent binary. The machine is left alone: /etc, /var and /usr are overlays whose
// upper layers are the test's, the unit folder, the agent's folders and /usr/local/bin are the test's
// folders bound in place, and /run and /tmp are fresh. The network is the machine's, so the agent
// reaches the fleet's plane on loopback.

// unitHost is one such systemd.
type unitHost struct {
	t       *testing.T
	dir     string // the test's side: units/, upper/, work/, bin/, host/
	cgroup  string // the cgroup the namespace is rooted at
	unshare *exec.Cmd
	pid     int             // systemd's pid, as this machine sees it
	log     *testkit.Buffer // the agent's stdout and stderr (the test's drop-in), and systemd's console
	logs    []*os.File
}

// needUnitHost fails (in CI) or skips the test where a systemd cannot be run in namespaces.
func needUnitHost(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, p := range []string{"/lib/systemd/systemd", "/usr/bin/unshare", "/usr/bin/nsenter", "/usr/bin/systemd-run",
		"/usr/bin/dbus-daemon", "/lib/systemd/system/dbus.service", "/lib/systemd/system/dbus.socket",
		"/usr/bin/dpkg-deb", "/usr/bin/apt-ftparchive"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		missing = append(missing, "overlayfs")
	}
	if _, err := cgroup2Mount(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("running the agent under its unit needs %s", strings.Join(missing, ", "))
	}
	t.Skipf("running the agent under its unit needs %s", strings.Join(missing, ", "))
}

// cgroup2Mount is where this machine mounts the unified cgroup hierarchy.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mount ID, parent, major:minor, root, mount point, options, optional fields..., "-", type, ...
		fields := strings.Fields(sc.Text())
		for i, v := range fields {
			if v == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && fields[3] == "/" {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("a cgroup2 hierarchy")
}

// unitHostSpec is what bootUnitHost lays out.
type unitHostSpec struct {
	units  map[string]string // files of the unit folder (/etc/systemd/system), by path within it
	upper  map[string]string // files laid over /etc and /var, by absolute path
	old    []string          // files of upper made two days old
	agent  string            // the binary installed as /usr/local/bin/lexicon-agent
	state  string            // bound at /var/lib/lexicon-agent
	config string            // bound at /etc/lexicon-agent
}

// bootUnitHost starts systemd in its namespaces and waits for it to report its boot done.
func bootUnitHost(t *testing.T, spec unitHostSpec) *unitHost {
	t.Helper()
	h := &unitHost{t: t, dir: t.TempDir(), log: &testkit.Buffer{}}
	for _, d := range []string{"units", "upper/etc", "upper/var", "upper/usr", "work/etc", "work/var", "work/usr", "bin", "host"} {
		must(t, os.MkdirAll(filepath.Join(h.dir, d), 0o755))
	}
	for name, data := range spec.units {
		p := filepath.Join(h.dir, "units", name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
	for name, data := range spec.upper {
		p := filepath.Join(h.dir, "upper", name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(data), 0o644))
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, name := range spec.old {
		must(t, os.Chtimes(filepath.Join(h.dir, "upper", name), old, old))
	}
	data, err := os.ReadFile(spec.agent)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(h.dir, "bin", "lexicon-agent"), data, 0o755))

	// The agent's output and systemd's console come through FIFOs, read for as long as the test runs.
	for _, name := range []string{"agent.log", "console"} {
		p := filepath.Join(h.dir, "host", name)
		must(t, unix.Mkfifo(p, 0o600))
		f, err := os.OpenFile(p, os.O_RDWR, 0) // read-write: a writer that comes and goes never ends it
		must(t, err)
		h.logs = append(h.logs, f)
		go func() { _, _ = io.Copy(h.log, f) }()
	}
	// systemd tells its container manager it has booted on NOTIFY_SOCKET.
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(h.dir, "host", "notify"), Net: "unixgram"})
	must(t, err)
	defer notify.Close()
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				return
			}
			if strings.Contains("\n"+string(buf[:n])+"\n", "\nREADY=1\n") {
				close(ready)
				return
			}
		}
	}()

	// The namespace's cgroup: a child of this process's own, which systemd takes as its root.
	mnt, err := cgroup2Mount()
	must(t, err)
	self, err := os.ReadFile("/proc/self/cgroup")
	must(t, err)
	var own string
	for _, line := range strings.Split(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	// A run killed before its cleanup leaves its cgroups behind, empty: they go now.
	stale, _ := filepath.Glob(filepath.Join(mnt, own, "lexicon-e2e-*"))
	for _, cg := range stale {
		if ev, err := os.ReadFile(filepath.Join(cg, "cgroup.events")); err == nil && strings.Contains(string(ev), "populated 0") {
			removeTree(t, cg)
		}
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	h.cgroup = filepath.Join(mnt, own, "lexicon-e2e-"+hex.EncodeToString(suffix[:]))
	must(t, os.Mkdir(h.cgroup, 0o755))
	cg, err := os.Open(h.cgroup)
	must(t, err)
	defer cg.Close()

	d := h.dir
	script := strings.Join([]string{
		"set -e",
		"mount -t tmpfs tmpfs /sys/fs/cgroup",
		"mount -t cgroup2 cgroup2 /sys/fs/cgroup",
		"mount -t overlay overlay -o lowerdir=/etc,upperdir=" + d + "/upper/etc,workdir=" + d + "/work/etc /etc",
		"mount -t overlay overlay -o lowerdir=/var,upperdir=" + d + "/upper/var,workdir=" + d + "/work/var /var",
		// The package words install into /usr: an overlay too, so nothing reaches this machine's.
		"mount -t overlay overlay -o lowerdir=/usr,upperdir=" + d + "/upper/usr,workdir=" + d + "/work/usr /usr",
		"mkdir -p /etc/systemd/system /etc/lexicon-agent /var/lib/lexicon-agent",
		"mount --bind " + d + "/units /etc/systemd/system",
		"mount --bind " + spec.config + " /etc/lexicon-agent",
		"mount --bind " + spec.state + " /var/lib/lexicon-agent",
		"mount --bind " + d + "/bin /usr/local/bin",
		"mount -t tmpfs tmpfs /run",
		"mkdir /run/lexicon-e2e",
		"mount --bind " + d + "/host /run/lexicon-e2e",
		"[ -e /dev/console ] && mount --bind " + d + "/host/console /dev/console",
		"mount -t tmpfs tmpfs /tmp",
		// Only the test's units: none of this machine's services start in the namespace.
		"exec env -i container=lexicon-e2e NOTIFY_SOCKET=/run/lexicon-e2e/notify SYSTEMD_UNIT_PATH=/etc/systemd/system " +
			"PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd --system --unit=lexicon-e2e.target --log-target=console",
	}, "\n")
	h.unshare = exec.Command("unshare", "--cgroup", "--pid", "--fork", "--mount", "--propagation", "private", "--mount-proc", "--kill-child",
		"/bin/sh", "-c", script)
	h.unshare.Stdout, h.unshare.Stderr = h.log, h.log
	h.unshare.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd()), Pdeathsig: syscall.SIGKILL}
	must(t, h.unshare.Start())
	t.Cleanup(h.stop)
	exited := make(chan error, 1)
	go func() { exited <- h.unshare.Wait() }()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("systemd in its namespaces ended before it booted: %v\n%s", err, h.log.String())
	case <-time.After(time.Until(deadline(t))):
		t.Fatalf("systemd in its namespaces never reported its boot done:\n%s", h.log.String())
	}
	go func() { <-exited }()
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", h.unshare.Process.Pid, h.unshare.Process.Pid))
	must(t, err)
	if _, err := fmt.Sscan(string(children), &h.pid); err != nil {
		t.Fatalf("systemd's pid: %v (%q)", err, children)
	}
	return h
}

// deadline is when a wait in t gives up: a little before the test binary's own deadline.
func deadline(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-30 * time.Second)
	}
	return time.Now().Add(10 * time.Minute)
}

// in runs a command in the namespace's mount namespace (its files, its systemd's sockets) and returns
// its stdout.
func (h *unitHost) in(args ...string) string {
	h.t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--target", fmt.Sprint(h.pid), "--mount", "--pid", "--"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("%s in the namespace: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// stop kills everything in the namespaces and removes their cgroups.
func (h *unitHost) stop() {
	if h.t.Failed() {
		h.t.Logf("the agent's unit host logged:\n%s", h.log.String())
	}
	// Every process in the namespace's cgroup tree is killed at once; the pid namespace ends with its
	// first process.
	_ = os.WriteFile(filepath.Join(h.cgroup, "cgroup.kill"), []byte("1"), 0)
	if h.unshare.Process != nil {
		_ = h.unshare.Process.Kill()
	}
	waitEmpty(h.t, h.cgroup)
	removeTree(h.t, h.cgroup)
	for _, f := range h.logs {
		f.Close()
	}
}

// waitEmpty waits until no process is left in the cgroup tree: cgroup.events says "populated 0",
// and the kernel wakes a poll on it when that changes.
func waitEmpty(t *testing.T, cgroup string) {
	f, err := os.Open(filepath.Join(cgroup, "cgroup.events"))
	if err != nil {
		return
	}
	defer f.Close()
	for {
		b := make([]byte, 512)
		n, _ := f.ReadAt(b, 0)
		if strings.Contains(string(b[:n]), "populated 0") {
			return
		}
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(time.Until(deadline(t)).Milliseconds())); err != nil && err != unix.EINTR {
			t.Errorf("waiting for the namespace's processes to end: %v", err)
			return
		}
	}
}

// removeTree removes a cgroup and the ones systemd made beneath it, deepest first.
func removeTree(t *testing.T, cgroup string) {
	entries, _ := os.ReadDir(cgroup)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(t, filepath.Join(cgroup, e.Name()))
		}
	}
	if err := syscall.Rmdir(cgroup); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cannot remove cgroup %s: %v", cgroup, err)
	}
}

// stubTargets are the targets the agent's unit and systemd's defaults name, empty: nothing of this
// machine is pulled in.
var stubTargets = map[string]string{
	"sysinit.target": "[Unit]\nDescription=stub\n", "basic.target": "[Unit]\nDescription=stub\n",
	"shutdown.target": "[Unit]\nDescription=stub\n", "network-online.target": "[Unit]\nDescription=stub\n",
	"network.target": "[Unit]\nDescription=stub\n", "multi-user.target": "[Unit]\nDescription=stub\n",
	// The services the built-in words are allowed to look at and act on: one that runs, one that failed.
	"lexicon-e2e.target": "[Unit]\nDescription=the test's boot\nWants=nginx.service mysql.service dbus.socket\n",
	"nginx.service":      "[Service]\nExecStart=/bin/sleep infinity\n",
	"mysql.service":      "[Service]\nExecStart=/bin/false\n",
}

// TestAgentUnderItsUnit runs the real agent under the unit the release ships, applied by a real
// systemd, joined to a real plane: every built-in word as a job and every built-in recipe complete
// within the sandbox, their writes land where the unit lets them (the logs, the package cache, the
// unit folder, and a renewal program's folder through the certbot drop-in), and the agent updates
// itself: its first start runs with no known-good binary (the guard's "-"), and the swap to a new
// version writes the binary's folder, restarts and starts the trial.
func TestAgentUnderItsUnit(t *testing.T) {
	needUnitHost(t)
	modules, err := os.ReadDir(filepath.Join(root, "build", "modules"))
	must(t, err)
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s", stage: func(dir string) {
		// Every built-in word and recipe, as `make modules` staged them (in place of the fleet's own
		// copies of two of them).
		for _, m := range modules {
			if name, ok := strings.CutPrefix(m.Name(), "word-"); ok {
				must(t, os.RemoveAll(filepath.Join(dir, name)))
			} else if !strings.HasPrefix(m.Name(), "recipe-") {
				continue
			}
			must(t, os.CopyFS(filepath.Join(dir, m.Name()), os.DirFS(filepath.Join(root, "build", "modules", m.Name()))))
		}
	}})
	// A site of the node's own, over TLS; the machine's roots in the namespace trust it and the plane.
	web := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer web.Close()
	planeHost := strings.TrimPrefix(f.url, "https://")
	webHost := strings.TrimPrefix(web.URL, "https://")
	roots, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	must(t, err)
	planeCA, err := os.ReadFile(f.ca)
	must(t, err)
	roots = append(append(roots, planeCA...), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: web.Certificate().Raw})...)
	// The renewal program the policy pins: a shell that writes where certbot would.
	dash, err := os.ReadFile("/usr/bin/dash")
	must(t, err)
	policy := fmt.Sprintf(`{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "names": [%q, %q],
		"renewal": {"path": "/usr/bin/dash", "sha256": %q, "args": ["-c", "date > /etc/letsencrypt/renewed"]}}`,
		planeHost, webHost, cas.Sum(dash))
	a := f.newAgent("unit-1", policy)
	must(t, os.MkdirAll(a.state, 0o700))
	must(t, os.WriteFile(filepath.Join(a.state, "plane-ca.crt"), planeCA, 0o644))
	// The release pins the agent about to run, so the recipes scoped to the release apply to it; it
	// reports the release's version, as lexicon-release build requires.
	agentBin := buildAgent(t, "1.0.1", "", "amd64")
	f.publishAgentRelease("1.0.1", 2, agentBin)

	unit, err := os.ReadFile(filepath.Join(root, "agent", "cmd", "lexicon-agent", "lexicon-agent.service"))
	must(t, err)
	certbot, err := os.ReadFile(filepath.Join(root, "agent", "cmd", "lexicon-agent", "dropins", "certbot.conf"))
	must(t, err)
	units := map[string]string{
		"lexicon-agent.service": string(unit),
		// The test's only addition to the unit: the agent's output, to the test.
		"lexicon-agent.service.d/e2e.conf":     "[Service]\nStandardOutput=append:/run/lexicon-e2e/agent.log\nStandardError=inherit\n",
		"lexicon-agent.service.d/certbot.conf": string(certbot),
	}
	for k, v := range stubTargets {
		units[k] = v
	}
	// The system bus, as the machine's package starts it: systemd-run --wait talks to PID 1 through it.
	for _, name := range []string{"dbus.service", "dbus.socket"} {
		data, err := os.ReadFile(filepath.Join("/lib/systemd/system", name))
		must(t, err)
		units[name] = string(data)
	}
	h := bootUnitHost(t, unitHostSpec{
		units: units, agent: agentBin, state: a.state, config: a.config,
		upper: map[string]string{
			"/etc/ssl/certs/ca-certificates.crt":              string(roots),
			"/etc/letsencrypt/live/README":                    "certbot's folder\n",
			"/var/log/lexicon-e2e.log.1.gz":                   "an old rotated log\n",
			"/var/cache/apt/archives/lexicon-e2e_1.0_all.deb": "an old package\n",
			// apt's only source is the test's repository, whose Release says it is Debian's security
			// archive (trusted=yes: the fixture is unsigned; signatures are apttest's concern).
			"/etc/apt/apt.conf.d/99lexicon-e2e":   "Dir::Etc::SourceList \"/etc/apt/lexicon-e2e.list\";\nDir::Etc::SourceParts \"/etc/apt/lexicon-e2e.d\";\n",
			"/etc/apt/lexicon-e2e.list":           "deb [trusted=yes] file:/run/lexicon-e2e/repo ./\n",
			"/etc/apt/lexicon-e2e.d/.placeholder": "",
		},
		old: []string{"/var/log/lexicon-e2e.log.1.gz", "/var/cache/apt/archives/lexicon-e2e_1.0_all.deb"},
	})

	// A package installed at 1.0, whose 1.1 waits in the security archive.
	buildProbeRepo(t, filepath.Join(h.dir, "host"))
	h.in("dpkg", "-i", "/run/lexicon-e2e/"+probe+"_1.0_all.deb")
	h.in("apt-get", "update", "-q")

	// Joined from inside, as an admin on the machine would, then started by systemd.
	j := parseJSON(t, h.in("/usr/local/bin/lexicon-agent", "join", "--plane", f.url, "--ca", "/var/lib/lexicon-agent/plane-ca.crt",
		"--name", a.name, "--no-wait", "--state-dir", "/var/lib/lexicon-agent", "--config-dir", "/etc/lexicon-agent", "-o", "json"))
	res := f.lexicon(false, "joins", "approve", j["join_id"].(string), "--fingerprint", j["fingerprint"].(string))
	a.nodeID = res["node"].(map[string]any)["id"].(string)
	if st := parseJSON(t, h.in("/usr/local/bin/lexicon-agent", "status", "--state-dir", "/var/lib/lexicon-agent", "--config-dir", "/etc/lexicon-agent",
		"-o", "json")); st["status"] != "approved" {
		t.Fatalf("agent status after approval: %v", st)
	}
	h.in("systemctl", "start", "lexicon-agent.service")
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+a.nodeID+`"`)

	for _, job := range []struct {
		word   string
		params []string
	}{
		{"host_report", nil},
		{"unit_status", []string{"unit=nginx.service"}},
		{"disk_usage", []string{"root=/var"}},
		{"file_head", []string{"path=/etc/systemd/system/lexicon-agent.service"}},
		{"unit_journal", []string{"unit=nginx.service"}},
		{"cert_expiry", []string{"host=127.0.0.1", "port:=" + strings.Split(planeHost, ":")[1]}},
		{"http_probe", []string{"url=" + web.URL + "/"}},
		{"restart_unit", []string{"unit=nginx.service"}},
		{"reset_failed_unit", []string{"unit=mysql.service"}},
		{"free_disk", nil},
		{"renew_cert", nil},
		{"restore_agent_unit", nil},
		// The package words: reads in the agent's sandbox, changes (apt-get update and install) in
		// transient units of their own, since the sandbox leaves /usr, /var/lib/dpkg and apt's lists
		// read-only.
		{"packages_report", nil},
		{"install_security_updates", nil},
		{"restart_services", nil},
	} {
		if job.word == "restore_agent_unit" {
			// Edited in place: the word must write the release's unit back into the unit folder.
			must(t, os.WriteFile(filepath.Join(h.dir, "units", "lexicon-agent.service"), append(unit, []byte("# edited\n")...), 0o644))
		}
		j := f.runJob(a.nodeID, job.word, job.params...)
		if j["state"] != "completed" {
			t.Errorf("%s under the unit: %v", job.word, j)
			continue
		}
		out, _ := j["output"].(map[string]any)
		switch job.word {
		case "packages_report":
			if fmt.Sprint(out["security_upgrades"]) == "[]" {
				t.Errorf("packages_report under the unit sees no security upgrade: %v", out)
			}
		case "install_security_updates":
			if out["refresh_failed"] != nil {
				t.Errorf("install_security_updates could not refresh under the unit: %v", out["refresh_failed"])
			}
			installed, _ := out["installed"].([]any)
			if len(installed) != 1 || installed[0].(map[string]any)["name"] != probe || installed[0].(map[string]any)["to"] != "1.1" {
				t.Errorf("install_security_updates under the unit installed %v: %v", installed, out)
			}
		}
	}
	// The upgrade reached /usr, which the agent's own sandbox holds read-only.
	if got, err := os.ReadFile(filepath.Join(h.dir, "upper", "usr", "share", probe, "version")); err != nil || string(got) != "1.1\n" {
		t.Errorf("%s's file after the upgrade: %q (%v)", probe, got, err)
	}
	if got := h.in("dpkg-query", "-W", "-f", "${Version} ${db:Status-Abbrev}", probe); got != "1.1 ii " {
		t.Errorf("dpkg says %s is %q", probe, got)
	}
	for path, gone := range map[string]bool{
		"upper/var/log/lexicon-e2e.log.1.gz": true, "upper/var/cache/apt/archives/lexicon-e2e_1.0_all.deb": true,
		"upper/etc/letsencrypt/renewed": false,
	} {
		_, err := os.Stat(filepath.Join(h.dir, path))
		if gone != errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v (want gone: %v)", path, err, gone)
		}
	}
	if got, err := os.ReadFile(filepath.Join(h.dir, "units", "lexicon-agent.service")); err != nil || string(got) != string(unit) {
		t.Errorf("restore_agent_unit did not put the release's unit back (%v)", err)
	}
	// The unit's UMask= does not reach what words write: a replaced file keeps its mode.
	if fi, err := os.Stat(filepath.Join(h.dir, "units", "lexicon-agent.service")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o644 {
		t.Errorf("the restored unit's mode is %v, want 0644", fi.Mode())
	}

	// Every built-in recipe reaches a verdict of its own: none is unknown for want of what the sandbox
	// holds back. Recipes check at the agent's start; their reports ride the claims.
	want := map[string]bool{}
	for _, m := range modules {
		if n, ok := strings.CutPrefix(m.Name(), "recipe-"); ok {
			want[n] = true
		}
	}
	for try := 0; ; try++ {
		n := f.lexicon(false, "nodes", "show", a.nodeID)
		recipes, _ := n["recipes"].([]any)
		verdicts := map[string]string{}
		for _, r := range recipes {
			r := r.(map[string]any)
			verdicts[fmt.Sprint(r["name"])] = fmt.Sprintf("%v %v: %v", r["state"], r["last_verdict"], r["detail"])
		}
		done := len(verdicts) == len(want)
		for name := range want {
			v := verdicts[name]
			if strings.HasPrefix(v, "active <nil>") || v == "" {
				done = false
			}
		}
		if done {
			for name, v := range verdicts {
				if !strings.HasPrefix(v, "active pass") && !strings.HasPrefix(v, "active fail") {
					t.Errorf("recipe %s under the unit: %s", name, v)
				}
			}
			break
		}
		if try == 10 {
			t.Fatalf("the recipes' verdicts never all reached the plane: %v", verdicts)
		}
		// Another claim round trip carries newer reports.
		f.runJob(a.nodeID, "host_report")
	}

	// Self-update under the sandbox: the new binary is written into /usr/local/bin, systemd restarts
	// the agent, the known-good binary's guard runs, and the new version starts its trial.
	v2 := buildAgent(t, "2.0.0", "", "amd64")
	f.publishAgentRelease("2.0.0", 3, v2)
	f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "trial"))
	if fileSum(t, filepath.Join(h.dir, "bin", "lexicon-agent")) != fileSum(t, v2) {
		t.Error("the agent reports its trial, but /usr/local/bin holds another binary")
	}
}

// probe is the package the package words upgrade under the unit.
const probe = "lexicon-e2e-probe"

// buildProbeRepo builds probe 1.0 and 1.1 (dpkg-deb) in dir, and in dir/repo a flat apt repository
// holding 1.1 whose Release names Debian's security archive (apt-ftparchive).
func buildProbeRepo(t *testing.T, dir string) {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	must(t, os.MkdirAll(repo, 0o755))
	for _, v := range []string{"1.0", "1.1"} {
		pkg := filepath.Join(t.TempDir(), probe)
		must(t, os.MkdirAll(filepath.Join(pkg, "DEBIAN"), 0o755))
		must(t, os.MkdirAll(filepath.Join(pkg, "usr", "share", probe), 0o755))
		must(t, os.WriteFile(filepath.Join(pkg, "DEBIAN", "control"), []byte("Package: "+probe+"\nVersion: "+v+
			"\nArchitecture: all\nMaintainer: Lexicon <e2e@lexicon.invalid>\nDescription: the e2e's package\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(pkg, "usr", "share", probe, "version"), []byte(v+"\n"), 0o644))
		deb := filepath.Join(dir, probe+"_"+v+"_all.deb")
		if v == "1.1" {
			deb = filepath.Join(repo, probe+"_"+v+"_all.deb")
		}
		if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", pkg, deb).CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb: %v\n%s", err, out)
		}
	}
	index := func(name string, args ...string) {
		cmd := exec.Command("apt-ftparchive", args...)
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("apt-ftparchive %v: %v", args, err)
		}
		must(t, os.WriteFile(filepath.Join(repo, name), out, 0o644))
	}
	index("Packages", "packages", ".")
	index("Release", "-o", "APT::FTPArchive::Release::Origin=Debian", "-o", "APT::FTPArchive::Release::Label=Debian-Security",
		"-o", "APT::FTPArchive::Release::Suite=bookworm-security", "-o", "APT::FTPArchive::Release::Codename=bookworm-security",
		"release", ".")
}

func parseJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}
