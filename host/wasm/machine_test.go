package wasm_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/host/wasm/wasmtest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// A machine is a node for the footprint capabilities with real parts and nothing of this machine at
// stake: a copy-on-write view (overlayfs) of a Debian 12 root (build/debian-12/root when it has
// useradd and nft, which the firewall items need; else this machine's own root filesystem, which is
// Debian 12 here and in CI; the package tests give the apt fixture's root), entered in a private mount
// namespace inside its own network namespace. Users and groups are made by
// the real useradd, files written to the real disk (the overlay's upper folder, where the test reads
// them), sysctl set in the namespace's own /proc/sys/net, and the firewall applied by the real nft to
// the namespace's own ruleset.
//
// The test binary is the machine's host: the child re-runs it (machineEnv) under `ip netns exec NS
// unshare --mount`, where it mounts the overlay, loads the word, chroots into the overlay, runs, and
// prints its result. A child told to die at a step (job.Fault) kills itself with SIGKILL there, as a
// power cut or the OOM killer would; the overlay's upper folder keeps what it did for the next child.

const machineEnv = "LEXICON_MACHINE_CHILD"

type machine struct {
	t                          *testing.T
	ns                         string
	lower, upper, work, merged string // lower: overlayfs's lowerdir, folders joined by ":"
	binds                      map[string]string
	hostIP, nodeIP             string
}

// need fails a test that cannot have a machine here under CI=true, and skips it otherwise.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("machine: "+format, args...)
	}
	t.Skipf("machine: "+format, args...)
}

func newMachine(t *testing.T) *machine {
	t.Helper()
	return newMachineOn(t, "", nil)
}

// newPackageMachine is a machine on the apt fixture's root (apttest): the Debian root with the
// fixture's packages installed and its repository's lists fresh, the repository shown read-only where
// its sources name it.
func newPackageMachine(t *testing.T) *machine {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "namespaces, mounts and useradd need root")
	}
	lower, repo := apttest.Layers(t)
	return newMachineOn(t, strings.Join(lower, ":"), map[string]string{apttest.RepoMount: repo})
}

