package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func (s *sqlStore) EnrolmentCreate(ctx context.Context, p EnrolmentCreateParams) (Enrolment, error) {
	if err := checkTokenHash(p.TokenHash); err != nil {
		return Enrolment{}, invalid("token_hash", "the token's hash is not 64 lowercase hex digits")
	}
	if len(p.Labels) > MaxLabels {
		return Enrolment{}, invalid("labels", "a node carries at most %d labels", MaxLabels)
	}
	for k, v := range p.Labels {
		if !ValidLabelKey(k) || !ValidLabelValue(v) {
			return Enrolment{}, invalid("labels", "label %s=%s is not a label", k, v)
		}
	}
	if err := checkActor(p.By); err != nil {
		return Enrolment{}, err
	}
	t := now(p.Now)
	if !p.ExpiresAt.After(t) {
		return Enrolment{}, invalid("expires_at", "an enrolment expires after it is made")
	}
	if err := s.usable(); err != nil {
		return Enrolment{}, err
	}
	labels := p.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	text, _ := json.Marshal(labels)
	e := Enrolment{ID: s.ids.next("enrol_", t), Labels: p.Labels, Approve: p.Approve, ExpiresAt: p.ExpiresAt.UTC().Truncate(time.Microsecond),
		CreatedBy: p.By, CreatedAt: t}
	if _, err := s.drv.Writer().Exec(ctx, s.q.EnrolmentInsert, e.ID, p.TokenHash, string(text), e.Approve, e.ExpiresAt, e.CreatedBy, e.CreatedAt); err != nil {
		return Enrolment{}, s.fail(err, "record enrolment")
	}
	return e, nil
}

func scanEnrolment(r sqldb.Row) (Enrolment, error) {
	var e Enrolment
	var labels string
	if err := r.Scan(&e.ID, &labels, &e.Approve, stamp{&e.ExpiresAt}, stamp{&e.UsedAt}, &e.JoinID, &e.CreatedBy, stamp{&e.CreatedAt}); err != nil {
		return Enrolment{}, err
	}
	if err := json.Unmarshal([]byte(labels), &e.Labels); err != nil {
		return Enrolment{}, err
	}
	if len(e.Labels) == 0 {
		e.Labels = nil
	}
	return e, nil
}

// enrolmentUsable refuses a token that is spent or past its expiry.
func enrolmentUsable(e Enrolment, t time.Time) error {
	switch {
	case !e.UsedAt.IsZero():
		return errcode.New(errcode.ProvisionTokenUsed, "this enrolment token was already used by join %s", e.JoinID).With(errcode.DetailID, e.ID)
	case !t.Before(e.ExpiresAt):
		return errcode.New(errcode.ProvisionTokenExpired, "this enrolment token expired at %s", e.ExpiresAt.Format(time.RFC3339)).
			With(errcode.DetailExpiresAt, e.ExpiresAt)
	}
	return nil
}

func (s *sqlStore) EnrolmentTokenCheck(ctx context.Context, p EnrolmentTokenParams) (Enrolment, error) {
	if err := checkTokenHash(p.TokenHash); err != nil {
		return Enrolment{}, err
	}
	var e Enrolment
	err := s.read(ctx, "check enrolment token", func(ex sqldb.Execer) error {
		var err error
		e, err = scanEnrolment(ex.QueryRow(ctx, s.q.EnrolmentGetByToken, p.TokenHash))
		return err
	})
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Enrolment{}, errcode.New(errcode.ProvisionTokenInvalid, "no enrolment minted this token")
	}
	if err != nil {
		return Enrolment{}, err
	}
	return e, enrolmentUsable(e, now(p.Now))
}

func (s *sqlStore) EnrolmentTokenUse(ctx context.Context, p EnrolmentTokenParams) (Enrolment, error) {
	if p.JoinID == "" || len(p.JoinID) > MaxRefLen {
		return Enrolment{}, invalid("join_id", "a token is spent on a join")
	}
	if err := checkTokenHash(p.TokenHash); err != nil {
		return Enrolment{}, err
	}
	if err := s.usable(); err != nil {
		return Enrolment{}, err
	}
	t := now(p.Now)
	// Autocommit: the conditional update is the rule (one join per token).
	e, err := scanEnrolment(s.drv.Writer().QueryRow(ctx, s.q.EnrolmentUse, p.TokenHash, t, p.JoinID))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		if _, cerr := s.EnrolmentTokenCheck(ctx, EnrolmentTokenParams{TokenHash: p.TokenHash, Now: t}); cerr != nil {
			return Enrolment{}, cerr
		}
		return Enrolment{}, errcode.New(errcode.ProvisionTokenUsed, "this enrolment token was used by another join at the same moment")
	}
	if err != nil {
		return Enrolment{}, s.fail(err, "spend enrolment token")
	}
	return e, nil
}
