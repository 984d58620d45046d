package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// CloudOptions say what the suite may create in the account.
type CloudOptions struct {
	// Region, Type and Image are a combination the account can create (required).
	Region, Type, Image string
	// MissingID is a well-formed instance id that names no instance (required): ids differ in form
	// between providers.
	MissingID string
	// AccountMarker must appear in the account's name or company, or the suite refuses to create
	// anything. Default DefaultAccountMarker.
	AccountMarker string
	// Pages is how many instances the pagination test creates and pages through one at a time
	// (default 3).
	Pages int
	// Settle bounds how long the suite waits for an instance to reach a power state (default 10
	// minutes; a fake provider answers at once).
	Settle time.Duration
}

// DefaultAccountMarker is the test-account safety catch's default marker.
const DefaultAccountMarker = "lexicon-test"

// TestSSHKey is the public key the suite puts on the instances it creates (its private half is
// nowhere: nobody logs in).
const TestSSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHQNY5fpWTNtXtpNienSaYvsUmsC1YGWzCBDS/fo/LSF lexicon-drivertest"

// RunCloud runs the cloud conformance suite three ways: on a driver from newDriver in this process,
// over gRPC in this process (go-plugin's TestPluginGRPCConn), and over a driver subprocess of this
// test binary (which needs drivertest.Main in TestMain). Each way configures its own driver with cfg.
func RunCloud(t *testing.T, newDriver func() cloud.Driver, cfg driver.Config, opts CloudOptions) {
	t.Helper()
	if opts.Region == "" || opts.Type == "" || opts.Image == "" || opts.MissingID == "" {
		t.Fatal("drivertest: CloudOptions needs Region, Type, Image and MissingID")
	}
	t.Run("in-process", func(t *testing.T) { runCloud(t, newDriver(), cfg, opts) })
	t.Run("grpc", func(t *testing.T) {
		d := overGRPC(t, cloud.PluginName, &cloud.Plugin{Impl: newDriver()}).(*cloud.Client)
		runCloud(t, d, cfg, opts)
	})
	t.Run("process", func(t *testing.T) {
		if registered.Cloud == nil {
			t.Fatal("drivertest: call drivertest.Main(m, drivertest.Drivers{Cloud: ...}) from TestMain so the suite can run the driver as a subprocess")
		}
		d := overProcess(t, "cloud", cloud.VersionedPlugins(nil)).(*cloud.Client)
		runCloud(t, d, cfg, opts)
	})
}

// RunCloudOn runs the cloud conformance suite once, against d as given (a host's proxy of a running
// driver, say). d must not be configured yet: the suite configures it with cfg.
func RunCloudOn(t *testing.T, d cloud.Driver, cfg driver.Config, opts CloudOptions) {
	t.Helper()
	if opts.Region == "" || opts.Type == "" || opts.Image == "" || opts.MissingID == "" {
		t.Fatal("drivertest: CloudOptions needs Region, Type, Image and MissingID")
	}
	runCloud(t, d, cfg, opts)
}

// cloudSuite is one run of the suite against one driver.
type cloudSuite struct {
	d    cloud.Driver
	opts CloudOptions
	run  string // unique to this run, in every label
	n    int
}

