// Package apttest gives tests a real Debian 12 machine root with real apt and dpkg, and a real apt
// repository of fixture packages: a library whose 1.1 is a security fix, a daemon linking it, a
// package whose postinst fails, a held package, an ordinary update and a package that holds apt's
// lock while a test wants it held.
//
//	r := apttest.NewRoot(t) // its own overlay; liblexfix1 1.0 and lexfix-daemon installed, lists fresh
//	m := &pkgmgr.Apt{Root: r.Dir}
//	pid := r.StartDaemon(t)
//
// The Debian root is made once by `make debian-root` (mmdebstrap, build/debian-12/root). The
// repository, and a layer with the fixture installed from it, are built by the first test that needs
// them, under build/aptfixture, under a file lock, and reused by every later test and test binary
// until their inputs change. Each test's root is an overlay on them, so nothing a test does reaches
// the cached layers or the host's own files. It needs root (mounts, chroot); without it, or without the
// Debian root, a test is skipped, except under CI=true, where it fails.
package apttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// fixtureVersion changes whenever the way the fixture is built changes, so cached layers are rebuilt.
const fixtureVersion = "2"

// KeyringName is the repository's public key file, at its top.
const KeyringName = "lexfix.gpg"

// RepoMount is where a test root sees the repository (a read-only bind), the file: source its lists
// come from.
const RepoMount = "/srv/lexfix"

// Env is the environment apt and dpkg get in a test root: as the host's package manager gives them.
var Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "HOME=/root", "DEBIAN_FRONTEND=noninteractive"}

// need skips (or, under CI=true, fails) a test that cannot have a Debian root here.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("apttest: %s", why)
	}
	t.Skipf("apttest: %s", why)
}

// moduleRoot is the folder holding the module's go.mod, found upwards from the test's folder.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// ModuleRoot is the folder holding Lexicon's go.mod, found upwards from dir.
func ModuleRoot(dir string) (string, error) {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(data, []byte("module github.com/lexicon-fleet/lexicon\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("apttest: no lexicon go.mod above " + dir)
		}
		dir = parent
	}
}

// DebianRoot returns the Debian 12 root `make debian-root` built.
func DebianRoot(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "a Debian root needs root (mounts and chroot)")
	}
	dir := filepath.Join(moduleRoot(t), "build", "debian-12", "root")
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/apt-get")); err != nil {
		need(t, "no Debian 12 root at %s: make debian-root", dir)
	}
	return dir
}

// built is what one build of the fixture made.
type built struct {
	repo, layer string
}

