package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Mock is an in-memory cloud driver for tests of code that drives a cloud. It validates like a real
// driver, answers with the contract's codes, implements every optional interface and passes the
// conformance suite (sdk/driver/drivertest). Instances go straight to running. The zero value is ready
// to use; it must be configured (any non-empty credential) before provider calls.
type Mock struct {
	// SwapRequiresStopped makes SwapIPv4 refuse running instances, as Hetzner's does.
	SwapRequiresStopped bool

	mu         sync.Mutex
	configured bool
	account    string
	seq        int
	instances  map[string]*Instance
	rdns       map[netip.Addr]string
}

// MockRegions, MockTypes and MockImages are what a Mock offers.
var (
	MockRegions = []Region{{ID: "test-1", Label: "Test 1", Country: "de"}, {ID: "test-2", Label: "Test 2", Country: "us"}}
	MockTypes   = []InstanceType{{ID: "small", Label: "Small", VCPUs: 1, MemoryMiB: 1024, DiskGiB: 25}, {ID: "large", Label: "Large", VCPUs: 4, MemoryMiB: 8192, DiskGiB: 160}}
	MockImages  = []string{"debian-12", "ubuntu-24.04"}
)

const mockSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {"account_name": {"type": "string", "maxLength": 64}}
}`

func (m *Mock) Info(context.Context) (driver.Info, error) {
	return driver.Info{Kind: driver.KindCloud, Name: "mock", Version: "1.0.0", APIVersions: APIVersions()}, nil
}

func (m *Mock) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(mockSchema), nil
}

func (m *Mock) SetConfig(_ context.Context, cfg driver.Config) error {
	var s struct {
		AccountName string `json:"account_name"`
	}
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	if cfg.Credential.IsZero() {
		return errcode.New(errcode.DriverConfigInvalid, "the mock needs a credential").With(errcode.DetailField, "credential")
	}
	if s.AccountName == "" {
		s.AccountName = "lexicon-test"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.configured, m.account = true, s.AccountName
	if m.instances == nil {
		m.instances, m.rdns = map[string]*Instance{}, map[netip.Addr]string{}
	}
	return nil
}

// lock takes the mutex and refuses calls before SetConfig; the caller unlocks.
func (m *Mock) lock() error {
	m.mu.Lock()
	if !m.configured {
		m.mu.Unlock()
		return errcode.New(errcode.DriverNotConfigured, "the mock has no account yet")
	}
	return nil
}

func (m *Mock) Regions(context.Context) ([]Region, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(MockRegions), nil
}

func (m *Mock) InstanceTypes(_ context.Context, region string) ([]InstanceType, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if !slices.ContainsFunc(MockRegions, func(r Region) bool { return r.ID == region }) {
		return nil, errcode.New(errcode.CloudNotFound, "no region %q", region).With(errcode.DetailID, region)
	}
	return slices.Clone(MockTypes), nil
}

func (m *Mock) CreateInstance(_ context.Context, req CreateRequest) (Instance, error) {
	if err := req.Validate(); err != nil {
		return Instance{}, err
	}
	if err := m.lock(); err != nil {
		return Instance{}, err
	}
	defer m.mu.Unlock()
	switch {
	case !slices.ContainsFunc(MockRegions, func(r Region) bool { return r.ID == req.Region }):
		return Instance{}, invalid("region", "no region %q", req.Region)
	case !slices.ContainsFunc(MockTypes, func(t InstanceType) bool { return t.ID == req.Type }):
		return Instance{}, invalid("type", "no type %q", req.Type)
	case !slices.Contains(MockImages, req.Image):
		return Instance{}, invalid("image", "no image %q", req.Image)
	}
	m.seq++
	in := &Instance{
		ID: fmt.Sprintf("m-%06d", m.seq), Label: req.Label, Region: req.Region, Type: req.Type,
		Image: req.Image, Status: StatusRunning, Tags: slices.Clone(req.Tags),
		IPv4:    []netip.Addr{netip.AddrFrom4([4]byte{192, 0, 2, byte(m.seq)})},
		IPv6:    []netip.Addr{netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", m.seq))},
		Created: time.Now().UTC().Truncate(time.Second),
	}
	m.instances[in.ID] = in
	return clone(in), nil
}

func clone(in *Instance) Instance {
	out := *in
	out.IPv4, out.IPv6, out.Tags = slices.Clone(in.IPv4), slices.Clone(in.IPv6), slices.Clone(in.Tags)
	return out
}

// get returns the instance named id; the caller holds the lock.
func (m *Mock) get(id string) (*Instance, error) {
	if err := ValidID("id", id); err != nil {
		return nil, err
	}
	in, ok := m.instances[id]
	if !ok {
		return nil, NotFound(id)
	}
	return in, nil
}

func (m *Mock) GetInstance(_ context.Context, id string) (Instance, error) {
	if err := m.lock(); err != nil {
		return Instance{}, err
	}
	defer m.mu.Unlock()
	in, err := m.get(id)
	if err != nil {
		return Instance{}, err
	}
	return clone(in), nil
}

// ListInstances pages by offset; the token is the offset of the next instance in id order.
func (m *Mock) ListInstances(_ context.Context, req ListRequest) (InstancePage, error) {
	if err := req.Validate(); err != nil {
		return InstancePage{}, err
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return InstancePage{}, invalid("page_token", "page token %q is not one this driver gave", req.PageToken)
		}
		offset = n
	}
	size := req.PageSize
	if size == 0 {
		size = 100
	}
	if err := m.lock(); err != nil {
		return InstancePage{}, err
	}
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.instances))
	for id := range m.instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var page InstancePage
	for i := offset; i < len(ids) && len(page.Instances) < size; i++ {
		page.Instances = append(page.Instances, clone(m.instances[ids[i]]))
	}
	if end := offset + len(page.Instances); end < len(ids) {
		page.NextPageToken = strconv.Itoa(end)
	}
	return page, nil
}

func (m *Mock) DeleteInstance(_ context.Context, id string) error {
	if err := ValidID("id", id); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.instances, id)
	return nil
}

func (m *Mock) setStatus(id string, s Status) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	in, err := m.get(id)
	if err != nil {
		return err
	}
	in.Status = s
	return nil
}

func (m *Mock) PowerOn(_ context.Context, id string) error  { return m.setStatus(id, StatusRunning) }
func (m *Mock) PowerOff(_ context.Context, id string) error { return m.setStatus(id, StatusStopped) }
func (m *Mock) Reboot(_ context.Context, id string) error   { return m.setStatus(id, StatusRunning) }

func (m *Mock) Account(context.Context) (Account, error) {
	if err := m.lock(); err != nil {
		return Account{}, err
	}
	defer m.mu.Unlock()
	return Account{Name: m.account, Company: "Lexicon Test", Email: "test@example.com"}, nil
}

func (m *Mock) SwapIPv4(_ context.Context, a, b string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	ia, err := m.get(a)
	if err != nil {
		return err
	}
	ib, err := m.get(b)
	if err != nil {
		return err
	}
	if a == b {
		return invalid("b", "cannot swap an instance's address with itself")
	}
	if m.SwapRequiresStopped && (ia.Status != StatusStopped || ib.Status != StatusStopped) {
		return errcode.New(errcode.CloudConflict, "both instances must be stopped to swap their IPv4 addresses")
	}
	ia.IPv4, ib.IPv4 = ib.IPv4, ia.IPv4
	return nil
}

func (m *Mock) SwapIPv4RequiresStopped() bool { return m.SwapRequiresStopped }

func (m *Mock) SetReverseDNS(_ context.Context, id string, ip netip.Addr, hostname string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	in, err := m.get(id)
	if err != nil {
		return err
	}
	if !slices.Contains(in.IPv4, ip) && !slices.Contains(in.IPv6, ip) {
		return invalid("ip", "%s is not an address of %s", ip, id)
	}
	m.rdns[ip] = hostname
	return nil
}

// ReverseDNS returns the PTR name set for ip, for tests.
func (m *Mock) ReverseDNS(ip netip.Addr) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rdns[ip]
}

func (m *Mock) MonthlyTransfer(_ context.Context, id string) (Transfer, error) {
	if err := m.lock(); err != nil {
		return Transfer{}, err
	}
	defer m.mu.Unlock()
	if _, err := m.get(id); err != nil {
		return Transfer{}, err
	}
	return Transfer{UsedBytes: 1 << 30, AllowanceBytes: 1 << 40}, nil
}

var (
	_ Driver           = (*Mock)(nil)
	_ IPv4Swapper      = (*Mock)(nil)
	_ ReverseDNSSetter = (*Mock)(nil)
	_ TransferReporter = (*Mock)(nil)
)
