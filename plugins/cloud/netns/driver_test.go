package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func newDriver() cloud.Driver { return &Driver{} }

func TestMain(m *testing.M) {
	runHelper() // the test binary is the instances' helper too, as the driver's executable is
	drivertest.Main(m, drivertest.Drivers{Cloud: newDriver})
}

// needNamespaces skips a test that makes namespaces where they cannot be made, except in CI, where
// .ci/run installs iproute2 and runs as root: there it fails.
func needNamespaces(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := findTools(toolDirs); err != nil {
		why = err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the netns cloud cannot run here (%s); CI must run these tests as root with iproute2", why)
	}
	t.Skipf("the netns cloud cannot run here: %s", why)
}

func settingsConfig(t *testing.T, s Settings) driver.Config {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return driver.Config{Settings: raw}
}

func settingsConfigRaw(raw []byte) driver.Config { return driver.Config{Settings: raw} }

func configured(t *testing.T, s Settings) *Driver {
	t.Helper()
	d := &Driver{}
	if err := d.SetConfig(context.Background(), settingsConfig(t, s)); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	needNamespaces(t)
	cfg := settingsConfig(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.101.0/24", Test: true})
	drivertest.RunCloud(t, newDriver, cfg, drivertest.CloudOptions{
		Region: "local", Type: "ns-1", Image: "host", MissingID: "ns-00000000", Settle: time.Minute,
	})
}

// waitFor polls cond until it holds: an instance's state lives in the kernel and in files the
// helpers write, with no event to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func waitStatus(t *testing.T, d *Driver, id string, want cloud.Status) cloud.Instance {
	t.Helper()
	var in cloud.Instance
	defer func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(d.cfg.state.dir(id), "log", "cloud-init-output.log"))
			t.Logf("instance %s is %s; its log:\n%s", id, in.Status, log)
		}
	}()
	waitFor(t, fmt.Sprintf("instance %s to be %s", id, want), func() bool {
		var err error
		in, err = d.GetInstance(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status == cloud.StatusFailed && want != cloud.StatusFailed {
			log, _ := os.ReadFile(filepath.Join(d.cfg.state.dir(id), "log", "cloud-init-output.log"))
			t.Fatalf("instance %s failed; its log:\n%s", id, log)
		}
		return in.Status == want
	})
	return in
}

// agentStub stands in for lexicon-agent: guard and join leave a line, run writes its pid and sleeps.
const agentStub = `#!/bin/sh
case "$1" in
guard) echo guard >> /var/lib/lexicon-agent/calls ;;
join) echo "$*" >> /var/lib/lexicon-agent/calls ;;
run) echo $$ > /var/lib/lexicon-agent/run.pid; exec sleep 1000000 ;;
*) exit 2 ;;
esac
`

// userDataLike is user data of the shape provisioning writes: the agent fetched from the plane with
// curl and its sha256 checked, installed with the real unit file, joined, enabled with systemctl;
// and commands that show where they ran.
func userDataLike(t *testing.T, plane string) string {
	t.Helper()
	unit, err := os.ReadFile("../../../agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(agentStub))
	return fmt.Sprintf(`#cloud-config
write_files:
  - path: /etc/systemd/system/lexicon-agent.service
    permissions: '0644'
    encoding: b64
    content: %s
  - path: /etc/lexicon-agent/policy.json
    permissions: '0600'
    owner: root:root
    content: |
      {"words": []}
runcmd:
  - curl -fsS -o /usr/local/bin/lexicon-agent.new %s/agent
  - echo "%s  /usr/local/bin/lexicon-agent.new" | sha256sum -c -
  - [chmod, "0755", /usr/local/bin/lexicon-agent.new]
  - [mv, /usr/local/bin/lexicon-agent.new, /usr/local/bin/lexicon-agent]
  - [lexicon-agent, join, --plane, %s, --token, one-time]
  - ip -4 -o addr show dev eth0 > /etc/lexicon-agent/where
  - hostname >> /etc/lexicon-agent/where
  - systemctl enable --now lexicon-agent
`, base64.StdEncoding.EncodeToString(unit), plane, hex.EncodeToString(sum[:]), plane)
}

// plane is a stand-in for the plane's artifact route, listening on every address so that instances
// reach it through their gateway; it records who asked.
type plane struct {
	url   string
	mu    sync.Mutex
	peers []string
}

func newPlane(t *testing.T, gw string) *plane {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	p := &plane{url: "http://" + gw + ":" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		p.mu.Lock()
		p.peers = append(p.peers, host)
		p.mu.Unlock()
		_, _ = w.Write([]byte(agentStub))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func readPid(t *testing.T, path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return n
}

// inNamespace reports whether pid runs in id's network namespace.
func inNamespace(pid int, id string) bool {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return false
	}
	var st, nst os.FileInfo
	if st, err = os.Stat("/run/netns/" + nsName(id)); err != nil {
		return false
	}
	nst, err = os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid))
	return err == nil && os.SameFile(st, nst) && strings.HasPrefix(link, "net:")
}

