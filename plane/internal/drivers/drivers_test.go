package drivers_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func memoryAccount(name string, zones ...string) drivers.AccountAddRequest {
	s, _ := json.Marshal(map[string]any{"zones": zones})
	return drivers.AccountAddRequest{Driver: "dns-memory", Name: name, Settings: s, Credential: driver.NewSecret(credential)}
}

func statusOf(t *testing.T, m *drivers.Manager, name string) api.Status {
	t.Helper()
	st, err := m.Status(t.Context())
	must(t, err)
	for _, s := range st.Drivers {
		if s.Name == name {
			return s
		}
	}
	return api.Status{Name: name, State: "absent"}
}

func audit(t *testing.T, m *drivers.Manager, p store.DriverCallListParams) []store.DriverCall {
	t.Helper()
	res, err := m.Audit(t.Context(), p)
	must(t, err)
	return res.Calls
}

func TestOnlyWhatTheCurrentReleasePinsCanBeEnabled(t *testing.T) {
	f := newFixture(t, "")
	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	testkit.WantCode(t, err, errcode.DriverNotPinned) // no release at all

	f.publish("dns-memory", "dns-armonly")
	_, err = f.m.Enable(f.ctx, "alice", "dns-crashy", false)
	testkit.WantCode(t, err, errcode.DriverNotPinned)
	_, err = f.m.Enable(f.ctx, "alice", "dns-armonly", false)
	testkit.WantCode(t, err, errcode.DriverNotPinned)
	if !strings.Contains(err.Error(), "linux/arm64") {
		t.Errorf("a driver pinned for another platform: %v", err)
	}
	_, err = f.m.Enable(f.ctx, "alice", "../../bin/sh", false)
	testkit.WantCode(t, err, errcode.RequestMalformed)
	list, err := f.m.List(f.ctx)
	must(t, err)
	for _, d := range list.Drivers {
		if d.Enabled {
			t.Fatalf("a refused enable changed the state: %+v", d)
		}
	}

	d, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	if !d.Enabled || !d.Pinned || d.Digest != digestOf(t, "dns-memory") || d.ChangedBy != "alice" || d.Kind != "dns" {
		t.Fatalf("enabled %+v", d)
	}
	s := statusOf(t, f.m, "dns-memory")
	if s.State != "running" || !running(s.PID, "dns-memory") || s.Digest != d.Digest {
		t.Fatalf("status after enable: %+v", s)
	}
	// The audit log has both the refusal and the enable, by name.
	calls := audit(t, f.m, store.DriverCallListParams{Driver: "dns-memory"})
	if len(calls) != 2 || calls[0].Code != store.CodeOK || calls[1].Code != errcode.DriverNotPinned || calls[0].Operation != "driver.enable" || calls[0].Actor != "alice" {
		t.Fatalf("audit %+v", calls)
	}

	// A plane started again (or another replica) starts what is enabled, without being asked.
	m2, _ := f.manager(f.st, f.key, "")
	m2.Sync(f.ctx)
	if s2 := statusOf(t, m2, "dns-memory"); s2.State != "running" || !running(s2.PID, "dns-memory") || s2.PID == s.PID {
		t.Fatalf("restarted plane: %+v", s2)
	}
}

// alterArtifact replaces a stored artifact's bytes behind the store's back, as someone with access to
// the database could.
func alterArtifact(t *testing.T, url, digest string, data []byte) {
	t.Helper()
	db, err := sql.Open("sqlite", url)
	must(t, err)
	defer db.Close()
	res, err := db.Exec(`UPDATE artifacts SET data = ? WHERE digest = ?`, data, digest)
	must(t, err)
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("altered %d artifacts", n)
	}
}

// trap is an executable that leaves a marker file if it ever runs.
func trap(t *testing.T) (script []byte, marker string) {
	marker = filepath.Join(t.TempDir(), "it-ran")
	return []byte("#!/bin/sh\ntouch " + marker + "\n"), marker
}

func TestDriverAlteredInThePlaneStoreIsRefusedBeforeExec(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	script, marker := trap(t)
	alterArtifact(t, f.url, digestOf(t, "dns-memory"), script)

	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	testkit.WantCode(t, err, errcode.ModuleDigestMismatch)
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the altered executable ran")
	}
	if d, _ := f.st.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"}); d.Enabled {
		t.Fatal("a refused driver was recorded enabled")
	}
	if s := statusOf(t, f.m, "dns-memory"); s.State != "failed" || !strings.Contains(s.LastError, "hashes to") {
		t.Fatalf("status: %+v", s)
	}
}

