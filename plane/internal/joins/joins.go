// Package joins keeps the requests of machines to join the fleet: it records a join (unauthenticated,
// granting nothing), answers the key that asked, and carries out an admin's decision, which pairs the
// key only when the fingerprint the admin compared is exactly the join's.
package joins

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the joins room reads and writes, a join carrying a provisioning token included.
type Store interface {
	provision.JoinStore
	JoinList(ctx context.Context, p store.JoinListParams) (store.JoinListResult, error)
	JoinRenew(ctx context.Context, p store.JoinRenewParams) (store.Join, error)
	JoinApprove(ctx context.Context, p store.JoinApproveParams) (store.JoinApproveResult, error)
	JoinReject(ctx context.Context, p store.JoinRejectParams) (store.Join, error)
}

// Config sets up the room.
type Config struct {
	Store Store
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Caps on pending joins overall and per source address; 0 means 1,000 and 20.
	MaxPending, MaxPendingPerSource int
	// Provisioned, when not nil, is called after a join carrying a provisioning token was recorded: it
	// wakes this process's provisioning engine, which approves the join once the provider vouches.
	Provisioned func()
}

// Room is the joins' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxPending == 0 {
		c.MaxPending, c.MaxPendingPerSource = 1000, 20
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// Request records a pending join from source, the address it came from. It grants nothing: the key is
// paired only once an admin has compared its fingerprint, or, for a join carrying a provisioning token,
// once the provider vouches for the machine. The token is never logged.
func (r *Room) Request(ctx context.Context, req channel.JoinRequest, source string) (channel.JoinResponse, error) {
	key, err := keys.ParseNodePublic(req.Key)
	if err != nil {
		return channel.JoinResponse{}, errcode.Wrap(err, errcode.RequestMalformed, "key is not a node key").With(errcode.DetailField, "key")
	}
	if !store.ValidNodeName(req.Name) {
		return channel.JoinResponse{}, errcode.New(errcode.RequestMalformed, "name %q must be a host name of at most 63 characters", req.Name).With(errcode.DetailField, "name")
	}
	if len(req.Addresses) > 16 {
		return channel.JoinResponse{}, errcode.New(errcode.RequestMalformed, "at most 16 addresses").With(errcode.DetailField, "addresses")
	}
	for _, a := range req.Addresses {
		if net.ParseIP(a) == nil {
			return channel.JoinResponse{}, errcode.New(errcode.RequestMalformed, "address %q is not an IP address", a).With(errcode.DetailField, "addresses")
		}
	}
	p := store.JoinCreateParams{
		Name: req.Name, Key: key.String(), Fingerprint: key.Fingerprint(), Addresses: req.Addresses,
		SourceAddress: source, Now: r.c.Now(), MaxPending: r.c.MaxPending, MaxPendingPerSource: r.c.MaxPendingPerSource,
	}
	var res store.JoinCreateResult
	if req.Token != "" {
		res, err = provision.Join(ctx, r.c.Store, req.Token, p)
		if err == nil && r.c.Provisioned != nil {
			r.c.Provisioned()
		}
	} else {
		res, err = r.c.Store.JoinCreate(ctx, p)
	}
	if err != nil {
		return channel.JoinResponse{}, err
	}
	r.log.Info("join requested", "join", res.Join.ID, "name", res.Join.Name, "fingerprint", res.Join.Fingerprint,
		"source", res.Join.SourceAddress, "renewed", res.Renewed, "provisioning", res.Join.ProvisioningID)
	return channel.JoinResponse{JoinID: res.Join.ID, Fingerprint: res.Join.Fingerprint, Status: string(res.Join.Status), ExpiresAt: res.Join.ExpiresAt}, nil
}

// Pending is a join a signature proved: the key that asked to join, asking after it.
type Pending struct{ j store.Join }

// ID is the join's id.
func (p Pending) ID() string { return p.j.ID }

// Key finds the public key of join joinID for a signature's verifier, if keyID is its fingerprint: a
// join answers only the key that asked.
func (r *Room) Key(ctx context.Context, joinID, keyID string) (keys.NodePublic, Pending, bool, error) {
	j, err := r.c.Store.JoinGet(ctx, store.JoinGetParams{ID: joinID, Now: r.c.Now()})
	if err != nil || j.Fingerprint != keyID {
		return keys.NodePublic{}, Pending{}, false, nil
	}
	k, err := keys.ParseNodePublic(j.Key)
	return k, Pending{j}, err == nil, err
}

// Status answers the key that asked to join. A pending join is renewed by asking, so an agent that
// waits keeps its request alive and an abandoned one expires.
func (r *Room) Status(ctx context.Context, p Pending) channel.JoinStatusResponse {
	j := p.j
	if j.Status == store.JoinPending {
		if renewed, err := r.c.Store.JoinRenew(ctx, store.JoinRenewParams{ID: j.ID, Now: r.c.Now()}); err == nil {
			j = renewed
		}
	}
	return channel.JoinStatusResponse{Status: string(j.Status), NodeID: j.NodeID, ExpiresAt: j.ExpiresAt}
}

// List lists joins oldest first, optionally of one status.
func (r *Room) List(ctx context.Context, who api.Token, q api.JoinsListQuery) (api.JoinList, error) {
	res, err := r.c.Store.JoinList(ctx, store.JoinListParams{Status: store.JoinStatus(q.Status), Limit: q.Limit, Cursor: q.Cursor, Now: r.c.Now()})
	return api.JoinList{Joins: apiconv.Each(res.Joins, apiconv.Join), NextCursor: res.NextCursor}, err
}

// Approve pairs a join's key as a node, if the fingerprint the admin typed is exactly the join's.
func (r *Room) Approve(ctx context.Context, who api.Token, id string, req api.ApproveRequest) (api.Approved, error) {
	if req.Fingerprint == "" {
		return api.Approved{}, errcode.New(errcode.RequestMalformed, "approval needs the fingerprint the machine shows (SHA256:...)").With(errcode.DetailField, "fingerprint")
	}
	res, err := r.c.Store.JoinApprove(ctx, store.JoinApproveParams{ID: id, Fingerprint: req.Fingerprint, Name: req.Name, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Approved{}, err
	}
	r.log.Info("join approved", "join", res.Join.ID, "node", res.Node.ID, "name", res.Node.Name, "fingerprint", res.Node.Fingerprint, "by", who.Name)
	return api.Approved{Join: apiconv.Join(res.Join), Node: apiconv.Node(res.Node)}, nil
}

// Reject refuses a join and retires its key for good.
func (r *Room) Reject(ctx context.Context, who api.Token, id string) (api.Join, error) {
	j, err := r.c.Store.JoinReject(ctx, store.JoinRejectParams{ID: id, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Join{}, err
	}
	r.log.Info("join rejected; its key is retired", "join", j.ID, "fingerprint", j.Fingerprint, "by", who.Name)
	return apiconv.Join(j), nil
}
