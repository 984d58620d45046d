package drivers

import (
	"context"
	"fmt"
	"slices"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// Plan is what an additive reconcile will do to a zone.
type Plan struct {
	Create    []dns.Record
	Present   []dns.Record
	Conflicts []PlanConflict
}

// PlanConflict is a wanted record left uncreated because of records the zone holds.
type PlanConflict struct {
	Want     dns.Record
	Existing []dns.Record
	Reason   string
}

// PlanAdditive compares the records a zone holds with the records wanted (both canonical, see
// dns.Record.Normalize) and plans an additive change: it never changes or removes a record of the zone.
//
//   - A wanted record the zone holds (same name, type, value and priority; the TTL is not compared) is
//     present.
//   - A wanted record whose name and type the zone holds only with values that are wanted too (or not
//     at all) is created: nothing a person put there is displaced.
//   - A wanted record whose name and type the zone holds with a value that is not wanted is a
//     conflict: adding beside it would change what that name answers (a second A record turns one
//     address into round-robin). The existing records are named and left alone.
//   - A CNAME cannot share its name with any other record, so a wanted CNAME where the zone has other
//     records at that name, or a wanted record where the zone has a CNAME that is not wanted, is a
//     conflict too.
//
// Duplicate wanted records count once.
func PlanAdditive(existing, want []dns.Record) Plan {
	type key struct{ name, typ string }
	zone := map[key][]dns.Record{}
	byName := map[string][]dns.Record{}
	for _, r := range existing {
		zone[key{r.Name, r.Type}] = append(zone[key{r.Name, r.Type}], r)
		byName[r.Name] = append(byName[r.Name], r)
	}
	wanted := map[key][]dns.Record{}
	var unique []dns.Record
	for _, w := range want {
		k := key{w.Name, w.Type}
		if slices.ContainsFunc(wanted[k], func(x dns.Record) bool { return dns.Same(x, w) }) {
			continue
		}
		wanted[k] = append(wanted[k], w)
		unique = append(unique, w)
	}
	isWanted := func(r dns.Record) bool {
		return slices.ContainsFunc(wanted[key{r.Name, r.Type}], func(w dns.Record) bool { return dns.Same(w, r) })
	}
	var p Plan
	for _, w := range unique {
		k := key{w.Name, w.Type}
		if slices.ContainsFunc(zone[k], func(r dns.Record) bool { return dns.Same(r, w) }) {
			p.Present = append(p.Present, w)
			continue
		}
		var others []dns.Record
		for _, r := range zone[k] {
			if !isWanted(r) {
				others = append(others, r)
			}
		}
		if len(others) > 0 {
			p.Conflicts = append(p.Conflicts, PlanConflict{Want: w, Existing: others,
				Reason: fmt.Sprintf("the zone holds other %s records at %s; an additive reconcile does not add beside or replace them", w.Type, w.Name)})
			continue
		}
		var blocking []dns.Record
		for _, r := range byName[w.Name] {
			if (w.Type == "CNAME") != (r.Type == "CNAME") && !isWanted(r) {
				blocking = append(blocking, r)
			}
		}
		if len(blocking) > 0 {
			p.Conflicts = append(p.Conflicts, PlanConflict{Want: w, Existing: blocking,
				Reason: fmt.Sprintf("a CNAME cannot share the name %s with other records", w.Name)})
			continue
		}
		p.Create = append(p.Create, w)
	}
	return p
}

// ReconcileResult is what DNSReconcile did.
type ReconcileResult struct {
	Zone string
	Plan
	// Created is what the driver reports it added (in a dry run, what it would add).
	Created []dns.Record
}

// DNSReconcile makes zone hold the wanted records additively (see PlanAdditive): it reads the zone,
// appends only the records the plan creates, and reports the conflicts it left alone. A dry run reads
// and plans only. Bad records are refused with dns.invalid (details.index) before any driver call.
func (m *Manager) DNSReconcile(ctx context.Context, actor, account, zone string, want []dns.Record, dryRun bool) (ReconcileResult, error) {
	z, err := dns.NormalizeZone(zone)
	if err != nil {
		return ReconcileResult{}, err
	}
	want, err = dns.NormalizeAll(want)
	if err != nil {
		return ReconcileResult{}, err
	}
	existing, err := m.DNSRecords(ctx, actor, account, z)
	if err != nil {
		return ReconcileResult{}, err
	}
	res := ReconcileResult{Zone: z, Plan: PlanAdditive(existing, want)}
	if dryRun || len(res.Create) == 0 {
		res.Created = res.Create
		return res, nil
	}
	added, err := dnsCall(m, ctx, actor, account, store.OpDNSAppendRecords, z, func(ctx context.Context, n *goplugin.DNS) ([]dns.Record, error) {
		return n.AppendRecords(ctx, z, res.Create)
	})
	if err != nil {
		return ReconcileResult{}, err
	}
	res.Created = added
	// A planned record the driver did not add was there by the time it appended (the contract: append
	// never duplicates); it is present.
	for _, r := range res.Create {
		if !slices.ContainsFunc(added, func(a dns.Record) bool { return dns.Same(a, r) }) {
			res.Present = append(res.Present, r)
		}
	}
	return res, nil
}
