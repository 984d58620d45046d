package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Defaults of the detectors and of reopening (store.DefaultRefusalThreshold is the exported one).
const (
	defaultSilentAfter   = DefaultSilentAfter
	defaultLostThreshold = 0 // more than this many lost jobs in detectorWindow
	detectorWindow       = time.Hour
	defaultReopenWithin  = time.Hour
	maxReopenWithin      = 7 * 24 * time.Hour
)

// reasonClearedUnseen is the plane's reason for resolving an incident nobody triaged before it cleared.
const reasonClearedUnseen = "cleared before anyone looked"

func checkNotify(names []string) error {
	if len(names) > MaxWebhooks {
		return invalid("notify", "%d webhooks, at most %d", len(names), MaxWebhooks)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !ValidWebhookName(n) || seen[n] {
			return invalid("notify", "webhook name %q is not a name, or is given twice", n)
		}
		seen[n] = true
	}
	return nil
}

func checkReopen(d time.Duration) error {
	if d < 0 || d > maxReopenWithin {
		return invalid("reopen_within", "reopen_within %s is outside [0, %s]", d, maxReopenWithin)
	}
	return nil
}

func reopenWithin(d time.Duration) time.Duration {
	if d == 0 {
		return defaultReopenWithin
	}
	return d
}

// incidentWriter opens, reopens and clears incidents inside a transaction, writing their events and
// notifications, and keeps the changes it made.
type incidentWriter struct {
	s            *sqlStore
	ctx          context.Context
	ex           sqldb.Execer
	t            time.Time
	reopenWithin time.Duration
	notify       []string
	changes      []IncidentChange
}

// raise says a condition is happening.
type raise struct {
	nodeID, source string
	subject        string // what a plane incident is about; "" for a node's
	severity       Severity
	summary        string
	caseID         int64
	actor, text    string
	quiet          bool // write no notifications: the plane learnt of it after it cleared
}

// raise opens the condition's incident, unless it is open already: it reopens the incident that cleared
// within reopenWithin, or opens a new one. Opening and reopening queue the notifications.
func (w *incidentWriter) raise(r raise) error {
	if _, found, err := w.find(w.s.q.IncidentOpenFor, r.nodeID, r.source, r.subject); err != nil || found {
		return err
	}
	latest, found, err := w.find(w.s.q.IncidentLatestFor, r.nodeID, r.source, r.subject)
	if err != nil {
		return err
	}
	id, kind := "", EventOpened
	if found && latest.Condition == ConditionCleared && w.t.Sub(latest.ClearedAt) <= w.reopenWithin {
		id, kind = latest.ID, EventReopened
		if _, err := w.ex.Exec(w.ctx, w.s.q.IncidentReopen, id, w.t, string(r.severity), r.summary, r.caseID); err != nil {
			return err
		}
	} else {
		id = w.s.ids.next("inc_", w.t)
		if _, err := w.ex.Exec(w.ctx, w.s.q.IncidentInsert, id, r.nodeID, r.source, string(r.severity), r.summary, r.caseID, w.t, r.subject); err != nil {
			return w.busyOnUnique(err, r)
		}
	}
	ev, err := w.event(id, IncidentEvent{Kind: kind, Actor: r.actor, Text: r.text})
	if err != nil {
		return err
	}
	queued := 0
	if !r.quiet {
		for _, hook := range w.notify {
			if _, err := w.ex.Exec(w.ctx, w.s.q.NotificationInsert, w.s.ids.next("ntf_", w.t), id, int64(ev.Seq), hook,
				string(kind), w.t); err != nil {
				return err
			}
			queued++
		}
	}
	return w.changed(id, ev, queued)
}

// busyOnUnique turns a lost race for the one open incident of a condition into store.busy: another
// transaction opened it between our look and our insert, which the locks taken before should prevent.
func (w *incidentWriter) busyOnUnique(err error, r raise) error {
	if w.s.drv.Kind(err) == sqldb.ErrUnique {
		return errcode.Wrap(err, errcode.StoreBusy, "incident %s on node %q subject %q was opened meanwhile", r.source, r.nodeID, r.subject)
	}
	return err
}

// clearSource clears the open incident of a node's condition, if it has one.
func (w *incidentWriter) clearSource(nodeID, source, actor, text string) error {
	inc, found, err := w.find(w.s.q.IncidentOpenFor, nodeID, source, "")
	if err != nil || !found {
		return err
	}
	return w.clear(inc, actor, text)
}

