package provision

import (
	"context"
	"crypto/rand"
	"net/netip"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Adopt links an instance that exists to a node that exists: the provider, asked now, must report for
// the instance an address the node reported (provision.address_mismatch otherwise). The record is
// joined and carries no tag, so automation never deletes the adopted machine. It holds the node's change
// lease meanwhile, so it never overlaps a rollout's step or an exclusive job on the node (lease.held
// while one runs).
func (e *Engine) Adopt(ctx context.Context, by, nodeID, account, instanceID string) (store.Provisioning, error) {
	if err := cloud.ValidID("instance_id", instanceID); err != nil {
		return store.Provisioning{}, err
	}
	q := store.NodeGetParams{ID: nodeID}
	if !strings.HasPrefix(nodeID, "node_") {
		q = store.NodeGetParams{Name: nodeID}
	}
	n, err := e.Store.NodeGet(ctx, q)
	if err != nil {
		return store.Provisioning{}, err
	}
	holder := "provision:adopt:" + rand.Text()
	if _, err := e.changes().Acquire(ctx, n.ID, holder, "adopting instance "+instanceID+" of "+account+" by "+by, NodeLease, e.Time()); err != nil {
		return store.Provisioning{}, err
	}
	defer func() {
		_ = e.changes().Release(context.WithoutCancel(ctx), n.ID, holder)
	}()
	inst, err := e.Cloud.Get(ctx, by, account, instanceID)
	if err != nil {
		return store.Provisioning{}, err
	}
	reported := map[netip.Addr]bool{}
	for _, s := range n.Addresses {
		if a, err := netip.ParseAddr(s); err == nil {
			reported[a.Unmap()] = true
		}
	}
	match := false
	for _, a := range append(append([]netip.Addr(nil), inst.IPv4...), inst.IPv6...) {
		match = match || reported[a.Unmap()]
	}
	if !match {
		return store.Provisioning{}, errcode.New(errcode.ProvisionAddressMismatch,
			"node %s reports %s; %s reports %s for instance %s: none in common", n.Name, strings.Join(n.Addresses, ", "),
			account, strings.Join(addrs(inst), ", "), instanceID).With(errcode.DetailID, instanceID)
	}
	pr, err := e.Store.ProvisioningAdopt(ctx, store.ProvisioningAdoptParams{Account: account, InstanceID: inst.ID, NodeID: n.ID,
		Addresses: addrs(inst), By: by, Now: e.Time()})
	if err != nil {
		return store.Provisioning{}, err
	}
	return pr, nil
}
