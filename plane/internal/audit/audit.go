// Package audit is the plane's audit trail: one event for every change asked through the admin API or
// the web UI, written before the change is made and completed with its outcome after, listed and
// filtered for people, and exported as JSON lines to a file or a webhook for a SIEM.
//
// The trail is kept in one place: Wrap, an HTTP middleware the server puts on every mutating route of
// the admin API's table and the UI on every form it takes, so a route added later is audited without
// a line of its own. A handler adds only what the middleware cannot see: the error code it answered
// (NoteCode), the actor a sign-in resolved (NoteActor), the id a create made (NoteTarget).
package audit

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// Store is what the audit room reads and writes.
type Store interface {
	AuditEventStart(ctx context.Context, p store.AuditEventStartParams) (store.AuditEvent, error)
	AuditEventFinish(ctx context.Context, p store.AuditEventFinishParams) (store.AuditEvent, error)
	AuditEventList(ctx context.Context, p store.AuditEventListParams) (store.AuditEventListResult, error)
}

// Exporter takes every event as it is written: the intent (code "pending") and then its outcome, the
// same id in both. It must not block the request: a slow destination queues or drops, and says so in
// the log.
type Exporter interface {
	Export(e api.AuditEvent)
}

// Config is what the room needs.
type Config struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// Exporters are sent every event; none keeps the trail in the store alone.
	Exporters []Exporter
}

// Room records and lists the audit trail.
type Room struct {
	store     Store
	log       *slog.Logger
	now       func() time.Time
	exporters []Exporter
}

// New makes the room.
func New(cfg Config) *Room {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Room{store: cfg.Store, log: cfg.Log, now: cfg.Now, exporters: cfg.Exporters}
}

// Intent is what is known of a change before it is made.
type Intent struct {
	Via       string // store.AuditViaAPI or store.AuditViaUI
	ActorID   string
	Actor     string
	Address   string
	Operation string
	Target    string
}

// Outcome is how a change ended.
type Outcome struct {
	Status int
	// Code is store.CodeOK or the error code answered.
	Code string
	// ActorID, Actor and Target fill what the intent could not know.
	ActorID, Actor, Target string
}

// Begin records the intent of a change; the change must not be made if it fails.
func (r *Room) Begin(ctx context.Context, in Intent) (store.AuditEvent, error) {
	e, err := r.store.AuditEventStart(ctx, store.AuditEventStartParams{Via: in.Via, ActorID: in.ActorID, Actor: in.Actor,
		Address: in.Address, Operation: in.Operation, Target: clip(in.Target), Now: r.now()})
	if err != nil {
		return store.AuditEvent{}, err
	}
	r.export(e)
	return e, nil
}

// End records a begun change's outcome. The change is made by then, so a failure to record it is
// logged, not answered: the intent stays pending in the trail, which says the outcome is unknown.
func (r *Room) End(ctx context.Context, begun store.AuditEvent, out Outcome) {
	e, err := r.store.AuditEventFinish(context.WithoutCancel(ctx), store.AuditEventFinishParams{ID: begun.ID, Status: out.Status,
		Code: out.Code, ActorID: out.ActorID, Actor: out.Actor, Target: clip(out.Target), Duration: max(0, r.now().Sub(begun.At))})
	if err != nil {
		r.log.Error("audit outcome not recorded", "event", begun.ID, "operation", begun.Operation, "code", out.Code, "err", err)
		return
	}
	r.export(e)
}

func (r *Room) export(e store.AuditEvent) {
	if len(r.exporters) == 0 {
		return
	}
	ev := apiconv.AuditEvent(e)
	for _, x := range r.exporters {
		x.Export(ev)
	}
}

// List pages through the trail, newest first. It needs the route's role (admin).
func (r *Room) List(ctx context.Context, who api.Token, q api.AuditListQuery) (api.AuditEventList, error) {
	if err := tokens.Need(who, api.AuditList.Role); err != nil {
		return api.AuditEventList{}, err
	}
	since, until, err := q.Window()
	if err != nil {
		return api.AuditEventList{}, err
	}
	res, err := r.store.AuditEventList(ctx, store.AuditEventListParams{Actor: q.Actor, Operation: q.Operation, Target: q.Target,
		Outcome: q.Outcome, Since: since, Until: until, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return api.AuditEventList{}, err
	}
	out := api.AuditEventList{Events: make([]api.AuditEvent, 0, len(res.Events)), NextCursor: res.NextCursor}
	for _, e := range res.Events {
		out.Events = append(out.Events, apiconv.AuditEvent(e))
	}
	return out, nil
}

// clip keeps a target within what the store takes: a target is a route's parameters, which a client
// chose, and an over-long one must not make the change unauditable (and so refused).
func clip(s string) string {
	if len(s) <= store.MaxRefLen {
		return s
	}
	return strings.ToValidUTF8(s[:store.MaxRefLen-3], "") + "..."
}

// Where a change was asked, as Intent.Via.
const (
	ViaAPI = store.AuditViaAPI
	ViaUI  = store.AuditViaUI
)