// clear says an open incident's condition stopped. If nobody had triaged it, the plane resolves it.
func (w *incidentWriter) clear(inc Incident, actor, text string) error {
	n, err := w.ex.Exec(w.ctx, w.s.q.IncidentClear, inc.ID, w.t)
	if err != nil || n == 0 {
		return err
	}
	ev, err := w.event(inc.ID, IncidentEvent{Kind: EventCleared, Actor: actor, Text: text})
	if err != nil {
		return err
	}
	queued, err := w.notifyCleared(inc.ID, ev)
	if err != nil {
		return err
	}
	if err := w.changed(inc.ID, ev, queued); err != nil {
		return err
	}
	if inc.Triage != TriageNew {
		return nil
	}
	if _, err := w.ex.Exec(w.ctx, w.s.q.IncidentSetTriage, inc.ID, string(TriageResolved), nil, w.t, AuthorPlane,
		reasonClearedUnseen); err != nil {
		return err
	}
	ev, err = w.event(inc.ID, IncidentEvent{Kind: EventTriage, Actor: AuthorPlane, Triage: TriageResolved, Text: reasonClearedUnseen})
	if err != nil {
		return err
	}
	return w.changed(inc.ID, ev, 0)
}

// notifyCleared queues a cleared notification for each webhook told of the incident's latest opening or
// reopening, so a PagerDuty alert it triggered is resolved under the same dedup key. When that opening
// told no webhook (the plane learnt of it after it cleared, or none was configured), or its webhooks were
// already told it cleared, nothing is queued.
func (w *incidentWriter) notifyCleared(id string, ev IncidentEvent) (int, error) {
	sent, err := w.s.notifications(w.ctx, w.ex, w.s.q.NotificationList, id)
	if err != nil {
		return 0, err
	}
	opened, cleared := 0, 0 // the event seq of the latest notified opening and clearing
	for _, n := range sent {
		if n.Kind == EventCleared {
			cleared = max(cleared, n.EventSeq)
		} else {
			opened = max(opened, n.EventSeq)
		}
	}
	if opened == 0 || cleared > opened {
		return 0, nil
	}
	queued := 0
	for _, n := range sent {
		if n.Kind == EventCleared || n.EventSeq != opened {
			continue
		}
		if _, err := w.ex.Exec(w.ctx, w.s.q.NotificationInsert, w.s.ids.next("ntf_", w.t), id, int64(ev.Seq), n.Webhook,
			string(EventCleared), w.t); err != nil {
			return queued, err
		}
		queued++
	}
	return queued, nil
}

// caseMoved points the recipe's open incident at the case that superseded the one it followed.
func (w *incidentWriter) caseMoved(nodeID, source string, from, to int64, summary string) error {
	inc, found, err := w.find(w.s.q.IncidentOpenFor, nodeID, source, "")
	if err != nil || !found || inc.CaseID == to {
		return err
	}
	if _, err := w.ex.Exec(w.ctx, w.s.q.IncidentSetCase, inc.ID, to, summary); err != nil {
		return err
	}
	ev, err := w.event(inc.ID, IncidentEvent{Kind: EventNote, Actor: AuthorPlane,
		Text: fmt.Sprintf("case %d follows case %d, whose close went unheard: %s", to, from, summary)})
	if err != nil {
		return err
	}
	return w.changed(inc.ID, ev, 0)
}

// event appends e to the incident's timeline, numbering it under the incident's row lock.
func (w *incidentWriter) event(id string, e IncidentEvent) (IncidentEvent, error) {
	return writeEvent(w.ctx, w.s, w.ex, id, w.t, e)
}

func writeEvent(ctx context.Context, s *sqlStore, ex sqldb.Execer, id string, t time.Time, e IncidentEvent) (IncidentEvent, error) {
	var seq int64
	if err := ex.QueryRow(ctx, s.q.IncidentEventNext, id).Scan(&seq); err != nil {
		return e, err
	}
	e.IncidentID, e.Seq, e.At = id, int(seq), t
	_, err := ex.Exec(ctx, s.q.IncidentEventInsert, id, seq, t, string(e.Kind), e.Actor, string(e.Triage), at(e.SnoozedUntil), e.Text)
	return e, err
}

