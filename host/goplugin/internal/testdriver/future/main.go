// Command future is a DNS driver from the future for host/goplugin's tests: it serves only contract
// version 99, which this host does not speak, so version negotiation must refuse it.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  driver.Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{99: {dns.PluginName: &dns.Plugin{Impl: &dns.Mock{}}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
