package cloud

import (
	"context"
	"net/netip"

	"google.golang.org/grpc"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	cloudpb "github.com/lexicon-fleet/lexicon/sdk/driver/cloud/proto"
)

// Client is the host side of a cloud driver over a gRPC connection. It implements Driver and every
// optional interface's call; ask Features which ones the driver really serves, since a call it does
// not serve fails with cloud.unsupported. Errors come back with the driver's codes; a broken
// connection is a driver.* code wrapping a driver.TransportError.
type Client struct {
	*driver.BaseClient
	rpc cloudpb.CloudClient
}

// NewClient returns a Client on cc.
func NewClient(cc grpc.ClientConnInterface) *Client {
	return &Client{BaseClient: driver.NewBaseClient(cc), rpc: cloudpb.NewCloudClient(cc)}
}

func (c *Client) Regions(ctx context.Context) ([]Region, error) {
	resp, err := c.rpc.Regions(ctx, &cloudpb.RegionsRequest{})
	if err != nil {
		return nil, driver.FromStatus(err)
	}
	var out []Region
	for _, r := range resp.GetRegions() {
		out = append(out, Region{ID: r.GetId(), Label: r.GetLabel(), Country: r.GetCountry()})
	}
	return out, nil
}

func (c *Client) InstanceTypes(ctx context.Context, region string) ([]InstanceType, error) {
	resp, err := c.rpc.InstanceTypes(ctx, &cloudpb.InstanceTypesRequest{Region: region})
	if err != nil {
		return nil, driver.FromStatus(err)
	}
	var out []InstanceType
	for _, t := range resp.GetTypes() {
		out = append(out, InstanceType{
			ID: t.GetId(), Label: t.GetLabel(), VCPUs: int(t.GetVcpus()), MemoryMiB: t.GetMemoryMib(), DiskGiB: t.GetDiskGib(),
		})
	}
	return out, nil
}

func (c *Client) CreateInstance(ctx context.Context, req CreateRequest) (Instance, error) {
	resp, err := c.rpc.CreateInstance(ctx, createToPB(req))
	if err != nil {
		return Instance{}, driver.FromStatus(err)
	}
	return instanceFromPB(resp), nil
}

func (c *Client) GetInstance(ctx context.Context, id string) (Instance, error) {
	resp, err := c.rpc.GetInstance(ctx, &cloudpb.InstanceRef{Id: id})
	if err != nil {
		return Instance{}, driver.FromStatus(err)
	}
	return instanceFromPB(resp), nil
}

func (c *Client) ListInstances(ctx context.Context, req ListRequest) (InstancePage, error) {
	resp, err := c.rpc.ListInstances(ctx, &cloudpb.ListInstancesRequest{PageSize: int32(req.PageSize), PageToken: req.PageToken})
	if err != nil {
		return InstancePage{}, driver.FromStatus(err)
	}
	page := InstancePage{NextPageToken: resp.GetNextPageToken()}
	for _, in := range resp.GetInstances() {
		page.Instances = append(page.Instances, instanceFromPB(in))
	}
	return page, nil
}

func (c *Client) DeleteInstance(ctx context.Context, id string) error {
	_, err := c.rpc.DeleteInstance(ctx, &cloudpb.InstanceRef{Id: id})
	return driver.FromStatus(err)
}

func (c *Client) PowerOn(ctx context.Context, id string) error {
	_, err := c.rpc.PowerOn(ctx, &cloudpb.InstanceRef{Id: id})
	return driver.FromStatus(err)
}

func (c *Client) PowerOff(ctx context.Context, id string) error {
	_, err := c.rpc.PowerOff(ctx, &cloudpb.InstanceRef{Id: id})
	return driver.FromStatus(err)
}

func (c *Client) Reboot(ctx context.Context, id string) error {
	_, err := c.rpc.Reboot(ctx, &cloudpb.InstanceRef{Id: id})
	return driver.FromStatus(err)
}

func (c *Client) Account(ctx context.Context) (Account, error) {
	resp, err := c.rpc.Account(ctx, &cloudpb.AccountRequest{})
	if err != nil {
		return Account{}, driver.FromStatus(err)
	}
	return Account{Name: resp.GetName(), Company: resp.GetCompany(), Email: resp.GetEmail()}, nil
}

// Features asks the driver which optional interfaces it implements.
func (c *Client) Features(ctx context.Context) (Features, error) {
	resp, err := c.rpc.Features(ctx, &cloudpb.FeaturesRequest{})
	if err != nil {
		return Features{}, driver.FromStatus(err)
	}
	return Features{
		IPv4Swap: resp.GetIpv4Swap(), IPv4SwapRequiresStopped: resp.GetIpv4SwapRequiresStopped(),
		ReverseDNS: resp.GetReverseDns(), MonthlyTransfer: resp.GetMonthlyTransfer(),
	}, nil
}

// SwapIPv4 asks the driver to exchange the public IPv4 addresses of a and b (cloud.unsupported when
// it cannot; Features says whether the instances must be stopped first).
func (c *Client) SwapIPv4(ctx context.Context, a, b string) error {
	_, err := c.rpc.SwapIPv4(ctx, &cloudpb.SwapIPv4Request{A: a, B: b})
	return driver.FromStatus(err)
}

func (c *Client) SetReverseDNS(ctx context.Context, instanceID string, ip netip.Addr, hostname string) error {
	_, err := c.rpc.SetReverseDNS(ctx, &cloudpb.SetReverseDNSRequest{InstanceId: instanceID, Ip: ip.String(), Hostname: hostname})
	return driver.FromStatus(err)
}

func (c *Client) MonthlyTransfer(ctx context.Context, instanceID string) (Transfer, error) {
	resp, err := c.rpc.MonthlyTransfer(ctx, &cloudpb.InstanceRef{Id: instanceID})
	if err != nil {
		return Transfer{}, driver.FromStatus(err)
	}
	return Transfer{UsedBytes: resp.GetUsedBytes(), AllowanceBytes: resp.GetAllowanceBytes()}, nil
}

var (
	_ Driver           = (*Client)(nil)
	_ ReverseDNSSetter = (*Client)(nil)
	_ TransferReporter = (*Client)(nil)
)
