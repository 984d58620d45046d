package dns

import (
	"context"

	"google.golang.org/grpc"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	dnspb "github.com/lexicon-fleet/lexicon/sdk/driver/dns/proto"
)

// Client is the host side of a DNS driver over a gRPC connection. Errors come back with the driver's
// codes; a broken connection is a driver.* code wrapping a driver.TransportError.
type Client struct {
	*driver.BaseClient
	rpc dnspb.DNSClient
}

// NewClient returns a Client on cc.
func NewClient(cc grpc.ClientConnInterface) *Client {
	return &Client{BaseClient: driver.NewBaseClient(cc), rpc: dnspb.NewDNSClient(cc)}
}

func (c *Client) ListZones(ctx context.Context) ([]Zone, error) {
	resp, err := c.rpc.ListZones(ctx, &dnspb.ListZonesRequest{})
	if err != nil {
		return nil, driver.FromStatus(err)
	}
	var out []Zone
	for _, z := range resp.GetZones() {
		out = append(out, Zone{Name: z.GetName()})
	}
	return out, nil
}

func (c *Client) GetRecords(ctx context.Context, zone string) ([]Record, error) {
	resp, err := c.rpc.GetRecords(ctx, &dnspb.ZoneRequest{Zone: zone})
	if err != nil {
		return nil, driver.FromStatus(err)
	}
	return recordsFromPB(resp.GetRecords()), nil
}

func (c *Client) AppendRecords(ctx context.Context, zone string, recs []Record) ([]Record, error) {
	return c.change(ctx, c.rpc.AppendRecords, zone, recs)
}

func (c *Client) SetRecords(ctx context.Context, zone string, recs []Record) ([]Record, error) {
	return c.change(ctx, c.rpc.SetRecords, zone, recs)
}

func (c *Client) DeleteRecords(ctx context.Context, zone string, recs []Record) ([]Record, error) {
	return c.change(ctx, c.rpc.DeleteRecords, zone, recs)
}

type changeRPC func(context.Context, *dnspb.RecordsRequest, ...grpc.CallOption) (*dnspb.Records, error)

func (c *Client) change(ctx context.Context, rpc changeRPC, zone string, recs []Record) ([]Record, error) {
	resp, err := rpc(ctx, &dnspb.RecordsRequest{Zone: zone, Records: recordsToPB(recs)})
	if err != nil {
		return nil, driver.FromStatus(err)
	}
	return recordsFromPB(resp.GetRecords()), nil
}

var _ Driver = (*Client)(nil)
