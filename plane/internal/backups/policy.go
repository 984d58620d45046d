package backups

import (
	"context"
	"slices"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Policies is every stored policy: the fleet's (or the built-in default) and each node's own.
type Policies struct {
	Fleet  store.BackupPolicy
	stored bool // a fleet policy was set
	Nodes  map[string]store.BackupPolicy
}

// builtIn is the fleet's policy before anyone set one: on, daily, 14 days, verified weekly; it has
// no target, so nothing is dispatched until an admin names one.
func builtIn() store.BackupPolicy {
	return store.BackupPolicy{Enabled: true, Every: DefaultEvery, KeepDays: DefaultKeepDays, VerifyEvery: DefaultVerifyEvery,
		Paths: []string{}, Databases: []string{}}
}

func (r *Room) policies(ctx context.Context) (Policies, error) {
	list, err := r.c.Store.BackupPolicyList(ctx, store.BackupPolicyListParams{})
	if err != nil {
		return Policies{}, err
	}
	p := Policies{Fleet: builtIn(), Nodes: map[string]store.BackupPolicy{}}
	for _, b := range list {
		if b.NodeID == "" {
			p.Fleet, p.stored = b, true
		} else {
			p.Nodes[b.NodeID] = b
		}
	}
	return p, nil
}

// For is the policy node follows and where it comes from: its own, or the fleet's. A node is never
// left without one: a new node follows the fleet's the moment it exists.
func (p Policies) For(nodeID string) (store.BackupPolicy, string) {
	if b, ok := p.Nodes[nodeID]; ok {
		return b, "node"
	}
	if !p.stored {
		return p.Fleet, "default"
	}
	return p.Fleet, "fleet"
}

// SetPolicy sets the fleet's policy (node "") or a node's own (by id or name). A node's policy with
// enabled false is the recorded decision not to back it up. keep_days below the fleet's floor is
// refused.
func (r *Room) SetPolicy(ctx context.Context, who api.Token, node string, req api.BackupPolicy) (api.BackupPolicy, error) {
	nodeID, err := r.nodeID(ctx, node)
	if err != nil {
		return api.BackupPolicy{}, err
	}
	b, err := r.policyOf(ctx, req)
	if err != nil {
		return api.BackupPolicy{}, err
	}
	b.NodeID, b.UpdatedBy = nodeID, who.Name
	saved, err := r.c.Store.BackupPolicySet(ctx, store.BackupPolicySetParams{Policy: b, Now: r.now()})
	if err != nil {
		return api.BackupPolicy{}, err
	}
	r.log.Info("backup policy set", "node", nodeID, "enabled", saved.Enabled, "target", saved.Target, "every", saved.Every,
		"keep_days", saved.KeepDays, "by", who.Name)
	src := "node"
	if nodeID == "" {
		src = "fleet"
	}
	return policyAPI(saved, src), nil
}

// ClearPolicy removes a node's own policy: it follows the fleet's again, which it answers.
func (r *Room) ClearPolicy(ctx context.Context, who api.Token, node string) (api.BackupPolicy, error) {
	nodeID, err := r.nodeID(ctx, node)
	if err != nil {
		return api.BackupPolicy{}, err
	}
	if nodeID == "" {
		return api.BackupPolicy{}, errcode.New(errcode.RequestMalformed, "the fleet's policy is set, never cleared").With(errcode.DetailField, "node")
	}
	if err := r.c.Store.BackupPolicyDelete(ctx, store.BackupPolicyDeleteParams{NodeID: nodeID}); err != nil {
		return api.BackupPolicy{}, err
	}
	r.log.Info("backup policy cleared", "node", nodeID, "by", who.Name)
	return r.ShowPolicy(ctx, who, nodeID)
}

// ListPolicies answers the fleet's policy and every node's own.
func (r *Room) ListPolicies(ctx context.Context, _ api.Token) (api.BackupPolicyList, error) {
	p, err := r.policies(ctx)
	if err != nil {
		return api.BackupPolicyList{}, err
	}
	_, src := p.For("")
	out := api.BackupPolicyList{Fleet: policyAPI(p.Fleet, src), Nodes: []api.BackupPolicy{}}
	ids := make([]string, 0, len(p.Nodes))
	for id := range p.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		out.Nodes = append(out.Nodes, policyAPI(p.Nodes[id], "node"))
	}
	return out, nil
}

