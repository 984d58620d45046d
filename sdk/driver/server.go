package driver

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"

	driverpb "github.com/lexicon-fleet/lexicon/sdk/driver/proto"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Served is the plugin-side state one driver process shares between its base service and its
// contract's service: the secrets to scrub from what leaves the process, and whether the driver has
// been configured. The zero value is ready to use.
type Served struct {
	Scrubber   Scrubber
	configured atomic.Bool
}

// Ready returns driver.not_configured until SetConfig has succeeded once: a provider call before the
// account is known could only fail obscurely.
func (s *Served) Ready() error {
	if !s.configured.Load() {
		return errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet: call SetConfig first")
	}
	return nil
}

// Status converts a driver's error for the wire, scrubbing the secrets this process was given.
func (s *Served) Status(err error) error { return ToStatus(err, &s.Scrubber) }

// RegisterBase serves impl's base contract on g and returns the state the contract's service shares.
// served may be nil, in which case a fresh one is made.
func RegisterBase(g *grpc.Server, impl Base, served *Served) *Served {
	if served == nil {
		served = &Served{}
	}
	driverpb.RegisterBaseServer(g, &baseServer{impl: impl, served: served})
	return served
}

// baseServer adapts a Base to the generated gRPC service.
type baseServer struct {
	driverpb.UnimplementedBaseServer
	impl   Base
	served *Served
}

func (s *baseServer) Info(ctx context.Context, _ *driverpb.InfoRequest) (*driverpb.InfoResponse, error) {
	info, err := s.impl.Info(ctx)
	if err != nil {
		return nil, s.served.Status(err)
	}
	resp := &driverpb.InfoResponse{Kind: string(info.Kind), Name: info.Name, Version: info.Version}
	for _, v := range info.APIVersions {
		resp.ApiVersions = append(resp.ApiVersions, int32(v))
	}
	return resp, nil
}

func (s *baseServer) ConfigSchema(ctx context.Context, _ *driverpb.ConfigSchemaRequest) (*driverpb.ConfigSchemaResponse, error) {
	schema, err := s.impl.ConfigSchema(ctx)
	if err != nil {
		return nil, s.served.Status(err)
	}
	return &driverpb.ConfigSchemaResponse{Schema: schema}, nil
}

// SetConfig registers the credential for scrubbing before anything can echo it. (The host has checked
// the settings against the driver's schema; the driver decodes them strictly.)
func (s *baseServer) SetConfig(ctx context.Context, req *driverpb.SetConfigRequest) (*driverpb.SetConfigResponse, error) {
	cred := NewSecret(req.GetCredential())
	s.served.Scrubber.Add(cred)
	if err := s.impl.SetConfig(ctx, Config{Settings: req.GetSettings(), Credential: cred}); err != nil {
		return nil, s.served.Status(err)
	}
	s.served.configured.Store(true)
	return &driverpb.SetConfigResponse{}, nil
}

var _ driverpb.BaseServer = (*baseServer)(nil)
