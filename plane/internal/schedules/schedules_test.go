package schedules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/schedules"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// manifestOf is a released word's manifest of class class, taking an optional integer param n.
func manifestOf(t testing.TB, name, class string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse(fmt.Appendf(nil, `{"schema": "lexicon/manifest/v1", "name": %q, "kind": "word", "version": "1.0.0", "class": %q,
		"summary": "a test word", "params": {"type": "object", "additionalProperties": false, "properties": {"n": {"type": "integer"}}},
		"output": {"type": "object"}, "capabilities": [], "limits": {"memory_mib": 16, "wall_time_ms": 1000, "output_bytes": 1024},
		"module": {"file": "w.wasm"}}`, name, class))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// words is a release catalog holding check (look) and wipe (destructive).
type words map[string]*manifest.Manifest

func (w words) Named(_ context.Context, name string) (*manifest.Manifest, bool, error) {
	m, ok := w[name]
	return m, ok, nil
}

// queue records the jobs a firing asks for, as the jobs room would queue them.
type queue struct {
	mu   sync.Mutex
	jobs []api.JobRequest
	who  []api.Token
}

func (q *queue) Create(_ context.Context, who api.Token, req api.JobRequest) (api.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, req)
	q.who = append(q.who, who)
	return api.Job{ID: fmt.Sprint(len(q.jobs)), Word: req.Word}, nil
}

