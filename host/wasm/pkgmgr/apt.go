package pkgmgr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/osrelease"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Apt is the Manager of a Debian machine: dpkg's database read directly, apt-cache for what is
// offered, apt-get and dpkg for changes, needrestart where installed.
type Apt struct {
	// Root is the machine's root folder, "/" on a node (the default). Another folder, such as a test's
	// Debian root, has apt and dpkg run chrooted into it, its files read beneath it, and only the
	// processes whose root it is scanned.
	Root string
	// Proc is the proc filesystem the processes are read from (default /proc).
	Proc string
	// Transient runs the programs that change the machine (apt-get update and install, dpkg
	// --configure) as transient systemd services of their own (systemd-run), outside the agent's
	// sandbox, which leaves the system read-only; Detect sets it where systemd is PID 1's manager.
	// Reads run as the agent's children either way.
	Transient bool
}

// The programs, at their paths inside the root (never looked up in PATH).
const (
	aptGet      = "/usr/bin/apt-get"
	aptCache    = "/usr/bin/apt-cache"
	dpkgBin     = "/usr/bin/dpkg"
	needrestart = "/usr/sbin/needrestart"
)

// Time caps of the programs. A word's deadline, or a capability's timeout, can only shorten them.
const (
	queryTimeout    = 2 * time.Minute
	restartsTimeout = 2 * time.Minute
	refreshTimeout  = 10 * time.Minute
	upgradeTimeout  = 60 * time.Minute
	repairTimeout   = 30 * time.Minute
)

// lockFiles are the locks apt and dpkg take, beneath the root. Any of them held means a run is in
// progress; the change operations refuse to start beside one.
var lockFiles = []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock", "/var/cache/apt/archives/lock"}

// Options every apt-get run takes: quiet, no pty for dpkg, and dpkg keeping changed configuration
// files (confdef first, so an unchanged file still gets the package's new version).
var dpkgOptions = []string{"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold", "-o", "Dpkg::Use-Pty=0"}

func (a *Apt) root() string {
	if a.Root == "" {
		return "/"
	}
	return filepath.Clean(a.Root)
}

func (a *Apt) proc() string {
	if a.Proc == "" {
		return "/proc"
	}
	return a.Proc
}

// open opens the root as an os.Root, so no file read beneath it can be a link leading out of it.
func (a *Apt) open() (*os.Root, error) {
	r, err := os.OpenRoot(a.root())
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot open the package root %s", a.root())
	}
	return r, nil
}

// usable says why apt cannot be run here, or nil.
func (a *Apt) usable() error {
	r, err := os.OpenRoot(a.root())
	if err != nil {
		return fmt.Errorf("no package root at %s", a.root())
	}
	defer r.Close()
	for _, p := range []string{aptGet, aptCache, dpkgBin} {
		fi, err := r.Stat(strings.TrimPrefix(p, "/"))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("no package manager this host knows (apt): %s is not installed", p)
		}
	}
	return nil
}

func (a *Apt) unknown() error {
	if err := a.usable(); err != nil {
		return errcode.New(errcode.CapabilityUnknown, "%v", err).With(errcode.DetailReason, err.Error())
	}
	return nil
}

// Query reads dpkg's database and asks apt-cache what is offered for every installed package.
func (a *Apt) Query(ctx context.Context, installed bool) (capv1.PkgState, error) {
	if err := a.unknown(); err != nil {
		return capv1.PkgState{}, err
	}
	r, err := a.open()
	if err != nil {
		return capv1.PkgState{}, err
	}
	defer r.Close()
	st := capv1.PkgState{Backend: "apt", Upgrades: []capv1.Upgrade{}, HalfConfigured: []capv1.Package{}, Held: []capv1.Package{}}
	st.OS = readOSRelease(r)
	db, err := readDatabase(a.root())
	if err != nil {
		return st, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database")
	}
	present := sorted(db, Record.Present)
	st.InstalledCount = len(present)
	for _, p := range present {
		if installed {
			st.Installed = append(st.Installed, p.pkg())
		}
		if p.HalfDone() {
			st.HalfConfigured = append(st.HalfConfigured, p.pkg())
		}
		if p.Want == "hold" {
			st.Held = append(st.Held, p.pkg())
		}
	}
	if st.Upgrades, err = a.upgrades(ctx, present); err != nil {
		return st, err
	}
	st.ListsRefreshed = listsRefreshed(r)
	st.UnattendedUpgrades = newest(r, "var/lib/apt/periodic/unattended-upgrades-stamp", "var/log/unattended-upgrades/unattended-upgrades.log")
	st.Lock = a.heldLock()
	return st, nil
}

