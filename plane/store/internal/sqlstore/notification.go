package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Bounds of delivery (the defaults are store.DefaultNotificationLease and DefaultNotificationAttempts).
const (
	maxNotificationAttempts = 100
	maxNotificationClaim    = 100
)

func defaults(p *NotificationClaimParams) error {
	if len(p.Webhooks) == 0 {
		return invalid("webhooks", "name at least one webhook")
	}
	if err := checkNotify(p.Webhooks); err != nil {
		return err
	}
	switch {
	case p.Lease == 0:
		p.Lease = DefaultNotificationLease
	case p.Lease < time.Second || p.Lease > time.Hour:
		return invalid("lease", "lease %s is outside [1s, 1h]", p.Lease)
	}
	switch {
	case p.Limit == 0:
		p.Limit = 10
	case p.Limit < 0 || p.Limit > maxNotificationClaim:
		return invalid("limit", "limit %d is outside 1..%d", p.Limit, maxNotificationClaim)
	}
	switch {
	case p.MaxAttempts == 0:
		p.MaxAttempts = DefaultNotificationAttempts
	case p.MaxAttempts < 0 || p.MaxAttempts > maxNotificationAttempts:
		return invalid("max_attempts", "max_attempts %d is outside 1..%d", p.MaxAttempts, maxNotificationAttempts)
	}
	return nil
}

func (s *sqlStore) NotificationClaim(ctx context.Context, p NotificationClaimParams) ([]Notification, error) {
	if err := defaults(&p); err != nil {
		return nil, err
	}
	t := now(p.Now)
	hooks, _ := json.Marshal(p.Webhooks)
	holder := s.ids.next("lease_", t)
	var out []Notification
	err := s.tx(ctx, "claim notifications", func(ex sqldb.Execer) error {
		out = nil
		if _, err := ex.Exec(ctx, s.q.NotificationExhaust, t, int64(p.MaxAttempts)); err != nil {
			return err
		}
		rs, err := s.notifications(ctx, ex, s.q.NotificationClaim, t, t.Add(p.Lease), holder, int64(p.MaxAttempts),
			string(hooks), int64(p.Limit))
		if err != nil {
			return err
		}
		for _, n := range rs {
			if _, err := ex.Exec(ctx, s.q.NotificationAttemptInsert, n.ID, int64(n.Attempts), t, holder); err != nil {
				return err
			}
			n.Lease = holder
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

func checkNotificationRecord(p *NotificationRecordParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	if err := checkID("lease", p.Lease); err != nil {
		return err
	}
	if p.Status < 0 || p.Status > 999 || p.Duration < 0 {
		return invalid("status", "status is an HTTP status or 0, and duration cannot be negative")
	}
	if len(p.Error) > MaxMessageLen || !ValidText(p.Error) {
		return invalid("error", "error is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	if p.Delivered && !p.RetryAt.IsZero() {
		return invalid("retry_at", "a delivered notification is not retried")
	}
	return nil
}

func (s *sqlStore) NotificationRecord(ctx context.Context, p NotificationRecordParams) (Notification, error) {
	if err := checkNotificationRecord(&p); err != nil {
		return Notification{}, err
	}
	t := now(p.Now)
	state, next, finished := NotificationFailed, t, any(t)
	switch {
	case p.Delivered:
		state = NotificationDelivered
	case !p.RetryAt.IsZero():
		state, next, finished = NotificationPending, now(p.RetryAt), nil
	}
	var n Notification
	err := s.tx(ctx, "record notification", func(ex sqldb.Execer) error {
		list, err := s.notifications(ctx, ex, s.q.NotificationRecord, p.ID, p.Lease, string(state), next, p.Error, finished)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			cur, err := s.notifications(ctx, ex, s.q.NotificationGet, p.ID)
			if err != nil {
				return err
			}
			if len(cur) == 0 {
				return errcode.New(errcode.NotificationNotFound, "no notification %s", p.ID).With(errcode.DetailID, p.ID)
			}
			return errcode.New(errcode.NotificationLeaseLost,
				"notification %s is %s and no longer held by this lease; the outcome was not recorded", p.ID, cur[0].State).
				With(errcode.DetailID, p.ID).With(errcode.DetailState, string(cur[0].State))
		}
		n = list[0]
		_, err = ex.Exec(ctx, s.q.NotificationAttemptUpdate, p.ID, int64(n.Attempts), int64(p.Status), p.Error,
			p.Duration.Milliseconds())
		return err
	})
	return n, err
}

func (s *sqlStore) NotificationList(ctx context.Context, p NotificationListParams) ([]Notification, error) {
	if err := checkID("incident_id", p.IncidentID); err != nil {
		return nil, err
	}
	var out []Notification
	err := s.read(ctx, "list notifications", func(ex sqldb.Execer) error {
		var err error
		if out, err = s.notifications(ctx, ex, s.q.NotificationList, p.IncidentID); err != nil {
			return err
		}
		index := map[string]int{}
		for i, n := range out {
			index[n.ID] = i
		}
		rs, err := ex.Query(ctx, s.q.NotificationAttempts, p.IncidentID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id string
			var a NotificationAttempt
			var attempt, status int64
			if err := rs.Scan(&id, &attempt, stamp{&a.At}, &status, &a.Error, &a.Duration); err != nil {
				return err
			}
			a.Attempt, a.Status = int(attempt), int(status)
			if i, ok := index[id]; ok {
				out[i].History = append(out[i].History, a)
			}
		}
		return rs.Err()
	})
	return out, err
}

// notifications runs a query that returns notification rows, reading them all before returning (a
// transaction runs its next statement on the same connection).
func (s *sqlStore) notifications(ctx context.Context, ex sqldb.Execer, query string, args ...any) ([]Notification, error) {
	rs, err := ex.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Notification
	for rs.Next() {
		var n Notification
		var seq, attempts int64
		var kind, state string
		if err := rs.Scan(&n.ID, &n.IncidentID, &seq, &n.Webhook, &kind, &state, &attempts, stamp{&n.NextAt},
			&n.LastError, stamp{&n.CreatedAt}, stamp{&n.FinishedAt}); err != nil {
			return nil, err
		}
		n.EventSeq, n.Attempts, n.Kind, n.State = int(seq), int(attempts), EventKind(kind), NotificationState(state)
		out = append(out, n)
	}
	return out, rs.Err()
}
