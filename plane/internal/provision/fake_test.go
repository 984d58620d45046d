package provision_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// fakeCloud is a provider's API in memory: one account ("lin"), one region, one type, and instances
// that report running when the test says so.
type fakeCloud struct {
	mu        sync.Mutex
	next      int
	instances map[string]*cloud.Instance
	creates   []cloud.CreateRequest
	deletes   []string
	// deleteErr, when set, is every delete's answer.
	deleteErr error
	// createHook, when set, runs after the instance exists and before the answer: a test loses the
	// answer by returning an error from it (a plane killed mid-call).
	createHook func(ctx context.Context) error
	// running makes new instances report running at once.
	running bool
	// transfer is every instance's transfer this month.
	transfer     cloud.Transfer
	transferAsks int
}

func newFakeCloud() *fakeCloud {
	return &fakeCloud{instances: map[string]*cloud.Instance{}, running: true}
}

func (f *fakeCloud) account(account string) error {
	if account != "lin" {
		return errcode.New(errcode.AccountNotFound, "no account %s", account)
	}
	return nil
}

func (f *fakeCloud) Regions(_ context.Context, _, account string) ([]cloud.Region, error) {
	if err := f.account(account); err != nil {
		return nil, err
	}
	return []cloud.Region{{ID: "us-east"}}, nil
}

func (f *fakeCloud) InstanceTypes(_ context.Context, _, account, region string) ([]cloud.InstanceType, error) {
	if err := f.account(account); err != nil {
		return nil, err
	}
	if region != "us-east" {
		return nil, cloud.NotFound(region)
	}
	return []cloud.InstanceType{{ID: "g6-nanode-1"}}, nil
}

func (f *fakeCloud) Create(ctx context.Context, _, account string, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := f.account(account); err != nil {
		return cloud.Instance{}, err
	}
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	if req.Image != "debian-13" {
		return cloud.Instance{}, errcode.New(errcode.CloudInvalid, "no image %s", req.Image)
	}
	f.mu.Lock()
	f.next++
	id := fmt.Sprintf("i-%d", f.next)
	status := cloud.StatusProvisioning
	if f.running {
		status = cloud.StatusRunning
	}
	inst := &cloud.Instance{ID: id, Label: req.Label, Region: req.Region, Type: req.Type, Image: req.Image, Status: status,
		IPv4: []netip.Addr{netip.AddrFrom4([4]byte{192, 0, 2, byte(f.next)})}, IPv6: []netip.Addr{netip.MustParseAddr(fmt.Sprintf("2001:db8::%d", f.next))},
		Tags: slices.Clone(req.Tags)}
	f.instances[id] = inst
	f.creates = append(f.creates, req)
	hook := f.createHook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return cloud.Instance{}, err
		}
	}
	return *inst, nil
}

func (f *fakeCloud) Get(_ context.Context, _, account, id string) (cloud.Instance, error) {
	if err := f.account(account); err != nil {
		return cloud.Instance{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	inst, ok := f.instances[id]
	if !ok {
		return cloud.Instance{}, cloud.NotFound(id)
	}
	return *inst, nil
}

func (f *fakeCloud) FindTagged(_ context.Context, _, account, tag string) (cloud.Instance, bool, error) {
	if err := f.account(account); err != nil {
		return cloud.Instance{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, inst := range f.instances {
		if slices.Contains(inst.Tags, tag) {
			return *inst, true, nil
		}
	}
	return cloud.Instance{}, false, nil
}

func (f *fakeCloud) DeleteTagged(_ context.Context, _, account, id, tag string) error {
	if err := f.account(account); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return f.deleteErr
	}
	inst, ok := f.instances[id]
	if !ok {
		return cloud.NotFound(id)
	}
	if !slices.Contains(inst.Tags, tag) {
		return errcode.New(errcode.CloudConflict, "instance %s does not carry %s", id, tag)
	}
	delete(f.instances, id)
	f.deletes = append(f.deletes, id)
	return nil
}

func (f *fakeCloud) Transfer(_ context.Context, _, account, id string) (cloud.Transfer, error) {
	if err := f.account(account); err != nil {
		return cloud.Transfer{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.instances[id]; !ok {
		return cloud.Transfer{}, cloud.NotFound(id)
	}
	f.transferAsks++
	return f.transfer, nil
}

func (f *fakeCloud) setStatus(id string, s cloud.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instances[id].Status = s
}

func (f *fakeCloud) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.instances)
}

func (f *fakeCloud) lastCreate() cloud.CreateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates[len(f.creates)-1]
}

type fakeDNS struct {
	mu      sync.Mutex
	records map[string][]dns.Record // by account/zone
	// during, when set, runs inside AddRecords: what the tests look at while the engine does its
	// post-join work.
	during func()
}

func (d *fakeDNS) AddRecords(_ context.Context, _, account, zone string, want []dns.Record) error {
	if d.during != nil {
		d.during()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.records == nil {
		d.records = map[string][]dns.Record{}
	}
	d.records[account+"/"+zone] = append(d.records[account+"/"+zone], want...)
	return nil
}

func (d *fakeDNS) RemoveRecords(_ context.Context, _, account, zone string, recs []dns.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[account+"/"+zone] = slices.DeleteFunc(d.records[account+"/"+zone], func(r dns.Record) bool {
		return slices.ContainsFunc(recs, func(x dns.Record) bool { return x.Type == r.Type && x.Name == r.Name && x.Value == r.Value })
	})
	return nil
}

func cloudReq() cloud.CreateRequest {
	return cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "debian-13", Label: "old-1"}
}
