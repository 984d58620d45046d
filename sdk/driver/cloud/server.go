package cloud

import (
	"context"
	"net/netip"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	cloudpb "github.com/lexicon-fleet/lexicon/sdk/driver/cloud/proto"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// server adapts a Driver to the generated gRPC service, on the plugin side. Every provider call waits
// for SetConfig (driver.not_configured before it), and every error leaves with its code and with the
// account's secrets scrubbed.
type server struct {
	cloudpb.UnimplementedCloudServer
	impl   Driver
	served *driver.Served
}

func (s *server) Regions(ctx context.Context, _ *cloudpb.RegionsRequest) (*cloudpb.RegionsResponse, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	regions, err := s.impl.Regions(ctx)
	if err != nil {
		return nil, s.served.Status(err)
	}
	resp := &cloudpb.RegionsResponse{}
	for _, r := range regions {
		resp.Regions = append(resp.Regions, &cloudpb.Region{Id: r.ID, Label: r.Label, Country: r.Country})
	}
	return resp, nil
}

func (s *server) InstanceTypes(ctx context.Context, req *cloudpb.InstanceTypesRequest) (*cloudpb.InstanceTypesResponse, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	types, err := s.impl.InstanceTypes(ctx, req.GetRegion())
	if err != nil {
		return nil, s.served.Status(err)
	}
	resp := &cloudpb.InstanceTypesResponse{}
	for _, t := range types {
		resp.Types = append(resp.Types, &cloudpb.InstanceType{
			Id: t.ID, Label: t.Label, Vcpus: int32(t.VCPUs), MemoryMib: t.MemoryMiB, DiskGib: t.DiskGiB,
		})
	}
	return resp, nil
}

func (s *server) CreateInstance(ctx context.Context, req *cloudpb.CreateInstanceRequest) (*cloudpb.Instance, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	in, err := s.impl.CreateInstance(ctx, createFromPB(req))
	if err != nil {
		return nil, s.served.Status(err)
	}
	return instanceToPB(in), nil
}

func (s *server) GetInstance(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Instance, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	in, err := s.impl.GetInstance(ctx, req.GetId())
	if err != nil {
		return nil, s.served.Status(err)
	}
	return instanceToPB(in), nil
}

func (s *server) ListInstances(ctx context.Context, req *cloudpb.ListInstancesRequest) (*cloudpb.ListInstancesResponse, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	page, err := s.impl.ListInstances(ctx, ListRequest{PageSize: int(req.GetPageSize()), PageToken: req.GetPageToken()})
	if err != nil {
		return nil, s.served.Status(err)
	}
	resp := &cloudpb.ListInstancesResponse{NextPageToken: page.NextPageToken}
	for _, in := range page.Instances {
		resp.Instances = append(resp.Instances, instanceToPB(in))
	}
	return resp, nil
}

// call runs one provider call that answers nothing but an error.
func (s *server) call(f func() error) (*cloudpb.Empty, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	if err := f(); err != nil {
		return nil, s.served.Status(err)
	}
	return &cloudpb.Empty{}, nil
}

func (s *server) DeleteInstance(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Empty, error) {
	return s.call(func() error { return s.impl.DeleteInstance(ctx, req.GetId()) })
}

func (s *server) PowerOn(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Empty, error) {
	return s.call(func() error { return s.impl.PowerOn(ctx, req.GetId()) })
}

func (s *server) PowerOff(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Empty, error) {
	return s.call(func() error { return s.impl.PowerOff(ctx, req.GetId()) })
}

func (s *server) Reboot(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Empty, error) {
	return s.call(func() error { return s.impl.Reboot(ctx, req.GetId()) })
}

func (s *server) Account(ctx context.Context, _ *cloudpb.AccountRequest) (*cloudpb.AccountResponse, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	a, err := s.impl.Account(ctx)
	if err != nil {
		return nil, s.served.Status(err)
	}
	return &cloudpb.AccountResponse{Name: a.Name, Company: a.Company, Email: a.Email}, nil
}

// Features needs no account: it only says which interfaces the implementation has.
func (s *server) Features(context.Context, *cloudpb.FeaturesRequest) (*cloudpb.FeaturesResponse, error) {
	f := FeaturesOf(s.impl)
	return &cloudpb.FeaturesResponse{
		Ipv4Swap: f.IPv4Swap, Ipv4SwapRequiresStopped: f.IPv4SwapRequiresStopped,
		ReverseDns: f.ReverseDNS, MonthlyTransfer: f.MonthlyTransfer,
	}, nil
}

func (s *server) SwapIPv4(ctx context.Context, req *cloudpb.SwapIPv4Request) (*cloudpb.Empty, error) {
	return s.call(func() error {
		sw, ok := s.impl.(IPv4Swapper)
		if !ok {
			return Unsupported("IPv4 swap")
		}
		return sw.SwapIPv4(ctx, req.GetA(), req.GetB())
	})
}

func (s *server) SetReverseDNS(ctx context.Context, req *cloudpb.SetReverseDNSRequest) (*cloudpb.Empty, error) {
	return s.call(func() error {
		r, ok := s.impl.(ReverseDNSSetter)
		if !ok {
			return Unsupported("reverse DNS")
		}
		ip, err := netip.ParseAddr(req.GetIp())
		if err != nil {
			return errcode.New(errcode.CloudInvalid, "ip: %q is not an IP address", req.GetIp()).With(errcode.DetailField, "ip")
		}
		return r.SetReverseDNS(ctx, req.GetInstanceId(), ip, req.GetHostname())
	})
}

func (s *server) MonthlyTransfer(ctx context.Context, req *cloudpb.InstanceRef) (*cloudpb.Transfer, error) {
	if err := s.served.Ready(); err != nil {
		return nil, s.served.Status(err)
	}
	t, ok := s.impl.(TransferReporter)
	if !ok {
		return nil, s.served.Status(Unsupported("monthly transfer"))
	}
	tr, err := t.MonthlyTransfer(ctx, req.GetId())
	if err != nil {
		return nil, s.served.Status(err)
	}
	return &cloudpb.Transfer{UsedBytes: tr.UsedBytes, AllowanceBytes: tr.AllowanceBytes}, nil
}

// Unsupported is the cloud.unsupported error for a feature this driver or provider lacks.
func Unsupported(feature string) error {
	return errcode.New(errcode.CloudUnsupported, "this driver does not support %s", feature).With(errcode.DetailFeature, feature)
}

var _ cloudpb.CloudServer = (*server)(nil)
