package pkgmgr_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

var ctx = context.Background()

func upgradeOf(st capv1.PkgState, name string) (capv1.Upgrade, bool) {
	i := slices.IndexFunc(st.Upgrades, func(u capv1.Upgrade) bool { return u.Name == name })
	if i < 0 {
		return capv1.Upgrade{}, false
	}
	return st.Upgrades[i], true
}

func names(pkgs []capv1.Package) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p.Name)
	}
	return out
}

// The state of a Debian 12 root with the fixture installed, read from dpkg's database and apt-cache.
func TestQuery(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	st, err := m.Query(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend != "apt" || st.OS.ID != "debian" || st.OS.VersionID != "12" || st.OS.VersionCodename != "bookworm" {
		t.Errorf("backend %q, os %+v", st.Backend, st.OS)
	}
	lib, ok := upgradeOf(st, apttest.Lib)
	if !ok || lib.Installed != "1.0" || lib.Candidate != "1.1" || !lib.Security || lib.SecurityVersion != "1.1" ||
		len(lib.Origins) != 1 || lib.Origins[0].Label != "Debian-Security" || lib.Origins[0].Suite != "bookworm-security" {
		t.Errorf("liblexfix1: %+v", lib)
	}
	if tool, ok := upgradeOf(st, apttest.Tool); !ok || tool.Security || tool.Candidate != "1.1" || tool.Origins[0].Suite != "bookworm-updates" {
		t.Errorf("lexfix-tool: %+v", tool)
	}
	if held, ok := upgradeOf(st, apttest.Held); !ok || !held.Security {
		t.Errorf("lexfix-held's fix is not reported: %+v", held)
	}
	if _, ok := upgradeOf(st, apttest.Daemon); ok {
		t.Error("lexfix-daemon has no newer version, yet is reported")
	}
	if got := names(st.Held); !slices.Equal(got, []string{apttest.Held}) {
		t.Errorf("held %v", got)
	}
	if len(st.HalfConfigured) != 0 || st.Lock != nil {
		t.Errorf("half %v, lock %+v", st.HalfConfigured, st.Lock)
	}
	if st.InstalledCount < 50 || len(st.Installed) != st.InstalledCount || !slices.Contains(names(st.Installed), apttest.Lib) {
		t.Errorf("installed: %d, %d listed", st.InstalledCount, len(st.Installed))
	}
	if st.ListsRefreshed == nil || st.UnattendedUpgrades != nil {
		t.Errorf("lists refreshed %v, unattended-upgrades %v", st.ListsRefreshed, st.UnattendedUpgrades)
	}
	if st, err := m.Query(ctx, false); err != nil || st.Installed != nil || st.InstalledCount == 0 {
		t.Errorf("without installed: %d listed, count %d, %v", len(st.Installed), st.InstalledCount, err)
	}
}

// The security fix of the library a running daemon links: approved, installed, and the daemon found
// running the replaced library.
func TestUpgradeAndRestarts(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	pid := r.StartDaemon(t)
	before, err := m.Restarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Method != capv1.RestartsProc || len(before.Processes) != 0 {
		t.Fatalf("before the upgrade: %+v", before)
	}
	var approved []pkgmgr.Change
	res, err := m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Lib, Version: "1.1"}}, func(c pkgmgr.Change) error {
		approved = append(approved, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(approved) != 1 || approved[0].Name != apttest.Lib || approved[0].From != "1.0" || approved[0].To != "1.1" ||
		len(approved[0].Origins) != 1 || !pkgmgr.IsSecurity(approved[0].Origins[0]) {
		t.Fatalf("approved %+v", approved)
	}
	if len(res.Changed) != 1 || res.Changed[0].Name != apttest.Lib || res.Changed[0].From != "1.0" || res.Changed[0].To != "1.1" || len(res.Changed[0].Origins) != 1 {
		t.Fatalf("changed %+v", res.Changed)
	}
	if v := r.Version(t, apttest.Lib); v != "1.1 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
	after, err := m.Restarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(after.Processes, func(p capv1.StaleProcess) bool { return p.PID == pid })
	if i < 0 || len(after.Processes) != 1 {
		t.Fatalf("the daemon (%d) is not the one process on replaced code: %+v", pid, after.Processes)
	}
	p := after.Processes[i]
	if p.Command != "lexfix-daemon" || p.Exe != "/usr/sbin/lexfix-daemon" || len(p.Files) != 1 || !strings.HasSuffix(p.Files[0], "/liblexfix.so.1") || !strings.HasPrefix(p.Files[0], "/usr/lib/") {
		t.Fatalf("%+v", p)
	}
	if st, _ := m.Query(ctx, false); len(st.Upgrades) != 2 {
		t.Errorf("after the fix: upgrades %+v", st.Upgrades)
	}
	// Nothing left to do: the same upgrade again changes nothing.
	res, err = m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Lib, Version: "1.1"}}, func(pkgmgr.Change) error { return errors.New("nothing should need approval") })
	if err != nil || len(res.Changed) != 0 {
		t.Fatalf("again: %+v %v", res, err)
	}
}

