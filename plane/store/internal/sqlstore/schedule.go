package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// checkScheduleFields holds a schedule's fields to the store's bounds; the schedules room has checked
// their meaning (the cron expression, the selector, the word) before.
func checkScheduleFields(word string, params json.RawMessage, selector string, every time.Duration, cron string, role Role, by string) error {
	if word == "" || len(word) > MaxRefLen || !ValidText(word) {
		return invalid("word", "word must be 1 to %d bytes of text", MaxRefLen)
	}
	if len(params) > MaxScheduleParams || !json.Valid(params) {
		return invalid("params", "params must be JSON of at most %d bytes", MaxScheduleParams)
	}
	if len(selector) > MaxScheduleSelector || !ValidText(selector) {
		return invalid("selector", "selector must be text of at most %d bytes", MaxScheduleSelector)
	}
	if len(cron) > MaxScheduleCron || !ValidText(cron) {
		return invalid("cron", "cron must be text of at most %d bytes", MaxScheduleCron)
	}
	if (every > 0) == (cron != "") || every < 0 {
		return invalid("every", "a schedule has an interval or a cron expression, exactly one")
	}
	switch role {
	case RoleViewer, RoleOperator, RoleAdmin:
	default:
		return invalid("role", "role %q is not viewer, operator or admin", role)
	}
	return checkActor(by)
}

func (s *sqlStore) ScheduleCreate(ctx context.Context, p ScheduleCreateParams) (Schedule, error) {
	if !ValidScheduleName(p.Name) {
		return Schedule{}, invalid("name", "a schedule's name is 1 to 63 of a-z 0-9 - _")
	}
	if err := checkScheduleFields(p.Word, p.Params, p.Selector, p.Every, p.Cron, p.Role, p.By); err != nil {
		return Schedule{}, err
	}
	t := now(p.Now)
	var out Schedule
	err := s.tx(ctx, "create schedule", func(ex sqldb.Execer) error {
		var err error
		out, err = scanSchedule(ex.QueryRow(ctx, s.q.ScheduleInsert, s.ids.next("sched_", t), p.Name, p.Word, string(p.Params), p.Selector,
			p.Every.Milliseconds(), p.Cron, p.Paused, string(p.Role), p.By, t, at(p.NextRunAt)))
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return errcode.New(errcode.ScheduleNameTaken, "a schedule named %s exists", p.Name).With(errcode.DetailName, p.Name)
		}
		return err
	})
	return out, err
}

func (s *sqlStore) ScheduleGet(ctx context.Context, p ScheduleGetParams) (Schedule, error) {
	key, query := p.ID, s.q.ScheduleGet
	if key == "" {
		key, query = p.Name, s.q.ScheduleGetByName
	}
	if key == "" || len(key) > 64 {
		return Schedule{}, invalid("id", "a schedule is named by its id or its name")
	}
	var out Schedule
	err := s.read(ctx, "get schedule", func(ex sqldb.Execer) error {
		var err error
		out, err = scanSchedule(ex.QueryRow(ctx, query, key))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ScheduleNotFound, "no schedule %s", key).With(errcode.DetailID, key)
		}
		return err
	})
	return out, err
}

func (s *sqlStore) ScheduleList(ctx context.Context, p ScheduleListParams) ([]Schedule, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	out := []Schedule{}
	err = s.read(ctx, "list schedules", func(ex sqldb.Execer) error {
		query, args := s.q.ScheduleList, []any{limit}
		if p.Due {
			query, args = s.q.ScheduleListDue, []any{now(p.Now), limit}
		}
		rows, err := ex.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sc, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			out = append(out, sc)
		}
		return rows.Err()
	})
	return out, err
}

func (s *sqlStore) ScheduleUpdate(ctx context.Context, p ScheduleUpdateParams) (Schedule, error) {
	if err := checkID("id", p.ID); err != nil {
		return Schedule{}, err
	}
	if err := checkScheduleFields(p.Word, p.Params, p.Selector, p.Every, p.Cron, p.Role, p.By); err != nil {
		return Schedule{}, err
	}
	return s.scheduleWrite(ctx, "update schedule", p.ID, s.q.ScheduleUpdate, p.ID, p.Word, string(p.Params), p.Selector,
		p.Every.Milliseconds(), p.Cron, p.Paused, string(p.Role), at(p.NextRunAt), p.By, now(p.Now))
}