func runCloud(t *testing.T, d cloud.Driver, cfg driver.Config, opts CloudOptions) {
	if opts.AccountMarker == "" {
		opts.AccountMarker = DefaultAccountMarker
	}
	if opts.Pages == 0 {
		opts.Pages = 3
	}
	if opts.Settle == 0 {
		opts.Settle = 10 * time.Minute
	}
	runBase(t, d, driver.KindCloud, cfg)
	acct, err := d.Account(ctx(t))
	if err != nil {
		t.Fatalf("Account: %v", err)
	}
	if !strings.Contains(acct.Name+" "+acct.Company, opts.AccountMarker) {
		t.Fatalf("safety catch: account %q (%q) is not marked %q: refusing to create instances in it", acct.Name, acct.Company, opts.AccountMarker)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	s := &cloudSuite{d: d, opts: opts, run: "lxt-" + hex.EncodeToString(b)}
	t.Run("regions", s.regions)
	t.Run("create_get_list_delete", s.lifecycle)
	t.Run("power", s.power)
	t.Run("pagination", s.pagination)
	t.Run("not_found", s.notFound)
	t.Run("bad_input", s.badInput)
	t.Run("features", s.features)
}

func (s *cloudSuite) label() string {
	s.n++
	return s.run + "-" + strconv.Itoa(s.n)
}

func (s *cloudSuite) create(t *testing.T) cloud.Instance {
	t.Helper()
	req := cloud.CreateRequest{
		Region: s.opts.Region, Type: s.opts.Type, Image: s.opts.Image, Label: s.label(),
		Tags: []string{DefaultAccountMarker}, SSHKeys: []string{TestSSHKey}, UserData: "#cloud-config\n{}\n",
	}
	in, err := s.d.CreateInstance(ctx(t), req)
	if err != nil {
		t.Fatalf("CreateInstance(%+v): %v", req, err)
	}
	t.Cleanup(func() {
		if err := s.d.DeleteInstance(context.Background(), in.ID); err != nil {
			t.Errorf("cleanup: DeleteInstance(%s): %v", in.ID, err)
		}
	})
	if in.ID == "" || in.Label != req.Label || in.Region != req.Region || in.Type != req.Type {
		t.Fatalf("CreateInstance returned %+v: want an id, label %s, region %s, type %s", in, req.Label, req.Region, req.Type)
	}
	if !slices.Contains(in.Tags, DefaultAccountMarker) {
		t.Errorf("CreateInstance returned tags %v: want %s", in.Tags, DefaultAccountMarker)
	}
	return in
}

// waitStatus polls the provider until the instance reaches want; a provider changes power state on its
// own time, so there is no signal to wait on but its answer.
func (s *cloudSuite) waitStatus(t *testing.T, id string, want cloud.Status) {
	t.Helper()
	deadline := time.Now().Add(s.opts.Settle)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		in, err := s.d.GetInstance(ctx(t), id)
		if err != nil {
			t.Fatalf("GetInstance(%s): %v", id, err)
		}
		if in.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s after %s, want %s", id, in.Status, s.opts.Settle, want)
		}
		<-tick.C
	}
}

func (s *cloudSuite) regions(t *testing.T) {
	regions, err := s.d.Regions(ctx(t))
	if err != nil {
		t.Fatalf("Regions: %v", err)
	}
	if !slices.ContainsFunc(regions, func(r cloud.Region) bool { return r.ID == s.opts.Region }) {
		t.Errorf("Regions = %v: want %s among them", regions, s.opts.Region)
	}
	types, err := s.d.InstanceTypes(ctx(t), s.opts.Region)
	if err != nil {
		t.Fatalf("InstanceTypes(%s): %v", s.opts.Region, err)
	}
	i := slices.IndexFunc(types, func(x cloud.InstanceType) bool { return x.ID == s.opts.Type })
	if i < 0 {
		t.Fatalf("InstanceTypes(%s) = %v: want %s among them", s.opts.Region, types, s.opts.Type)
	}
	if ty := types[i]; ty.VCPUs <= 0 || ty.MemoryMiB <= 0 {
		t.Errorf("instance type %+v: want its vCPUs and memory", ty)
	}
	_, err = s.d.InstanceTypes(ctx(t), "lexicon-no-such-region")
	testkit.CheckCode(t, err, errcode.CloudNotFound, "InstanceTypes of an unknown region")
}