// A refusal by approve runs nothing.
func TestUpgradeRefused(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	refusal := errcode.New(errcode.PkgOriginRefused, "not from there")
	_, err := m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Lib, Version: "1.1"}}, func(pkgmgr.Change) error { return refusal })
	if !errors.Is(err, refusal) {
		t.Fatalf("err %v", err)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q after a refused upgrade", v)
	}
	_, err = m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Lib, Version: "9.9"}}, func(pkgmgr.Change) error { return nil })
	testkit.WantCode(t, err, errcode.PkgUnresolvable)
}

// A failing postinst leaves its package half-configured and pkg.failed names it; Repair fails the
// same way until the cause is gone, and then configures it.
func TestFailedRunAndRepair(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
	_, err := m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Broken, Version: "1.1"}}, func(pkgmgr.Change) error { return nil })
	testkit.WantCode(t, err, errcode.PkgFailed)
	if got := errcode.From(err, "").Details[errcode.DetailPackages]; !slices.Equal(got.([]string), []string{apttest.Broken}) {
		t.Fatalf("packages %v", got)
	}
	st, err := m.Query(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.HalfConfigured) != 1 || st.HalfConfigured[0].Name != apttest.Broken || st.HalfConfigured[0].Status != "half-configured" || st.HalfConfigured[0].Version != "1.1" {
		t.Fatalf("half %+v", st.HalfConfigured)
	}
	_, err = m.Repair(ctx)
	testkit.WantCode(t, err, errcode.PkgFailed)
	r.WriteFile(t, apttest.BrokenMayConfigure, nil)
	res, err := m.Repair(ctx)
	if err != nil || len(res.Configured) != 1 || res.Configured[0].Name != apttest.Broken || res.Configured[0].Status != "installed" {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := m.Repair(ctx); err != nil || len(res.Configured) != 0 {
		t.Fatalf("nothing half done: %+v %v", res, err)
	}
}

// Another apt run holding the lock: every change is pkg.locked at once, naming the holder; Query
// still answers and says who holds it.
func TestLocked(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	release := r.HoldLock(t)
	checks := map[string]func() error{
		"refresh": func() error { _, err := m.Refresh(ctx); return err },
		"upgrade": func() error {
			_, err := m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Lib, Version: "1.1"}}, func(pkgmgr.Change) error { return nil })
			return err
		},
		"repair": func() error { _, err := m.Repair(ctx); return err },
	}
	for name, f := range checks {
		err := f()
		testkit.WantCode(t, err, errcode.PkgLocked)
		d := errcode.From(err, "").Details
		if d[errcode.DetailPID] == nil || d[errcode.DetailCommand] == "" || d[errcode.DetailPath] == "" {
			t.Errorf("%s: details %v", name, d)
		}
	}
	st, err := m.Query(ctx, false)
	if err != nil || st.Lock == nil || st.Lock.PID == 0 {
		t.Fatalf("query beside the lock: %+v %v", st.Lock, err)
	}
	if v := r.Version(t, apttest.Lib); v != "1.0 installed" {
		t.Fatalf("liblexfix1 is %q", v)
	}
	release()
	if _, err := m.Refresh(ctx); err != nil {
		t.Fatalf("after the run: %v", err)
	}
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	start := time.Now().Truncate(time.Second)
	res, err := m.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.RefreshedAt.Before(start) || len(res.Warnings) != 0 {
		t.Fatalf("%+v", res)
	}
	st, err := m.Query(ctx, false)
	if err != nil || st.ListsRefreshed == nil || st.ListsRefreshed.Before(res.RefreshedAt) {
		t.Fatalf("lists refreshed %v (refresh at %v): %v", st.ListsRefreshed, res.RefreshedAt, err)
	}
	// A source that cannot be read fails the refresh; the others' lists are still there.
	r.WriteFile(t, "/etc/apt/sources.list.d/gone.list", []byte("deb [trusted=yes] file:/srv/nothing-here bookworm main\n"))
	_, err = m.Refresh(ctx)
	testkit.WantCode(t, err, errcode.PkgRefreshFailed)
	if st, err := m.Query(ctx, false); err != nil || len(st.Upgrades) != 3 {
		t.Fatalf("after a failed refresh: %+v %v", st.Upgrades, err)
	}
}

