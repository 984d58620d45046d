package drivers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ProvisionCloud is provisioning's view of the cloud drivers: every call goes through the manager,
// audited under the caller's actor like any other driver call.
type ProvisionCloud struct{ M *Manager }

func (p ProvisionCloud) Regions(ctx context.Context, actor, account string) ([]cloud.Region, error) {
	return p.M.CloudRegions(ctx, actor, account)
}

func (p ProvisionCloud) InstanceTypes(ctx context.Context, actor, account, region string) ([]cloud.InstanceType, error) {
	return p.M.CloudInstanceTypes(ctx, actor, account, region)
}

func (p ProvisionCloud) Create(ctx context.Context, actor, account string, req cloud.CreateRequest) (cloud.Instance, error) {
	return p.M.CloudCreate(ctx, actor, account, req)
}

func (p ProvisionCloud) Get(ctx context.Context, actor, account, id string) (cloud.Instance, error) {
	return p.M.CloudGet(ctx, actor, account, id)
}

// maxFindPages bounds the pages FindTagged reads: an account of 100,000 instances is not searched.
const maxFindPages = 200

func (p ProvisionCloud) FindTagged(ctx context.Context, actor, account, tag string) (cloud.Instance, bool, error) {
	req := cloud.ListRequest{PageSize: cloud.MaxPageSize}
	for range maxFindPages {
		page, err := p.M.CloudInstances(ctx, actor, account, req)
		if err != nil {
			return cloud.Instance{}, false, err
		}
		for _, inst := range page.Instances {
			if slices.Contains(inst.Tags, tag) {
				return inst, true, nil
			}
		}
		if page.NextPageToken == "" {
			return cloud.Instance{}, false, nil
		}
		req.PageToken = page.NextPageToken
	}
	return cloud.Instance{}, false, errcode.New(errcode.CloudUnavailable, "account %s has more instances than the search for %s reads", account, tag)
}

// DeleteTagged deletes the instance only if the provider, asked just before, reports it carrying tag,
// on a test account too: provisioning deletes only what it made. The delete itself is the manager's
// automation delete, behind the safety catch.
func (p ProvisionCloud) DeleteTagged(ctx context.Context, actor, account, id, tag string) error {
	inst, err := p.Get(ctx, actor, account, id)
	if err != nil {
		return err
	}
	if !slices.Contains(inst.Tags, tag) {
		return errcode.New(errcode.CloudConflict, "instance %s does not carry the tag %s: automation deletes only what it made", id, tag).
			With(errcode.DetailID, id)
	}
	return p.M.CloudDeleteTagged(ctx, actor, account, id, tag)
}

func (p ProvisionCloud) Transfer(ctx context.Context, actor, account, id string) (cloud.Transfer, error) {
	return p.M.CloudTransfer(ctx, actor, account, id)
}

// ProvisionDNS adds a provisioned node's records through the additive reconciler.
type ProvisionDNS struct{ M *Manager }

func (p ProvisionDNS) AddRecords(ctx context.Context, actor, account, zone string, want []dns.Record) error {
	res, err := p.M.DNSReconcile(ctx, actor, account, zone, want, false)
	if err != nil {
		return err
	}
	if len(res.Conflicts) > 0 {
		var why []string
		for _, c := range res.Conflicts {
			why = append(why, fmt.Sprintf("%s %s: %s", c.Want.Type, c.Want.Name, c.Reason))
		}
		return errcode.New(errcode.DNSConflict, "zone %s holds other records: %s", res.Zone, strings.Join(why, "; "))
	}
	return nil
}

// RemoveRecords deletes exactly recs (name, type and value): a decommissioned node's own records.
func (p ProvisionDNS) RemoveRecords(ctx context.Context, actor, account, zone string, recs []dns.Record) error {
	for _, r := range recs {
		if r.Type == "" || r.Value == "" {
			return errcode.New(errcode.DNSInvalid, "a record to remove names its type and value: %s %s", r.Type, r.Name)
		}
	}
	_, err := p.M.DNSDeleteRecords(ctx, actor, account, zone, recs)
	return err
}

var (
	_ provision.Cloud = ProvisionCloud{}
	_ provision.DNS   = ProvisionDNS{}
)
