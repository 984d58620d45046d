package schedules

import (
	"context"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LeaseFire is the lease, on a schedule's id, of the replica firing it.
const LeaseFire = "fire"

// DefaultEvery is how often the engine looks for due schedules: a cron expression's finest step is a
// minute.
const DefaultEvery = 15 * time.Second

// EngineStore is what the engine reads and writes: the due schedules, their firings, the nodes they
// select, and the lease on each schedule while it fires.
type EngineStore interface {
	ScheduleList(ctx context.Context, p store.ScheduleListParams) ([]store.Schedule, error)
	ScheduleFire(ctx context.Context, p store.ScheduleFireParams) (store.ScheduleFireResult, error)
	ScheduleRunRecord(ctx context.Context, p store.ScheduleRunRecordParams) (store.Schedule, error)
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
	LeaseRelease(ctx context.Context, p store.LeaseReleaseParams) error
}

// Queue queues one job with the checks of a job queued by hand (the jobs room).
type Queue interface {
	Create(ctx context.Context, who api.Token, req api.JobRequest) (api.Job, error)
}

// Engine fires due schedules. Every replica runs one: a replica takes a schedule's fire lease before
// firing it, and claims the firing in the store by moving its next run from the value it saw
// (ScheduleFire), so one firing queues its jobs once however many replicas look at once.
type Engine struct {
	services.EngineBase
	Store EngineStore
	Jobs  Queue
}

// Service runs the engine on every tick of every and on every Wake.
func (e *Engine) Service(every time.Duration) *services.Periodic {
	return e.EngineBase.Service("schedules", every, e.Pass)
}

// Pass fires every due schedule this replica can lease, once.
func (e *Engine) Pass(ctx context.Context) error {
	due, err := e.Store.ScheduleList(ctx, store.ScheduleListParams{Due: true, Now: e.Time(), Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	for _, sc := range due {
		_, err := e.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: sc.ID, Name: LeaseFire, Holder: e.Holder,
			Purpose: "fire schedule " + sc.Name, TTL: e.TTL(), Now: e.Time()})
		if errcode.Has(err, errcode.LeaseHeld) {
			continue // another replica fires it
		}
		if err != nil {
			return err
		}
		if err := e.fire(ctx, sc); err != nil {
			e.Logger().Warn("schedule not fired", "schedule", sc.ID, "name", sc.Name, "err", err)
		}
		_ = e.Store.LeaseRelease(ctx, store.LeaseReleaseParams{Subject: sc.ID, Name: LeaseFire, Holder: e.Holder})
	}
	return nil
}

// fire claims the schedule's firing and queues its jobs. The claim comes first: a replica that dies
// between the two loses that firing's jobs rather than queueing them twice, and the schedule fires
// again at its next run.
func (e *Engine) fire(ctx context.Context, sc store.Schedule) error {
	now := e.Time()
	nextRun, err := next(sc, now)
	if err != nil {
		return err
	}
	res, err := e.Store.ScheduleFire(ctx, store.ScheduleFireParams{ID: sc.ID, From: sc.NextRunAt, Next: nextRun, Now: now})
	if err != nil || !res.Fired {
		return err
	}
	queued, skipped, failed, msg := e.queue(ctx, sc)
	_, err = e.Store.ScheduleRunRecord(ctx, store.ScheduleRunRecordParams{ID: sc.ID, Queued: queued, Skipped: skipped, Failed: failed, Message: msg})
	e.Logger().Info("schedule fired", "schedule", sc.ID, "name", sc.Name, "word", sc.Word, "queued", queued, "skipped", skipped, "failed", failed, "next", nextRun)
	return err
}

// queue queues the schedule's word on every active node its selector picks: skipped counts the nodes
// whose vocabulary lacks the word, failed those the jobs room refused, and msg says why, once.
func (e *Engine) queue(ctx context.Context, sc store.Schedule) (queued, skipped, failed int, msg string) {
	sel, err := ParseSelector(sc.Selector)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	who := api.Token{Name: "schedule " + sc.Name, Role: api.Role(sc.Role)}
	var firstErr error
	cursor := ""
	for {
		page, err := e.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return queued, skipped, failed, fmt.Sprintf("listing nodes: %v", err)
		}
		for _, n := range page.Nodes {
			if !sel.Match(n) {
				continue
			}
			if _, ok := n.Word(sc.Word); !ok {
				skipped++
				continue
			}
			if _, err := e.Jobs.Create(ctx, who, api.JobRequest{Node: n.ID, Word: sc.Word, Params: sc.Params}); err != nil {
				failed++
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", n.Name, err)
				}
				continue
			}
			queued++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if skipped > 0 {
		msg = fmt.Sprintf("%d node(s) skipped: their vocabulary lacks %s", skipped, sc.Word)
	}
	if firstErr != nil {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%d job(s) not queued, first: %v", failed, firstErr)
	}
	return queued, skipped, failed, msg
}
