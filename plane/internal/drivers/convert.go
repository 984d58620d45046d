package drivers

import (
	"net/netip"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers/wire"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// RecordsFromWire turns wire records into the contract's, refusing a TTL outside 0..dns.MaxTTL.
func RecordsFromWire(in []wire.Record) ([]dns.Record, error) {
	out := make([]dns.Record, 0, len(in))
	for i, r := range in {
		if r.TTL < 0 || time.Duration(r.TTL)*time.Second > dns.MaxTTL {
			return nil, errcode.New(errcode.DNSInvalid, "ttl: %d is outside 0..%d seconds", r.TTL, int64(dns.MaxTTL/time.Second)).
				With(errcode.DetailField, "ttl").With(errcode.DetailIndex, i)
		}
		out = append(out, dns.Record{ID: r.ID, Type: r.Type, Name: r.Name, Value: r.Value, TTL: time.Duration(r.TTL) * time.Second, Priority: r.Priority})
	}
	return out, nil
}

// RecordsToWire turns contract records into wire records (never nil, so JSON shows []).
func RecordsToWire(in []dns.Record) []wire.Record {
	out := make([]wire.Record, 0, len(in))
	for _, r := range in {
		out = append(out, wire.Record{ID: r.ID, Type: r.Type, Name: r.Name, Value: r.Value, TTL: int64(r.TTL / time.Second), Priority: r.Priority})
	}
	return out
}

// ReportToWire turns a reconcile result into its answer.
func ReportToWire(account string, dryRun bool, r ReconcileResult) wire.ReconcileReport {
	out := wire.ReconcileReport{Account: account, Zone: r.Zone, DryRun: dryRun, Created: RecordsToWire(r.Created),
		Present: RecordsToWire(r.Present), Conflicts: []wire.Conflict{}}
	for _, c := range r.Conflicts {
		out.Conflicts = append(out.Conflicts, wire.Conflict{Record: RecordsToWire([]dns.Record{c.Want})[0], Existing: RecordsToWire(c.Existing), Reason: c.Reason})
	}
	return out
}

// ZonesToWire turns zones into their answer.
func ZonesToWire(in []dns.Zone) []wire.Zone {
	out := make([]wire.Zone, 0, len(in))
	for _, z := range in {
		out = append(out, wire.Zone{Name: z.Name})
	}
	return out
}

// RegionsToWire turns regions into their answer.
func RegionsToWire(in []cloud.Region) []wire.Region {
	out := make([]wire.Region, 0, len(in))
	for _, r := range in {
		out = append(out, wire.Region{ID: r.ID, Label: r.Label, Country: r.Country})
	}
	return out
}

// TypesToWire turns instance types into their answer.
func TypesToWire(in []cloud.InstanceType) []wire.InstanceType {
	out := make([]wire.InstanceType, 0, len(in))
	for _, t := range in {
		out = append(out, wire.InstanceType{ID: t.ID, Label: t.Label, VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB, DiskGiB: t.DiskGiB})
	}
	return out
}

// PageToWire turns a page of instances into its answer.
func PageToWire(p cloud.InstancePage) wire.InstancePage {
	out := wire.InstancePage{Instances: []wire.Instance{}, NextPageToken: p.NextPageToken}
	for _, i := range p.Instances {
		out.Instances = append(out.Instances, wire.Instance{ID: i.ID, Label: i.Label, Region: i.Region, Type: i.Type, Image: i.Image,
			Status: string(i.Status), IPv4: addrs(i.IPv4), IPv6: addrs(i.IPv6), Tags: i.Tags, Created: i.Created})
	}
	return out
}

func addrs(in []netip.Addr) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, a := range in {
		out[i] = a.String()
	}
	return out
}
