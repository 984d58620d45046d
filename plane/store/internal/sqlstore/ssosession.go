package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Bounds of what a provider says of a person, and of a sealed refresh token.
const (
	maxSSOText   = 512
	maxSSOSealed = 8 << 10
)

func checkSSO(name string, role Role, sealed []byte) error {
	if len(name) == 0 || len(name) > maxSSOText || !ValidText(name) {
		return invalid("name", "a person's name is 1 to %d bytes of text", maxSSOText)
	}
	switch role {
	case RoleViewer, RoleOperator, RoleAdmin:
	default:
		return invalid("role", "role %q is not viewer, operator or admin", role)
	}
	if len(sealed) == 0 || len(sealed) > maxSSOSealed {
		return invalid("refresh_sealed", "a sealed refresh token is 1 to %d bytes", maxSSOSealed)
	}
	return nil
}

func (s *sqlStore) SSOSessionCreate(ctx context.Context, p SSOSessionCreateParams) (SSOSession, error) {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return SSOSession{}, err
	}
	if len(p.Subject) == 0 || len(p.Subject) > maxSSOText || !ValidText(p.Subject) {
		return SSOSession{}, invalid("subject", "a subject is 1 to %d bytes of text", maxSSOText)
	}
	if err := checkSSO(p.Name, p.Role, p.RefreshSealed); err != nil {
		return SSOSession{}, err
	}
	if len(p.CSRF) < 16 || len(p.CSRF) > maxCSRF || !ValidText(p.CSRF) {
		return SSOSession{}, invalid("csrf", "a CSRF token is 16 to %d bytes of text", maxCSRF)
	}
	t, exp, refresh := now(p.Now), now(p.ExpiresAt), now(p.RefreshAt)
	if !exp.After(t) {
		return SSOSession{}, invalid("expires_at", "a session must expire after it starts")
	}
	out := SSOSession{Subject: p.Subject, Name: p.Name, Role: p.Role, CSRF: p.CSRF, RefreshSealed: p.RefreshSealed,
		RefreshAt: refresh, CreatedAt: t, ExpiresAt: exp}
	err := s.tx(ctx, "create sso session", func(ex sqldb.Execer) error {
		if _, err := ex.Exec(ctx, s.q.SSOSessionSweep, t); err != nil {
			return err
		}
		_, err := ex.Exec(ctx, s.q.SSOSessionInsert, p.IDHash, p.Subject, p.Name, string(p.Role), p.CSRF, p.RefreshSealed, refresh, t, exp)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return invalid("id_hash", "a session with this id exists")
		}
		return err
	})
	if err != nil {
		return SSOSession{}, err
	}
	return out, nil
}

func (s *sqlStore) SSOSessionGet(ctx context.Context, p SSOSessionGetParams) (SSOSession, error) {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return SSOSession{}, err
	}
	var out SSOSession
	err := s.read(ctx, "get sso session", func(ex sqldb.Execer) error {
		var role string
		err := ex.QueryRow(ctx, s.q.SSOSessionGet, p.IDHash, now(p.Now)).Scan(&out.Subject, &out.Name, &role, &out.CSRF, &out.RefreshSealed,
			stamp{&out.RefreshAt}, stamp{&out.CreatedAt}, stamp{&out.ExpiresAt})
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.AuthSessionEnded, "the session is unknown or expired; sign in again")
		}
		out.Role = Role(role)
		return err
	})
	if err != nil {
		return SSOSession{}, err
	}
	return out, nil
}

func (s *sqlStore) SSOSessionRefresh(ctx context.Context, p SSOSessionRefreshParams) error {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return err
	}
	if err := checkSSO(p.Name, p.Role, p.RefreshSealed); err != nil {
		return err
	}
	return s.tx(ctx, "refresh sso session", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.SSOSessionRefresh, p.IDHash, p.Name, string(p.Role), p.RefreshSealed, now(p.RefreshAt), now(p.Now))
		if err != nil {
			return err
		}
		if n == 0 {
			return errcode.New(errcode.AuthSessionEnded, "the session is unknown or expired; sign in again")
		}
		return nil
	})
}

func (s *sqlStore) SSOSessionDelete(ctx context.Context, p SSOSessionDeleteParams) error {
	if err := checkHash("id_hash", p.IDHash); err != nil {
		return err
	}
	return s.tx(ctx, "delete sso session", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.SSOSessionDelete, p.IDHash)
		return err
	})
}
