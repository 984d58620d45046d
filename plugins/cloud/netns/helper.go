package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The driver's executable doubles as the helper that runs inside an instance: started with envHelper
// set, it runs the user data (boot), stands in for systemctl (systemctl), supervises one service
// (supervise), or runs one command in the instance as a shell on it would (exec), and never serves
// the driver. The driver copies itself into the state root so that
// services keep a helper when the driver process is gone or upgraded.
const (
	envHelper   = "LEXICON_NETNS_HELPER"   // boot, systemctl, supervise, exec
	envInstance = "LEXICON_NETNS_INSTANCE" // the instance's folder, absolute
	envEnter    = "LEXICON_NETNS_ENTER"    // "1": set up the instance's mounts first
	envHostname = "LEXICON_NETNS_HOSTNAME" // the instance's label, its hostname
	envUnit     = "LEXICON_NETNS_UNIT"     // the service a supervisor runs
	envCgroup   = "LEXICON_NETNS_CGROUP"   // the kind of the host's hierarchy that names units (cgroup.go)
)

// mounts are the instance's own folders (under its folder's fs/) and where they appear inside it.
var mounts = []struct{ dir, target string }{
	{"etc-lexicon-agent", "/etc/lexicon-agent"},
	{"var-lib-lexicon-agent", "/var/lib/lexicon-agent"},
	{"usr-local-bin", "/usr/local/bin"},
	{"etc-systemd-system", "/etc/systemd/system"},
}

// basePath is PATH inside an instance after its shim folder.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runHelper runs the helper and exits when this process was started as one; otherwise it returns.
func runHelper() {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return
	}
	os.Exit(helperMain(mode, os.Args[1:]))
}

func helperMain(mode string, args []string) int {
	dir := os.Getenv(envInstance)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		fmt.Fprintf(os.Stderr, "netns helper: %s=%q is not an absolute clean path\n", envInstance, dir)
		return 2
	}
	if os.Getenv(envEnter) == "1" {
		if err := enter(dir); err != nil {
			fmt.Fprintf(os.Stderr, "netns helper: enter the instance: %v\n", err)
			return 2
		}
	}
	switch mode {
	case "boot":
		// User data sees an environment as cloud-init gives it, none of the helper's variables.
		_ = os.Unsetenv(envHelper)
		_ = os.Unsetenv(envInstance)
		return boot(dir)
	case "systemctl":
		return systemctl(dir, args)
	case "supervise":
		return supervise(dir, os.Getenv(envUnit))
	case "exec":
		return execIn(args)
	}
	fmt.Fprintf(os.Stderr, "netns helper: unknown mode %q\n", mode)
	return 2
}

// enter finishes entering an instance: the process already runs in its network namespace and in a
// fresh private mount and UTS namespace (ip netns exec + unshare); it binds the instance's folders
// over the shared paths, names the host and puts the shim first in PATH.
func enter(dir string) error {
	if imageOf(dir) != HostImage {
		if err := enterRootfs(dir, filepath.Join(rootOf(dir), "rootfs", filepath.Base(dir), "merged")); err != nil {
			return err
		}
	} else {
		for _, m := range mounts {
			// A missing mount point is made (empty, on the host) with the mode the agent's would have.
			mode := os.FileMode(0o755)
			if m.target == "/var/lib/lexicon-agent" {
				mode = 0o700
			}
			if err := os.MkdirAll(m.target, mode); err != nil {
				return err
			}
			if err := unix.Mount(filepath.Join(dir, "fs", m.dir), m.target, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind %s: %w", m.target, err)
			}
		}
		bindCgroup(dir, cgroupDir(dir))
	}
	if h := os.Getenv(envHostname); h != "" {
		if err := unix.Sethostname([]byte(h)); err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
	}
	_ = os.Unsetenv(envEnter)
	_ = os.Unsetenv(envHostname)
	_ = os.Setenv("PATH", filepath.Join(dir, "shim")+":"+basePath)
	_ = os.Setenv("HOME", "/root")
	return nil
}