// upgrades asks apt-cache for the version tables of the installed packages and keeps those offering
// a newer version.
func (a *Apt) upgrades(ctx context.Context, present []Record) ([]capv1.Upgrade, error) {
	out := []capv1.Upgrade{}
	if len(present) == 0 {
		return out, nil
	}
	native, err := a.nativeArch(ctx)
	if err != nil {
		return nil, err
	}
	tables, files, err := a.policy(ctx, native, present)
	if err != nil {
		return nil, err
	}
	byName := map[string]Record{}
	for _, p := range present {
		byName[p.key()] = p
	}
	for _, t := range tables {
		name, arch := splitArch(t.Name, native)
		rec, ok := byName[name+":"+arch]
		if !ok {
			rec, ok = byName[name+":all"]
		}
		if !ok || rec.Version == "" {
			continue
		}
		u := capv1.Upgrade{Name: rec.Name, Arch: rec.Arch, Installed: rec.Version, Candidate: t.Candidate, Origins: []capv1.Origin{}, Versions: []capv1.Offered{}}
		for _, v := range t.Versions {
			if CompareVersions(v.Version, rec.Version) <= 0 {
				continue
			}
			u.Versions = append(u.Versions, capv1.Offered{Version: v.Version, Origins: originsOf(v.Files, files)})
		}
		if len(u.Versions) == 0 {
			continue
		}
		slices.SortStableFunc(u.Versions, func(x, y capv1.Offered) int { return CompareVersions(y.Version, x.Version) })
		for _, v := range u.Versions {
			if v.Version == u.Candidate {
				u.Origins = v.Origins
			}
			if !u.Security && slices.ContainsFunc(v.Origins, IsSecurity) {
				u.Security, u.SecurityVersion = true, v.Version
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(x, y capv1.Upgrade) int { return strings.Compare(x.Name+":"+x.Arch, y.Name+":"+y.Arch) })
	return out, nil
}

// policy runs apt-cache policy for the package files, then for the given packages' version tables.
func (a *Apt) policy(ctx context.Context, native string, recs []Record) ([]Policy, map[string]capv1.Origin, error) {
	o, err := a.run(ctx, queryTimeout, env, aptCache, "policy")
	if err == nil && o.exit != 0 {
		err = errcode.New(errcode.CapabilityFailed, "apt-cache policy exited %d: %s", o.exit, firstError(o)).With(errcode.DetailExitCode, o.exit)
	}
	if err != nil {
		return nil, nil, err
	}
	files := ParseSources(o.stdout)
	args := []string{aptCache, "policy"}
	seen := map[string]bool{}
	for _, r := range recs {
		n := r.Name
		if r.Arch != native && r.Arch != "all" && r.Arch != "" {
			n += ":" + r.Arch
		}
		if !seen[n] {
			seen[n] = true
			args = append(args, n)
		}
	}
	o, err = a.run(ctx, queryTimeout, env, args...)
	if err == nil && o.exit != 0 {
		err = errcode.New(errcode.CapabilityFailed, "apt-cache policy exited %d: %s", o.exit, firstError(o)).With(errcode.DetailExitCode, o.exit)
	}
	if err != nil {
		return nil, nil, err
	}
	return ParsePolicy(o.stdout), files, nil
}

func (a *Apt) nativeArch(ctx context.Context) (string, error) {
	o, err := a.run(ctx, queryTimeout, env, dpkgBin, "--print-architecture")
	if err == nil && o.exit != 0 {
		err = errcode.New(errcode.CapabilityFailed, "dpkg --print-architecture exited %d", o.exit)
	}
	return strings.TrimSpace(string(o.stdout)), err
}

// splitArch splits apt's "name:arch" (another architecture's package) from "name" (the native one).
func splitArch(s, native string) (string, string) {
	if n, arch, ok := strings.Cut(s, ":"); ok {
		return n, arch
	}
	return s, native
}

func originsOf(fileKeys []string, files map[string]capv1.Origin) []capv1.Origin {
	out := []capv1.Origin{}
	for _, f := range fileKeys {
		if o, ok := files[f]; ok && o != (capv1.Origin{}) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func readOSRelease(r *os.Root) capv1.OSRelease {
	data, err := readRootFile(r, "etc/os-release", 64<<10)
	if err != nil {
		data, _ = readRootFile(r, "usr/lib/os-release", 64<<10)
	}
	rel := osrelease.Parse(data)
	o := capv1.OSRelease{ID: rel.ID, VersionID: rel.VersionID, PrettyName: rel.PrettyName, VersionCodename: rel.Codename}
	if !rel.SupportEnd.IsZero() {
		o.SupportEnd = rel.SupportEnd.Format(time.DateOnly)
	}
	return o
}

func readRootFile(r *os.Root, name string, limit int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// listsRefreshed is the newest of the success stamp (which apt's daily job, and pkg.refresh, touch)
// and the lists apt keeps.
func listsRefreshed(r *os.Root) *time.Time {
	t := newest(r, "var/lib/apt/periodic/update-success-stamp")
	entries, err := fs.ReadDir(r.FS(), "var/lib/apt/lists")
	if err != nil {
		return t
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "lock" {
			continue
		}
		if fi, err := e.Info(); err == nil && (t == nil || fi.ModTime().After(*t)) {
			m := fi.ModTime().UTC()
			t = &m
		}
	}
	return t
}

// newest is the modification time of the first of names that exists, or nil.
func newest(r *os.Root, names ...string) *time.Time {
	for _, n := range names {
		if fi, err := r.Stat(n); err == nil {
			t := fi.ModTime().UTC()
			return &t
		}
	}
	return nil
}

// heldLock returns the run holding one of apt's and dpkg's locks, as fcntl(F_GETLK) reports it, or
// nil. It takes no lock itself.
func (a *Apt) heldLock() *capv1.PkgLock {
	for _, l := range lockFiles {
		p := filepath.Join(a.root(), l)
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // never made, so never held
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err = unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk)
		f.Close()
		if err != nil || lk.Type == unix.F_UNLCK {
			continue
		}
		held := &capv1.PkgLock{Path: l}
		if lk.Pid > 0 {
			held.PID = int(lk.Pid)
			if comm, err := os.ReadFile(filepath.Join(a.proc(), fmt.Sprint(lk.Pid), "comm")); err == nil {
				held.Command = strings.TrimSpace(string(comm))
			}
		}
		return held
	}
	return nil
}

func lockedError(l *capv1.PkgLock) error {
	who := "another package run"
	if l.Command != "" {
		who = fmt.Sprintf("%s (pid %d)", l.Command, l.PID)
	} else if l.PID > 0 {
		who = fmt.Sprintf("pid %d", l.PID)
	}
	e := errcode.New(errcode.PkgLocked, "%s holds the package manager's lock %s", who, l.Path).With(errcode.DetailPath, l.Path)
	if l.PID > 0 {
		e = e.With(errcode.DetailPID, l.PID)
	}
	if l.Command != "" {
		e = e.With(errcode.DetailCommand, l.Command)
	}
	return e
}

// free returns pkg.locked when a run holds a lock, so no change starts beside it.
func (a *Apt) free() error {
	if l := a.heldLock(); l != nil {
		return lockedError(l)
	}
	return nil
}

// Restarts scans /proc for processes running replaced code; needrestart, where installed, names the
// services. The reboot is owed when a package asked for one or a newer kernel is installed.
func (a *Apt) Restarts(ctx context.Context) (capv1.RestartsResult, error) {
	if err := a.unknown(); err != nil {
		return capv1.RestartsResult{}, err
	}
	r, err := a.open()
	if err != nil {
		return capv1.RestartsResult{}, err
	}
	defer r.Close()
	res := capv1.RestartsResult{Method: capv1.RestartsProc, Services: []string{}, Processes: scanProc(a.proc(), a.root())}
	var nr Needrestart
	if fi, err := r.Stat(strings.TrimPrefix(needrestart, "/")); err == nil && fi.Mode().IsRegular() {
		// needrestart's own apt hook is silenced in env; its batch mode here must not be.
		nrEnv := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "NEEDRESTART_") })
		o, err := a.run(ctx, restartsTimeout, nrEnv, needrestart, "-b", "-r", "l")
		if err != nil {
			return res, err
		}
		if nr = ParseNeedrestart(o.stdout); nr.Version != "" {
			res.Method, res.Services = capv1.RestartsNeedrestart, nr.Services
		}
	}
	res.Reboot = a.reboot(r, nr)
	return res, nil
}

func (a *Apt) reboot(r *os.Root, nr Needrestart) capv1.Reboot {
	var rb capv1.Reboot
	if _, err := r.Stat("run/reboot-required"); err == nil {
		rb.Required = true
		data, _ := readRootFile(r, "run/reboot-required.pkgs", 64<<10)
		for l := range strings.SplitSeq(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(rb.Packages, l) && len(rb.Packages) < 64 {
				rb.Packages = append(rb.Packages, l)
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		rb.RunningKernel = unix.ByteSliceToString(u.Release[:])
	}
	if entries, err := fs.ReadDir(r.FS(), "boot"); err == nil {
		for _, e := range entries {
			if k, ok := strings.CutPrefix(e.Name(), "vmlinuz-"); ok && (rb.NewestKernel == "" || CompareVersions(k, rb.NewestKernel) > 0) {
				rb.NewestKernel = k
			}
		}
	}
	switch nr.KernelStatus {
	case 1:
		rb.KernelOutdated = false
	case 2, 3:
		rb.KernelOutdated = true
		if nr.KernelExpected != "" {
			rb.NewestKernel = nr.KernelExpected
		}
	default:
		rb.KernelOutdated = rb.NewestKernel != "" && rb.RunningKernel != "" && CompareVersions(rb.NewestKernel, rb.RunningKernel) > 0
	}
	return rb
}

// Refresh runs apt-get update. A source that fails makes it pkg.refresh_failed; lists fetched still
// replaced the old ones, as apt does.
func (a *Apt) Refresh(ctx context.Context) (capv1.RefreshResult, error) {
	if err := a.unknown(); err != nil {
		return capv1.RefreshResult{}, err
	}
	if err := a.free(); err != nil {
		return capv1.RefreshResult{}, err
	}
	o, err := a.change(ctx, refreshTimeout, env, aptGet, "update", "-q", "-o", "APT::Update::Error-Mode=any")
	if err != nil {
		return capv1.RefreshResult{}, err
	}
	res := capv1.RefreshResult{RefreshedAt: time.Now().UTC().Truncate(time.Second), Warnings: []string{}}
	for _, m := range messages(o.stderr, 32) {
		res.Warnings = append(res.Warnings, m)
	}
	if o.exit != 0 {
		if lockMessage(o) {
			return res, a.lockedNow()
		}
		reason := firstError(o)
		return res, errcode.New(errcode.PkgRefreshFailed, "refreshing the package lists failed: %s", reason).
			With(errcode.DetailReason, reason).With(errcode.DetailExitCode, o.exit)
	}
	// apt's daily job touches this stamp after a refresh; a refresh by hand does not, and the lists'
	// own times are the archives' rather than the refresh's.
	stamp := filepath.Join(a.root(), "var/lib/apt/periodic/update-success-stamp")
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err == nil {
		if f, err := os.OpenFile(stamp, os.O_WRONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o644); err == nil {
			f.Close()
			_ = os.Chtimes(stamp, res.RefreshedAt, res.RefreshedAt)
		}
	}
	return res, nil
}

// lockLists takes an open-file-description write lock on apt's list lock, which conflicts with apt's
// own (fcntl) lock whichever process holds it, this one's other calls included. A run holding it is
// pkg.locked. Where the file system is read-only to this process (the agent's sandbox, whose changes
// run in transient units) it takes a read lock, which still keeps apt-get update, which needs the
// write lock, out until the run ends.
func (a *Apt) lockLists() (func(), error) {
	p := filepath.Join(a.root(), "var/lib/apt/lists/lock")
	kind := int16(unix.F_WRLCK)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o640)
	if errors.Is(err, unix.EROFS) {
		kind = unix.F_RDLCK
		f, err = os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot open apt's list lock")
	}
	lk := unix.Flock_t{Type: kind, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, a.lockedNow()
		}
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot lock apt's lists")
	}
	return func() { f.Close() }, nil
}

// lockedNow is pkg.locked after apt itself found its lock taken (a run that started after the
// host's own check).
func (a *Apt) lockedNow() error {
	if l := a.heldLock(); l != nil {
		return lockedError(l)
	}
	return lockedError(&capv1.PkgLock{Path: lockFiles[0]})
}

// Upgrade plans with apt-get -s, has every step approved, and only then installs the same versions.
func (a *Apt) Upgrade(ctx context.Context, targets []Target, approve func(Change) error) (capv1.UpgradeResult, error) {
	res := capv1.UpgradeResult{Changed: []capv1.PkgChange{}, Unchanged: []string{}}
	if err := a.unknown(); err != nil {
		return res, err
	}
	if len(targets) == 0 {
		return res, nil
	}
	pins := make([]string, 0, len(targets))
	for _, t := range targets {
		pins = append(pins, t.spec()+"="+t.Version)
	}
	run := installRun{
		what:    "upgrade",
		args:    []string{"--only-upgrade", "--no-install-recommends"},
		pkgs:    pins,
		timeout: upgradeTimeout,
		refuseRemoval: func(removed []string) error {
			return errcode.New(errcode.PkgWouldRemove, "the upgrade would remove %s", strings.Join(removed, ", ")).With(errcode.DetailPackages, removed)
		},
	}
	done, err := a.install(ctx, run, approve)
	if done == nil {
		return res, err
	}
	res.Changed = diff(done.before, done.after, done.plan)
	return res, done.outcome(a, err, len(res.Changed) == 0)
}

// installRun is one apt-get install that Upgrade or Ensure asks for.
type installRun struct {
	what    string   // the change as messages name it
	args    []string // apt-get's options before dpkgOptions
	pkgs    []string // the package words after "install"
	timeout time.Duration
	// refuseRemoval answers a plan that removes packages: nil lets the removals through.
	refuseRemoval func(removed []string) error
}

// installed is what one install run did: the plan approved and dpkg's database before and after.
type installed struct {
	plan          []Change
	before, after map[string]Record
	out           output
}

// install is the one path every package change takes. It holds the package lists locked from the plan
// to the end of the run (apt-get install does not take that lock; apt-get update does), so no refresh
// can change what apt resolves in between; plans with apt-get -s; has every planned step approved;
// and only then runs the same command, as a change (its own transient unit), reading dpkg's database
// before and after. A nil result means nothing ran: the error says why, or there was nothing to do.
func (a *Apt) install(ctx context.Context, r installRun, approve func(Change) error) (*installed, error) {
	if err := a.free(); err != nil {
		return nil, err
	}
	unlock, err := a.lockLists()
	if err != nil {
		return nil, err
	}
	defer unlock()
	args := append(append(append([]string{"-q"}, r.args...), dpkgOptions...), "install")
	args = append(args, r.pkgs...)
	sim, err := a.run(ctx, queryTimeout, env, append([]string{aptGet, "-s", "-o", "Debug::NoLocking=true"}, args...)...)
	if err != nil {
		return nil, err
	}
	if sim.exit != 0 {
		reason := firstError(sim)
		return nil, errcode.New(errcode.PkgUnresolvable, "apt cannot plan the %s: %s", r.what, reason).With(errcode.DetailReason, reason)
	}
	steps := ParseSimulation(sim.stdout)
	var removed []string
	for _, s := range steps {
		if s.Remove {
			removed = append(removed, s.Name)
		}
	}
	if len(removed) > 0 {
		if err := r.refuseRemoval(removed); err != nil {
			return nil, err
		}
	}
	if len(steps) == 0 {
		return nil, nil
	}
	plan, err := a.changes(ctx, steps)
	if err != nil {
		return nil, err
	}
	for _, c := range plan {
		if err := approve(c); err != nil {
			return nil, err
		}
	}
	before, err := readDatabase(a.root())
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database")
	}
	o, runErr := a.change(ctx, r.timeout, env, append([]string{aptGet, "-y"}, args...)...)
	after, err := readDatabase(a.root())
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database after the %s", r.what)
	}
	return &installed{plan: plan, before: before, after: after, out: o}, runErr
}