func (q *queue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type fixture struct {
	t     *testing.T
	st    store.Store
	url   string
	clock *clock
	room  *schedules.Room
	q     *queue
	check []store.Node // nodes whose vocabulary has check, labelled role=web
}

var (
	operator = api.Token{Name: "olivia", Role: api.RoleOperator}
	admin    = api.Token{Name: "ada", Role: api.RoleAdmin}
)

// newFixture is a store with webs nodes that have the word check (role=web), two that do not
// (role=web too), a room and a clock on the hour. The default schedule is deleted so that each test
// counts only its own.
func newFixture(t *testing.T, backend string, webs int) *fixture {
	url := filepath.Join(t.TempDir(), "plane.db")
	if backend == "postgres" {
		url = storetest.PostgresURL(t)
	}
	st := storetest.Open(t, url)
	c := &clock{t: time.Date(2026, 12, 3, 22, 0, 0, 0, time.UTC)}
	f := &fixture{t: t, st: st, url: url, clock: c, q: &queue{}}
	f.room = schedules.New(schedules.Config{Store: st, Words: words{"check": manifestOf(t, "check", "look"), "wipe": manifestOf(t, "wipe", "destructive")},
		Now: c.now, Log: slog.New(slog.DiscardHandler)})
	vocab := []store.WordRef{{Name: "check", Version: "1.0.0", Digest: "sha256:check", Class: "look"}}
	for i := range webs + 2 {
		v := vocab
		if i >= webs {
			v = []store.WordRef{{Name: "other", Version: "1.0.0", Digest: "sha256:other", Class: "look"}}
		}
		n := storetest.NodeWords(t, st, fmt.Sprintf("web-%d", i), "1.0.0", c.now(), v)
		n, err := st.NodeLabel(t.Context(), store.NodeLabelParams{ID: n.ID, Set: map[string]string{"role": "web"}, By: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if i < webs {
			f.check = append(f.check, n)
		}
	}
	storetest.NodeWords(t, st, "db-0", "1.0.0", c.now(), vocab) // not role=web
	def, err := st.ScheduleGet(t.Context(), store.ScheduleGetParams{Name: "packages-report"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ScheduleDelete(t.Context(), store.ScheduleDeleteParams{ID: def.ID}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) engine(st store.Store, holder string) *schedules.Engine {
	return &schedules.Engine{Store: st, Jobs: f.q, EngineBase: services.EngineBase{Holder: holder, Now: f.clock.now, Log: slog.New(slog.DiscardHandler)}}
}

func (f *fixture) pass(e *schedules.Engine) {
	f.t.Helper()
	if err := e.Pass(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) show(name string) api.Schedule {
	f.t.Helper()
	sc, err := f.room.Show(f.t.Context(), operator, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return sc
}

func backends(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) { fn(t, b) })
	}
}

// TestTwoReplicasOneFires: two engines on two connections to one store pass at once, tick after tick;
// each tick queues exactly one job per selected node that has the word, and skips (and counts) the
// selected nodes that lack it.
func TestTwoReplicasOneFires(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend, 3)
		peer := storetest.Open(t, f.url)
		_, err := f.room.Create(t.Context(), operator, api.ScheduleRequest{Name: "web-check", Word: "check", Selector: "role=web", Every: "1h", Params: json.RawMessage(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		a, b := f.engine(f.st, "replica-a"), f.engine(peer, "replica-b")
		for tick := 1; tick <= 3; tick++ {
			var wg sync.WaitGroup
			for _, e := range []*schedules.Engine{a, b} {
				wg.Go(func() {
					for range 3 {
						if err := e.Pass(t.Context()); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			if got := f.q.count(); got != 3*tick {
				t.Fatalf("tick %d: %d jobs queued, want %d", tick, got, 3*tick)
			}
			sc := f.show("web-check")
			if sc.LastRun == nil || sc.LastRun.Queued != 3 || sc.LastRun.Skipped != 2 || sc.LastRun.Failed != 0 || !sc.LastRun.At.Equal(f.clock.now()) ||
				!sc.NextRunAt.Equal(f.clock.now().Add(time.Hour)) {
				t.Fatalf("tick %d: %+v, last run %+v", tick, sc, sc.LastRun)
			}
			f.clock.add(time.Hour)
		}
		for i, req := range f.q.jobs {
			if req.Word != "check" || string(req.Params) != `{"n":1}` || f.q.who[i].Role != api.RoleOperator || f.q.who[i].Name != "schedule web-check" {
				t.Fatalf("job %d: %+v by %+v", i, req, f.q.who[i])
			}
		}
	})
}

// TestMissedTicksFireOnce: a plane down for ten hours fires an hourly schedule, and a cron one, once
// on its return, and counts the next run from then.
func TestMissedTicksFireOnce(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFixture(t, backend, 1)
		ctx := t.Context()
		for _, req := range []api.ScheduleRequest{
			{Name: "hourly", Word: "check", Selector: "role=web", Every: "1h"},
			{Name: "on-the-hour", Word: "check", Selector: "role=web", Cron: "0 * * * *"},
		} {
			if _, err := f.room.Create(ctx, operator, req); err != nil {
				t.Fatal(err)
			}
		}
		if sc := f.show("on-the-hour"); !sc.NextRunAt.Equal(f.clock.now().Add(time.Hour)) {
			t.Fatalf("cron schedule made on the hour runs next at %s", sc.NextRunAt)
		}
		e := f.engine(f.st, "replica-a")
		f.pass(e) // the interval fires at once
		if f.q.count() != 1 {
			t.Fatalf("%d jobs at start", f.q.count())
		}
		f.clock.add(10*time.Hour + 30*time.Minute)
		f.pass(e)
		f.pass(e)
		if f.q.count() != 3 {
			t.Fatalf("%d jobs after ten hours down, want 3 (one more per schedule)", f.q.count())
		}
		now := f.clock.now()
		if sc := f.show("hourly"); !sc.NextRunAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("hourly next %s, want %s", sc.NextRunAt, now.Add(time.Hour))
		}
		if sc := f.show("on-the-hour"); !sc.NextRunAt.Equal(now.Add(30 * time.Minute)) {
			t.Fatalf("cron next %s, want %s", sc.NextRunAt, now.Add(30*time.Minute))
		}
	})
}

// TestPauseEditResumeDelete: a paused schedule does not fire; an edit checks the whole again; resume
// fires an interval at once; delete removes it.
func TestPauseEditResumeDelete(t *testing.T) {
	f := newFixture(t, "sqlite", 2)
	ctx := t.Context()
	e := f.engine(f.st, "replica-a")
	if _, err := f.room.Create(ctx, operator, api.ScheduleRequest{Name: "web-check", Word: "check", Selector: "role=web", Every: "30m", Paused: true}); err != nil {
		t.Fatal(err)
	}
	f.pass(e)
	if f.q.count() != 0 {
		t.Fatal("a paused schedule fired")
	}
	sc, err := f.room.Edit(ctx, operator, "web-check", api.ScheduleEdit{Cron: "@daily", Selector: "web-0"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Cron != "@daily" || sc.Every != "" || sc.Selector != "web-0" || !sc.Paused || !sc.NextRunAt.IsZero() {
		t.Fatalf("edited %+v", sc)
	}
	_, err = f.room.Edit(ctx, operator, "web-check", api.ScheduleEdit{Cron: "61 * * * *"})
	testkit.WantCode(t, err, errcode.ScheduleCronInvalid)
	_, err = f.room.Edit(ctx, operator, "web-check", api.ScheduleEdit{Word: "wipe"})
	testkit.WantCode(t, err, errcode.AuthForbidden) // an operator cannot make a destructive schedule
	if sc, err = f.room.Edit(ctx, operator, "web-check", api.ScheduleEdit{Every: "1h"}); err != nil || sc.Every != "1h" || sc.Cron != "" {
		t.Fatalf("edited %+v, %v", sc, err)
	}
	if sc, err = f.room.Resume(ctx, operator, sc.ID); err != nil || sc.Paused {
		t.Fatalf("resumed %+v, %v", sc, err)
	}
	f.pass(e)
	if f.q.count() != 1 || f.q.jobs[0].Node != f.check[0].ID {
		t.Fatalf("after resume: %+v", f.q.jobs)
	}
	if sc, err = f.room.Pause(ctx, operator, "web-check"); err != nil || !sc.Paused || !sc.NextRunAt.IsZero() {
		t.Fatalf("paused %+v, %v", sc, err)
	}
	if _, err := f.room.Delete(ctx, operator, "web-check"); err != nil {
		t.Fatal(err)
	}
	_, err = f.room.Show(ctx, operator, "web-check")
	testkit.WantCode(t, err, errcode.ScheduleNotFound)
}

// TestBadInputStoresNothing: each refusal is its code, and no schedule is stored.
func TestBadInputStoresNothing(t *testing.T) {
	f := newFixture(t, "sqlite", 1)
	ctx := t.Context()
	cases := []struct {
		who  api.Token
		req  api.ScheduleRequest
		code string
	}{
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Cron: "not a cron"}, errcode.ScheduleCronInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Cron: "0 0 30 2 *"}, errcode.ScheduleCronInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Cron: "CRON_TZ=Europe/Paris 0 * * * *"}, errcode.ScheduleCronInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h", Selector: "Role=web"}, errcode.ScheduleSelectorInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h", Selector: "web-0,role=web"}, errcode.ScheduleSelectorInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "nosuch", Every: "1h"}, errcode.ScheduleWordUnknown},
		{operator, api.ScheduleRequest{Name: "x", Word: "check"}, errcode.ScheduleIntervalInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h", Cron: "@hourly"}, errcode.ScheduleIntervalInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Every: "10s"}, errcode.ScheduleIntervalInvalid},
		{operator, api.ScheduleRequest{Name: "X Y", Word: "check", Every: "1h"}, errcode.ScheduleNameInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h", Params: json.RawMessage(`{"n":"one"}`)}, errcode.WordParamInvalid},
		{operator, api.ScheduleRequest{Name: "x", Word: "wipe", Every: "1h"}, errcode.AuthForbidden},
		{api.Token{Name: "v", Role: api.RoleViewer}, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h"}, errcode.AuthForbidden},
	}
	for _, c := range cases {
		_, err := f.room.Create(ctx, c.who, c.req)
		testkit.WantCode(t, err, c.code)
	}
	list, err := f.room.List(ctx, operator)
	if err != nil || len(list.Schedules) != 0 {
		t.Fatalf("stored %+v, %v", list, err)
	}
	if _, err := f.room.Create(ctx, admin, api.ScheduleRequest{Name: "x", Word: "wipe", Every: "1h"}); err != nil {
		t.Fatalf("an admin's destructive schedule: %v", err)
	}
	_, err = f.room.Create(ctx, admin, api.ScheduleRequest{Name: "x", Word: "check", Every: "1h"})
	testkit.WantCode(t, err, errcode.ScheduleNameTaken)
}

// TestLeaseHeldSkips: while one replica holds a schedule's fire lease, another replica's pass leaves
// it alone; once the lease expires the other fires it.
func TestLeaseHeldSkips(t *testing.T) {
	f := newFixture(t, "sqlite", 1)
	sc, err := f.room.Create(t.Context(), operator, api.ScheduleRequest{Name: "web-check", Word: "check", Selector: "role=web", Every: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.LeaseAcquire(t.Context(), store.LeaseAcquireParams{Subject: sc.ID, Name: schedules.LeaseFire, Holder: "replica-a",
		Purpose: "test", TTL: time.Minute, Now: f.clock.now()}); err != nil {
		t.Fatal(err)
	}
	b := f.engine(f.st, "replica-b")
	f.pass(b)
	if f.q.count() != 0 {
		t.Fatal("a replica fired a schedule another holds")
	}
	f.clock.add(2 * time.Minute)
	f.pass(b)
	if f.q.count() != 1 {
		t.Fatalf("%d jobs after the lease expired", f.q.count())
	}
}
