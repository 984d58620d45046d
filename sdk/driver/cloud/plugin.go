package cloud

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	cloudpb "github.com/lexicon-fleet/lexicon/sdk/driver/cloud/proto"
)

// Serve runs d as a go-plugin driver process and returns only when the host ends it. Call it from main.
func Serve(d Driver) {
	served := &driver.Served{}
	driver.ServeVersions(d, driver.KindCloud, served, map[int]plugin.Plugin{
		APIVersion1: &Plugin{Impl: d, Served: served},
	})
}

// Plugin is the go-plugin glue of the cloud contract (gRPC only).
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the driver served (plugin side only).
	Impl Driver
	// Served is the plugin-side state shared with Serve's log scrubbing; nil makes a fresh one.
	Served *driver.Served
}

// GRPCServer serves Impl's base and cloud services on s.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	served := driver.RegisterBase(s, p.Impl, p.Served)
	cloudpb.RegisterCloudServer(s, &server{impl: p.Impl, served: served})
	return nil
}

// GRPCClient returns the host-side *Client on cc.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return NewClient(cc), nil
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)