// execIn replaces the helper with argv, run in the instance with the environment a root shell on it
// would have.
func execIn(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "netns helper: exec needs a command")
		return 2
	}
	path := argv[0]
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "netns helper: %v\n", err)
			return 127
		}
		path = p
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "LANG=C.UTF-8"}
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "netns helper: exec %s: %v\n", path, err)
	return 126
}

// bootResult is what boot leaves in boot.json.
type bootResult struct {
	Error    string    `json:"error,omitempty"`
	Finished time.Time `json:"finished"`
}

// boot runs the instance's user data once: write_files, then runcmd in order, stopping at the first
// command that fails. Its output goes to log/cloud-init-output.log; its outcome to boot.json.
func boot(dir string) int {
	logf, err := os.OpenFile(filepath.Join(dir, "log", "cloud-init-output.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 2
	}
	defer logf.Close()
	err = runUserData(dir, logf)
	res := bootResult{Finished: time.Now().UTC()}
	if err != nil {
		res.Error = err.Error()
		fmt.Fprintf(logf, "netns cloud-init: failed: %v\n", err)
	} else {
		fmt.Fprintln(logf, "netns cloud-init: finished")
	}
	if err := writeJSON(filepath.Join(dir, "boot.json"), res); err != nil {
		return 2
	}
	if res.Error != "" {
		return 1
	}
	return 0
}

func runUserData(dir string, logf *os.File) error {
	raw, err := os.ReadFile(filepath.Join(dir, "user-data"))
	if err != nil {
		return err
	}
	ud, err := parseUserData(string(raw), imageOf(dir) != HostImage)
	if err != nil {
		return err
	}
	if len(ud.Skipped) > 0 {
		slices.Sort(ud.Skipped)
		fmt.Fprintf(logf, "netns cloud-init: skipped modules this cloud does not run: %s\n", strings.Join(ud.Skipped, ", "))
	}
	if ud.Script != nil {
		p := filepath.Join(dir, "run", "user-data-script")
		if err := os.WriteFile(p, ud.Script, 0o700); err != nil {
			return err
		}
		return runLogged(logf, command{Argv: []string{p}})
	}
	for _, f := range ud.WriteFiles {
		if err := writeFileAs(f); err != nil {
			return fmt.Errorf("write_files %s: %w", f.Path, err)
		}
	}
	for i, c := range ud.RunCmd {
		if err := runLogged(logf, c); err != nil {
			return fmt.Errorf("runcmd[%d] %q: %w", i, c.String(), err)
		}
	}
	return nil
}

func writeFileAs(f writeFile) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if f.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	out, err := os.OpenFile(f.Path, flags|unix.O_NOFOLLOW, os.FileMode(f.Mode))
	if err != nil {
		return err
	}
	if _, err := out.Write(f.Content); err != nil {
		out.Close()
		return err
	}
	uid, gid, err := lookupOwner(f.User, f.Group)
	if err == nil {
		err = out.Chown(uid, gid)
	}
	if err == nil {
		err = out.Chmod(os.FileMode(f.Mode) | setBits(f.Mode))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func setBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

func lookupOwner(u, g string) (int, int, error) {
	usr, err := user.Lookup(u)
	if err != nil {
		return 0, 0, err
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, 0, err
	}
	uid, _ := strconv.Atoi(usr.Uid)
	gid, _ := strconv.Atoi(grp.Gid)
	return uid, gid, nil
}

func runLogged(logf *os.File, c command) error {
	argv := c.Argv
	if argv == nil {
		argv = []string{"/bin/sh", "-c", c.Shell}
	}
	fmt.Fprintf(logf, "netns cloud-init: run %q\n", c.String())
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	return cmd.Run()
}

// systemctl is the shim: the verbs user data and the agent use, on the instance's own unit folder.
func systemctl(dir string, args []string) int {
	var verb string
	var units []string
	now := false
	for _, a := range args {
		switch {
		case a == "--now":
			now = true
		case strings.HasPrefix(a, "-"): // --no-block, --quiet, --system, --no-pager: nothing to change here
		case verb == "":
			verb = a
		default:
			u, err := unitName(a)
			if err != nil {
				fmt.Fprintf(os.Stderr, "systemctl (netns shim): %v\n", err)
				return 1
			}
			units = append(units, u)
		}
	}
	unitDir := filepath.Join(dir, "fs", "etc-systemd-system")
	wants := filepath.Join(unitDir, "multi-user.target.wants")
	code := 0
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "systemctl (netns shim): "+format+"\n", a...)
		code = 1
	}
	switch verb {
	case "daemon-reload", "daemon-reexec", "reset-failed":
		return 0
	case "list-units": // no unit is ever left failed by the shim: it restarts or stops them
		return 0
	case "enable", "disable", "start", "stop", "restart", "try-restart", "reload-or-restart", "is-active", "is-enabled", "status", "reload", "show":
	case "halt-all": // the driver's power-off: stop every service running
		entries, _ := os.ReadDir(filepath.Join(dir, "run"))
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
				units = append(units, n)
			}
		}
		verb = "stop"
	case "start-enabled": // the driver's power-on: start what is enabled, as boot would
		entries, _ := os.ReadDir(wants)
		for _, e := range entries {
			if u, err := unitName(e.Name()); err == nil {
				units = append(units, u)
			}
		}
		verb = "start"
	default:
		fail("verb %q is not one this shim offers", verb)
		return code
	}
	for _, u := range units {
		switch verb {
		case "enable":
			file, err := unitFile(dir, u)
			if err != nil {
				fail("unit %s is not installed: %v", u, err)
				continue
			}
			_ = os.MkdirAll(wants, 0o755)
			link := filepath.Join(wants, u)
			if _, err := os.Lstat(link); err != nil {
				if err := os.Symlink(file.installed, link); err != nil {
					fail("enable %s: %v", u, err)
					continue
				}
			}
			if now {
				if err := startUnit(dir, u); err != nil {
					fail("start %s: %v", u, err)
				}
			}
		case "disable":
			_ = os.Remove(filepath.Join(wants, u))
			if now {
				stopUnit(dir, u)
			}
		case "start":
			if err := startUnit(dir, u); err != nil {
				fail("start %s: %v", u, err)
			}
		case "stop":
			stopUnit(dir, u)
		case "restart", "reload-or-restart", "reload", "try-restart":
			if verb == "try-restart" && !unitRunning(dir, u) {
				continue
			}
			stopUnit(dir, u)
			if err := startUnit(dir, u); err != nil {
				fail("start %s: %v", u, err)
			}
		case "is-active", "status":
			if unitRunning(dir, u) {
				fmt.Println("active")
			} else {
				fmt.Println("inactive")
				code = 3
			}
		case "show":
			show(dir, u, wants)
		case "is-enabled":
			if _, err := os.Lstat(filepath.Join(wants, u)); err == nil {
				fmt.Println("enabled")
			} else {
				fmt.Println("disabled")
				code = 1
			}
		}
	}
	return code
}