func (w *incidentWriter) changed(id string, ev IncidentEvent, queued int) error {
	inc, err := scanIncident(w.ex.QueryRow(w.ctx, w.s.q.IncidentGet, id))
	if err != nil {
		return err
	}
	inc.NeedsYou = inc.NeedsYouAt(w.t)
	w.changes = append(w.changes, IncidentChange{Incident: inc, Event: ev, Notifications: queued})
	return nil
}

func (w *incidentWriter) find(query, nodeID, source, subject string) (Incident, bool, error) {
	inc, err := scanIncident(w.ex.QueryRow(w.ctx, query, nodeID, source, subject))
	if w.s.drv.Kind(err) == sqldb.ErrNoRows {
		return Incident{}, false, nil
	}
	return inc, err == nil, err
}

func (s *sqlStore) IncidentGet(ctx context.Context, p IncidentGetParams) (Incident, error) {
	if err := checkID("id", p.ID); err != nil {
		return Incident{}, err
	}
	var inc Incident
	err := s.read(ctx, "get incident", func(ex sqldb.Execer) error {
		var err error
		inc, err = s.incidentGet(ctx, ex, s.q.IncidentGet, p.ID)
		return err
	})
	inc.NeedsYou = inc.NeedsYouAt(now(p.Now))
	return inc, err
}

func (s *sqlStore) incidentGet(ctx context.Context, ex sqldb.Execer, query, id string) (Incident, error) {
	inc, err := scanIncident(ex.QueryRow(ctx, query, id))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Incident{}, errcode.New(errcode.IncidentNotFound, "no incident %s", id).With(errcode.DetailID, id)
	}
	return inc, err
}

func (s *sqlStore) IncidentCount(ctx context.Context, _ IncidentCountParams) ([]IncidentCount, error) {
	var out []IncidentCount
	err := s.read(ctx, "count incidents", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.IncidentCount)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var cond, triage string
			var n int64
			if err := rs.Scan(&cond, &triage, &n); err != nil {
				return err
			}
			out = append(out, IncidentCount{Condition: Condition(cond), Triage: Triage(triage), Count: n})
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) IncidentList(ctx context.Context, p IncidentListParams) (IncidentListResult, error) {
	switch p.Condition {
	case "", ConditionOpen, ConditionCleared:
	default:
		return IncidentListResult{}, invalid("condition", "condition %q is not open or cleared", p.Condition)
	}
	if p.NodeID != "" {
		if err := checkID("node_id", p.NodeID); err != nil {
			return IncidentListResult{}, err
		}
	}
	if err := checkCursor(p.Cursor); err != nil {
		return IncidentListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return IncidentListResult{}, err
	}
	t := now(p.Now)
	var res IncidentListResult
	err = s.read(ctx, "list incidents", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.IncidentList, p.NodeID, p.NeedsYou, t, string(p.Condition), p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			inc, err := scanIncident(rs)
			if err != nil {
				return err
			}
			inc.NeedsYou = inc.NeedsYouAt(t)
			res.Incidents = append(res.Incidents, inc)
		}
		return rs.Err()
	})
	if len(res.Incidents) > limit {
		res.Incidents = res.Incidents[:limit]
		res.NextCursor = res.Incidents[limit-1].ID
	}
	return res, err
}

func (s *sqlStore) IncidentEventList(ctx context.Context, p IncidentEventListParams) ([]IncidentEvent, error) {
	if err := checkID("id", p.ID); err != nil {
		return nil, err
	}
	var out []IncidentEvent
	err := s.read(ctx, "list incident events", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.IncidentEvents, p.ID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var e IncidentEvent
			var kind, triage string
			if err := rs.Scan(&e.IncidentID, &e.Seq, stamp{&e.At}, &kind, &e.Actor, &triage, stamp{&e.SnoozedUntil}, &e.Text); err != nil {
				return err
			}
			e.Kind, e.Triage = EventKind(kind), Triage(triage)
			out = append(out, e)
		}
		if err := rs.Err(); err != nil {
			return err
		}
		if len(out) == 0 {
			// Every incident has its opened event: none means no incident.
			_, err := s.incidentGet(ctx, ex, s.q.IncidentGet, p.ID)
			return err
		}
		return nil
	})
	return out, err
}

