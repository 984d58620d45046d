package provision

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Decommissioned is what Decommission did: the provisioning (now cleaned_up) and the node's end.
type Decommissioned struct {
	Provisioning store.Provisioning
	Node         store.NodeEndResult
}

// Decommission undoes a provisioning whose node joined: it removes the A/AAAA records it added (only
// those, name, type and value all matching), deletes the instance it made (only one carrying its tag),
// disconnects the node and records the provisioning cleaned up. Records go first, so the name never
// points at an address the provider may hand to someone else; each step is safe to repeat, so a call
// that failed half-way is simply made again. An adopted machine carries no tag: it is refused, and
// deleted by a person with lexicon cloud delete --confirm.
func (e *Engine) Decommission(ctx context.Context, by, nodeRef string) (Decommissioned, error) {
	q := store.NodeGetParams{ID: nodeRef}
	if !strings.HasPrefix(nodeRef, "node_") {
		q = store.NodeGetParams{Name: nodeRef}
	}
	n, err := e.Store.NodeGet(ctx, q)
	if err != nil {
		return Decommissioned{}, err
	}
	pr, err := e.provisioningOf(ctx, n.ID)
	if err != nil {
		return Decommissioned{}, err
	}
	if pr.Tag == "" {
		return Decommissioned{}, errcode.New(errcode.UsageInvalid,
			"node %s was adopted, not provisioned: its instance %s carries no provisioning tag; delete it with lexicon cloud delete --account %s %s --confirm LABEL",
			n.Name, pr.InstanceID, pr.Account, pr.InstanceID).With(errcode.DetailID, pr.ID)
	}
	var steps []string
	if pr.DNSAccount != "" {
		recs := records(pr)
		if len(recs) > 0 {
			if e.DNS == nil {
				return Decommissioned{}, errcode.New(errcode.DriverUnavailable, "this plane has no DNS drivers: the records of %s cannot be removed", n.Name)
			}
			if err := e.DNS.RemoveRecords(ctx, by, pr.DNSAccount, pr.DNSZone, recs); err != nil {
				return Decommissioned{}, err
			}
			steps = append(steps, fmt.Sprintf("removed its records from %s", pr.DNSZone))
		}
	}
	if pr.InstanceID != "" {
		if err := e.Cloud.DeleteTagged(ctx, by, pr.Account, pr.InstanceID, pr.Tag); err != nil && !errcode.Has(err, errcode.CloudNotFound) {
			return Decommissioned{}, err
		}
		steps = append(steps, "deleted instance "+pr.InstanceID)
	}
	end, err := e.Store.NodeDisconnect(ctx, store.NodeEndParams{ID: n.ID, By: by, Now: e.Time()})
	if err != nil && !errcode.Has(err, errcode.NodeNotActive) {
		return Decommissioned{}, err
	}
	steps = append(steps, "disconnected node "+n.ID)
	if _, err := e.update(ctx, pr, store.ProvisioningUpdateParams{To: store.ProvCleanedUp, Cleanup: store.CleanupDeleted,
		Detail: "decommissioned by " + by + ": " + strings.Join(steps, ", ")}); err != nil {
		return Decommissioned{}, err
	}
	e.Logger().Info("node decommissioned", "provisioning", pr.ID, "node", n.ID, "instance", pr.InstanceID, "by", by)
	pr, err = e.Store.ProvisioningGet(ctx, store.ProvisioningGetParams{ID: pr.ID})
	return Decommissioned{Provisioning: pr, Node: end}, err
}

// provisioningOf is the joined provisioning of a node (provision.not_found when the plane did not
// provision or adopt it).
func (e *Engine) provisioningOf(ctx context.Context, nodeID string) (store.Provisioning, error) {
	list, err := e.Store.ProvisioningList(ctx, store.ProvisioningListParams{State: store.ProvJoined, Limit: store.MaxListLimit})
	if err != nil {
		return store.Provisioning{}, err
	}
	for _, pr := range list {
		if pr.NodeID == nodeID {
			return pr, nil
		}
	}
	return store.Provisioning{}, errcode.New(errcode.ProvisionNotFound, "node %s was not provisioned or adopted by this plane (or is already decommissioned)", nodeID).
		With(errcode.DetailNodeID, nodeID)
}

// records are the A/AAAA records the provisioning added for its node (addDNS's).
func records(pr store.Provisioning) []dns.Record {
	var out []dns.Record
	for _, s := range pr.Addresses {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.IsGlobalUnicast() && !a.IsPrivate() {
			continue
		}
		typ := "A"
		if !a.Unmap().Is4() {
			typ = "AAAA"
		}
		out = append(out, dns.Record{Type: typ, Name: pr.Name, Value: a.Unmap().String()})
	}
	return out
}
