package drivers_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// noProtection makes a replica where no protection of the plane's files can be applied: no Landlock,
// and no separate user (as root, a user that does not exist; otherwise the plane's own).
func noProtection(cfg *drivers.Config) {
	cfg.Plugin.NoLandlock = true
	if os.Geteuid() == 0 {
		cfg.Plugin.User = "no-such-user-here"
	}
}

// TestUnconfinedNeedsConsentStoredAndHonoured: where nothing confines a driver, enabling it without
// consent is refused with driver.unconfined and changes nothing; with consent it runs, the consent is
// audited and stored, a restarted plane honours it, and enabling again without it is refused while
// what runs is left alone.
func TestUnconfinedNeedsConsentStoredAndHonoured(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	m, _ := f.managerWith(f.st, f.key, "", noProtection)

	_, err := m.Enable(f.ctx, "alice", "dns-memory", false)
	testkit.WantCode(t, err, errcode.DriverUnconfined)
	if !containsAll(err.Error(), "--unconfined", "lexicon drivers enable") {
		t.Fatalf("the refusal does not tell the admin what to pass: %v", err)
	}
	st, err := f.st.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
	must(t, err)
	if st.Enabled || !st.ChangedAt.IsZero() {
		t.Fatalf("a refused enable changed the state: %+v", st)
	}

	d, err := m.Enable(f.ctx, "alice", "dns-memory", true)
	must(t, err)
	if !d.Enabled || !d.Unconfined {
		t.Fatalf("enabled %+v", d)
	}
	if s := statusOf(t, m, "dns-memory"); s.State != "running" || !slices.Equal(s.Protections, []string{goplugin.ProtectUnconfined}) {
		t.Fatalf("status %+v", s)
	}
	calls := audit(t, m, store.DriverCallListParams{Driver: "dns-memory"})
	if len(calls) != 2 || calls[0].Code != store.CodeOK || calls[0].Target != "unconfined" ||
		calls[1].Code != errcode.DriverUnconfined || calls[1].Target != "" {
		t.Fatalf("audit %+v", calls)
	}

	// Another replica, or the plane started again, reads the consent from the store.
	m2, _ := f.managerWith(f.st, f.key, "", noProtection)
	m2.Sync(f.ctx)
	s2 := statusOf(t, m2, "dns-memory")
	if s2.State != "running" || !running(s2.PID, "dns-memory") {
		t.Fatalf("restarted plane did not honour the stored consent: %+v", s2)
	}

	// Enabling again without consent is refused; the consent stays and the process keeps running.
	_, err = m2.Enable(f.ctx, "bob", "dns-memory", false)
	testkit.WantCode(t, err, errcode.DriverUnconfined)
	st, err = f.st.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
	must(t, err)
	if !st.Enabled || !st.Unconfined || st.ChangedBy != "alice" {
		t.Fatalf("a refused enable changed the state: %+v", st)
	}
	if s := statusOf(t, m2, "dns-memory"); s.State != "running" || s.PID != s2.PID {
		t.Fatalf("a refused enable touched the running driver: %+v", s)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestPrivilegedDriverNeedsConsent: a driver whose manifest says it is privileged (the netns cloud)
// runs as the plane's own user without Landlock even where both could confine it, and only with the
// admin's unconfined consent; the refusal says why.
func TestPrivilegedDriverNeedsConsent(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory-privileged")
	m, _ := f.managerWith(f.st, f.key, "", nil)

	_, err := m.Enable(f.ctx, "alice", "dns-memory", false)
	testkit.WantCode(t, err, errcode.DriverUnconfined)
	if !containsAll(err.Error(), "privileged", "--unconfined") {
		t.Fatalf("the refusal does not say the driver is privileged: %v", err)
	}
	if _, err := m.Enable(f.ctx, "alice", "dns-memory", true); err != nil {
		t.Fatal(err)
	}
	s := statusOf(t, m, "dns-memory")
	if s.State != "running" || !slices.Equal(s.Protections, []string{goplugin.ProtectUnconfined}) {
		t.Fatalf("status %+v", s)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/status")
	must(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "Uid:" && fields[1] != strconv.Itoa(os.Geteuid()) {
			t.Errorf("the privileged driver runs as uid %s, not the plane's %d", fields[1], os.Geteuid())
		}
	}
}
