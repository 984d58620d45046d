package sqlstore

import (
	"context"
	"regexp"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func checkHash(field, h string) error {
	if !hashRE.MatchString(h) {
		return invalid(field, "%s must be a lowercase hex sha256", field)
	}
	return nil
}

func (s *sqlStore) TokenCreate(ctx context.Context, p TokenCreateParams) (Token, error) {
	if p.Name == "" || len(p.Name) > maxActorLen {
		return Token{}, invalid("name", "token name must be 1 to %d bytes", maxActorLen)
	}
	if !ValidRole(p.Role) {
		return Token{}, invalid("role", "role %q is not viewer, operator or admin", p.Role)
	}
	if err := checkHash("hash", p.Hash); err != nil {
		return Token{}, err
	}
	t := now(p.Now)
	tok := Token{ID: s.ids.next("token_", t), Name: p.Name, Role: p.Role, CreatedAt: t}
	err := s.tx(ctx, "create token", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.TokenInsert, tok.ID, tok.Name, string(tok.Role), p.Hash, tok.CreatedAt)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return errcode.New(errcode.TokenExists, "a token with this hash is already stored")
		}
		return err
	})
	if err != nil {
		return Token{}, err
	}
	return tok, nil
}

func (s *sqlStore) TokenGetByHash(ctx context.Context, p TokenGetByHashParams) (Token, error) {
	if err := checkHash("hash", p.Hash); err != nil {
		return Token{}, err
	}
	var tok Token
	err := s.read(ctx, "get token", func(ex sqldb.Execer) error {
		var err error
		tok, err = scanToken(ex.QueryRow(ctx, s.q.TokenGetByHash, p.Hash))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.TokenNotFound, "no such token")
		}
		return err
	})
	if err != nil {
		return Token{}, err
	}
	if !tok.RevokedAt.IsZero() {
		return Token{}, errcode.New(errcode.TokenRevoked, "token %s was revoked", tok.ID).With(errcode.DetailID, tok.ID)
	}
	return tok, nil
}

func (s *sqlStore) TokenList(ctx context.Context, p TokenListParams) ([]Token, error) {
	var out []Token
	err := s.read(ctx, "list tokens", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.TokenList, p.IncludeRevoked)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			tok, err := scanToken(rs)
			if err != nil {
				return err
			}
			out = append(out, tok)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) TokenRevoke(ctx context.Context, p TokenRevokeParams) (Token, error) {
	if err := checkID("id", p.ID); err != nil {
		return Token{}, err
	}
	var tok Token
	err := s.tx(ctx, "revoke token", func(ex sqldb.Execer) error {
		var err error
		tok, err = scanToken(ex.QueryRow(ctx, s.q.TokenRevoke, p.ID, now(p.Now)))
		if s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		cur, err := scanToken(ex.QueryRow(ctx, s.q.TokenGet, p.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.TokenNotFound, "no token %s", p.ID).With(errcode.DetailID, p.ID)
		}
		if err != nil {
			return err
		}
		return errcode.New(errcode.TokenRevoked, "token %s was already revoked", cur.ID).With(errcode.DetailID, cur.ID)
	})
	return tok, err
}

func scanToken(r sqldb.Row) (Token, error) {
	var tok Token
	var role string
	if err := r.Scan(&tok.ID, &tok.Name, &role, stamp{&tok.CreatedAt}, stamp{&tok.RevokedAt}); err != nil {
		return Token{}, err
	}
	tok.Role = Role(role)
	return tok, nil
}
