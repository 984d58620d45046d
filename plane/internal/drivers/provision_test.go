package drivers_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestProvisionCloudOverARealDriver runs provisioning's cloud calls through the manager against the
// mock cloud driver as a go-plugin process: create with a tag and user data, find by the tag, get,
// read transfer, refuse to delete under another tag, delete under its own; every call audited as the
// provisioning.
func TestProvisionCloudOverARealDriver(t *testing.T) {
	f := newFixture(t, "")
	f.publish("cloud-mock")
	_, err := f.m.Enable(f.ctx, "alice", "cloud-mock", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "cloud-mock", Name: "lab-cloud", Credential: driver.NewSecret(credential)})
	must(t, err)
	pc := drivers.ProvisionCloud{M: f.m}
	const actor, tag = "plane:provisioning:prov_1", "lexicon-prov-1"
	inst, err := pc.Create(f.ctx, actor, "lab-cloud", cloud.CreateRequest{Region: cloud.MockRegions[0].ID, Type: cloud.MockTypes[0].ID,
		Image: cloud.MockImages[0], Label: "web-1", Tags: []string{tag}, UserData: "#cloud-config\n"})
	must(t, err)
	found, ok, err := pc.FindTagged(f.ctx, actor, "lab-cloud", tag)
	must(t, err)
	if !ok || found.ID != inst.ID {
		t.Fatalf("FindTagged: %v %+v", ok, found)
	}
	if _, ok, err := pc.FindTagged(f.ctx, actor, "lab-cloud", "lexicon-prov-2"); err != nil || ok {
		t.Fatalf("FindTagged of another tag: %v %v", ok, err)
	}
	got, err := pc.Get(f.ctx, actor, "lab-cloud", inst.ID)
	must(t, err)
	if len(got.IPv4) == 0 || got.Status != cloud.StatusRunning {
		t.Fatalf("Get: %+v", got)
	}
	tr, err := pc.Transfer(f.ctx, actor, "lab-cloud", inst.ID)
	must(t, err)
	if tr.AllowanceBytes == 0 {
		t.Fatalf("transfer: %+v", tr)
	}
	err = pc.DeleteTagged(f.ctx, actor, "lab-cloud", inst.ID, "lexicon-prov-2")
	testkit.WantCode(t, err, errcode.CloudConflict)
	must(t, pc.DeleteTagged(f.ctx, actor, "lab-cloud", inst.ID, tag))
	_, err = pc.Get(f.ctx, actor, "lab-cloud", inst.ID)
	testkit.WantCode(t, err, errcode.CloudNotFound)
	ops := []string{}
	for _, c := range audit(t, f.m, store.DriverCallListParams{Account: "lab-cloud"}) {
		if c.Actor == actor {
			ops = append(ops, c.Operation+"="+c.Code)
		}
	}
	// The delete reads the instance twice: provisioning's own tag check, then the safety catch's.
	want := "cloud.get_instance=cloud.not_found cloud.delete_instance=ok cloud.get_instance=ok cloud.get_instance=ok cloud.get_instance=ok cloud.monthly_transfer=ok " +
		"cloud.get_instance=ok cloud.list_instances=ok cloud.list_instances=ok cloud.create_instance=ok"
	if got := strings.Join(ops, " "); got != want {
		t.Fatalf("audit:\n got %s\nwant %s", got, want)
	}
}