// outcome is the run's error: the runner's own, the lock when another run held it and nothing changed,
// or pkg.failed naming what the run left half done.
func (d *installed) outcome(a *Apt, runErr error, nothingChanged bool) error {
	if runErr != nil {
		return runErr
	}
	if d.out.exit == 0 {
		return nil
	}
	if lockMessage(d.out) && nothingChanged {
		return a.lockedNow()
	}
	return failed(d.out, d.after)
}

// changes gives each planned step the origins apt-cache offers its version from.
func (a *Apt) changes(ctx context.Context, steps []Step) ([]Change, error) {
	native, err := a.nativeArch(ctx)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(steps))
	for _, s := range steps {
		recs = append(recs, Record{Name: s.Name, Arch: s.Arch})
	}
	tables, files, err := a.policy(ctx, native, recs)
	if err != nil {
		return nil, err
	}
	offered := map[string][]capv1.Origin{}
	for _, t := range tables {
		name, arch := splitArch(t.Name, native)
		for _, v := range t.Versions {
			offered[name+":"+arch+"="+v.Version] = originsOf(v.Files, files)
		}
	}
	out := make([]Change, 0, len(steps))
	for _, s := range steps {
		arch := s.Arch
		if arch == "all" || arch == "" {
			arch = native
		}
		out = append(out, Change{Name: s.Name, Arch: s.Arch, From: s.From, To: s.To, Origins: offered[s.Name+":"+arch+"="+s.To]})
	}
	return out, nil
}

