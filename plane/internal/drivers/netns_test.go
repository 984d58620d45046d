package drivers_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// The netns cloud is published with its real manifest, which declares it privileged.
func init() {
	if raw, err := os.ReadFile(filepath.Join(root, "plugins", "cloud", "netns", "manifest.json")); err == nil {
		manifests["cloud-netns"] = string(raw)
	}
}

// TestNetnsCloudThroughThePlane: the real netns driver, pinned in a release like the others, is
// enabled only with the unconfined consent, then serves an account through the plane: its catalog,
// and its instances where the plane can make namespaces (root); elsewhere it answers
// cloud.unavailable.
func TestNetnsCloudThroughThePlane(t *testing.T) {
	f := newFixture(t, "")
	f.publish("cloud-netns")
	_, err := f.m.Enable(f.ctx, "alice", "cloud-netns", false)
	testkit.WantCode(t, err, errcode.DriverUnconfined)
	_, err = f.m.Enable(f.ctx, "alice", "cloud-netns", true)
	must(t, err)
	settings := fmt.Sprintf(`{"root": %q, "range": "10.213.107.0/24", "test": true}`, filepath.Join(t.TempDir(), "state"))
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "cloud-netns", Name: "local",
		Settings: json.RawMessage(settings), Credential: driver.NewSecret("unused")})
	must(t, err)
	regions, err := f.m.CloudRegions(f.ctx, "bob", "local")
	must(t, err)
	if len(regions) != 1 || regions[0].ID != "local" {
		t.Fatalf("regions %+v", regions)
	}
	page, err := f.m.CloudInstances(f.ctx, "bob", "local", cloud.ListRequest{})
	if os.Geteuid() != 0 {
		testkit.WantCode(t, err, errcode.CloudUnavailable)
		return
	}
	must(t, err)
	if len(page.Instances) != 0 {
		t.Fatalf("a new account has instances: %+v", page.Instances)
	}
}
