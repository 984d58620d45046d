// Package schedules runs words on a clock: a schedule names a word, its params and a selector, and
// fires on an interval or a cron expression, queueing one job per selected node through the jobs
// room. The room checks and stores schedules; the Engine fires the due ones, one replica per firing.
package schedules

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the room reads and writes.
type Store interface {
	ScheduleCreate(ctx context.Context, p store.ScheduleCreateParams) (store.Schedule, error)
	ScheduleGet(ctx context.Context, p store.ScheduleGetParams) (store.Schedule, error)
	ScheduleList(ctx context.Context, p store.ScheduleListParams) ([]store.Schedule, error)
	ScheduleUpdate(ctx context.Context, p store.ScheduleUpdateParams) (store.Schedule, error)
	ScheduleDelete(ctx context.Context, p store.ScheduleDeleteParams) error
}

// Words finds the signed manifest of a released word by its name (the releases room's catalog).
type Words interface {
	Named(ctx context.Context, name string) (*manifest.Manifest, bool, error)
}

// Config sets up the room.
type Config struct {
	Store Store
	Words Words
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Wake, when not nil, is called after a change that may make a schedule due (the engine's Wake).
	Wake func()
}

// Room is the schedules' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Wake == nil {
		c.Wake = func() {}
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

func (r *Room) now() time.Time { return r.c.Now().UTC() }

// checked is a schedule's word, params, selector and timing, checked as a whole.
type checked struct {
	word     string
	params   json.RawMessage
	selector string
	every    time.Duration
	cron     string
	role     store.Role
}

// check holds a schedule's fields to their meaning: the word released (schedule.word_unknown), the
// token's role covering its class, the params its schema, the selector parsing, exactly one of every
// and cron and that one valid.
func (r *Room) check(ctx context.Context, who api.Token, word string, params json.RawMessage, selector, every, cron string) (checked, error) {
	c := checked{word: word, selector: strings.TrimSpace(selector), cron: strings.TrimSpace(cron)}
	if c.selector == "" {
		c.selector = "all"
	}
	if _, err := ParseSelector(c.selector); err != nil {
		return checked{}, err
	}
	switch {
	case (strings.TrimSpace(every) == "") == (c.cron == ""):
		return checked{}, errcode.New(errcode.ScheduleIntervalInvalid, "give a schedule every (such as 1h) or cron (such as \"0 * * * *\"), exactly one").With(errcode.DetailField, "every")
	case c.cron != "":
		if _, err := ParseCron(c.cron); err != nil {
			return checked{}, err
		}
	default:
		d, err := ParseEvery(every)
		if err != nil {
			return checked{}, err
		}
		c.every = d
	}
	if word == "" || len(word) > store.MaxRefLen {
		return checked{}, errcode.New(errcode.ScheduleWordUnknown, "a schedule names the word it runs").With(errcode.DetailWord, word)
	}
	m, known, err := r.c.Words.Named(ctx, word)
	if err != nil {
		return checked{}, err
	}
	if !known {
		return checked{}, errcode.New(errcode.ScheduleWordUnknown,
			"no stored release pins a word named %q: publish a release with it (lexicon releases publish), or check the name (lexicon releases show)", word).
			With(errcode.DetailWord, word)
	}
	need := api.RoleOperator
	if m.Class == manifest.ClassDestructive {
		need = api.RoleAdmin
	}
	if err := tokens.Need(who, need); err != nil {
		return checked{}, err
	}
	if c.params, err = jobs.Params(m, params); err != nil {
		return checked{}, err
	}
	c.role = store.Role(who.Role)
	return c, nil
}

// ParseSelector parses a schedule's selector with the rollouts' grammar ("all", names, or labels),
// its refusal coded as the schedule's.
func ParseSelector(s string) (rollouts.Selector, error) {
	sel, err := rollouts.ParseSelector("selector", s)
	if errcode.Has(err, errcode.RolloutSelectorInvalid) {
		e := errcode.From(err, errcode.RolloutSelectorInvalid)
		return sel, errcode.New(errcode.ScheduleSelectorInvalid, "%s", e.Message).With(errcode.DetailField, "selector")
	}
	return sel, err
}

// firstRun is when a new or resumed schedule first fires: an interval at once, a cron expression at
// its next match.
func firstRun(c checked, now time.Time) time.Time {
	if c.cron == "" {
		return time.Time{}
	}
	s, _ := ParseCron(c.cron) // checked
	return s.Next(now).UTC()
}

// Create checks and stores a schedule. Its jobs are queued with the role of who.
func (r *Room) Create(ctx context.Context, who api.Token, req api.ScheduleRequest) (api.Schedule, error) {
	if !store.ValidScheduleName(req.Name) {
		return api.Schedule{}, errcode.New(errcode.ScheduleNameInvalid, "schedule name %q is not 1 to 63 of a-z 0-9 - _ starting with a letter or digit", req.Name).
			With(errcode.DetailField, "name")
	}
	c, err := r.check(ctx, who, req.Word, req.Params, req.Selector, req.Every, req.Cron)
	if err != nil {
		return api.Schedule{}, err
	}
	now := r.now()
	sc, err := r.c.Store.ScheduleCreate(ctx, store.ScheduleCreateParams{Name: req.Name, Word: c.word, Params: c.params, Selector: c.selector,
		Every: c.every, Cron: c.cron, Paused: req.Paused, Role: c.role, By: who.Name, NextRunAt: firstRun(c, now), Now: now})
	if err != nil {
		return api.Schedule{}, err
	}
	r.log.Info("schedule created", "schedule", sc.ID, "name", sc.Name, "word", sc.Word, "by", who.Name)
	r.c.Wake()
	return Answer(sc), nil
}

// List lists every schedule by name.
func (r *Room) List(ctx context.Context, who api.Token) (api.ScheduleList, error) {
	list, err := r.c.Store.ScheduleList(ctx, store.ScheduleListParams{Limit: store.MaxListLimit})
	if err != nil {
		return api.ScheduleList{}, err
	}
	out := api.ScheduleList{Schedules: make([]api.Schedule, 0, len(list))}
	for _, sc := range list {
		out.Schedules = append(out.Schedules, Answer(sc))
	}
	return out, nil
}

// get finds a schedule by id or name.
func (r *Room) get(ctx context.Context, ref string) (store.Schedule, error) {
	if strings.HasPrefix(ref, "sched_") {
		if sc, err := r.c.Store.ScheduleGet(ctx, store.ScheduleGetParams{ID: ref}); !errcode.Has(err, errcode.ScheduleNotFound) {
			return sc, err
		}
	}
	if !store.ValidScheduleName(ref) {
		return store.Schedule{}, errcode.New(errcode.ScheduleNotFound, "no schedule %s", ref).With(errcode.DetailID, ref)
	}
	return r.c.Store.ScheduleGet(ctx, store.ScheduleGetParams{Name: ref})
}

// Show answers one schedule, by id or name.
func (r *Room) Show(ctx context.Context, who api.Token, ref string) (api.Schedule, error) {
	sc, err := r.get(ctx, ref)
	if err != nil {
		return api.Schedule{}, err
	}
	return Answer(sc), nil
}

// Edit changes the fields given and checks the schedule whole again with who's role, which its jobs
// are queued with from now on. A new timing counts from now.
func (r *Room) Edit(ctx context.Context, who api.Token, ref string, e api.ScheduleEdit) (api.Schedule, error) {
	sc, err := r.get(ctx, ref)
	if err != nil {
		return api.Schedule{}, err
	}
	word, params, selector := sc.Word, sc.Params, sc.Selector
	if e.Word != "" {
		word = e.Word
		if len(e.Params) == 0 {
			params = nil // another word's params would not fit it
		}
	}
	if len(e.Params) > 0 {
		params = e.Params
	}
	if e.Selector != "" {
		selector = e.Selector
	}
	every, cron := everyText(sc.Every), sc.Cron
	switch {
	case e.Every != "" && e.Cron != "":
		every, cron = e.Every, e.Cron // refused by check, as on create
	case e.Every != "":
		every, cron = e.Every, ""
	case e.Cron != "":
		every, cron = "", e.Cron
	}
	c, err := r.check(ctx, who, word, params, selector, every, cron)
	if err != nil {
		return api.Schedule{}, err
	}
	nextRun := sc.NextRunAt
	if c.every != sc.Every || c.cron != sc.Cron {
		nextRun = firstRun(c, r.now())
		if c.cron == "" {
			nextRun = r.now().Add(c.every)
		}
	}
	return r.update(ctx, who, sc, c, sc.Paused, nextRun, "schedule edited")
}

// Pause stops a schedule firing until it is resumed.
func (r *Room) Pause(ctx context.Context, who api.Token, ref string) (api.Schedule, error) {
	return r.setPaused(ctx, who, ref, true)
}

// Resume lets a paused schedule fire again: an interval at once, a cron expression at its next match
// (the ticks it missed while paused are not made up).
func (r *Room) Resume(ctx context.Context, who api.Token, ref string) (api.Schedule, error) {
	return r.setPaused(ctx, who, ref, false)
}

func (r *Room) setPaused(ctx context.Context, who api.Token, ref string, paused bool) (api.Schedule, error) {
	sc, err := r.get(ctx, ref)
	if err != nil {
		return api.Schedule{}, err
	}
	if sc.Paused == paused {
		return Answer(sc), nil
	}
	// Pausing keeps the role the jobs are queued as: who pauses need not hold the word's role.
	c := checked{word: sc.Word, params: sc.Params, selector: sc.Selector, every: sc.Every, cron: sc.Cron, role: sc.Role}
	nextRun := sc.NextRunAt
	action := "schedule paused"
	if !paused {
		if c.cron != "" {
			if _, err := ParseCron(c.cron); err != nil {
				return api.Schedule{}, err
			}
		}
		nextRun, action = firstRun(c, r.now()), "schedule resumed"
	}
	return r.update(ctx, who, sc, c, paused, nextRun, action)
}

func (r *Room) update(ctx context.Context, who api.Token, sc store.Schedule, c checked, paused bool, nextRun time.Time, action string) (api.Schedule, error) {
	up, err := r.c.Store.ScheduleUpdate(ctx, store.ScheduleUpdateParams{ID: sc.ID, Word: c.word, Params: c.params, Selector: c.selector,
		Every: c.every, Cron: c.cron, Paused: paused, Role: c.role, NextRunAt: nextRun, By: who.Name, Now: r.now()})
	if err != nil {
		return api.Schedule{}, err
	}
	r.log.Info(action, "schedule", up.ID, "name", up.Name, "by", who.Name)
	r.c.Wake()
	return Answer(up), nil
}

// Delete removes a schedule; the jobs it queued stay.
func (r *Room) Delete(ctx context.Context, who api.Token, ref string) (api.Schedule, error) {
	sc, err := r.get(ctx, ref)
	if err != nil {
		return api.Schedule{}, err
	}
	if err := r.c.Store.ScheduleDelete(ctx, store.ScheduleDeleteParams{ID: sc.ID}); err != nil {
		return api.Schedule{}, err
	}
	r.log.Info("schedule deleted", "schedule", sc.ID, "name", sc.Name, "by", who.Name)
	return Answer(sc), nil
}

// everyText is an interval as the API writes it ("1h0m0s" reads as "1h").
func everyText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

// Answer is a stored schedule as the API shows it.
func Answer(sc store.Schedule) api.Schedule {
	out := api.Schedule{ID: sc.ID, Name: sc.Name, Word: sc.Word, Params: sc.Params, Selector: sc.Selector, Every: everyText(sc.Every), Cron: sc.Cron,
		Paused: sc.Paused, Role: string(sc.Role), CreatedBy: sc.CreatedBy, UpdatedBy: sc.UpdatedBy, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
	if !sc.Paused {
		out.NextRunAt = sc.NextRunAt
		if out.NextRunAt.IsZero() {
			out.NextRunAt = sc.UpdatedAt // due at once: as soon as it was saved
		}
	}
	if !sc.LastRunAt.IsZero() {
		out.LastRun = &api.ScheduleRun{At: sc.LastRunAt, Queued: sc.LastQueued, Skipped: sc.LastSkipped, Failed: sc.LastFailed, Message: sc.LastMessage}
	}
	return out
}
