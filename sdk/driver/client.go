package driver

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc"

	driverpb "github.com/lexicon-fleet/lexicon/sdk/driver/proto"
)

// BaseClient is the host side of the base contract over a gRPC connection; the contract clients embed
// it. Errors come back with the codes the driver gave them (FromStatus).
type BaseClient struct {
	rpc driverpb.BaseClient
}

// NewBaseClient returns a BaseClient on cc.
func NewBaseClient(cc grpc.ClientConnInterface) *BaseClient {
	return &BaseClient{rpc: driverpb.NewBaseClient(cc)}
}

func (c *BaseClient) Info(ctx context.Context) (Info, error) {
	resp, err := c.rpc.Info(ctx, &driverpb.InfoRequest{})
	if err != nil {
		return Info{}, FromStatus(err)
	}
	info := Info{Kind: Kind(resp.GetKind()), Name: resp.GetName(), Version: resp.GetVersion()}
	for _, v := range resp.GetApiVersions() {
		info.APIVersions = append(info.APIVersions, int(v))
	}
	return info, nil
}

func (c *BaseClient) ConfigSchema(ctx context.Context) (json.RawMessage, error) {
	resp, err := c.rpc.ConfigSchema(ctx, &driverpb.ConfigSchemaRequest{})
	if err != nil {
		return nil, FromStatus(err)
	}
	return json.RawMessage(resp.GetSchema()), nil
}

func (c *BaseClient) SetConfig(ctx context.Context, cfg Config) error {
	_, err := c.rpc.SetConfig(ctx, &driverpb.SetConfigRequest{Settings: cfg.Settings, Credential: cfg.Credential.Reveal()})
	return FromStatus(err)
}

var _ Base = (*BaseClient)(nil)
