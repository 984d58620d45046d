package drivers_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// cloudFixture is a fixture with the named cloud drivers enabled and one account on the first.
func cloudFixture(t *testing.T, account string, test bool, names ...string) *fixture {
	t.Helper()
	f := newFixture(t, "")
	f.publish(names...)
	for _, n := range names {
		_, err := f.m.Enable(f.ctx, "alice", n, false)
		must(t, err)
	}
	_, err := f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: names[0], Name: account, Test: test,
		Credential: driver.NewSecret(credential)})
	must(t, err)
	return f
}

func ops(t *testing.T, m *drivers.Manager, account string) string {
	t.Helper()
	var out []string
	for _, c := range audit(t, m, store.DriverCallListParams{Account: account}) {
		out = append(out, c.Operation+"="+c.Code)
	}
	return strings.Join(out, " ")
}

func create(t *testing.T, f *fixture, account, label string, tags ...string) cloud.Instance {
	t.Helper()
	in, err := f.m.CloudCreate(f.ctx, "bob", account, cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12",
		Label: label, Tags: tags, UserData: "#cloud-config\nruncmd: [true]\n"})
	must(t, err)
	return in
}

func TestCloudOperationsThroughThePlane(t *testing.T) {
	f := cloudFixture(t, "lab", false, "cloud-mock")
	web := create(t, f, "lab", "web-1", "blue")
	if web.Label != "web-1" || web.Status != cloud.StatusRunning || !slices.Equal(web.Tags, []string{"blue"}) {
		t.Fatalf("created %+v", web)
	}
	other := create(t, f, "lab", "web-2")
	got, err := f.m.CloudGet(f.ctx, "bob", "lab", web.ID)
	must(t, err)
	if got.ID != web.ID || got.Label != "web-1" {
		t.Fatalf("got %+v", got)
	}
	_, err = f.m.CloudGet(f.ctx, "bob", "lab", "m-999999")
	testkit.WantCode(t, err, errcode.CloudNotFound)
	_, err = f.m.CloudCreate(f.ctx, "bob", "lab", cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12", Label: "Bad Label"})
	testkit.WantCode(t, err, errcode.CloudInvalid)

	must(t, f.m.CloudReboot(f.ctx, "bob", "lab", web.ID))
	// The mock swaps only stopped instances, as Hetzner does: the driver's cloud.conflict reaches the caller.
	testkit.WantCode(t, f.m.CloudSwapIPv4(f.ctx, "bob", "lab", web.ID, other.ID), errcode.CloudConflict)
	must(t, f.m.CloudPowerOff(f.ctx, "bob", "lab", web.ID))
	must(t, f.m.CloudPowerOff(f.ctx, "bob", "lab", other.ID))
	must(t, f.m.CloudSwapIPv4(f.ctx, "bob", "lab", web.ID, other.ID))
	swapped, err := f.m.CloudGet(f.ctx, "bob", "lab", web.ID)
	must(t, err)
	if !slices.Equal(swapped.IPv4, other.IPv4) || swapped.Status != cloud.StatusStopped {
		t.Fatalf("after the swap %+v (other had %v)", swapped, other.IPv4)
	}
	must(t, f.m.CloudPowerOn(f.ctx, "bob", "lab", web.ID))
	testkit.WantCode(t, f.m.CloudSwapIPv4(f.ctx, "bob", "lab", web.ID, web.ID), errcode.CloudInvalid)

	must(t, f.m.CloudReverseDNS(f.ctx, "bob", "lab", web.ID, swapped.IPv4[0], "web-1.example.com"))
	testkit.WantCode(t, f.m.CloudReverseDNS(f.ctx, "bob", "lab", web.ID, netip.MustParseAddr("198.51.100.1"), "web-1.example.com"), errcode.CloudInvalid)
	testkit.WantCode(t, f.m.CloudReverseDNS(f.ctx, "bob", "lab", web.ID, swapped.IPv4[0], "not a name"), errcode.CloudInvalid)
	tr, err := f.m.CloudTransfer(f.ctx, "bob", "lab", web.ID)
	must(t, err)
	if tr.UsedBytes <= 0 || tr.AllowanceBytes < tr.UsedBytes {
		t.Fatalf("transfer %+v", tr)
	}
	info, err := f.m.CloudAccount(f.ctx, "bob", "lab")
	must(t, err)
	if info.Provider.Name == "" || info.Account.Driver != "cloud-mock" || info.Account.Test || !info.Features.IPv4Swap ||
		!info.Features.IPv4SwapRequiresStopped || !info.Features.ReverseDNS || !info.Features.MonthlyTransfer || info.Account.Sealed != nil {
		t.Fatalf("account %+v", info)
	}

	// A delete names the instance twice; a label that is not its own deletes nothing.
	_, err = f.m.CloudDelete(f.ctx, "carol", "lab", web.ID, "web-2")
	testkit.WantCode(t, err, errcode.CloudConfirmMismatch)
	_, err = f.m.CloudGet(f.ctx, "bob", "lab", web.ID)
	must(t, err)
	gone, err := f.m.CloudDelete(f.ctx, "carol", "lab", web.ID, "web-1")
	must(t, err)
	if gone.ID != web.ID {
		t.Fatalf("deleted %+v", gone)
	}
	_, err = f.m.CloudGet(f.ctx, "bob", "lab", web.ID)
	testkit.WantCode(t, err, errcode.CloudNotFound)

	_, err = f.m.CloudGet(f.ctx, "bob", "nowhere", web.ID)
	testkit.WantCode(t, err, errcode.AccountNotFound)

	want := "cloud.get_instance=cloud.not_found cloud.delete_instance=ok cloud.get_instance=ok cloud.get_instance=ok " +
		"cloud.delete_instance=cloud.confirm_mismatch cloud.get_instance=ok cloud.account=ok cloud.monthly_transfer=ok " +
		"cloud.set_reverse_dns=cloud.invalid cloud.set_reverse_dns=ok cloud.power_on=ok cloud.get_instance=ok cloud.swap_ipv4=ok " +
		"cloud.power_off=ok cloud.power_off=ok cloud.swap_ipv4=cloud.conflict cloud.reboot=ok cloud.get_instance=cloud.not_found " +
		"cloud.get_instance=ok cloud.create_instance=ok cloud.create_instance=ok"
	if got := ops(t, f.m, "lab"); !strings.HasPrefix(got, want) {
		t.Fatalf("audit:\n got %s\nwant %s ...", got, want)
	}
	for _, c := range audit(t, f.m, store.DriverCallListParams{Account: "lab"}) {
		if c.Operation == store.OpCloudDelete && c.Actor != "carol" {
			t.Fatalf("a delete recorded as %s's", c.Actor)
		}
	}
}

func TestCloudUnsupportedNamesTheDriversThatHaveIt(t *testing.T) {
	f := cloudFixture(t, "plain", false, "cloud-basic", "cloud-mock")
	a := create(t, f, "plain", "a")
	b := create(t, f, "plain", "b")
	for _, c := range []struct {
		feature string
		call    func() error
	}{
		{drivers.FeatureIPv4Swap, func() error { return f.m.CloudSwapIPv4(f.ctx, "bob", "plain", a.ID, b.ID) }},
		{drivers.FeatureReverseDNS, func() error {
			return f.m.CloudReverseDNS(f.ctx, "bob", "plain", a.ID, a.IPv4[0], "a.example.com")
		}},
		{drivers.FeatureMonthlyTransfer, func() error { _, err := f.m.CloudTransfer(f.ctx, "bob", "plain", a.ID); return err }},
	} {
		err := c.call()
		testkit.WantCode(t, err, errcode.CloudUnsupported)
		var e *errcode.Error
		if !errors.As(err, &e) || e.Details[errcode.DetailFeature] != c.feature ||
			!slices.Equal(e.Details[errcode.DetailDrivers].([]string), []string{"cloud-mock"}) || !strings.Contains(e.Message, "cloud-mock") {
			t.Fatalf("%s: %#v", c.feature, e)
		}
	}
	info, err := f.m.CloudAccount(f.ctx, "bob", "plain")
	must(t, err)
	if info.Features != (cloud.Features{}) {
		t.Fatalf("basic driver reports features %+v", info.Features)
	}
	if got := ops(t, f.m, "plain"); !strings.HasPrefix(got, "cloud.account=ok cloud.monthly_transfer=cloud.unsupported cloud.set_reverse_dns=cloud.unsupported cloud.swap_ipv4=cloud.unsupported") {
		t.Fatalf("audit %s", got)
	}
}

// A call's intent is in the audit log before the driver is asked: while the driver holds the call the
// row is pending, as a plane that died then would leave it, and the outcome replaces it after.
func TestCloudCallIntentIsRecordedBeforeTheDriverIsAsked(t *testing.T) {
	f := cloudFixture(t, "lab", false, "cloud-mock")
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.m.CloudCreate(ctx, "bob", "lab", cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12", Label: "hang"})
		done <- err
	}()
	f.log.WaitFor(t, "hang-test: holding the call")
	calls := audit(t, f.m, store.DriverCallListParams{Account: "lab"})
	if c := calls[0]; c.Operation != store.OpCloudCreate || c.Code != store.CodePending || c.Target != "hang" || c.Actor != "bob" {
		t.Fatalf("while the driver holds the call, the newest record is %+v", c)
	}
	cancel()
	if err := testkit.Wait(t, done, "the hung create to end"); err == nil {
		t.Fatal("a create the driver never answered succeeded")
	}
	c := audit(t, f.m, store.DriverCallListParams{Account: "lab"})[0]
	if c.ID != calls[0].ID || c.Code == store.CodePending || c.Code == store.CodeOK {
		t.Fatalf("after the call ended: %+v", c)
	}

	// A driver that crashes mid-call: the intent was written, and the crash is its outcome.
	_, err := f.m.CloudCreate(f.ctx, "bob", "lab", cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12", Label: "crash"})
	testkit.WantCode(t, err, errcode.DriverCrashed)
	for _, c := range audit(t, f.m, store.DriverCallListParams{Account: "lab"}) {
		if c.Code == store.CodePending {
			t.Fatalf("a finished call stayed pending: %+v", c)
		}
	}
	if got := ops(t, f.m, "lab"); !strings.HasPrefix(got, "cloud.create_instance=driver.crashed cloud.create_instance=") {
		t.Fatalf("audit %s", got)
	}
}

func TestCloudSafetyCatch(t *testing.T) {
	f := cloudFixture(t, "prod", false, "cloud-mock")
	mine := create(t, f, "prod", "prov-1", "lexicon-prov-1")
	theirs := create(t, f, "prod", "handmade")

	// Automation may not touch what it did not tag on an account not marked test.
	for _, tag := range []string{"lexicon-prov-1", "", "lexicon-prov-2"} {
		testkit.WantCode(t, f.m.CloudDeleteTagged(f.ctx, "plane:provision", "prod", theirs.ID, tag), errcode.CloudSafetyCatch)
	}
	testkit.WantCode(t, f.m.CloudPowerOffTagged(f.ctx, "plane:rollout", "prod", theirs.ID, "lexicon-prov-1"), errcode.CloudSafetyCatch)
	testkit.WantCode(t, f.m.CloudRebootTagged(f.ctx, "plane:rollout", "prod", theirs.ID, ""), errcode.CloudSafetyCatch)
	testkit.WantCode(t, f.m.CloudDeleteTagged(f.ctx, "plane:provision", "prod", mine.ID, ""), errcode.CloudSafetyCatch)
	still, err := f.m.CloudGet(f.ctx, "bob", "prod", theirs.ID)
	must(t, err)
	if still.Status != cloud.StatusRunning {
		t.Fatalf("a refused call changed the instance: %+v", still)
	}
	if got := ops(t, f.m, "prod"); !strings.Contains(got, "cloud.reboot=cloud.safety_catch cloud.get_instance=ok cloud.power_off=cloud.safety_catch") ||
		strings.Contains(got, "cloud.delete_instance=ok") {
		t.Fatalf("audit %s", got)
	}

	// Its own tag passes.
	must(t, f.m.CloudRebootTagged(f.ctx, "plane:rollout", "prod", mine.ID, "lexicon-prov-1"))
	must(t, f.m.CloudDeleteTagged(f.ctx, "plane:provision", "prod", mine.ID, "lexicon-prov-1"))
	_, err = f.m.CloudGet(f.ctx, "bob", "prod", mine.ID)
	testkit.WantCode(t, err, errcode.CloudNotFound)

	// On a test account the catch stands aside.
	a, err := f.m.AccountSetTest(f.ctx, "alice", "prod", true)
	must(t, err)
	if !a.Test {
		t.Fatalf("marked %+v", a)
	}
	must(t, f.m.CloudDeleteTagged(f.ctx, "plane:provision", "prod", theirs.ID, "lexicon-prov-9"))
	_, err = f.m.CloudGet(f.ctx, "bob", "prod", theirs.ID)
	testkit.WantCode(t, err, errcode.CloudNotFound)

	testkit.WantCode(t, f.m.CloudDeleteTagged(f.ctx, "plane:provision", "nowhere", theirs.ID, "x"), errcode.AccountNotFound)
	_, err = f.m.AccountSetTest(f.ctx, "alice", "nowhere", true)
	testkit.WantCode(t, err, errcode.AccountNotFound)
	if got := ops(t, f.m, "prod"); !strings.HasPrefix(got, "cloud.get_instance=cloud.not_found cloud.delete_instance=ok account.mark_test=ok") {
		t.Fatalf("audit %s", got)
	}
}

// noIntent is a store whose audit log refuses new calls while refuse is set.
type noIntent struct {
	store.Store
	refuse *atomic.Bool
}

func (s noIntent) DriverCallStart(ctx context.Context, p store.DriverCallStartParams) (store.DriverCall, error) {
	if s.refuse.Load() {
		return store.DriverCall{}, errcode.New(errcode.StoreUnavailable, "audit log unavailable")
	}
	return s.Store.DriverCallStart(ctx, p)
}

// A call whose intent cannot be recorded is not made: no unaudited instance can exist.
func TestCloudCallWithoutItsIntentIsNotMade(t *testing.T) {
	f := cloudFixture(t, "lab", false, "cloud-mock")
	refuse := &atomic.Bool{}
	m, _ := f.manager(noIntent{f.st, refuse}, f.key, "")
	// The account's process starts here (and its mock cloud is this process's own), then the log fails.
	_, err := m.CloudRegions(f.ctx, "bob", "lab")
	must(t, err)
	refuse.Store(true)
	_, err = m.CloudCreate(f.ctx, "bob", "lab", cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12", Label: "ghost"})
	testkit.WantCode(t, err, errcode.StoreUnavailable)
	refuse.Store(false)
	page, err := m.CloudInstances(f.ctx, "bob", "lab", cloud.ListRequest{})
	must(t, err)
	if len(page.Instances) != 0 {
		t.Fatalf("an instance was made without its intent recorded: %+v", page.Instances)
	}
}

// TestUserDataLimitIsTheContracts: the admin API states the contract's limit on user data without
// linking the contract (which brings go-plugin into the CLI); the two must not drift.
func TestUserDataLimitIsTheContracts(t *testing.T) {
	if api.MaxUserData != cloud.MaxUserDataLen {
		t.Fatalf("api.MaxUserData %d, cloud.MaxUserDataLen %d", api.MaxUserData, cloud.MaxUserDataLen)
	}
}