func TestDriverAlteredInTheLocalCopyIsRefusedBeforeExec(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	_, err = f.m.Disable(f.ctx, "alice", "dns-memory")
	must(t, err)

	// The local copy the plane keeps is replaced.
	path := filepath.Join(f.driverDir, "sha256", digestOf(t, "dns-memory"))
	script, marker := trap(t)
	must(t, os.WriteFile(path, script, 0o755))

	_, err = f.m.Enable(f.ctx, "alice", "dns-memory", false)
	testkit.WantCode(t, err, errcode.ModuleDigestMismatch)
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the altered executable ran")
	}
	if d, _ := f.st.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"}); d.Enabled {
		t.Fatal("a refused driver was recorded enabled")
	}
	if !strings.Contains(f.log.String(), "local copy of its executable was altered") {
		t.Fatalf("the refusal was not logged:\n%s", f.log.String())
	}
	// The altered copy was removed; the next enable fetches the store's copy, which verifies.
	_, err = f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the altered executable ran")
	}
}

func TestDisabledDriverCannotBeCalled(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	must(t, err)
	zones, err := f.m.DNSZones(f.ctx, "bob", "lab")
	must(t, err)
	if len(zones) != 1 || zones[0].Name != "example.com." {
		t.Fatalf("zones %+v", zones)
	}
	before := statusOf(t, f.m, "dns-memory")
	if len(before.Accounts) != 1 || !running(before.Accounts[0].PID, "dns-memory") {
		t.Fatalf("status %+v", before)
	}

	_, err = f.m.Disable(f.ctx, "alice", "dns-memory")
	must(t, err)
	_, err = f.m.DNSZones(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.DriverDisabled)
	_, err = f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", []dns.Record{{Type: "A", Name: "www", Value: "192.0.2.1"}}, false)
	testkit.WantCode(t, err, errcode.DriverDisabled)
	after := statusOf(t, f.m, "dns-memory")
	if after.State != "disabled" || running(before.PID, "dns-memory") || running(before.Accounts[0].PID, "dns-memory") {
		t.Fatalf("after disable: %+v (processes %d, %d still running?)", after, before.PID, before.Accounts[0].PID)
	}
	calls := audit(t, f.m, store.DriverCallListParams{Account: "lab"})
	if calls[0].Code != errcode.DriverDisabled || calls[0].Actor != "bob" || calls[0].Driver != "dns-memory" {
		t.Fatalf("refused calls are audited too: %+v", calls)
	}
}

func TestDisabledThroughOneReplicaCannotBeCalledThroughAnother(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			url := ""
			if backend == "postgres" {
				url = storetest.PostgresURL(t)
			}
			f := newFixture(t, url)
			f.publish("dns-memory")
			_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
			must(t, err)
			_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
			must(t, err)

			other := storetest.Open(t, f.url)
			replica, _ := f.manager(other, f.key, "")
			_, err = replica.DNSZones(f.ctx, "bob", "lab") // starts the driver and the account's process there
			must(t, err)
			pid := statusOf(t, replica, "dns-memory").PID

			_, err = f.m.Disable(f.ctx, "alice", "dns-memory")
			must(t, err)
			_, err = replica.DNSZones(f.ctx, "bob", "lab")
			testkit.WantCode(t, err, errcode.DriverDisabled)
			if running(pid, "dns-memory") {
				t.Fatal("the replica's process outlived the refused call")
			}
		})
	}
}

