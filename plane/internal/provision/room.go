package provision

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// RoomStore is what the provisioning room reads for people and for a machine being provisioned.
type RoomStore interface {
	ProvisioningList(ctx context.Context, p store.ProvisioningListParams) ([]store.Provisioning, error)
	ProvisioningGet(ctx context.Context, p store.ProvisioningGetParams) (store.Provisioning, error)
	ProvisioningTokenCheck(ctx context.Context, p store.ProvisioningTokenParams) (store.Provisioning, error)
	EnrolmentCreate(ctx context.Context, p store.EnrolmentCreateParams) (store.Enrolment, error)
	EnrolmentTokenCheck(ctx context.Context, p store.EnrolmentTokenParams) (store.Enrolment, error)
	ReleaseGet(ctx context.Context, p store.ReleaseGetParams) (store.Release, error)
	FleetTarget(ctx context.Context) (int64, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store RoomStore
	// Engine makes and unmakes machines; nil on a plane without drivers, which cannot provision (the
	// records are still read, and a provisioning token still fetches its agent).
	Engine *Engine
	// Nodes finds the node a decommission names, by id or name.
	Nodes *nodes.Room
	// Releases serves the agent binary a provisioning token fetches.
	Releases *releases.Room
	Log      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Changed, when not nil, is called after a provisioning was started: it wakes this process's engine.
	Changed func()
	// Bootstrap is what an install command gives a machine besides its token (the engine's, read when
	// a command is made); nil makes no install command.
	Bootstrap func() Bootstrap
}

// Room is provisioning's Go API, which the HTTP server and the web UI both call. Making a machine needs
// admin (it spends money and joins a node without a person); reading the records viewer.
type Room struct {
	c   RoomConfig
	log *slog.Logger
}

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

func (r *Room) engine() (*Engine, error) {
	if r.c.Engine == nil {
		return nil, errcode.New(errcode.DriverUnavailable, "this plane runs without drivers: it cannot provision")
	}
	return r.c.Engine, nil
}

// Provision checks a request and records it; the engine makes the machine (see Engine.Provision).
func (r *Room) Provision(ctx context.Context, who api.Token, req api.ProvisionRequest) (api.Provisioning, error) {
	e, err := r.engine()
	if err != nil {
		return api.Provisioning{}, err
	}
	pr, err := e.Provision(ctx, who.Name, Request{Name: req.Name, Account: req.Account, Region: req.Region,
		Type: req.Type, Image: req.Image, Platform: req.Platform, Labels: req.Labels, DNSAccount: req.DNSAccount, DNSZone: req.Zone})
	if err != nil {
		return api.Provisioning{}, err
	}
	r.log.Info("provisioning started", "provisioning", pr.ID, "name", pr.Name, "account", pr.Account, "by", who.Name)
	if r.c.Changed != nil {
		r.c.Changed()
	}
	return apiconv.Provisioning(pr), nil
}

// List lists provisionings newest first, without their timelines.
func (r *Room) List(ctx context.Context, who api.Token, q api.ProvisioningsListQuery) (api.ProvisioningList, error) {
	list, err := r.c.Store.ProvisioningList(ctx, store.ProvisioningListParams{Open: q.Open, State: store.ProvisioningState(q.State), Limit: q.Limit})
	return api.ProvisioningList{Provisionings: apiconv.Each(list, apiconv.Provisioning)}, err
}

// Show answers one provisioning with its timeline.
func (r *Room) Show(ctx context.Context, who api.Token, id string) (api.Provisioning, error) {
	pr, err := r.c.Store.ProvisioningGet(ctx, store.ProvisioningGetParams{ID: id})
	return apiconv.Provisioning(pr), err
}

// Adopt links an instance that exists to the node nodeRef names (see Engine.Adopt).
func (r *Room) Adopt(ctx context.Context, who api.Token, nodeRef string, req api.AdoptRequest) (api.Provisioning, error) {
	e, err := r.engine()
	if err != nil {
		return api.Provisioning{}, err
	}
	pr, err := e.Adopt(ctx, who.Name, nodeRef, req.Account, req.InstanceID)
	if err != nil {
		return api.Provisioning{}, err
	}
	r.log.Info("instance adopted", "node", pr.NodeID, "instance", pr.InstanceID, "account", pr.Account, "by", who.Name)
	return apiconv.Provisioning(pr), nil
}

// Decommission undoes the provisioning of the node nodeRef names (see Engine.Decommission), once the
// person typed the node's name back.
func (r *Room) Decommission(ctx context.Context, who api.Token, nodeRef string, req api.DecommissionRequest) (api.Decommissioned, error) {
	e, err := r.engine()
	if err != nil {
		return api.Decommissioned{}, err
	}
	n, err := r.c.Nodes.Get(ctx, nodeRef)
	if err != nil {
		return api.Decommissioned{}, err
	}
	if req.Confirm != n.Name {
		return api.Decommissioned{}, errcode.New(errcode.UsageInvalid, "type the node's name back to decommission it: --confirm %s", n.Name).
			With(errcode.DetailField, "confirm")
	}
	d, err := e.Decommission(ctx, who.Name, n.ID)
	if err != nil {
		return api.Decommissioned{}, err
	}
	r.c.Nodes.JobsEnded(ctx, d.Node.Cancelled, d.Node.Lost)
	named := func(j store.Job) api.Job { return apiconv.Job(j, n.Name) }
	node := n
	if d.Node.Node.ID != "" {
		node = d.Node.Node
	}
	return api.Decommissioned{Provisioning: apiconv.Provisioning(d.Provisioning), Node: apiconv.Node(node),
		Cancelled: apiconv.Each(d.Node.Cancelled, named), Lost: apiconv.Each(d.Node.Lost, named)}, nil
}

// Artifact serves a machine that is being provisioned and has no key yet: proved by its provisioning's
// unused, unexpired one-time token, it may fetch only the agent binary the fleet's target release pins
// for a platform (agent=<os>-<arch>).
func (r *Room) Artifact(ctx context.Context, token string, q url.Values) ([]byte, string, error) {
	if len(q) != 1 || !q.Has("agent") {
		return nil, "", errcode.New(errcode.RequestMalformed, "a provisioning token fetches only agent=<os>-<arch>")
	}
	if !LooksLikeToken(token) {
		return nil, "", errcode.New(errcode.ProvisionTokenInvalid, "the token is not a provisioning token")
	}
	tp := store.ProvisioningTokenParams{TokenHash: TokenHash(token), Now: r.c.Now()}
	_, err := r.c.Store.ProvisioningTokenCheck(ctx, tp)
	if errcode.Has(err, errcode.ProvisionTokenInvalid) { // an install command's token, then
		_, err = r.c.Store.EnrolmentTokenCheck(ctx, store.EnrolmentTokenParams{TokenHash: tp.TokenHash, Now: tp.Now})
	}
	if err != nil {
		return nil, "", err
	}
	seq, err := r.c.Store.FleetTarget(ctx)
	if err != nil {
		return nil, "", err
	}
	return r.c.Releases.Artifact(ctx, seq, q)
}
