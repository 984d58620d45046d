package provision

import (
	"context"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// Cloud is what provisioning asks of a cloud account. Every call names who asks (actor), for the
// drivers' audit log. In production it is plane/internal/drivers' adapter over the driver manager; the
// tests use a fake.
type Cloud interface {
	// Regions lists the account's regions (checked before anything is created).
	Regions(ctx context.Context, actor, account string) ([]cloud.Region, error)
	// InstanceTypes lists a region's instance types (checked before anything is created).
	InstanceTypes(ctx context.Context, actor, account, region string) ([]cloud.InstanceType, error)
	// Create makes an instance.
	Create(ctx context.Context, actor, account string, req cloud.CreateRequest) (cloud.Instance, error)
	// Get returns an instance of the account as the provider reports it (cloud.not_found when the
	// account has no such instance): its status and its addresses.
	Get(ctx context.Context, actor, account, id string) (cloud.Instance, error)
	// FindTagged returns the account's instance carrying tag, if any: how a provisioning whose plane
	// died during the create call finds what it made.
	FindTagged(ctx context.Context, actor, account, tag string) (cloud.Instance, bool, error)
	// DeleteTagged deletes an instance only if it carries tag: automation deletes only what it made.
	DeleteTagged(ctx context.Context, actor, account, id, tag string) error
	// Transfer is the instance's transfer this month (cloud.unsupported when the driver does not
	// report it).
	Transfer(ctx context.Context, actor, account, id string) (cloud.Transfer, error)
}

// DNS adds records to a zone additively (never changing or removing one a person put there), and
// removes the ones a provisioning added when its node is decommissioned.
type DNS interface {
	AddRecords(ctx context.Context, actor, account, zone string, want []dns.Record) error
	// RemoveRecords deletes the zone's records matching recs in name, type and value: never another
	// record of the same name.
	RemoveRecords(ctx context.Context, actor, account, zone string, recs []dns.Record) error
}