func pidFile(dir, u string) string     { return filepath.Join(dir, "run", u+".pid") }
func mainPidFile(dir, u string) string { return filepath.Join(dir, "run", u+".main") }

// installedUnit is a unit file the shim found: its text and where systemd would have it.
type installedUnit struct {
	text      string
	installed string // the path a wants/ link names
}

// unitFile finds u's unit file: the instance's /etc/systemd/system, and, in an instance with a root
// of its own, where packages install units (/usr/lib/systemd/system, /lib/systemd/system). On the
// host image those are the host's own units, which an instance never starts.
func unitFile(dir, u string) (installedUnit, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "fs", "etc-systemd-system", u))
	if err == nil {
		return installedUnit{text: string(raw), installed: "/etc/systemd/system/" + u}, nil
	}
	if imageOf(dir) != HostImage {
		for _, d := range []string{"/usr/lib/systemd/system/", "/lib/systemd/system/"} {
			if raw, err := os.ReadFile(d + u); err == nil {
				return installedUnit{text: string(raw), installed: d + u}, nil
			}
		}
	}
	return installedUnit{}, err
}

// show prints u's properties as systemctl show does, those the word host reads (systemd.ShowProperties).
func show(dir, u, wants string) {
	props := [][2]string{{"Id", u}, {"LoadState", "not-found"}, {"ActiveState", "inactive"}, {"SubState", "dead"}, {"Result", "success"},
		{"MainPID", "0"}, {"ExecMainStatus", "0"}, {"ExecMainCode", "0"}, {"NRestarts", "0"}, {"UnitFileState", ""}, {"Restart", "no"}}
	set := func(k, v string) {
		for i := range props {
			if props[i][0] == k {
				props[i][1] = v
			}
		}
	}
	if file, err := unitFile(dir, u); err == nil {
		set("LoadState", "loaded")
		if parsed, err := parseUnit(file.text); err == nil {
			set("Restart", parsed.Restart)
		}
		set("UnitFileState", "disabled")
		if _, err := os.Lstat(filepath.Join(wants, u)); err == nil {
			set("UnitFileState", "enabled")
		}
	}
	if unitRunning(dir, u) {
		set("ActiveState", "active")
		set("SubState", "running")
		if pid, ok := readPidFile(mainPidFile(dir, u)); ok {
			set("MainPID", strconv.Itoa(pid))
		}
	}
	for _, p := range props {
		fmt.Printf("%s=%s\n", p[0], p[1])
	}
}

