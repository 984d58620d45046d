package health

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// RoomStore is what the health room reads and writes: the replicas' heartbeats, and whether the store
// answers with exactly this binary's migrations.
type RoomStore interface {
	ReplicaList(ctx context.Context, p store.ReplicaListParams) ([]store.Replica, error)
	ReplicaForget(ctx context.Context, p store.ReplicaForgetParams) (store.Replica, error)
	Ping(ctx context.Context) error
	MigrationCheck(ctx context.Context) error
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store RoomStore
	// ReplicaID names this replica in the answers.
	ReplicaID string
	// MasterKeyID is the id of the master key this replica loaded; "" means none, and it is not ready.
	MasterKeyID string
	Log         *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Room answers what the plane's replicas are and whether this one can serve, which the HTTP server
// and the web UI both call.
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

// Status answers every replica known, with whether each is missing, and which one answered.
func (r *Room) Status(ctx context.Context, who api.Token) (api.PlaneStatus, error) {
	reps, err := r.c.Store.ReplicaList(ctx, store.ReplicaListParams{Now: r.c.Now()})
	return api.PlaneStatus{Answered: r.c.ReplicaID, Replicas: apiconv.Each(reps, apiconv.Replica)}, err
}

// Forget removes a replica that stopped heartbeating; the store notes who did it on the replica's
// plane:replica_missing incident, and the plane's log keeps it too.
func (r *Room) Forget(ctx context.Context, who api.Token, id string) (api.Replica, error) {
	rep, err := r.c.Store.ReplicaForget(ctx, store.ReplicaForgetParams{ID: id, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Replica{}, err
	}
	r.log.Warn("replica forgotten", "replica", id, "by", who.Name, "address", rep.Address, "heartbeat_at", rep.HeartbeatAt)
	return apiconv.Replica(rep), nil
}

// Alive reports whether the store answers: the liveness of GET /healthz.
func (r *Room) Alive(ctx context.Context) error { return r.c.Store.Ping(ctx) }

// Readiness is GET /readyz's answer when this replica can serve.
type Readiness struct {
	Ready   bool              `json:"ready"`
	Replica string            `json:"replica,omitempty"`
	Checks  map[string]string `json:"checks"`
}

// Ready reports whether this replica can serve: its store answers, the database's migrations are
// exactly this binary's, and its master key is loaded. The first check that fails is
// replica.not_ready naming it.
func (r *Room) Ready(ctx context.Context) (Readiness, error) {
	checks := []struct {
		name string
		run  func() error
	}{
		{"store", func() error { return r.c.Store.Ping(ctx) }},
		{"migrations", func() error { return r.c.Store.MigrationCheck(ctx) }},
		{"master_key", func() error {
			if r.c.MasterKeyID == "" {
				return errcode.New(errcode.ReplicaNotReady, "no master key is loaded")
			}
			return nil
		}},
	}
	out := Readiness{Ready: true, Replica: r.c.ReplicaID, Checks: map[string]string{}}
	for _, c := range checks {
		if err := c.run(); err != nil {
			return Readiness{}, errcode.Wrap(err, errcode.ReplicaNotReady, "replica %s is not ready: %s", r.c.ReplicaID, c.name).
				With(errcode.DetailReason, c.name)
		}
		out.Checks[c.name] = "ok"
	}
	return out, nil
}