func TestCrashMidCallIsAnErrorThenTheDriverRestarts(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-crashy")
	_, err := f.m.Enable(f.ctx, "alice", "dns-crashy", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "dns-crashy", Name: "flaky",
		Settings: json.RawMessage(`{"zones": ["example.com", "crash.test"]}`), Credential: driver.NewSecret(credential)})
	must(t, err)
	_, err = f.m.DNSZones(f.ctx, "bob", "flaky")
	must(t, err)
	pid := statusOf(t, f.m, "dns-crashy").Accounts[0].PID

	// The driver panics mid-call, holding the credential in its panic message.
	_, err = f.m.DNSRecords(f.ctx, "bob", "flaky", "crash.test")
	testkit.WantCode(t, err, errcode.DriverCrashed)
	if strings.Contains(err.Error(), credential) {
		t.Fatalf("the error holds the credential: %v", err)
	}
	// The panic reached the plane's log with the credential scrubbed (the fixture fails the test if any
	// log holds it).
	f.log.WaitFor(t, "lost its mind holding credential [REDACTED]")
	// The next call waits for the restart (which replays the account's config) and succeeds.
	zones, err := f.m.DNSZones(f.ctx, "bob", "flaky")
	must(t, err)
	if len(zones) != 2 {
		t.Fatalf("zones after restart: %+v", zones)
	}
	s := statusOf(t, f.m, "dns-crashy")
	if len(s.Accounts) != 1 || s.Accounts[0].Restarts != 1 || s.Accounts[0].PID == pid || !running(s.Accounts[0].PID, "dns-crashy") {
		t.Fatalf("status after the crash: %+v", s)
	}
	calls := audit(t, f.m, store.DriverCallListParams{Account: "flaky"})
	codes := []string{}
	for _, c := range calls {
		codes = append(codes, c.Operation+"="+c.Code)
	}
	if strings.Join(codes, " ") != "dns.list_zones=ok dns.get_records=driver.crashed dns.list_zones=ok account.add=ok" {
		t.Fatalf("audit: %v", codes)
	}
}