// unitRunning reports whether u's supervisor is alive.
func unitRunning(dir, u string) bool {
	pid, ok := readPidFile(pidFile(dir, u))
	return ok && pid > 0
}

// startUnit starts u's supervisor unless it runs, and waits for it to say the service started (its
// ExecStartPre commands succeeded and ExecStart began) or why not.
func startUnit(dir, u string) error {
	if unitRunning(dir, u) {
		return nil
	}
	file, err := unitFile(dir, u)
	if err != nil {
		return err
	}
	if _, err := parseUnit(file.text); err != nil {
		return err
	}
	self := helperPath(rootOf(dir))
	logf, err := os.OpenFile(filepath.Join(dir, "run", u+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, envHelper+"=") || strings.HasPrefix(kv, envUnit+"=")
	}), envHelper+"=supervise", envUnit+"="+u)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	// The supervisor outlives this shim: it is reparented when the shim exits.
	_ = cmd.Process.Release()
	msg, _ := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if s := strings.TrimSpace(msg); s != "started" {
		if s == "" {
			s = "the supervisor exited before starting the service"
		}
		return errors.New(s)
	}
	return nil
}

// stopUnit stops u's supervisor (SIGTERM, which it passes to the service; SIGKILL after 15s).
func stopUnit(dir, u string) {
	pid, ok := readPidFile(pidFile(dir, u))
	if ok {
		_ = unix.Kill(pid, unix.SIGTERM)
		if !waitGone(pid, 15*time.Second) {
			_ = unix.Kill(pid, unix.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
	_ = os.Remove(pidFile(dir, u))
}

// supervise runs one service the way systemd runs a Type=simple unit: ExecStartPre in order, then
// ExecStart, restarted as Restart= says. It tells the starter (descriptor 3) whether the first start
// worked. SIGTERM stops the service (its process group) and ends the supervisor.
func supervise(dir, name string) int {
	// The services must not inherit the starter's pipe, or it would wait for them to end.
	unix.CloseOnExec(3)
	notify := os.NewFile(3, "notify")
	tell := func(msg string) {
		if notify != nil {
			fmt.Fprintln(notify, msg)
			notify.Close()
			notify = nil
		}
	}
	defer tell("the supervisor ended")
	term := make(chan os.Signal, 1)
	signal.Notify(term, unix.SIGTERM, unix.SIGINT)
	file, err := unitFile(dir, name)
	if err != nil {
		tell(err.Error())
		return 1
	}
	u, err := parseUnit(file.text)
	if err != nil {
		tell(err.Error())
		return 1
	}
	if err := writePidFile(pidFile(dir, name), os.Getpid()); err != nil {
		tell(err.Error())
		return 1
	}
	defer os.Remove(pidFile(dir, name))
	joinUnitCgroup(dir, name)
	for {
		env, err := unitEnv(u)
		if err == nil {
			err = runPre(u, env)
		}
		var cmd *exec.Cmd
		if err == nil {
			cmd = unitCmd(u, u.Start.Argv, env)
			err = cmd.Start()
		}
		if err != nil {
			logLine(fmt.Sprintf("%s: start failed: %v", name, err))
			if notify != nil {
				tell(err.Error())
				return 1
			}
		} else {
			// The service's own pid, what systemctl show calls MainPID.
			_ = writePidFile(mainPidFile(dir, name), cmd.Process.Pid)
			tell("started")
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-term:
				_ = unix.Kill(-cmd.Process.Pid, unix.SIGTERM)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
					<-done
				}
				return 0
			case err = <-done:
				logLine(fmt.Sprintf("%s: exited: %v", name, errOr(err)))
			}
			_ = os.Remove(mainPidFile(dir, name))
		}
		if !(u.Restart == "always" || (u.Restart == "on-failure" && err != nil) || (u.Restart == "on-abnormal" && err != nil)) {
			return 0
		}
		select {
		case <-term:
			return 0
		case <-time.After(u.RestartSec):
		}
	}
}

func errOr(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func logLine(msg string) {
	fmt.Fprintf(os.Stderr, "%s netns supervisor: %s\n", time.Now().UTC().Format(time.RFC3339), msg)
}

func unitCmd(u unit, argv, env []string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	if u.WorkDir != "" && u.WorkDir != "~" {
		cmd.Dir = u.WorkDir
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func runPre(u unit, env []string) error {
	for _, p := range u.Pre {
		if err := unitCmd(u, p.Argv, env).Run(); err != nil && !p.IgnoreFail {
			return fmt.Errorf("ExecStartPre %s: %w", p.Argv[0], err)
		}
	}
	return nil
}

// unitEnv is a service's environment: PATH and HOME as systemd gives them, then Environment= and
// EnvironmentFile= in order.
func unitEnv(u unit) ([]string, error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/root", "LANG=C.UTF-8"}
	for _, ef := range u.EnvFiles {
		f, err := os.Open(ef.Path)
		if err != nil {
			if ef.Optional {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" || l[0] == '#' || l[0] == ';' || !strings.Contains(l, "=") {
				continue
			}
			k, v, _ := strings.Cut(l, "=")
			env = append(env, strings.TrimSpace(k)+"="+strings.Trim(strings.TrimSpace(v), `"'`))
		}
		f.Close()
	}
	return append(env, u.Env...), nil
}

// Pid files hold "pid starttime" so a recycled pid is never taken for the process that wrote it.

func writePidFile(p string, pid int) error {
	st, err := procStart(pid)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", pid, st)), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// readPidFile returns the pid a pid file names when that very process still lives.
func readPidFile(p string) (int, bool) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, false
	}
	now, err := procStart(pid)
	if err != nil || now != st || zombie(pid) {
		return 0, false
	}
	return pid, true
}

// procStart is a process's start time in clock ticks since boot (field 22 of /proc/PID/stat).
func procStart(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable stat of %d", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("unreadable stat of %d", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func zombie(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] == 'Z' || s[i+2] == 'X'
}

// waitGone waits until pid has exited (its pidfd becomes readable), at most d; true when it has.
func waitGone(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // ESRCH: already gone
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return zombie(pid)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		return n > 0 || zombie(pid)
	}
}

func writeJSON(p string, v any) error {
	tmp := p + ".tmp"
	if err := writeJSONFile(tmp, v); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// writeJSONFile writes v, indented, to a new file p that only its owner reads.
func writeJSONFile(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, append(b, '\n'), 0o600)
}

// writeJSONOnce writes v to p unless p exists, atomically: a link, unlike a rename, never replaces.
func writeJSONOnce(p string, v any) error {
	tmp := p + ".once"
	if err := writeJSONFile(tmp, v); err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