func validTriage(t Triage) bool {
	return t == TriageNew || t == TriageSnoozed || t == TriageResolved || t == TriageIgnored
}

func checkIncidentTriage(p *IncidentTriageParams, t time.Time) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	if !validTriage(p.Triage) {
		return invalid("triage", "triage %q is not new, snoozed, resolved or ignored", p.Triage)
	}
	if (p.Triage == TriageSnoozed) != !p.SnoozedUntil.IsZero() {
		return invalid("snoozed_until", "a snooze needs a time, and only a snooze has one")
	}
	if p.Triage == TriageSnoozed && !p.SnoozedUntil.After(t) {
		return invalid("snoozed_until", "a snooze must end after now")
	}
	if p.By == "" || len(p.By) > maxActorLen {
		return invalid("by", "by must be 1 to %d bytes", maxActorLen)
	}
	if len(p.Reason) > MaxMessageLen || !ValidText(p.Reason) {
		return invalid("reason", "reason is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	return nil
}

func (s *sqlStore) IncidentTriage(ctx context.Context, p IncidentTriageParams) (IncidentChange, error) {
	t := now(p.Now)
	if err := checkIncidentTriage(&p, t); err != nil {
		return IncidentChange{}, err
	}
	var ch IncidentChange
	err := s.tx(ctx, "triage incident", func(ex sqldb.Execer) error {
		cur, err := s.incidentGet(ctx, ex, s.q.IncidentGetForUpdate, p.ID)
		if err != nil {
			return err
		}
		var until time.Time
		if p.Triage == TriageSnoozed {
			until = p.SnoozedUntil.UTC().Truncate(time.Microsecond)
		}
		if cur.Triage == p.Triage && cur.SnoozedUntil.Equal(until) {
			cur.NeedsYou = cur.NeedsYouAt(t)
			ch = IncidentChange{Incident: cur}
			return nil
		}
		if _, err := ex.Exec(ctx, s.q.IncidentSetTriage, p.ID, string(p.Triage), at(until), t, p.By, p.Reason); err != nil {
			return err
		}
		ev, err := writeEvent(ctx, s, ex, p.ID, t, IncidentEvent{Kind: EventTriage, Actor: p.By, Triage: p.Triage,
			SnoozedUntil: until, Text: p.Reason})
		if err != nil {
			return err
		}
		inc, err := s.incidentGet(ctx, ex, s.q.IncidentGet, p.ID)
		inc.NeedsYou = inc.NeedsYouAt(t)
		ch = IncidentChange{Incident: inc, Event: ev}
		return err
	})
	return ch, err
}

func (s *sqlStore) IncidentNote(ctx context.Context, p IncidentNoteParams) (IncidentEvent, error) {
	if err := checkID("id", p.ID); err != nil {
		return IncidentEvent{}, err
	}
	if p.By == "" || len(p.By) > maxActorLen {
		return IncidentEvent{}, invalid("by", "by must be 1 to %d bytes", maxActorLen)
	}
	if p.Text == "" || len(p.Text) > MaxMessageLen || !ValidText(p.Text) {
		return IncidentEvent{}, invalid("text", "a note is 1 to %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	t := now(p.Now)
	var ev IncidentEvent
	err := s.tx(ctx, "note incident", func(ex sqldb.Execer) error {
		if _, err := s.incidentGet(ctx, ex, s.q.IncidentGetForUpdate, p.ID); err != nil {
			return err
		}
		var err error
		ev, err = writeEvent(ctx, s, ex, p.ID, t, IncidentEvent{Kind: EventNote, Actor: p.By, Text: p.Text})
		return err
	})
	return ev, err
}

func scanIncident(r sqldb.Row) (Incident, error) {
	var i Incident
	var severity, condition, triage string
	var events int64
	if err := r.Scan(&i.ID, &i.NodeID, &i.NodeName, &i.Source, &i.Subject, &severity, &condition, &triage, stamp{&i.SnoozedUntil},
		&i.Summary, &i.CaseID, stamp{&i.OpenedAt}, stamp{&i.ChangedAt}, stamp{&i.ClearedAt}, stamp{&i.TriagedAt},
		&i.TriagedBy, &i.Reason, &events); err != nil {
		return Incident{}, err
	}
	i.Severity, i.Condition, i.Triage, i.Events = Severity(severity), Condition(condition), Triage(triage), int(events)
	return i, nil
}
