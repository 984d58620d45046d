package goplugin_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestConfinedDriverCannotReadThePlanesFiles: a driver tries to read the plane's master key and
// database and another driver's socket folder. The files are world-readable on purpose, so that only
// the confinement stands in the way: every read fails with a permission error, and each attempt is in
// the host's log.
func TestConfinedDriverCannotReadThePlanesFiles(t *testing.T) {
	data := openDir(t)
	key, db := filepath.Join(data, "master.key"), filepath.Join(data, "plane.db")
	for _, f := range []string{key, db} {
		if err := os.WriteFile(f, []byte("the plane's secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sockets := openDir(t)
	other, _ := startDNS(t, goplugin.Options{SocketsDir: sockets})
	if st := other.Status(); !slices.ContainsFunc(st.Protections, func(p string) bool { return strings.HasPrefix(p, goplugin.ProtectLandlock) }) {
		t.Skipf("this kernel offers no Landlock (protections %v): nothing here would keep a world-readable file from the driver", st.Protections)
	}
	entries, err := os.ReadDir(sockets)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the other driver's socket folder: %v %v", entries, err)
	}
	otherFiles := filepath.Join(sockets, entries[0].Name())

	logs := &testkit.Buffer{}
	d, n := startDNS(t, goplugin.Options{Logger: logTo(logs), SocketsDir: sockets, Env: []string{"SNOOP=" + key + ":" + db + ":" + otherFiles}})
	st := d.Status()
	want := []string{goplugin.ProtectLandlock + ":v", goplugin.ProtectNoNewPrivs}
	if os.Geteuid() == 0 {
		want = append(want, goplugin.ProtectUser+":")
	}
	for _, w := range want {
		if !slices.ContainsFunc(st.Protections, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("protections %v lack %s", st.Protections, w)
		}
	}
	if err := n.SetConfig(t.Context(), cfg()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.GetRecords(t.Context(), "snoop.test"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{key, db, otherFiles} {
		logs.WaitFor(t, "path="+p)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "snoop-test: read") && !strings.Contains(line, "permission denied") {
			t.Errorf("a read was not refused: %s", line)
		}
	}
}

// TestUnconfinedNeedsConsent: where no protection can be applied (no separate user, no Landlock) a
// driver is refused with driver.unconfined unless the caller accepts it, and its status says so.
func TestUnconfinedNeedsConsent(t *testing.T) {
	store, digest := storeWith(t, "dns")
	spec := dnsSpec
	spec.Digest = digest
	opts := goplugin.Options{User: "no-such-user-here", NoLandlock: true}
	if os.Geteuid() != 0 {
		opts.User = ""
	}
	_, err := goplugin.Start(t.Context(), store, spec, opts)
	testkit.WantCode(t, err, errcode.DriverUnconfined)

	opts.Unconfined = true
	d, err := goplugin.Start(t.Context(), store, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if st := d.Status(); !slices.Equal(st.Protections, []string{goplugin.ProtectUnconfined}) || st.State != goplugin.StateRunning {
		t.Fatalf("unconfined status: %+v", st)
	}
}

// openDir is a folder anyone may enter (t.TempDir's parent is private to the test's user, which would
// keep a driver running as another user out on its own).
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "goplugin-confine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrivilegedNeedsConsent: a privileged driver (its manifest says its work is this machine) runs
// as the plane's own user with no Landlock, even where both could be applied, and only with the
// caller's consent to run it unconfined.
func TestPrivilegedNeedsConsent(t *testing.T) {
	store, digest := storeWith(t, "dns")
	spec := dnsSpec
	spec.Digest = digest
	_, err := goplugin.Start(t.Context(), store, spec, goplugin.Options{Privileged: true})
	testkit.WantCode(t, err, errcode.DriverUnconfined)

	d, err := goplugin.Start(t.Context(), store, spec, goplugin.Options{Privileged: true, Unconfined: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	st := d.Status()
	if !slices.Equal(st.Protections, []string{goplugin.ProtectUnconfined}) || st.State != goplugin.StateRunning {
		t.Fatalf("privileged status: %+v", st)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.PID), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] != strconv.Itoa(os.Geteuid()) {
			t.Errorf("the privileged driver runs as uid %s, not the plane's %d", f[1], os.Geteuid())
		}
	}
}
