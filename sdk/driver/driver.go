// Package driver is the base contract every Lexicon driver implements, whatever its kind: who it is,
// which account settings it takes, and how it receives them with the account's credential.
//
// A driver is a separate executable that the plane runs as a hashicorp/go-plugin subprocess and talks
// to over gRPC. An author implements one contract (sdk/driver/cloud or sdk/driver/dns), which embeds
// Base, and hands the implementation to that contract's Serve from main:
//
//	func main() { dns.Serve(&myDriver{}) }
//
// The contract packages share one file split, after Nomad's plugins: driver.go (the contract),
// plugin.go (go-plugin glue and Serve), client.go (host-side proxy), server.go (plugin-side adapter),
// proto/ (generated), testing.go (a mock) and versions.go (API versions). sdk/driver/drivertest is
// the conformance suite every driver runs from its own tests.
package driver

import (
	"context"
	"encoding/json"
)

// Kind is the contract a driver implements.
type Kind string

const (
	KindCloud Kind = "cloud"
	KindDNS   Kind = "dns"
)

// Info says who a driver is. Name is the provider ("linode", "rfc2136"), Version the driver's own
// semver, and APIVersions the contract versions it implements: Serve offers only these to the host,
// which picks the newest it shares.
type Info struct {
	Kind        Kind
	Name        string
	Version     string
	APIVersions []int
}

// Config is what an account gives a driver: Settings is a JSON object that satisfies the driver's
// ConfigSchema, Credential the account's secret (API token, TSIG key), kept apart so that nothing
// prints it by accident.
type Config struct {
	Settings   json.RawMessage
	Credential Secret
}

// Base is the three-method contract every driver implements, as in Nomad's plugins/base.
type Base interface {
	// Info says who the driver is. It is called before SetConfig and must not need one.
	Info(ctx context.Context) (Info, error)
	// ConfigSchema returns the JSON Schema 2020-12 of the account settings (a closed object). The host
	// checks settings against it (sdk/driver/configschema) before SetConfig sees them.
	ConfigSchema(ctx context.Context) (json.RawMessage, error)
	// SetConfig gives the driver its account. A driver that refuses a config (driver.config_invalid)
	// keeps the one it had. It must never log the credential.
	SetConfig(ctx context.Context, cfg Config) error
}