// newMachineOn makes a machine on lower (as overlayfs's lowerdir takes it; "" picks the Debian root or
// this machine's own), with binds (a path in the machine to a folder here) shown read-only in it.
func newMachineOn(t *testing.T, lower string, binds map[string]string) *machine {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "namespaces, mounts and useradd need root")
	}
	for _, tool := range []string{"ip", "unshare", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			need(t, "%s is not installed", tool)
		}
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	m := &machine{t: t, ns: "lxm-" + id, lower: "/", binds: binds}
	if lower != "" {
		m.lower = lower
	} else if root, err := filepath.Abs("../../build/debian-12/root"); err == nil {
		_, errUseradd := os.Stat(filepath.Join(root, "usr/sbin/useradd"))
		_, errNft := os.Stat(filepath.Join(root, "usr/sbin/nft"))
		_, errProtocols := os.Stat(filepath.Join(root, "etc/protocols")) // nft resolves ipv6-icmp with it
		if errUseradd == nil && errNft == nil && errProtocols == nil {
			m.lower = root
		}
	}
	dir := t.TempDir()
	m.upper, m.work, m.merged = filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "merged")
	for _, d := range []string{m.upper, m.work, m.merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m.sh("ip", "netns", "add", m.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", m.ns).Run() })
	// A veth pair: this machine's end and the namespace's eth0, so a test can reach the node from
	// outside, where its firewall applies (loopback it always lets through).
	host := "lxm" + id
	b := int(rnd[0]) % 250
	m.hostIP, m.nodeIP = fmt.Sprintf("10.219.%d.1", b), fmt.Sprintf("10.219.%d.2", b)
	m.sh("ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", m.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	m.sh("ip", "addr", "add", m.hostIP+"/30", "dev", host)
	m.sh("ip", "link", "set", host, "up")
	m.sh("ip", "-n", m.ns, "addr", "add", m.nodeIP+"/30", "dev", "eth0")
	m.sh("ip", "-n", m.ns, "link", "set", "eth0", "up")
	m.sh("ip", "-n", m.ns, "link", "set", "lo", "up")
	return m
}

func (m *machine) sh(args ...string) string {
	m.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNS runs a command in the machine's network namespace.
func (m *machine) inNS(args ...string) string {
	m.t.Helper()
	return m.sh(append([]string{"ip", "netns", "exec", m.ns}, args...)...)
}

// file reads a file of the machine as its disk holds it now (the overlay's upper folder over the
// lower root).
func (m *machine) file(p string) (string, bool) {
	for _, dir := range append([]string{m.upper}, strings.Split(m.lower, ":")...) {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err == nil {
			return string(b), true
		}
	}
	return "", false
}

// stat describes a file of the machine.
func (m *machine) stat(p string) (os.FileInfo, error) { return os.Lstat(filepath.Join(m.upper, p)) }

// job is what a child does.
type job struct {
	Lower, Upper, Work, Merged string
	Binds                      map[string]string // a path in the machine -> a folder here, shown read-only
	Cache, CacheKey            string
	Module, Manifest           string // absolute paths on this machine
	Params                     json.RawMessage
	Bounds                     footprint.Bounds
	Blobs                      map[string][]byte // the plane's artifacts, by digest
	Units                      map[string]string // the service manager's units, as systemctl show prints them
	Fault                      string            // the step to die at
	Listen                     []int             // ports to serve on before READY
	Serve                      bool              // print READY after the run and wait for stdin to close
}

// childResult is what a child reports.
type childResult struct {
	Result  *wasm.Result `json:"result"`
	Served  []string     `json:"served"`
	Actions []string     `json:"actions"`
}

type childRun struct {
	res    childResult
	died   string // the step it died at, if it did
	stdin  io.WriteCloser
	cmd    *exec.Cmd
	output strings.Builder
}

// start runs a child for j; with j.Serve, it returns once the child printed READY, and the test
// ends it with stop.
func (m *machine) start(j job) *childRun {
	m.t.Helper()
	j.Lower, j.Upper, j.Work, j.Merged, j.Binds = m.lower, m.upper, m.work, m.merged, m.binds
	j.Cache, j.CacheKey = sharedCache.dir, sharedCache.key
	raw, err := json.Marshal(j)
	if err != nil {
		m.t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		m.t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", m.ns, "unshare", "--mount", "--propagation", "private", "--", self, "-test.run=^$")
	// The job goes in a file (its artifacts can be megabytes, too many for the environment), which the
	// child reads before it leaves this machine's root.
	jobFile := filepath.Join(m.t.TempDir(), "job.json")
	if err := os.WriteFile(jobFile, raw, 0o600); err != nil {
		m.t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), machineEnv+"="+jobFile)
	cmd.Stderr = os.Stderr
	r := &childRun{cmd: cmd}
	r.stdin, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		r.output.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "LEXICON-RESULT "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "LEXICON-RESULT ")), &r.res); err != nil {
				m.t.Fatal(err)
			}
		case strings.HasPrefix(line, "LEXICON-FAULT "):
			r.died = strings.TrimPrefix(line, "LEXICON-FAULT ")
		case line == "LEXICON-READY":
			return r
		}
	}
	r.wait(m.t)
	return r
}

func (r *childRun) wait(t *testing.T) {
	t.Helper()
	err := r.cmd.Wait()
	var exit *exec.ExitError
	switch {
	case r.died != "":
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the child was to die by SIGKILL at %s: %v\n%s", r.died, err, r.output.String())
		}
	case err != nil:
		t.Fatalf("child: %v\n%s", err, r.output.String())
	}
}

// stop ends a serving child.
func (r *childRun) stop(t *testing.T) {
	t.Helper()
	r.stdin.Close()
	r.wait(t)
}