func (s *cloudSuite) lifecycle(t *testing.T) {
	in := s.create(t)
	got, err := s.d.GetInstance(ctx(t), in.ID)
	if err != nil {
		t.Fatalf("GetInstance(%s): %v", in.ID, err)
	}
	if got.ID != in.ID || got.Label != in.Label || got.Region != in.Region || got.Type != in.Type {
		t.Errorf("GetInstance = %+v, want the instance created (%+v)", got, in)
	}
	if !slices.Contains(s.listAll(t, 0), in.ID) {
		t.Errorf("ListInstances does not hold %s", in.ID)
	}
	if err := s.d.DeleteInstance(ctx(t), in.ID); err != nil {
		t.Fatalf("DeleteInstance(%s): %v", in.ID, err)
	}
	_, err = s.d.GetInstance(ctx(t), in.ID)
	testkit.CheckCode(t, err, errcode.CloudNotFound, "GetInstance after delete")
	if err := s.d.DeleteInstance(ctx(t), in.ID); err != nil {
		t.Errorf("a second DeleteInstance(%s) = %v: deletes must be idempotent", in.ID, err)
	}
	if slices.Contains(s.listAll(t, 0), in.ID) {
		t.Errorf("ListInstances still holds %s after delete", in.ID)
	}
}

// listAll pages through every instance and checks each page's size and that no id repeats.
func (s *cloudSuite) listAll(t *testing.T, pageSize int) []string {
	t.Helper()
	var ids []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("ListInstances never ends")
		}
		page, err := s.d.ListInstances(ctx(t), cloud.ListRequest{PageSize: pageSize, PageToken: token})
		if err != nil {
			t.Fatalf("ListInstances(page %d, size %d): %v", pages, pageSize, err)
		}
		if pageSize > 0 && len(page.Instances) > pageSize {
			t.Fatalf("ListInstances returned %d instances for page size %d", len(page.Instances), pageSize)
		}
		for _, in := range page.Instances {
			if slices.Contains(ids, in.ID) {
				t.Fatalf("ListInstances returned %s twice", in.ID)
			}
			ids = append(ids, in.ID)
		}
		if page.NextPageToken == "" {
			return ids
		}
		if page.NextPageToken == token {
			t.Fatalf("ListInstances returned its own page token %q again", token)
		}
		token = page.NextPageToken
	}
}

func (s *cloudSuite) power(t *testing.T) {
	in := s.create(t)
	s.waitStatus(t, in.ID, cloud.StatusRunning)
	if err := s.d.PowerOff(ctx(t), in.ID); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	s.waitStatus(t, in.ID, cloud.StatusStopped)
	if err := s.d.PowerOn(ctx(t), in.ID); err != nil {
		t.Fatalf("PowerOn: %v", err)
	}
	s.waitStatus(t, in.ID, cloud.StatusRunning)
	if err := s.d.Reboot(ctx(t), in.ID); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	s.waitStatus(t, in.ID, cloud.StatusRunning)
}

func (s *cloudSuite) pagination(t *testing.T) {
	var created []string
	for range s.opts.Pages {
		created = append(created, s.create(t).ID)
	}
	for _, size := range []int{1, 2} {
		ids := s.listAll(t, size)
		for _, id := range created {
			if !slices.Contains(ids, id) {
				t.Errorf("paging %d at a time: %s missing from %v", size, id, ids)
			}
		}
	}
	_, err := s.d.ListInstances(ctx(t), cloud.ListRequest{PageSize: -1})
	testkit.CheckCode(t, err, errcode.CloudInvalid, "ListInstances with a negative page size")
	_, err = s.d.ListInstances(ctx(t), cloud.ListRequest{PageSize: 1, PageToken: "lexicon-not-a-token"})
	testkit.CheckCode(t, err, errcode.CloudInvalid, "ListInstances with a page token the driver never gave")
}

