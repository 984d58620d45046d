// Package dns is the contract of a DNS driver, shaped like libdns (the interface Caddy's DNS providers
// implement): list zones, and get, append, set and delete records.
//
//	type cloudflare struct{ ... }      // implements dns.Driver
//	func main() { dns.Serve(&cloudflare{}) }
//
// Records travel in one canonical form (Record.Normalize) whatever the provider stores, so that a
// record read back compares equal to the one written: type in upper case, names relative to the zone
// ("@" for the apex), target names absolute with a trailing dot, TXT values as the plain text (no
// quotes, any length: drivers split it into 255-byte strings on the wire and join them on read).
// Every error carries a dns.* code (errcode.DNS*), or a driver.* code for configuration faults.
package dns

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
)

// Driver is what every DNS driver implements. zone is a zone name with or without the trailing dot;
// a zone the account does not serve is dns.not_found, a malformed record dns.invalid naming the field.
type Driver interface {
	driver.Base

	// ListZones lists the zones the account can change.
	ListZones(ctx context.Context) ([]Zone, error)
	// GetRecords returns the records of zone in canonical form. It may leave out the apex SOA and NS
	// records the provider manages itself.
	GetRecords(ctx context.Context, zone string) ([]Record, error)
	// AppendRecords adds records and never changes or removes one that is there. A record already
	// present (same name, type, value and priority) is left as it is and not duplicated. It returns the
	// records it added.
	AppendRecords(ctx context.Context, zone string, recs []Record) ([]Record, error)
	// SetRecords makes, for each name and type among recs, the zone's records of that name and type
	// exactly recs' ones; records of any other name or type are untouched. It returns the records set.
	SetRecords(ctx context.Context, zone string, recs []Record) ([]Record, error)
	// DeleteRecords deletes the zone's records matching recs: name always, type and value when given
	// (empty matches any). Deleting what is not there succeeds. It returns the records it deleted.
	DeleteRecords(ctx context.Context, zone string, recs []Record) ([]Record, error)
}

// Zone is a DNS zone the account serves.
type Zone struct {
	Name string // canonical: lower case, fully qualified, trailing dot ("example.com.")
}

// Record is one resource record.
type Record struct {
	// ID is the provider's id for the record, when it has one; drivers ignore it on input.
	ID string
	// Type is the record type in upper case: A, AAAA, CNAME, MX, NS, PTR, SRV, TXT or CAA.
	Type string
	// Name is relative to the zone: "www", "_acme-challenge.www", "@" for the apex.
	Name string
	// Value is the record data. A/AAAA: the address. CNAME/NS/PTR/MX: the target name. TXT: the text
	// itself, unquoted. SRV: "weight port target". CAA: `flags tag "value"`.
	Value string
	// TTL is the time to live; 0 means the provider's default. Providers store whole seconds.
	TTL time.Duration
	// Priority is the MX preference or the SRV priority; 0 for other types.
	Priority uint16
}