func TestAccounts(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory", "cloud-mock")

	_, err := f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	testkit.WantCode(t, err, errcode.DriverDisabled) // settings are checked against a running driver's schema
	_, err = f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)

	bad := memoryAccount("lab", "example.com")
	bad.Settings = json.RawMessage(`{"zones": ["example.com"], "endpoint": "https://evil.example"}`)
	_, err = f.m.AccountAdd(f.ctx, "alice", bad)
	testkit.WantCode(t, err, errcode.DriverConfigInvalid)
	noCred := memoryAccount("lab", "example.com")
	noCred.Credential = driver.Secret{}
	_, err = f.m.AccountAdd(f.ctx, "alice", noCred)
	testkit.WantCode(t, err, errcode.RequestMalformed)
	badName := memoryAccount("Lab Account", "example.com")
	_, err = f.m.AccountAdd(f.ctx, "alice", badName)
	testkit.WantCode(t, err, errcode.RequestMalformed)
	if list, _ := f.m.AccountList(f.ctx, ""); len(list) != 0 {
		t.Fatalf("refused accounts were stored: %+v", list)
	}

	a, err := f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	must(t, err)
	if a.Driver != "dns-memory" || a.KeyID != f.key.ID() || a.CreatedBy != "alice" {
		t.Fatalf("added %+v", a)
	}
	_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.org"))
	testkit.WantCode(t, err, errcode.AccountExists)

	// The credential is sealed at rest: the store holds neither it nor anything that shows it.
	stored, err := f.st.AccountGet(f.ctx, store.AccountGetParams{Name: "lab"})
	must(t, err)
	if strings.Contains(string(stored.Sealed), credential) || strings.Contains(string(stored.Settings), credential) {
		t.Fatal("the store holds the credential in clear")
	}
	raw, err := os.ReadFile(f.url)
	must(t, err)
	if strings.Contains(string(raw), credential) {
		t.Fatal("the database file holds the credential in clear")
	}
	list, err := f.m.AccountList(f.ctx, "")
	must(t, err)
	out, _ := json.Marshal(list)
	if strings.Contains(string(out), credential) || len(list) != 1 {
		t.Fatalf("list: %s", out)
	}

	// A DNS account cannot be used for cloud calls, and the reverse.
	_, err = f.m.CloudRegions(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.AccountWrongKind)
	_, err = f.m.DNSZones(f.ctx, "bob", "nosuch")
	testkit.WantCode(t, err, errcode.AccountNotFound)

	// A replica with another master key says so rather than failing to open the credential.
	otherKey, err := seal.LoadOrCreate(filepath.Join(t.TempDir(), "master.key"))
	must(t, err)
	wrongKey, _ := f.manager(f.st, otherKey, "")
	_, err = wrongKey.DNSZones(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.AccountKeyMismatch)

	// A sealed credential moved onto another account's row does not open.
	_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab2", "example.org"))
	must(t, err)
	db, err := sql.Open("sqlite", f.url)
	must(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE driver_accounts SET sealed = (SELECT sealed FROM driver_accounts WHERE name = 'lab') WHERE name = 'lab2'`)
	must(t, err)
	fresh, _ := f.manager(f.st, f.key, "")
	_, err = fresh.DNSZones(f.ctx, "bob", "lab2")
	testkit.WantCode(t, err, errcode.AccountSealBroken)

	// Removing an account stops its process and frees its name.
	_, err = f.m.DNSZones(f.ctx, "bob", "lab")
	must(t, err)
	pid := statusOf(t, f.m, "dns-memory").Accounts[0].PID
	_, err = f.m.AccountRemove(f.ctx, "alice", "lab")
	must(t, err)
	if running(pid, "dns-memory") {
		t.Fatal("a removed account's process is still running")
	}
	_, err = f.m.DNSZones(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.AccountNotFound)
	_, err = f.m.AccountRemove(f.ctx, "alice", "lab")
	testkit.WantCode(t, err, errcode.AccountNotFound)
}

func TestCloudReadsThroughThePlane(t *testing.T) {
	f := newFixture(t, "")
	f.publish("cloud-mock")
	_, err := f.m.Enable(f.ctx, "alice", "cloud-mock", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "cloud-mock", Name: "lab-cloud", Credential: driver.NewSecret(credential)})
	must(t, err)
	regions, err := f.m.CloudRegions(f.ctx, "bob", "lab-cloud")
	must(t, err)
	if len(regions) == 0 {
		t.Fatal("no regions")
	}
	types, err := f.m.CloudInstanceTypes(f.ctx, "bob", "lab-cloud", regions[0].ID)
	must(t, err)
	if len(types) == 0 {
		t.Fatal("no types")
	}
	_, err = f.m.CloudInstanceTypes(f.ctx, "bob", "lab-cloud", "nowhere")
	testkit.WantCode(t, err, errcode.CloudNotFound)
	page, err := f.m.CloudInstances(f.ctx, "bob", "lab-cloud", cloud.ListRequest{})
	must(t, err)
	if page.Instances == nil && page.NextPageToken != "" {
		t.Fatalf("page %+v", page)
	}
	_, err = f.m.CloudInstances(f.ctx, "bob", "lab-cloud", cloud.ListRequest{PageSize: 100000})
	testkit.WantCode(t, err, errcode.CloudInvalid)
	_, err = f.m.DNSZones(f.ctx, "bob", "lab-cloud")
	testkit.WantCode(t, err, errcode.AccountWrongKind)
	ops := []string{}
	for _, c := range audit(t, f.m, store.DriverCallListParams{Account: "lab-cloud"}) {
		ops = append(ops, c.Operation+"="+c.Code)
	}
	want := "dns.list_zones=account.wrong_kind cloud.list_instances=ok cloud.instance_types=cloud.not_found cloud.instance_types=ok cloud.regions=ok driver.set_config=ok account.add=ok"
	if got := strings.Join(ops, " "); got != want && got != strings.Replace(want, " driver.set_config=ok", "", 1) {
		t.Fatalf("audit:\n got %s\nwant %s", got, want)
	}
}

func TestRepinFollowsTheRelease(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	must(t, err)
	_, err = f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", []dns.Record{{Type: "A", Name: "www", Value: "192.0.2.1"}}, false)
	must(t, err)
	old := statusOf(t, f.m, "dns-memory")

	// A new release pins another executable under the same name: the plane follows it.
	f.publish("dns-memory-v2")
	f.m.Sync(f.ctx)
	now := statusOf(t, f.m, "dns-memory")
	if now.Digest != digestOf(t, "dns-memory-v2") || now.Version != "1.0.1" || now.State != "running" || running(old.PID, "dns-memory") {
		t.Fatalf("after re-pin: %+v (old %+v)", now, old)
	}
	if len(now.Accounts) != 0 || running(old.Accounts[0].PID, "dns-memory") {
		t.Fatalf("the old executable still serves an account: %+v", now)
	}
	zones, err := f.m.DNSZones(f.ctx, "bob", "lab") // the account moves to the new executable
	must(t, err)
	if len(zones) != 1 {
		t.Fatalf("zones %+v", zones)
	}

	// A release that no longer pins it stops it; it stays enabled, for a later release to bring back.
	f.publish("cloud-mock")
	_, err = f.m.DNSZones(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.DriverNotPinned)
	f.m.Sync(f.ctx)
	if s := statusOf(t, f.m, "dns-memory"); s.PID != 0 || s.Pinned || !s.Enabled {
		t.Fatalf("unpinned driver: %+v", s)
	}
	list, err := f.m.List(f.ctx)
	must(t, err)
	var found bool
	for _, d := range list.Drivers {
		if d.Name == "dns-memory" {
			found = d.Enabled && !d.Pinned
		}
	}
	if !found {
		t.Fatalf("list: %+v", list)
	}
	f.publish("dns-memory")
	f.m.Sync(f.ctx)
	if s := statusOf(t, f.m, "dns-memory"); s.State != "running" || s.Digest != digestOf(t, "dns-memory") {
		t.Fatalf("pinned again: %+v", s)
	}
}

func TestReconcileLeavesAHandMadeRecordAlone(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	must(t, err)
	// A person puts records there with the provider's own tools.
	handMade := []dns.Record{
		{Type: "A", Name: "www", Value: "192.0.2.10", TTL: time.Hour},
		{Type: "TXT", Name: "@", Value: "v=spf1 -all"},
		{Type: "CNAME", Name: "docs", Value: "pages.example.net."},
	}
	must(t, f.m.AppendByHand(f.ctx, "lab", "example.com", handMade))
	before, err := f.m.DNSRecords(f.ctx, "bob", "lab", "example.com")
	must(t, err)

	want := []dns.Record{
		{Type: "A", Name: "www", Value: "192.0.2.99"},                     // same name and type, other value: conflict
		{Type: "A", Name: "api", Value: "192.0.2.20"},                     // missing: created
		{Type: "TXT", Name: "@", Value: "v=spf1 -all"},                    // there already: present
		{Type: "A", Name: "docs", Value: "192.0.2.30"},                    // beside a CNAME: conflict
		{Type: "MX", Name: "@", Value: "mail.example.com.", Priority: 10}, // missing: created
	}
	dry, err := f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", want, true)
	must(t, err)
	if len(dry.Created) != 2 || len(dry.Conflicts) != 2 || len(dry.Present) != 1 {
		t.Fatalf("dry run %+v", dry)
	}
	if after, _ := f.m.DNSRecords(f.ctx, "bob", "lab", "example.com"); len(after) != len(before) {
		t.Fatal("a dry run changed the zone")
	}

	res, err := f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", want, false)
	must(t, err)
	if len(res.Created) != 2 || res.Created[0].Name != "api" || res.Created[1].Type != "MX" {
		t.Fatalf("created %+v", res.Created)
	}
	if len(res.Present) != 1 || res.Present[0].Type != "TXT" {
		t.Fatalf("present %+v", res.Present)
	}
	if len(res.Conflicts) != 2 || res.Conflicts[0].Want.Value != "192.0.2.99" || res.Conflicts[0].Existing[0].Value != "192.0.2.10" ||
		!strings.Contains(res.Conflicts[1].Reason, "CNAME") {
		t.Fatalf("conflicts %+v", res.Conflicts)
	}
	after, err := f.m.DNSRecords(f.ctx, "bob", "lab", "example.com")
	must(t, err)
	for _, h := range before {
		kept := false
		for _, a := range after {
			if a == h {
				kept = true
			}
		}
		if !kept {
			t.Fatalf("hand-made record %+v changed or vanished: %+v", h, after)
		}
	}
	if len(after) != len(before)+2 {
		t.Fatalf("zone after: %+v", after)
	}
	// Running it again creates nothing: what it created is present now, the conflicts stay.
	again, err := f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", want, false)
	must(t, err)
	if len(again.Created) != 0 || len(again.Present) != 3 || len(again.Conflicts) != 2 {
		t.Fatalf("second run %+v", again)
	}
	// Bad records are refused before any driver call, naming the index.
	_, err = f.m.DNSReconcile(f.ctx, "bob", "lab", "example.com", []dns.Record{{Type: "A", Name: "ok", Value: "192.0.2.1"}, {Type: "A", Name: "bad", Value: "not-an-ip"}}, false)
	testkit.WantCode(t, err, errcode.DNSInvalid)
	if e, ok := err.(*errcode.Error); !ok || e.Details["index"] != 1 {
		t.Fatalf("bad record: %#v", err)
	}
}

func TestPlanAdditive(t *testing.T) {
	a := func(name, value string) dns.Record { return dns.Record{Type: "A", Name: name, Value: value} }
	cname := func(name, value string) dns.Record { return dns.Record{Type: "CNAME", Name: name, Value: value} }
	cases := []struct {
		name                       string
		zone, want                 []dns.Record
		create, present, conflicts int
	}{
		{"empty zone", nil, []dns.Record{a("www", "192.0.2.1")}, 1, 0, 0},
		{"present", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{a("www", "192.0.2.1")}, 0, 1, 0},
		{"present whatever the TTL", []dns.Record{{Type: "A", Name: "www", Value: "192.0.2.1", TTL: time.Hour}}, []dns.Record{a("www", "192.0.2.1")}, 0, 1, 0},
		{"other value", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{a("www", "192.0.2.2")}, 0, 0, 1},
		{"a set partly there", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{a("www", "192.0.2.1"), a("www", "192.0.2.2")}, 1, 1, 0},
		{"a set beside a stranger", []dns.Record{a("www", "192.0.2.9")}, []dns.Record{a("www", "192.0.2.1"), a("www", "192.0.2.2")}, 0, 0, 2},
		{"other name", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{a("api", "192.0.2.1")}, 1, 0, 0},
		{"other type", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{{Type: "AAAA", Name: "www", Value: "2001:db8::1"}}, 1, 0, 0},
		{"CNAME beside A", []dns.Record{a("www", "192.0.2.1")}, []dns.Record{cname("www", "x.example.")}, 0, 0, 1},
		{"A beside CNAME", []dns.Record{cname("www", "x.example.")}, []dns.Record{a("www", "192.0.2.1")}, 0, 0, 1},
		{"other CNAME", []dns.Record{cname("www", "x.example.")}, []dns.Record{cname("www", "y.example.")}, 0, 0, 1},
		{"duplicates count once", nil, []dns.Record{a("www", "192.0.2.1"), a("www", "192.0.2.1")}, 1, 0, 0},
		{"MX priority is part of the record", []dns.Record{{Type: "MX", Name: "@", Value: "mx.example.", Priority: 10}},
			[]dns.Record{{Type: "MX", Name: "@", Value: "mx.example.", Priority: 20}}, 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := drivers.PlanAdditive(c.zone, c.want)
			if len(p.Create) != c.create || len(p.Present) != c.present || len(p.Conflicts) != c.conflicts {
				t.Fatalf("plan %+v, want %d created, %d present, %d conflicts", p, c.create, c.present, c.conflicts)
			}
			for _, cf := range p.Conflicts {
				if len(cf.Existing) == 0 || cf.Reason == "" {
					t.Fatalf("a conflict must name what it met: %+v", cf)
				}
			}
		})
	}
}

// Enable and Disable must hold against a sync running at the same time: a sync that read the store
// before an enable committed must not stop the driver the enable just started, nor start one a disable
// just stopped.
func TestEnableAndDisableHoldAgainstAConcurrentSync(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				f.m.ReleaseChanged() // every pass reads the release and the store afresh
				f.m.Sync(f.ctx)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range 4 {
		_, err := f.m.Enable(f.ctx, "alice", "dns-memory", false)
		must(t, err)
		if s := statusOf(t, f.m, "dns-memory"); s.State != "running" || !running(s.PID, "dns-memory") {
			t.Fatalf("round %d: just enabled, status %+v", i, s)
		}
		_, err = f.m.Disable(f.ctx, "alice", "dns-memory")
		must(t, err)
		if s := statusOf(t, f.m, "dns-memory"); s.State != "disabled" || s.PID != 0 {
			t.Fatalf("round %d: just disabled, status %+v", i, s)
		}
	}
}

// TestBareStatusNeverCarriesTheCredential: a driver answers with a bare gRPC status holding the
// account's credential. The error the plane gets has it scrubbed through its whole chain, so neither a
// log line printing the error's text nor an answer built from it can carry the credential.
func TestBareStatusNeverCarriesTheCredential(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-crashy")
	_, err := f.m.Enable(f.ctx, "alice", "dns-crashy", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "dns-crashy", Name: "leaky",
		Settings: json.RawMessage(`{"zones": ["example.com"]}`), Credential: driver.NewSecret(credential)})
	must(t, err)
	_, err = f.m.DNSRecords(f.ctx, "bob", "leaky", "status.test")
	testkit.WantCode(t, err, errcode.DriverInternal)
	var text bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Error("request failed", "err", err, "text", err.Error(), "verbose", fmt.Sprintf("%+v", err))
	env, _ := json.Marshal(errcode.From(err, errcode.InternalError))
	for what, s := range map[string]string{"log line": text.String(), "answer": string(env)} {
		if strings.Contains(s, credential) {
			t.Errorf("the %s holds the credential: %s", what, s)
		}
	}
	if !strings.Contains(err.Error(), "provider refused the token [REDACTED]") {
		t.Errorf("the driver's answer is lost rather than scrubbed: %v", err)
	}
}
