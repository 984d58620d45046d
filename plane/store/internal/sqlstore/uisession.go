package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// maxCSRF bounds a session's CSRF token: the UI makes 43 characters of base64.
const maxCSRF = 128

func (s *sqlStore) UISessionCreate(ctx context.Context, p UISessionCreateParams) (UISession, error) {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return UISession{}, err
	}
	if err := checkID("token_id", p.TokenID); err != nil {
		return UISession{}, err
	}
	if len(p.CSRF) < 16 || len(p.CSRF) > maxCSRF || !ValidText(p.CSRF) {
		return UISession{}, invalid("csrf", "a CSRF token is 16 to %d bytes of text", maxCSRF)
	}
	t := now(p.Now)
	exp := now(p.ExpiresAt)
	if !exp.After(t) {
		return UISession{}, invalid("expires_at", "a session must expire after it starts")
	}
	out := UISession{CSRF: p.CSRF, CreatedAt: t, ExpiresAt: exp}
	err := s.tx(ctx, "create ui session", func(ex sqldb.Execer) error {
		tok, err := scanToken(ex.QueryRow(ctx, s.q.TokenGet, p.TokenID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.TokenNotFound, "no token %s", p.TokenID).With(errcode.DetailID, p.TokenID)
		}
		if err != nil {
			return err
		}
		if !tok.RevokedAt.IsZero() {
			return errcode.New(errcode.TokenRevoked, "token %s was revoked", tok.ID).With(errcode.DetailID, tok.ID)
		}
		out.Token = tok
		if _, err := ex.Exec(ctx, s.q.UISessionSweep, t); err != nil {
			return err
		}
		_, err = ex.Exec(ctx, s.q.UISessionInsert, p.IDHash, p.TokenID, p.CSRF, t, exp)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return invalid("id_hash", "a session with this id exists")
		}
		return err
	})
	if err != nil {
		return UISession{}, err
	}
	return out, nil
}

func (s *sqlStore) UISessionGet(ctx context.Context, p UISessionGetParams) (UISession, error) {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return UISession{}, err
	}
	var out UISession
	err := s.read(ctx, "get ui session", func(ex sqldb.Execer) error {
		var role string
		err := ex.QueryRow(ctx, s.q.UISessionGet, p.IDHash, now(p.Now)).Scan(&out.CSRF, stamp{&out.CreatedAt}, stamp{&out.ExpiresAt},
			&out.Token.ID, &out.Token.Name, &role, stamp{&out.Token.CreatedAt}, stamp{&out.Token.RevokedAt})
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.AuthSessionEnded, "the session is unknown or expired; sign in again")
		}
		out.Token.Role = Role(role)
		return err
	})
	if err != nil {
		return UISession{}, err
	}
	if !out.Token.RevokedAt.IsZero() {
		return UISession{}, errcode.New(errcode.TokenRevoked, "token %s was revoked", out.Token.ID).With(errcode.DetailID, out.Token.ID)
	}
	return out, nil
}

func (s *sqlStore) UISessionDelete(ctx context.Context, p UISessionDeleteParams) error {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return err
	}
	return s.tx(ctx, "delete ui session", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.UISessionDelete, p.IDHash)
		return err
	})
}