// A package asking for a reboot, and a newer kernel installed than the one running.
func TestReboot(t *testing.T) {
	t.Parallel()
	r := apttest.NewRoot(t)
	m := &pkgmgr.Apt{Root: r.Dir}
	res, err := m.Restarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reboot.Required || res.Reboot.KernelOutdated || res.Reboot.NewestKernel != "" || res.Reboot.RunningKernel == "" {
		t.Fatalf("a fresh root: %+v", res.Reboot)
	}
	r.WriteFile(t, "/run/reboot-required", []byte("*** System restart required ***\n"))
	r.WriteFile(t, "/run/reboot-required.pkgs", []byte("libc6\nlinux-image-amd64\nlibc6\n"))
	r.WriteFile(t, "/boot/vmlinuz-2.6.32-1-amd64", nil)
	r.WriteFile(t, "/boot/vmlinuz-999.1.0-1-amd64", nil)
	res, err = m.Restarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rb := res.Reboot
	if !rb.Required || !slices.Equal(rb.Packages, []string{"libc6", "linux-image-amd64"}) || rb.NewestKernel != "999.1.0-1-amd64" || !rb.KernelOutdated {
		t.Fatalf("%+v", rb)
	}
}

// Upgrade, killed at each step of dpkg's run (the new version's preinst, its postinst), leaves the
// package in a state Repair and the upgrade run again finish, as install_security_updates does.
func TestUpgradeKilledAtEachStep(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"preinst", "postinst"} {
		t.Run(step, func(t *testing.T) {
			r := apttest.NewRoot(t)
			m := &pkgmgr.Apt{Root: r.Dir}
			r.Run(t, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Slow+"=1.0")
			g := apttest.NewGate(t, r.Dir)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := m.Upgrade(ctx, []pkgmgr.Target{{Name: apttest.Slow, Version: "1.1"}}, func(pkgmgr.Change) error { return nil })
				done <- err
			}()
			for {
				s, err := g.Next(t, done)
				if err != nil {
					t.Fatal(err)
				}
				if s == step {
					break
				}
				// While the upgrade runs, its lists cannot be refreshed under it.
				if out, err := r.Command("/usr/bin/apt-get", "update", "-q").CombinedOutput(); err == nil || !strings.Contains(string(out), "/var/lib/apt/lists/lock") {
					t.Fatalf("a refresh beside the upgrade: %v\n%s", err, out)
				}
				g.Go(t)
			}
			cancel()
			testkit.WantCode(t, testkit.Wait(t, done, "the killed upgrade to return"), errcode.CapabilityTimeout)
			g.Close()
			st, err := m.Query(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("killed at %s: %s is %q, half done %v", step, apttest.Slow, r.Version(t, apttest.Slow), st.HalfConfigured)
			if len(st.HalfConfigured) != 1 || st.HalfConfigured[0].Name != apttest.Slow {
				t.Fatalf("half done after the kill: %+v", st.HalfConfigured)
			}
			if _, err := m.Repair(context.Background()); err != nil {
				t.Fatalf("repair: %v", err)
			}
			if _, err := m.Upgrade(context.Background(), []pkgmgr.Target{{Name: apttest.Slow, Version: "1.1"}}, func(pkgmgr.Change) error { return nil }); err != nil {
				t.Fatalf("the upgrade again: %v", err)
			}
			if v := r.Version(t, apttest.Slow); v != "1.1 installed" {
				t.Fatalf("%s is %q", apttest.Slow, v)
			}
			if st, _ := m.Query(context.Background(), false); len(st.HalfConfigured) != 0 {
				t.Fatalf("still half done: %+v", st.HalfConfigured)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	m := &pkgmgr.Apt{Root: t.TempDir()}
	_, err := m.Query(ctx, false)
	testkit.WantCode(t, err, errcode.CapabilityUnknown)
	_, err = m.Upgrade(ctx, []pkgmgr.Target{{Name: "x", Version: "1"}}, nil)
	testkit.WantCode(t, err, errcode.CapabilityUnknown)
	if _, err := os.Stat("/usr/bin/apt-get"); err == nil {
		if _, ok := pkgmgr.Detect().(*pkgmgr.Apt); !ok {
			t.Error("Detect on a machine with apt is not Apt")
		}
	}
}

// needrestart's batch mode, where this machine has it (CI installs it): the services come from it.
func TestNeedrestartHere(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/sbin/needrestart"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI installs needrestart")
		}
		t.Skip("needrestart is not installed here")
	}
	if os.Geteuid() != 0 {
		t.Skip("needrestart reads every process only as root")
	}
	res, err := (&pkgmgr.Apt{Root: "/"}).Restarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != capv1.RestartsNeedrestart || res.Services == nil || res.Reboot.RunningKernel == "" {
		t.Fatalf("%+v", res)
	}
}