// nodeID is the id of the node ref names (by id or name), or "" for the fleet.
func (r *Room) nodeID(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	if r.c.Nodes == nil {
		return ref, nil
	}
	n, err := r.c.Nodes.Get(ctx, ref)
	return n.ID, err
}

// ShowPolicy answers the policy a node follows (by id or name; "" for the fleet's).
func (r *Room) ShowPolicy(ctx context.Context, _ api.Token, node string) (api.BackupPolicy, error) {
	nodeID, err := r.nodeID(ctx, node)
	if err != nil {
		return api.BackupPolicy{}, err
	}
	p, err := r.policies(ctx)
	if err != nil {
		return api.BackupPolicy{}, err
	}
	if nodeID == "" {
		_, src := p.For("")
		return policyAPI(p.Fleet, src), nil
	}
	b, src := p.For(nodeID)
	out := policyAPI(b, src)
	out.Node = nodeID
	return out, nil
}

func (r *Room) policyOf(ctx context.Context, req api.BackupPolicy) (store.BackupPolicy, error) {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.RequestMalformed, format, args...).With(errcode.DetailField, field)
	}
	b := store.BackupPolicy{Enabled: req.Enabled, Target: req.Target, KeepDays: req.KeepDays, Paths: req.Paths, Databases: req.Databases}
	var err error
	if b.Every, err = duration(req.Every, DefaultEvery); err != nil {
		return b, bad("every", "every is a duration of at least a minute (24h)")
	}
	if b.VerifyEvery, err = duration(req.VerifyEvery, DefaultVerifyEvery); err != nil {
		return b, bad("verify_every", "verify_every is a duration of at least a minute (168h)")
	}
	if b.KeepDays == 0 {
		b.KeepDays = DefaultKeepDays
	}
	if b.KeepDays < FloorDays {
		return b, errcode.New(errcode.BackupKeepBelowFloor, "keep_days %d is below the fleet's floor of %d days", b.KeepDays, FloorDays).
			With(errcode.DetailLimit, FloorDays).With(errcode.DetailField, "keep_days")
	}
	for _, p := range b.Paths {
		if !backup.ValidRoot(p) {
			return b, bad("paths", "%q is not an absolute clean path below /", p)
		}
	}
	for _, d := range b.Databases {
		if !backup.ValidDatabaseName(d) {
			return b, bad("databases", "%q is not a database name", d)
		}
	}
	if len(b.Paths) > store.MaxBackupItems || len(b.Databases) > store.MaxBackupItems {
		return b, bad("paths", "at most %d paths and %d databases", store.MaxBackupItems, store.MaxBackupItems)
	}
	if b.Enabled {
		if len(b.Paths) == 0 && len(b.Databases) == 0 {
			return b, bad("paths", "a policy that is on backs up paths, databases or both")
		}
		if _, err := r.c.Store.BackupTargetGet(ctx, store.BackupTargetGetParams{Name: b.Target}); err != nil {
			return b, err
		}
	}
	return b, nil
}

func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Minute {
		return 0, errcode.New(errcode.RequestMalformed, "not a duration of at least a minute")
	}
	return d, nil
}

func policyAPI(b store.BackupPolicy, source string) api.BackupPolicy {
	return api.BackupPolicy{Node: b.NodeID, Enabled: b.Enabled, Target: b.Target, Every: b.Every.String(), KeepDays: b.KeepDays,
		VerifyEvery: b.VerifyEvery.String(), Paths: nonNil(b.Paths), Databases: nonNil(b.Databases), Source: source,
		UpdatedBy: b.UpdatedBy, UpdatedAt: b.UpdatedAt}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