func (s *sqlStore) ScheduleFire(ctx context.Context, p ScheduleFireParams) (ScheduleFireResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return ScheduleFireResult{}, err
	}
	if p.Next.IsZero() {
		return ScheduleFireResult{}, invalid("next", "a firing sets when the schedule runs next")
	}
	var out ScheduleFireResult
	err := s.tx(ctx, "fire schedule", func(ex sqldb.Execer) error {
		sc, err := scanSchedule(ex.QueryRow(ctx, s.q.ScheduleFire, p.ID, at(p.From), at(p.Next), now(p.Now)))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			out.Schedule, err = scanSchedule(ex.QueryRow(ctx, s.q.ScheduleGet, p.ID))
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return errcode.New(errcode.ScheduleNotFound, "no schedule %s", p.ID).With(errcode.DetailID, p.ID)
			}
			return err
		}
		out = ScheduleFireResult{Schedule: sc, Fired: err == nil}
		return err
	})
	return out, err
}

func (s *sqlStore) ScheduleRunRecord(ctx context.Context, p ScheduleRunRecordParams) (Schedule, error) {
	if err := checkID("id", p.ID); err != nil {
		return Schedule{}, err
	}
	if p.Queued < 0 || p.Skipped < 0 || p.Failed < 0 {
		return Schedule{}, invalid("queued", "counts are not negative")
	}
	msg, _ := cutText(p.Message, MaxMessageLen)
	return s.scheduleWrite(ctx, "record schedule run", p.ID, s.q.ScheduleRunRecord, p.ID, p.Queued, p.Skipped, p.Failed, msg)
}

func (s *sqlStore) ScheduleDelete(ctx context.Context, p ScheduleDeleteParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	return s.tx(ctx, "delete schedule", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.ScheduleDelete, p.ID)
		if err == nil && n == 0 {
			return errcode.New(errcode.ScheduleNotFound, "no schedule %s", p.ID).With(errcode.DetailID, p.ID)
		}
		return err
	})
}

// scheduleWrite runs an UPDATE … RETURNING of one schedule; no row is schedule.not_found.
func (s *sqlStore) scheduleWrite(ctx context.Context, what, id, query string, args ...any) (Schedule, error) {
	var out Schedule
	err := s.tx(ctx, what, func(ex sqldb.Execer) error {
		var err error
		out, err = scanSchedule(ex.QueryRow(ctx, query, args...))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ScheduleNotFound, "no schedule %s", id).With(errcode.DetailID, id)
		}
		return err
	})
	return out, err
}

func scanSchedule(r sqldb.Row) (Schedule, error) {
	var sc Schedule
	var params []byte
	var everyMS int64
	var role string
	var queued, skipped, failed int64
	err := r.Scan(&sc.ID, &sc.Name, &sc.Word, &params, &sc.Selector, &everyMS, &sc.Cron, &sc.Paused, &role, &sc.CreatedBy, &sc.UpdatedBy,
		stamp{&sc.CreatedAt}, stamp{&sc.UpdatedAt}, stamp{&sc.NextRunAt}, stamp{&sc.LastRunAt}, &queued, &skipped, &failed, &sc.LastMessage)
	sc.Params = rawOrNil(params)
	sc.Every = time.Duration(everyMS) * time.Millisecond
	sc.Role = Role(role)
	sc.LastQueued, sc.LastSkipped, sc.LastFailed = int(queued), int(skipped), int(failed)
	return sc, err
}

func (s *sqlStore) PackageReportList(ctx context.Context, p PackageReportListParams) ([]PackageReport, error) {
	if p.Word != packagesWord {
		return nil, invalid("word", "the store keeps the newest report of %s only", packagesWord)
	}
	out := []PackageReport{}
	err := s.read(ctx, "list package reports", func(ex sqldb.Execer) error {
		rows, err := ex.Query(ctx, s.q.PackageReportList, p.Word, at(p.RebootCutoff), at(p.FixCutoff), p.Narrow, p.Selectable)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanPackageReport(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

func scanPackageReport(row sqldb.Row) (PackageReport, error) {
	var r PackageReport
	var output, fixes, labels, facts []byte
	err := row.Scan(&r.NodeID, &r.NodeName, &r.HasWord, &r.JobID, stamp{&r.FinishedAt}, &output, &r.OwedBefore, &fixes, &labels, &facts)
	if err != nil {
		return r, err
	}
	// Labels and facts come only when asked for (Selectable); as scanNode, what the store took was valid.
	if len(labels) > 0 {
		if err := json.Unmarshal(labels, &r.Labels); err != nil {
			return r, err
		}
	}
	if len(facts) > 0 {
		_ = json.Unmarshal(facts, &r.Facts)
	}
	// Scanning into []byte already copied the driver's buffer: the view reads 10,000 of these at once,
	// and a second copy each is measurable.
	if len(output) > 0 {
		r.Output = output
	}
	if len(fixes) > 0 {
		r.FixesBefore = fixes
	}
	return r, err
}