// diff lists the packages whose version changed or that appeared, with the origins the plan gave.
func diff(before, after map[string]Record, plan []Change) []capv1.PkgChange {
	origins := map[string][]capv1.Origin{}
	for _, c := range plan {
		origins[c.Name+"="+c.To] = c.Origins
	}
	out := []capv1.PkgChange{}
	for _, r := range sorted(after, Record.Present) {
		old, had := before[r.key()]
		if had && old.Present() && old.Version == r.Version {
			continue
		}
		c := capv1.PkgChange{Name: r.Name, Arch: r.Arch, To: r.Version, Origins: origins[r.Name+"="+r.Version]}
		if had && old.Present() {
			c.From = old.Version
		}
		if c.Origins == nil {
			c.Origins = []capv1.Origin{}
		}
		out = append(out, c)
	}
	return out
}

// failed is pkg.failed for a run that exited non-zero, naming the packages it left half done.
func failed(o output, after map[string]Record) error {
	half := []string{}
	for _, r := range sorted(after, Record.HalfDone) {
		half = append(half, r.Name)
	}
	reason := firstError(o)
	msg := "the package run failed: " + reason
	if len(half) > 0 {
		msg = fmt.Sprintf("the package run failed, leaving %s half done: %s", strings.Join(half, ", "), reason)
	}
	return errcode.New(errcode.PkgFailed, "%s", msg).With(errcode.DetailReason, reason).
		With(errcode.DetailExitCode, o.exit).With(errcode.DetailPackages, half)
}

// Repair runs dpkg --configure -a when a run left packages half done.
func (a *Apt) Repair(ctx context.Context) (capv1.RepairResult, error) {
	res := capv1.RepairResult{Configured: []capv1.Package{}}
	if err := a.unknown(); err != nil {
		return res, err
	}
	if err := a.free(); err != nil {
		return res, err
	}
	before, err := readDatabase(a.root())
	if err != nil {
		return res, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database")
	}
	half := sorted(before, Record.HalfDone)
	if len(half) == 0 {
		return res, nil
	}
	o, runErr := a.change(ctx, repairTimeout, env, dpkgBin, "--configure", "-a", "--force-confdef", "--force-confold")
	after, err := readDatabase(a.root())
	if err != nil {
		return res, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database after the repair")
	}
	for _, r := range half {
		if now, ok := after[r.key()]; ok && !now.HalfDone() {
			res.Configured = append(res.Configured, now.pkg())
		}
	}
	if runErr != nil {
		return res, runErr
	}
	if o.exit != 0 {
		if lockMessage(o) && len(res.Configured) == 0 {
			return res, a.lockedNow()
		}
		return res, failed(o, after)
	}
	return res, nil
}