func (s *cloudSuite) notFound(t *testing.T) {
	id := s.opts.MissingID
	_, err := s.d.GetInstance(ctx(t), id)
	testkit.CheckCode(t, err, errcode.CloudNotFound, "GetInstance of a missing instance")
	testkit.CheckCode(t, s.d.PowerOn(ctx(t), id), errcode.CloudNotFound, "PowerOn of a missing instance")
	testkit.CheckCode(t, s.d.PowerOff(ctx(t), id), errcode.CloudNotFound, "PowerOff of a missing instance")
	testkit.CheckCode(t, s.d.Reboot(ctx(t), id), errcode.CloudNotFound, "Reboot of a missing instance")
	if err := s.d.DeleteInstance(ctx(t), id); err != nil {
		t.Errorf("DeleteInstance of a missing instance = %v: deletes must be idempotent", err)
	}
}

func (s *cloudSuite) badInput(t *testing.T) {
	good := cloud.CreateRequest{Region: s.opts.Region, Type: s.opts.Type, Image: s.opts.Image, Label: s.run + "-bad"}
	cases := []struct {
		name string
		edit func(*cloud.CreateRequest)
	}{
		{"label with spaces", func(r *cloud.CreateRequest) { r.Label = "Bad Label!" }},
		{"empty label", func(r *cloud.CreateRequest) { r.Label = "" }},
		{"empty region", func(r *cloud.CreateRequest) { r.Region = "" }},
		{"empty type", func(r *cloud.CreateRequest) { r.Type = "" }},
		{"garbage SSH key", func(r *cloud.CreateRequest) { r.SSHKeys = []string{"not a key"} }},
		{"bad tag", func(r *cloud.CreateRequest) { r.Tags = []string{"a tag with spaces"} }},
		{"unknown disk encryption", func(r *cloud.CreateRequest) { r.DiskEncryption = "maybe" }},
		{"oversized user data", func(r *cloud.CreateRequest) { r.UserData = strings.Repeat("x", cloud.MaxUserDataLen+1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := good
			c.edit(&req)
			in, err := s.d.CreateInstance(ctx(t), req)
			if err == nil {
				_ = s.d.DeleteInstance(context.Background(), in.ID)
			}
			testkit.CheckCode(t, err, errcode.CloudInvalid, "CreateInstance with "+c.name)
		})
	}
	t.Run("unknown region", func(t *testing.T) {
		req := good
		req.Region = "lexicon-no-such-region"
		in, err := s.d.CreateInstance(ctx(t), req)
		if err == nil {
			_ = s.d.DeleteInstance(context.Background(), in.ID)
		}
		wantOneOf(t, err, "CreateInstance in an unknown region", errcode.CloudInvalid, errcode.CloudNotFound)
	})
	_, err := s.d.GetInstance(ctx(t), "")
	testkit.CheckCode(t, err, errcode.CloudInvalid, "GetInstance with an empty id")
	// Nothing half-made: no instance with the run's bad label exists.
	for _, id := range s.listAll(t, 0) {
		if in, err := s.d.GetInstance(ctx(t), id); err == nil && strings.HasPrefix(in.Label, s.run+"-bad") {
			t.Errorf("a refused create left instance %s (%s) behind", in.ID, in.Label)
		}
	}
}

// featureSet is what a driver says of its optional interfaces: a proxy over the wire (cloud.Client,
// a host's) answers Features; in-process the interfaces themselves answer.
func (s *cloudSuite) featureSet(t *testing.T) cloud.Features {
	if c, ok := s.d.(interface {
		Features(context.Context) (cloud.Features, error)
	}); ok {
		f, err := c.Features(ctx(t))
		if err != nil {
			t.Fatalf("Features: %v", err)
		}
		return f
	}
	return cloud.FeaturesOf(s.d)
}

func (s *cloudSuite) features(t *testing.T) {
	f := s.featureSet(t)
	t.Run("reverse_dns", func(t *testing.T) {
		in := s.create(t)
		setter, ok := s.d.(cloud.ReverseDNSSetter)
		if !f.ReverseDNS {
			if ok {
				if len(in.IPv4) > 0 {
					testkit.CheckCode(t, setter.SetReverseDNS(ctx(t), in.ID, in.IPv4[0], "x.example.com"), errcode.CloudUnsupported, "SetReverseDNS on a driver without it")
				}
			}
			t.Skip("the driver does not set reverse DNS")
		}
		if len(in.IPv4) == 0 {
			t.Fatalf("instance %+v has no IPv4 address", in)
		}
		if err := setter.SetReverseDNS(ctx(t), in.ID, in.IPv4[0], s.run+".example.com"); err != nil {
			t.Errorf("SetReverseDNS: %v", err)
		}
		testkit.CheckCode(t, setter.SetReverseDNS(ctx(t), s.opts.MissingID, in.IPv4[0], "x.example.com"), errcode.CloudNotFound, "SetReverseDNS of a missing instance")
	})
	t.Run("monthly_transfer", func(t *testing.T) {
		r, ok := s.d.(cloud.TransferReporter)
		if !f.MonthlyTransfer {
			if ok {
				_, err := r.MonthlyTransfer(ctx(t), s.opts.MissingID)
				testkit.CheckCode(t, err, errcode.CloudUnsupported, "MonthlyTransfer on a driver without it")
			}
			t.Skip("the driver does not report transfer")
		}
		in := s.create(t)
		tr, err := r.MonthlyTransfer(ctx(t), in.ID)
		if err != nil {
			t.Fatalf("MonthlyTransfer: %v", err)
		}
		if tr.UsedBytes < 0 || tr.AllowanceBytes < 0 {
			t.Errorf("MonthlyTransfer = %+v: want non-negative figures", tr)
		}
		_, err = r.MonthlyTransfer(ctx(t), s.opts.MissingID)
		testkit.CheckCode(t, err, errcode.CloudNotFound, "MonthlyTransfer of a missing instance")
	})
	t.Run("ipv4_swap", func(t *testing.T) {
		swap := s.swapFunc()
		if !f.IPv4Swap {
			if swap != nil {
				testkit.CheckCode(t, swap(ctx(t), s.opts.MissingID, s.opts.MissingID), errcode.CloudUnsupported, "SwapIPv4 on a driver without it")
			}
			t.Skip("the driver does not swap IPv4 addresses")
		}
		a, b := s.create(t), s.create(t)
		s.waitStatus(t, a.ID, cloud.StatusRunning)
		s.waitStatus(t, b.ID, cloud.StatusRunning)
		if f.IPv4SwapRequiresStopped {
			testkit.CheckCode(t, swap(ctx(t), a.ID, b.ID), errcode.CloudConflict, "SwapIPv4 of running instances when the driver says they must be stopped")
			for _, id := range []string{a.ID, b.ID} {
				if err := s.d.PowerOff(ctx(t), id); err != nil {
					t.Fatalf("PowerOff(%s): %v", id, err)
				}
				s.waitStatus(t, id, cloud.StatusStopped)
			}
		}
		if err := swap(ctx(t), a.ID, b.ID); err != nil {
			t.Fatalf("SwapIPv4: %v", err)
		}
		a2, err := s.d.GetInstance(ctx(t), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := s.d.GetInstance(ctx(t), b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a2.IPv4, b.IPv4) || !slices.Equal(b2.IPv4, a.IPv4) {
			t.Errorf("after SwapIPv4: a has %v (want %v), b has %v (want %v)", a2.IPv4, b.IPv4, b2.IPv4, a.IPv4)
		}
		testkit.CheckCode(t, swap(ctx(t), a.ID, s.opts.MissingID), errcode.CloudNotFound, "SwapIPv4 with a missing instance")
	})
}

// swapFunc returns the driver's SwapIPv4, whether it implements IPv4Swapper or is a proxy that
// forwards the call.
func (s *cloudSuite) swapFunc() func(context.Context, string, string) error {
	if d, ok := s.d.(interface {
		SwapIPv4(context.Context, string, string) error
	}); ok {
		return d.SwapIPv4
	}
	return nil
}