// fixture returns the repository and the installed layer, building them first when they are missing
// or their inputs changed. The file lock makes concurrent test binaries build once.
func fixture(t testing.TB) built {
	t.Helper()
	debian := DebianRoot(t)
	dir, unlock, err := lockFixture(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	status, err := os.ReadFile(filepath.Join(debian, "var/lib/dpkg/status"))
	if err != nil {
		t.Fatal(err)
	}
	repo, inputs, err := ensureRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := built{repo: repo, layer: filepath.Join(dir, "layer")}
	layerKey := key(append(inputs, status...))
	if stamp(b.layer) != layerKey {
		if err := replace(b.layer, func(tmp string) error { buildLayer(t, tmp, debian, b.repo); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := writeStamp(b.layer, layerKey); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// BuildRepo returns the fixture's repository under build/aptfixture of the checkout at moduleRoot,
// building it first when it is missing or its inputs changed: for a program that serves it (make
// demo's Debian machine); tests use Repo. It takes the tests' file lock, so it never builds beside
// one, and needs gcc, dpkg-deb, apt-ftparchive and gpg, but not root.
func BuildRepo(moduleRoot string) (string, error) {
	dir, unlock, err := lockFixture(moduleRoot)
	if err != nil {
		return "", err
	}
	defer unlock()
	repo, _, err := ensureRepo(dir)
	return repo, err
}

// lockFixture makes build/aptfixture (the repository and the installed layer) and takes its lock.
func lockFixture(moduleRoot string) (dir string, unlock func(), err error) {
	dir = filepath.Join(moduleRoot, "build", "aptfixture")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", nil, err
	}
	if err := flock(lock); err != nil {
		lock.Close()
		return "", nil, err
	}
	return dir, func() { lock.Close() }, nil
}

// ensureRepo, under the lock, builds the repository when its stamp is not its inputs' key. inputs
// are what it is built from; the layer's key is theirs and the Debian root's dpkg status.
func ensureRepo(dir string) (repo string, inputs []byte, err error) {
	arch, err := outputOf(exec.Command("dpkg", "--print-architecture"))
	if err != nil {
		return "", nil, err
	}
	multiarch, err := outputOf(exec.Command("gcc", "-dumpmachine"))
	if err != nil {
		return "", nil, err
	}
	inputs = fmt.Appendf(nil, "%s\n%s\n%s\n%#v\n%s%s%s%s%s%s%s", fixtureVersion, arch, multiarch, packages(multiarch), libSource, daemonSource, daemonUnit,
		daemonPostinst, brokenPostinst, slowScript("preinst"), slowScript("postinst"))
	repo = filepath.Join(dir, "repo")
	if repoKey := key(inputs); stamp(repo) != repoKey {
		if err := replace(repo, func(tmp string) error { return buildRepo(tmp, arch, multiarch) }); err != nil {
			return "", nil, err
		}
		if err := writeStamp(repo, repoKey); err != nil {
			return "", nil, err
		}
	}
	return repo, inputs, nil
}

func key(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func stamp(dir string) string {
	b, _ := os.ReadFile(dir + ".stamp")
	return strings.TrimSpace(string(b))
}

func writeStamp(dir, key string) error {
	return os.WriteFile(dir+".stamp", []byte(key+"\n"), 0o644)
}

// replace builds into a fresh temporary folder beside dir and renames it over dir, so a build cut
// short never leaves a half-built fixture where a test would use it.
func replace(dir string, build func(tmp string) error) error {
	tmp := dir + ".tmp"
	if err := removeTree(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := build(tmp); err != nil {
		return err
	}
	_ = os.Remove(dir + ".stamp")
	if err := removeTree(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// removeAll removes a folder that may hold an overlay's work folder (mode 000).
func removeAll(t testing.TB, dir string) {
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
}

func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func outputOf(cmd *exec.Cmd) (string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("apttest: %s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

func runCmd(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apttest: %s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// Root is a test's own Debian machine root: an overlay over the installed fixture layer and the
// Debian root, with the repository at RepoMount and its own /proc.
type Root struct {
	// Dir is the root as the test sees it.
	Dir  string
	repo string
}

// NewRoot gives the test its own root with liblexfix1 1.0, lexfix-daemon 1.0, lexfix-tool 1.0 and
// lexfix-held 1.0 (held) installed, and lists refreshed from the repository, so liblexfix1 1.1 (and
// lexfix-held 1.1) wait as security fixes and lexfix-tool 1.1 as an ordinary update. The daemon is
// not running (StartDaemon). It is unmounted when the test ends.
func NewRoot(t testing.TB) *Root {
	t.Helper()
	b := fixture(t)
	return overlay(t, b.repo, b.layer+"/upper:"+DebianRoot(t))
}

// NewBareRoot gives the test its own copy of the Debian root alone: no repository source, no fixture
// installed.
func NewBareRoot(t testing.TB) *Root {
	t.Helper()
	b := fixture(t)
	return overlay(t, b.repo, DebianRoot(t))
}

// Layers returns what NewRoot's overlay lies on, for a test that mounts a machine root of its own:
// the lower folders, uppermost first (the installed fixture, then the Debian root), and the repository,
// which the machine must show at RepoMount.
func Layers(t testing.TB) (lower []string, repo string) {
	t.Helper()
	b := fixture(t)
	return []string{b.layer + "/upper", DebianRoot(t)}, b.repo
}

func overlay(t testing.TB, repo, lower string) *Root {
	t.Helper()
	base := t.TempDir()
	upper, work, merged := filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "root")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unmount := mountRoot(t, lower, upper, work, merged, repo)
	t.Cleanup(func() {
		unmount()
		removeAll(t, base)
	})
	return &Root{Dir: merged, repo: repo}
}

// mountRoot mounts the overlay, the repository (read-only) and a proc, and returns what unmounts
// them. The mounts are lazy-unmounted, so a process a test left behind does not keep them.
func mountRoot(t testing.TB, lower, upper, work, merged, repo string) func() {
	t.Helper()
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("apttest: mount the overlay: %v", err)
	}
	var mounted []string
	undo := func() {
		for i := len(mounted) - 1; i >= 0; i-- {
			_ = unix.Unmount(mounted[i], unix.MNT_DETACH)
		}
		_ = unix.Unmount(merged, unix.MNT_DETACH)
	}
	srv := filepath.Join(merged, RepoMount)
	if err := os.MkdirAll(srv, 0o755); err != nil {
		undo()
		t.Fatal(err)
	}
	if err := unix.Mount(repo, srv, "", unix.MS_BIND, ""); err != nil {
		undo()
		t.Fatalf("apttest: bind the repository: %v", err)
	}
	mounted = append(mounted, srv)
	if err := unix.Mount("", srv, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		undo()
		t.Fatalf("apttest: make the repository read-only: %v", err)
	}
	proc := filepath.Join(merged, "proc")
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		undo()
		t.Fatalf("apttest: mount proc: %v", err)
	}
	mounted = append(mounted, proc)
	return undo
}

// Command is argv run chrooted into the root, with Env.
func (r *Root) Command(argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = Env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: r.Dir, Setpgid: true}
	return cmd
}

// Run runs argv in the root and fails the test unless it succeeds; it returns the output.
func (r *Root) Run(t testing.TB, argv ...string) string {
	t.Helper()
	out, err := r.Command(argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("apttest: %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// Version is the package's installed version and dpkg state ("1.0 installed"), or "" when dpkg does
// not know it.
func (r *Root) Version(t testing.TB, name string) string {
	t.Helper()
	out, err := r.Command("/usr/bin/dpkg-query", "-W", "-f", "${Version} ${db:Status-Status}", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// WriteFile writes a file beneath the root, making its folder.
func (r *Root) WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	p := filepath.Join(r.Dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// StartDaemon starts lexfix-daemon in the root, as its service would run it, and returns its pid once
// it has loaded the library (it says so on its output). It is killed when the test ends.
func (r *Root) StartDaemon(t testing.TB) int {
	t.Helper()
	cmd := r.Command("/usr/sbin/lexfix-daemon")
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	out.WaitFor(t, "lexfix-daemon: liblexfix ")
	return cmd.Process.Pid
}

// HoldLock starts a real apt-get run in the root that holds apt's and dpkg's locks (installing
// lexfix-slow, whose preinst waits), and returns once the locks are held. The returned function lets
// the run finish and waits for it; the test's end does too.
func (r *Root) HoldLock(t testing.TB) (release func()) {
	t.Helper()
	return HoldLock(t, r.Dir, r.Command("/usr/bin/apt-get", "install", "-y", "-q", Slow+"=1.0"))
}

// HoldLock runs cmd, an apt-get run installing lexfix-slow 1.0 on the machine whose root the test sees
// at rootDir, and returns once its preinst waits: apt and dpkg then hold their locks. The returned
// function lets the run finish and waits for it to exit; the test's end does too.
func HoldLock(t testing.TB, rootDir string, cmd *exec.Cmd) (release func()) {
	t.Helper()
	g := NewGate(t, rootDir)
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if step, err := g.Next(t, exited); err != nil || step != "preinst" {
		t.Fatalf("apttest: the run meant to hold apt's lock stopped at %q (%v)\n%s", step, err, out.String())
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		g.Go(t)
		if err := testkit.Wait(t, exited, "the apt run holding the lock to finish"); err != nil {
			t.Errorf("apttest: the apt run holding the lock failed: %v\n%s", err, out.String())
		}
		g.Close()
	}
	t.Cleanup(release)
	return release
}

// Gate stops a run installing lexfix-slow at each of its scripts: the scripts find the gate's FIFOs on
// the machine, say which script they are, and wait until the test lets them go on.
type Gate struct {
	ready, goFIFO string
	steps         chan string
	closed        chan struct{}
}

// NewGate makes the FIFOs beneath rootDir (the machine's root as the test sees it). They are removed
// when the test ends.
func NewGate(t testing.TB, rootDir string) *Gate {
	t.Helper()
	g := &Gate{ready: filepath.Join(rootDir, SlowReady), goFIFO: filepath.Join(rootDir, SlowGo), steps: make(chan string, 4), closed: make(chan struct{})}
	for _, p := range []string{g.ready, g.goFIFO} {
		_ = os.Remove(p)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for {
			data, err := os.ReadFile(g.ready) // opening blocks until a script opens it to write
			select {
			case <-g.closed:
				return
			default:
			}
			if err != nil {
				return
			}
			if step, ok := strings.CutSuffix(strings.TrimSpace(string(data)), " waiting"); ok {
				g.steps <- step
			}
		}
	}()
	t.Cleanup(g.Close)
	return g
}

// Next returns the script that waits now ("preinst", "postinst"), or the run's end when it ends first.
func (g *Gate) Next(t testing.TB, exited <-chan error) (string, error) {
	t.Helper()
	select {
	case s := <-g.steps:
		return s, nil
	case err := <-exited:
		return "", fmt.Errorf("the run ended first: %v", err)
	}
}

// Go lets the waiting script go on.
func (g *Gate) Go(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(g.goFIFO, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("go\n")
	f.Close()
}

// Close removes the FIFOs; scripts run from now on do not wait.
func (g *Gate) Close() {
	select {
	case <-g.closed:
		return
	default:
	}
	close(g.closed)
	// Wake the reader if it waits in open: a writer that opens and closes ends its read.
	if f, err := os.OpenFile(g.ready, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
	_ = os.Remove(g.ready)
	_ = os.Remove(g.goFIFO)
}

// Repo returns the repository's folder (built if need be), for a test serving it over HTTP.
func Repo(t testing.TB) string {
	t.Helper()
	return fixture(t).repo
}

// Serve serves the repository on ln over HTTP until the test ends and returns its URL.
func Serve(t testing.TB, ln net.Listener) string {
	t.Helper()
	srv := &http.Server{Handler: http.FileServer(http.Dir(Repo(t)))}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("apttest: serve the repository: %v", err)
		}
	}()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// SourcesList is an apt sources.list naming the repository's three suites at url (http://... or
// file:/...), its Release files checked against the keyring at keyring (a path on the machine).
func SourcesList(url, keyring string) string {
	var b strings.Builder
	for _, s := range suites {
		fmt.Fprintf(&b, "deb [signed-by=%s] %s %s main\n", keyring, url, s.name)
	}
	return b.String()
}
