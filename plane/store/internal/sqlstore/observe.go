package sqlstore

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// observed times every statement its driver runs for an Observer. Statements are known by their SQL
// text, resolved to a timer once at open, so a run costs one map lookup and no allocation; the driver
// is embedded so that what it adds later still works, untimed until taught here.
type observed struct {
	sqldb.Driver
	writer sqldb.Execer
	obs    Observer
	// index is the position of each named statement's SQL in timers.
	index  map[string]int
	names  []string
	timers []StatementTimer
	commit StatementTimer
	other  StatementTimer

	mu        sync.RWMutex
	pipelines map[uint64]StatementTimer
}

// observe wraps drv so that obs times the statements of q.
func observe(drv sqldb.Driver, q *sqldb.Queries, obs Observer) *observed {
	byText := map[string][]string{}
	v := reflect.ValueOf(q).Elem()
	for _, sf := range reflect.VisibleFields(v.Type()) {
		if sf.Type.Kind() != reflect.String {
			continue
		}
		if text := v.FieldByIndex(sf.Index).String(); text != "" {
			byText[text] = append(byText[text], sf.Name)
		}
	}
	o := &observed{Driver: drv, obs: obs, index: map[string]int{}, pipelines: map[uint64]StatementTimer{},
		commit: obs.Statement("commit"), other: obs.Statement("other")}
	texts := make([]string, 0, len(byText))
	for text := range byText {
		texts = append(texts, text)
	}
	sort.Strings(texts)
	for _, text := range texts {
		names := byText[text]
		sort.Strings(names)
		name := strings.Join(names, "|") // one text under several names: rare
		o.index[text] = len(o.timers)
		o.names = append(o.names, name)
		o.timers = append(o.timers, obs.Statement(name))
	}
	o.writer = execer{o: o, ex: drv.Writer()}
	return o
}

func (o *observed) timer(query string) StatementTimer {
	if i, ok := o.index[query]; ok {
		return o.timers[i]
	}
	return o.other
}

func (o *observed) done(t StatementTimer, t0 time.Time, err error) {
	if t != nil {
		t.Observe(time.Since(t0), err != nil && o.Kind(err) != sqldb.ErrNoRows)
	}
}

func (o *observed) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return execer{o: o, ex: o.Driver}.Exec(ctx, query, args...)
}

func (o *observed) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	return execer{o: o, ex: o.Driver}.Query(ctx, query, args...)
}

func (o *observed) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return execer{o: o, ex: o.Driver}.QueryRow(ctx, query, args...)
}

func (o *observed) Writer() sqldb.Execer { return o.writer }

// Tx times the statements fn runs, and the commit: from fn's return to the driver's.
func (o *observed) Tx(ctx context.Context, fn func(sqldb.Execer) error) error {
	var returned time.Time
	err := o.Driver.Tx(ctx, func(ex sqldb.Execer) error {
		err := fn(execer{o: o, ex: ex})
		returned = time.Now()
		return err
	})
	if !returned.IsZero() && o.commit != nil {
		o.commit.Observe(time.Since(returned), err != nil)
	}
	return err
}

// Pipeline is one round trip, timed as one statement named by its steps.
func (o *observed) Pipeline(ctx context.Context, steps []sqldb.Step) error {
	t0 := time.Now()
	err := o.Driver.Pipeline(ctx, steps)
	o.done(o.pipelineTimer(steps), t0, err)
	return err
}

// pipelineTimer finds the timer of a combination of steps by their statements' positions, resolving
// a combination first seen once.
func (o *observed) pipelineTimer(steps []sqldb.Step) StatementTimer {
	var key uint64
	for _, st := range steps {
		i, ok := o.index[st.Query]
		if !ok || len(steps) > 6 {
			return o.other
		}
		key = key<<10 | uint64(i+1)&0x3ff
	}
	o.mu.RLock()
	t, ok := o.pipelines[key]
	o.mu.RUnlock()
	if ok {
		return t
	}
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = o.names[o.index[st.Query]]
	}
	t = o.obs.Statement(strings.Join(names, "+"))
	o.mu.Lock()
	o.pipelines[key] = t
	o.mu.Unlock()
	return t
}

var _ sqldb.Driver = (*observed)(nil)

// execer times the statements of one Execer (the driver's reads, its writer, or a transaction).
type execer struct {
	o  *observed
	ex sqldb.Execer
}

func (e execer) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	t0 := time.Now()
	n, err := e.ex.Exec(ctx, query, args...)
	e.o.done(e.o.timer(query), t0, err)
	return n, err
}

func (e execer) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	t0 := time.Now()
	rs, err := e.ex.Query(ctx, query, args...)
	e.o.done(e.o.timer(query), t0, err)
	return rs, err
}

// QueryRow is timed to its Scan: a driver may send the statement only then.
func (e execer) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	t0 := time.Now()
	return &row{Row: e.ex.QueryRow(ctx, query, args...), o: e.o, t: e.o.timer(query), t0: t0}
}

type row struct {
	sqldb.Row
	o  *observed
	t  StatementTimer
	t0 time.Time
}

func (r *row) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	r.o.done(r.t, r.t0, err)
	return err
}
