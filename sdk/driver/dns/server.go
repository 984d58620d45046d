package dns

import (
	"context"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	dnspb "github.com/lexicon-fleet/lexicon/sdk/driver/dns/proto"
)

// server adapts a Driver to the generated gRPC service, on the plugin side. Every provider call waits
// for SetConfig (driver.not_configured before it), and every error leaves with its code and with the
// account's secrets scrubbed.
type server struct {
	dnspb.UnimplementedDNSServer
	impl   Driver
	served *driver.Served
}

func (s *server) ListZones(ctx context.Context, _ *dnspb.ListZonesRequest) (*dnspb.ListZonesResponse, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	zones, err := s.impl.ListZones(ctx)
	if err != nil {
		return nil, s.served.Status(err)
	}
	resp := &dnspb.ListZonesResponse{}
	for _, z := range zones {
		resp.Zones = append(resp.Zones, &dnspb.Zone{Name: z.Name})
	}
	return resp, nil
}

func (s *server) GetRecords(ctx context.Context, req *dnspb.ZoneRequest) (*dnspb.Records, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	recs, err := s.impl.GetRecords(ctx, req.GetZone())
	if err != nil {
		return nil, s.served.Status(err)
	}
	return &dnspb.Records{Records: recordsToPB(recs)}, nil
}

// change runs one of the three record-changing calls.
func (s *server) change(ctx context.Context, req *dnspb.RecordsRequest, f func(context.Context, string, []Record) ([]Record, error)) (*dnspb.Records, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	recs, err := f(ctx, req.GetZone(), recordsFromPB(req.GetRecords()))
	if err != nil {
		return nil, s.served.Status(err)
	}
	return &dnspb.Records{Records: recordsToPB(recs)}, nil
}

func (s *server) AppendRecords(ctx context.Context, req *dnspb.RecordsRequest) (*dnspb.Records, error) {
	return s.change(ctx, req, s.impl.AppendRecords)
}

func (s *server) SetRecords(ctx context.Context, req *dnspb.RecordsRequest) (*dnspb.Records, error) {
	return s.change(ctx, req, s.impl.SetRecords)
}

func (s *server) DeleteRecords(ctx context.Context, req *dnspb.RecordsRequest) (*dnspb.Records, error) {
	return s.change(ctx, req, s.impl.DeleteRecords)
}

var _ dnspb.DNSServer = (*server)(nil)