func nsAddrs(t *testing.T, id string) string {
	out, err := exec.Command("ip", "-n", nsName(id), "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr in %s: %v: %s", id, err, out)
	}
	return string(out)
}

// One instance through its whole life: user data of provisioning's shape runs inside its namespaces,
// the systemctl shim starts the (stub) agent from the real unit file, power off and on stop and start
// it, reboot, a swap with a second instance moves the addresses, the counters count, and delete leaves
// no namespace, veth, process or folder.
func TestInstanceLifecycle(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	settings := Settings{Root: root, Range: "10.213.102.0/24", Test: true, TransferAllowanceBytes: 1 << 30}
	d := configured(t, settings)
	p := newPlane(t, "10.213.102.1")

	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "blue", Tags: []string{"lexicon-test"}, UserData: userDataLike(t, p.url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	if in.Status != cloud.StatusProvisioning && in.Status != cloud.StatusRunning {
		t.Errorf("a new instance is %s", in.Status)
	}
	if want := netip.MustParseAddr("10.213.102.2"); len(in.IPv4) != 1 || in.IPv4[0] != want {
		t.Errorf("the first instance has %v, want %s", in.IPv4, want)
	}
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	dir := d.cfg.state.dir(in.ID)

	// The user data ran in the instance: its address and hostname, and its files in its own folders.
	where, err := os.ReadFile(filepath.Join(dir, "fs", "etc-lexicon-agent", "where"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(where), "10.213.102.2 peer 10.213.102.1") || !strings.Contains(string(where), "blue\n") {
		t.Errorf("the user data saw %q, want its eth0 address and hostname blue", where)
	}
	if _, err := os.Stat("/etc/lexicon-agent/where"); err == nil {
		t.Error("the instance's /etc/lexicon-agent/where is on the host")
	}
	if fi, err := os.Stat(filepath.Join(dir, "fs", "etc-lexicon-agent", "policy.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("policy.json: %v, %v; want mode 0600", fi, err)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "fs", "var-lib-lexicon-agent", "calls"))
	// The unit's guard is the known-good copy in the state folder, which a first start has not made
	// yet: the shim skips its "-" line as systemd does, and the agent is joined and run.
	if string(calls) != "join --plane "+p.url+" --token one-time\n" {
		t.Errorf("the agent was called %q, want join alone", calls)
	}
	p.mu.Lock()
	peers := slices.Clone(p.peers)
	p.mu.Unlock()
	if !slices.Equal(peers, []string{"10.213.102.2"}) {
		t.Errorf("the plane was asked by %v, want the instance's address alone", peers)
	}

	// The systemctl shim runs the unit's ExecStart inside the instance.
	pidFile := filepath.Join(dir, "fs", "var-lib-lexicon-agent", "run.pid")
	var agent int
	waitFor(t, "the agent to run", func() bool { agent = readPid(t, pidFile); return agent > 0 && inNamespace(agent, in.ID) })
	// It runs in its unit's cgroup, named as systemd would name it, so a scan of /proc tells its unit.
	if mount, _ := cgroupMount(); mount == "" {
		t.Fatal("the host has no cgroup hierarchy that names units (systemd-named v1, or v2)")
	}
	if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", agent)); err != nil || !strings.Contains(string(cg), "/lexicon-netns/"+in.ID+"/system.slice/lexicon-agent.service\n") {
		t.Errorf("the agent's cgroup: %q, %v; want its unit's under lexicon-netns/%s", cg, err, in.ID)
	}

	tr, err := d.MonthlyTransfer(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.UsedBytes < int64(len(agentStub)) || tr.AllowanceBytes != 1<<30 {
		t.Errorf("transfer %+v after the agent's download (%d bytes), want at least that and the allowance", tr, len(agentStub))
	}

	// A driver process started afresh knows the instance.
	again := configured(t, settings)
	if got, err := again.GetInstance(ctx, in.ID); err != nil || got.Status != cloud.StatusRunning || got.Label != "blue" {
		t.Errorf("a new driver process sees %+v, %v", got, err)
	}

	// Power off stops the agent; power on starts it again; so does a reboot.
	if err := d.PowerOff(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if !waitGone(agent, time.Second) {
		t.Errorf("the agent (%d) still runs after power off", agent)
	}
	waitStatus(t, d, in.ID, cloud.StatusStopped)
	if err := d.PowerOn(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	waitFor(t, "the agent to run after power on", func() bool {
		n := readPid(t, pidFile)
		if n > 0 && n != agent && inNamespace(n, in.ID) {
			agent = n
			return true
		}
		return false
	})
	if err := d.Reboot(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent to run after reboot", func() bool {
		n := readPid(t, pidFile)
		return n > 0 && n != agent && inNamespace(n, in.ID)
	})
	agent = readPid(t, pidFile)

	// A second instance; swap the addresses of the two while they run, reverse DNS names following.
	b, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "green", UserData: "#cloud-config\n{}\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), b.ID) })
	waitStatus(t, d, b.ID, cloud.StatusRunning)
	if err := d.SetReverseDNS(ctx, in.ID, in.IPv4[0], "blue.example.com"); err != nil {
		t.Fatal(err)
	}
	testkit.WantCode(t, d.SetReverseDNS(ctx, in.ID, b.IPv4[0], "x.example.com"), errcode.CloudInvalid)
	if d.SwapIPv4RequiresStopped() {
		t.Error("the netns driver says a swap needs stopped instances")
	}
	if err := d.SwapIPv4(ctx, in.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	a2, _ := d.GetInstance(ctx, in.ID)
	b2, _ := d.GetInstance(ctx, b.ID)
	if !slices.Equal(a2.IPv4, b.IPv4) || !slices.Equal(b2.IPv4, in.IPv4) {
		t.Errorf("after the swap blue has %v and green %v", a2.IPv4, b2.IPv4)
	}
	if got := nsAddrs(t, in.ID); !strings.Contains(got, b.IPv4[0].String()+" peer 10.213.102.1") {
		t.Errorf("blue's eth0 after the swap: %s", got)
	}
	if got := nsAddrs(t, b.ID); !strings.Contains(got, in.IPv4[0].String()+" peer 10.213.102.1") {
		t.Errorf("green's eth0 after the swap: %s", got)
	}
	if rd, _ := d.ReverseDNS(ctx, b.ID); rd[in.IPv4[0].String()] != "blue.example.com" {
		t.Errorf("green's reverse DNS after the swap: %v, want blue's name with blue's old address", rd)
	}
	// The swapped address reaches the host: the host routes to it through green's veth.
	out, err := exec.Command("ip", "route", "get", in.IPv4[0].String()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev "+vethName(b.ID)) {
		t.Errorf("the host routes %s by %q (%v), want through %s", in.IPv4[0], out, err, vethName(b.ID))
	}

	// Delete leaves nothing.
	for _, id := range []string{in.ID, b.ID} {
		if err := d.DeleteInstance(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/run/netns/" + nsName(id)); err == nil {
			t.Errorf("namespace %s is left", nsName(id))
		}
		if linkExists(vethName(id)) {
			t.Errorf("veth %s is left", vethName(id))
		}
		if _, err := os.Stat(d.cfg.state.dir(id)); err == nil {
			t.Errorf("instance %s's folder is left", id)
		}
		if _, err := os.Stat(hostCgroup(id)); err == nil {
			t.Errorf("instance %s's cgroup is left", id)
		}
		_, err := d.GetInstance(ctx, id)
		testkit.WantCode(t, err, errcode.CloudNotFound)
		if err := d.DeleteInstance(ctx, id); err != nil {
			t.Errorf("a second delete of %s: %v", id, err)
		}
	}
	if !waitGone(agent, time.Second) {
		t.Errorf("the agent (%d) still runs after delete", agent)
	}
}

// User data whose runcmd fails leaves the instance, failed, with the reason in its log.
func TestFailedUserData(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.103.0/24"})
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "broken",
		UserData: "#cloud-config\nruncmd:\n  - echo first > /etc/lexicon-agent/first\n  - exit 3\n  - echo never > /etc/lexicon-agent/never\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	waitStatus(t, d, in.ID, cloud.StatusFailed)
	dir := d.cfg.state.dir(in.ID)
	log, _ := os.ReadFile(filepath.Join(dir, "log", "cloud-init-output.log"))
	if !strings.Contains(string(log), `runcmd[1] "exit 3"`) {
		t.Errorf("the log does not say which command failed:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "fs", "etc-lexicon-agent", "first")); err != nil {
		t.Error("the command before the failure did not run")
	}
	if _, err := os.Stat(filepath.Join(dir, "fs", "etc-lexicon-agent", "never")); err == nil {
		t.Error("a command after the failure ran")
	}
	if err := d.DeleteInstance(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
}

// A power off while the user data still runs kills it and leaves the instance failed, saying why;
// the outcome a finished helper wrote is never replaced.
func TestPowerOffDuringUserData(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.112.0/24"})
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "slow",
		UserData: "#cloud-config\nruncmd:\n  - echo started > /etc/lexicon-agent/started\n  - sleep 1000\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	dir := d.cfg.state.dir(in.ID)
	waitFor(t, "the user data to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "fs", "etc-lexicon-agent", "started"))
		return err == nil
	})
	if got, err := d.GetInstance(ctx, in.ID); err != nil || got.Status != cloud.StatusProvisioning {
		t.Fatalf("while its user data runs: %+v, %v", got, err)
	}
	if err := d.PowerOff(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, in.ID, cloud.StatusFailed)
	if b := d.cfg.state.boot(in.ID); b == nil || b.Error != "powered off before its user data finished" {
		t.Errorf("boot.json after the power off: %+v", b)
	}

	// A helper that finished first keeps its outcome.
	p := filepath.Join(dir, "boot.json")
	if err := writeJSON(p, bootResult{}); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONOnce(p, bootResult{Error: "late"}); err != nil {
		t.Fatal(err)
	}
	if b := d.cfg.state.boot(in.ID); b == nil || b.Error != "" {
		t.Errorf("a second outcome replaced the first: %+v", b)
	}
	if left, _ := filepath.Glob(p + ".*"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Refusals, each with its code and nothing made.
func TestRefusals(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.104.0/29"})
	good := cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "one"}
	cases := []struct {
		name string
		edit func(*cloud.CreateRequest)
		code string
	}{
		{"unknown type", func(r *cloud.CreateRequest) { r.Type = "huge" }, errcode.CloudInvalid},
		{"unknown image", func(r *cloud.CreateRequest) { r.Image = "debian-12" }, errcode.CloudInvalid},
		{"unknown region", func(r *cloud.CreateRequest) { r.Region = "mars" }, errcode.CloudInvalid},
		{"disk encryption", func(r *cloud.CreateRequest) { r.DiskEncryption = cloud.DiskEncryptionEnabled }, errcode.CloudUnsupported},
		{"file outside", func(r *cloud.CreateRequest) {
			r.UserData = "#cloud-config\nwrite_files:\n  - path: /etc/passwd\n    content: x\n"
		}, errcode.CloudInvalid},
		{"not cloud-init", func(r *cloud.CreateRequest) { r.UserData = "hello" }, errcode.CloudInvalid},
	}
	for _, c := range cases {
		req := good
		c.edit(&req)
		_, err := d.CreateInstance(ctx, req)
		testkit.CheckCode(t, err, c.code, c.name)
	}
	if page, _ := d.ListInstances(ctx, cloud.ListRequest{}); len(page.Instances) != 0 {
		t.Fatalf("refused creates left %v", page.Instances)
	}
	_, err := d.InstanceTypes(ctx, "mars")
	testkit.WantCode(t, err, errcode.CloudNotFound)

	// A /29 holds the gateway and five instances (the last address is the broadcast).
	var ids []string
	for i := range 5 {
		req := good
		req.Label = "n" + strconv.Itoa(i)
		in, err := d.CreateInstance(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
		t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	}
	req := good
	req.Label = "n0"
	_, err = d.CreateInstance(ctx, req)
	testkit.WantCode(t, err, errcode.CloudConflict)
	req.Label = "n9"
	_, err = d.CreateInstance(ctx, req)
	testkit.WantCode(t, err, errcode.CloudQuota)
	for _, id := range ids {
		if err := d.DeleteInstance(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

// Creates from two driver values at once (as from two driver processes) never share an address.
func TestConcurrentCreates(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	s := Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.105.0/24"}
	drivers := []*Driver{configured(t, s), configured(t, s)}
	var wg sync.WaitGroup
	got := make([]cloud.Instance, 6)
	errs := make([]error, 6)
	for i := range got {
		wg.Go(func() {
			got[i], errs[i] = drivers[i%2].CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "c" + strconv.Itoa(i)})
		})
	}
	wg.Wait()
	seen := map[netip.Addr]string{}
	for i, in := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { _ = drivers[0].DeleteInstance(context.Background(), in.ID) })
		if other, ok := seen[in.IPv4[0]]; ok {
			t.Errorf("%s and %s both have %s", other, in.ID, in.IPv4[0])
		}
		seen[in.IPv4[0]] = in.ID
	}
	page, err := drivers[1].ListInstances(ctx, cloud.ListRequest{PageSize: 4})
	if err != nil || len(page.Instances) != 4 || page.NextPageToken == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	rest, err := drivers[1].ListInstances(ctx, cloud.ListRequest{PageSize: 4, PageToken: page.NextPageToken})
	if err != nil || len(rest.Instances) != 2 || rest.NextPageToken != "" {
		t.Fatalf("second page: %+v, %v", rest, err)
	}
	for _, in := range got {
		if err := drivers[0].DeleteInstance(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// Without root or iproute2 the driver is enabled all the same and answers cloud.unavailable.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	d := &Driver{toolDirs: []string{t.TempDir()}}
	if err := d.SetConfig(ctx, settingsConfig(t, Settings{Root: filepath.Join(t.TempDir(), "state")})); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Regions(ctx); err != nil {
		t.Errorf("Regions: %v", err)
	}
	_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "x"})
	testkit.WantCode(t, err, errcode.CloudUnavailable)
	_, err = d.ListInstances(ctx, cloud.ListRequest{})
	testkit.WantCode(t, err, errcode.CloudUnavailable)
}

func TestSettingsRefused(t *testing.T) {
	for name, s := range map[string]Settings{
		"relative root":              {Root: "state"},
		"root in an instance folder": {Root: "/usr/local/bin/x"},
		"public range":               {Range: "8.8.8.0/24"},
		"not a network":              {Range: "10.213.0.5/24"},
		"ipv6 range":                 {Range: "fd00::/64"},
		"range too wide":             {Range: "10.0.0.0/8"},
	} {
		err := (&Driver{}).SetConfig(context.Background(), settingsConfig(t, s))
		testkit.CheckCode(t, err, errcode.DriverConfigInvalid, name)
	}
}

func TestManifest(t *testing.T) {
	data, err := os.ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	info, _ := (&Driver{}).Info(context.Background())
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-cloud-netns" || !m.Privileged {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}

// After the host restarts, an instance's namespace is gone: it is stopped, and power-on makes its
// network again and starts what its user data enabled.
func TestHostRestart(t *testing.T) {
	needNamespaces(t)
	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.106.0/24"})
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "phoenix", UserData: `#cloud-config
write_files:
  - path: /etc/systemd/system/tick.service
    content: |
      [Service]
      ExecStart=/bin/sh -c 'echo $$ > /var/lib/lexicon-agent/tick.pid; exec sleep 1000000'
runcmd:
  - systemctl enable --now tick
`})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	pidFile := filepath.Join(d.cfg.state.dir(in.ID), "fs", "var-lib-lexicon-agent", "tick.pid")
	var first int
	waitFor(t, "the service to run", func() bool { first = readPid(t, pidFile); return first > 0 && inNamespace(first, in.ID) })

	// What a restart leaves: no process, no namespace, no veth; the state folder as it was.
	if err := d.cfg.tools.removeNet(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if got := waitStatus(t, d, in.ID, cloud.StatusStopped); len(got.IPv4) != 1 || got.IPv4[0] != in.IPv4[0] {
		t.Errorf("after the restart: %+v", got)
	}
	tr, err := d.MonthlyTransfer(ctx, in.ID)
	if err != nil || tr.UsedBytes != 0 {
		t.Errorf("transfer without a network: %+v, %v", tr, err)
	}
	if err := d.PowerOn(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	waitFor(t, "the service to run again", func() bool {
		n := readPid(t, pidFile)
		return n > 0 && n != first && inNamespace(n, in.ID)
	})
	if got := nsAddrs(t, in.ID); !strings.Contains(got, in.IPv4[0].String()+" peer 10.213.106.1") {
		t.Errorf("eth0 after power-on: %s", got)
	}
}
