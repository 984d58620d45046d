package sqlstore

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

const maxNonceLen = 255

func (s *sqlStore) NonceUse(ctx context.Context, p NonceUseParams) (bool, error) {
	t := now(p.Now)
	if err := checkNonce(p, t); err != nil {
		return false, err
	}
	// One autocommit statement: an insert that changes no row met a live nonce.
	var n int64
	err := s.write(ctx, "use nonce", func(ex sqldb.Execer) error {
		var err error
		n, err = ex.Exec(ctx, s.q.NonceUse, p.KeyID, p.Nonce, now(p.ExpiresAt), t)
		return err
	})
	return n == 1 && err == nil, err
}

func (s *sqlStore) NoncePurge(ctx context.Context, p NoncePurgeParams) (int64, error) {
	var n int64
	err := s.write(ctx, "purge nonces", func(ex sqldb.Execer) error {
		var err error
		n, err = ex.Exec(ctx, s.q.NoncePurge, now(p.Now))
		return err
	})
	return n, err
}

// checkNonce checks a nonce to be recorded at t.
func checkNonce(p NonceUseParams, t time.Time) error {
	if p.KeyID == "" || len(p.KeyID) > maxNonceLen {
		return invalid("key_id", "key id must be 1 to %d bytes", maxNonceLen)
	}
	if p.Nonce == "" || len(p.Nonce) > maxNonceLen {
		return invalid("nonce", "nonce must be 1 to %d bytes", maxNonceLen)
	}
	if !p.ExpiresAt.After(t) {
		return invalid("expires_at", "a nonce must expire after now")
	}
	return nil
}
