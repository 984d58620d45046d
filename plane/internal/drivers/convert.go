package drivers

import (
	"net/netip"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// RecordsFromAPI turns API records into the contract's, refusing a TTL outside 0..dns.MaxTTL.
func RecordsFromAPI(in []api.Record) ([]dns.Record, error) {
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

// RecordsToAPI turns contract records into API records (never nil, so JSON shows []).
func RecordsToAPI(in []dns.Record) []api.Record {
	out := make([]api.Record, 0, len(in))
	for _, r := range in {
		out = append(out, api.Record{ID: r.ID, Type: r.Type, Name: r.Name, Value: r.Value, TTL: int64(r.TTL / time.Second), Priority: r.Priority})
	}
	return out
}

// ReportToAPI turns a reconcile result into its answer.
func ReportToAPI(account string, dryRun bool, r ReconcileResult) api.ReconcileReport {
	out := api.ReconcileReport{Account: account, Zone: r.Zone, DryRun: dryRun, Created: RecordsToAPI(r.Created),
		Present: RecordsToAPI(r.Present), Conflicts: []api.Conflict{}}
	for _, c := range r.Conflicts {
		out.Conflicts = append(out.Conflicts, api.Conflict{Record: RecordsToAPI([]dns.Record{c.Want})[0], Existing: RecordsToAPI(c.Existing), Reason: c.Reason})
	}
	return out
}

// ZonesToAPI turns zones into their answer.
func ZonesToAPI(in []dns.Zone) []api.Zone {
	out := make([]api.Zone, 0, len(in))
	for _, z := range in {
		out = append(out, api.Zone{Name: z.Name})
	}
	return out
}

// RegionsToAPI turns regions into their answer.
func RegionsToAPI(in []cloud.Region) []api.Region {
	out := make([]api.Region, 0, len(in))
	for _, r := range in {
		out = append(out, api.Region{ID: r.ID, Label: r.Label, Country: r.Country})
	}
	return out
}

// TypesToAPI turns instance types into their answer.
func TypesToAPI(in []cloud.InstanceType) []api.InstanceType {
	out := make([]api.InstanceType, 0, len(in))
	for _, t := range in {
		out = append(out, api.InstanceType{ID: t.ID, Label: t.Label, VCPUs: t.VCPUs, MemoryMiB: t.MemoryMiB, DiskGiB: t.DiskGiB})
	}
	return out
}

// PageToAPI turns a page of instances into its answer.
func PageToAPI(p cloud.InstancePage) api.InstancePage {
	out := api.InstancePage{Instances: []api.Instance{}, NextPageToken: p.NextPageToken}
	for _, i := range p.Instances {
		out.Instances = append(out.Instances, InstanceToAPI(i))
	}
	return out
}

// InstanceToAPI turns an instance into its answer.
func InstanceToAPI(i cloud.Instance) api.Instance {
	return api.Instance{ID: i.ID, Label: i.Label, Region: i.Region, Type: i.Type, Image: i.Image,
		Status: string(i.Status), IPv4: addrs(i.IPv4), IPv6: addrs(i.IPv6), Tags: i.Tags, Created: i.Created}
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
