package provision

import (
	"context"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Request asks for one machine.
type Request struct {
	Name, Account, Region, Type, Image string
	Platform                           string // "": linux-amd64
	Labels                             map[string]string
	DNSAccount, DNSZone                string
}

// Provision checks a request and records it; the engine does the rest. Everything that can be checked
// is checked before the record is written, and nothing is created on a refusal: the name
// (provision.name_taken), the request's form (cloud.invalid, node.label_invalid, usage.invalid), the account
// (account.not_found, account.wrong_kind), the region and the type, asked of the provider
// (provision.unknown_region, provision.unknown_type). An image the provider does not have is refused
// by its create call; the provisioning then fails with that code and nothing is left.
func (e *Engine) Provision(ctx context.Context, by string, req Request) (store.Provisioning, error) {
	if err := checkName(req.Name); err != nil {
		return store.Provisioning{}, err
	}
	// The form every provider takes, with the label and tag provisioning will send.
	probe := cloud.CreateRequest{Region: req.Region, Type: req.Type, Image: req.Image, Label: label(req.Name),
		Tags: []string{"lexicon-prov-" + strings.Repeat("0", 26)}} // a tag of the length ProvisioningCreate makes
	if err := probe.Validate(); err != nil {
		return store.Provisioning{}, err
	}
	if err := nodes.CheckLabels(req.Labels, nil); err != nil {
		return store.Provisioning{}, err
	}
	if req.Platform != "" && !platformRE.MatchString(req.Platform) {
		return store.Provisioning{}, errcode.New(errcode.UsageInvalid, "platform %q is not os-arch", req.Platform).With(errcode.DetailField, "platform")
	}
	if (req.DNSAccount == "") != (req.DNSZone == "") {
		return store.Provisioning{}, errcode.New(errcode.UsageInvalid, "--dns-account and --zone go together").With(errcode.DetailField, "zone")
	}
	if req.DNSAccount != "" && e.DNS == nil {
		return store.Provisioning{}, errcode.New(errcode.UsageInvalid, "this plane has no DNS drivers").With(errcode.DetailField, "dns_account")
	}
	// A name an active node or a live provisioning holds is refused before the provider is asked.
	if n, err := e.Store.NodeGet(ctx, store.NodeGetParams{Name: req.Name}); err == nil && n.State == store.NodeActive {
		return store.Provisioning{}, errcode.New(errcode.ProvisionNameTaken, "the name %s is taken by node %s", req.Name, n.ID).
			With(errcode.DetailName, req.Name)
	}
	actor := by
	regions, err := e.Cloud.Regions(ctx, actor, req.Account)
	if err != nil {
		return store.Provisioning{}, err
	}
	if !slices.ContainsFunc(regions, func(r cloud.Region) bool { return r.ID == req.Region }) {
		return store.Provisioning{}, errcode.New(errcode.ProvisionUnknownRegion, "account %s has no region %q (lexicon cloud regions)", req.Account, req.Region).
			With(errcode.DetailField, "region")
	}
	types, err := e.Cloud.InstanceTypes(ctx, actor, req.Account, req.Region)
	if err != nil {
		return store.Provisioning{}, err
	}
	if !slices.ContainsFunc(types, func(t cloud.InstanceType) bool { return t.ID == req.Type }) {
		return store.Provisioning{}, errcode.New(errcode.ProvisionUnknownType, "region %s of %s has no instance type %q (lexicon cloud types)", req.Region, req.Account, req.Type).
			With(errcode.DetailField, "type")
	}
	return e.Store.ProvisioningCreate(ctx, store.ProvisioningCreateParams{Name: req.Name, Account: req.Account, Region: req.Region,
		Type: req.Type, Image: req.Image, Platform: req.Platform, Labels: req.Labels, DNSAccount: req.DNSAccount, DNSZone: req.DNSZone,
		By: by, Now: e.Time()})
}