// run runs a child to its end.
func (m *machine) run(j job) *childRun {
	m.t.Helper()
	r := m.start(j)
	if j.Serve {
		r.stop(m.t)
	}
	return r
}

// machineChild is the child's side: everything it does is inside the namespaces `ip netns exec` and
// `unshare` made, which end with it.
func machineChild(jobFile string) int {
	var j job
	raw, err := os.ReadFile(jobFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "machine child: "+format+"\n", args...)
		return 2
	}
	module, err := os.ReadFile(j.Module)
	if err != nil {
		return fail("%v", err)
	}
	mb, err := os.ReadFile(j.Manifest)
	if err != nil {
		return fail("%v", err)
	}
	m, err := manifest.Parse(mb)
	if err != nil {
		return fail("%v", err)
	}
	if err := syscall.Mount("overlay", j.Merged, "overlay", 0, "lowerdir="+j.Lower+",upperdir="+j.Upper+",workdir="+j.Work); err != nil {
		return fail("overlay: %v", err)
	}
	for _, mnt := range []struct{ src, dst, fs string }{{"proc", "proc", "proc"}, {"sysfs", "sys", "sysfs"}, {"tmpfs", "run", "tmpfs"}, {"tmpfs", "tmp", "tmpfs"}} {
		if err := syscall.Mount(mnt.src, filepath.Join(j.Merged, mnt.dst), mnt.fs, 0, ""); err != nil {
			return fail("mount %s: %v", mnt.dst, err)
		}
	}
	if err := syscall.Mount("/dev", filepath.Join(j.Merged, "dev"), "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fail("bind /dev: %v", err)
	}
	for dst, src := range j.Binds {
		at := filepath.Join(j.Merged, dst)
		if err := os.MkdirAll(at, 0o755); err != nil {
			return fail("%v", err)
		}
		if err := syscall.Mount(src, at, "", syscall.MS_BIND, ""); err != nil {
			return fail("bind %s: %v", dst, err)
		}
		if err := syscall.Mount("", at, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fail("bind %s read-only: %v", dst, err)
		}
	}
	plane := wasmtest.StartArtifacts()
	defer plane.Close()
	for d, b := range j.Blobs {
		plane.PutAs(d, b)
	}
	sd := systemdtest.New(j.Units)
	sd.UnitDir = "/etc/systemd/system"
	bounds := j.Bounds
	ctx := context.Background()
	h, err := wasm.New(ctx, wasm.Config{Isolation: wasm.InProcess, CacheDir: j.Cache, CacheKeyFile: j.CacheKey, Systemd: sd,
		Converge: func() (*footprint.Bounds, error) { return &bounds, nil }, Artifacts: plane,
		ConvergeDir: "/var/lib/lexicon-agent/converge", Reserved: []string{"/etc/lexicon-agent", "/var/lib/lexicon-agent"}})
	if err != nil {
		return fail("%v", err)
	}
	mod, err := h.Load(ctx, m, module, cas.Sum(module))
	if err != nil {
		return fail("load: %v", err)
	}
	// The word, its compiled code and the plane are in hand: from here on "/" is the machine's.
	if err := syscall.Chroot(j.Merged); err != nil {
		return fail("chroot: %v", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fail("%v", err)
	}
	if j.Fault != "" {
		wasm.SetFault(func(step string) {
			if step == j.Fault {
				fmt.Println("LEXICON-FAULT " + step)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		})
	}
	for _, port := range j.Listen {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			return fail("listen %d: %v", port, err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("hello\n"))
				c.Close()
			}
		}()
	}
	res := mod.Run(ctx, j.Params)
	b, _ := json.Marshal(childResult{Result: res, Served: plane.Served(), Actions: sd.Actions()})
	fmt.Println("LEXICON-RESULT " + string(b))
	if j.Serve {
		fmt.Println("LEXICON-READY")
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	return 0
}
