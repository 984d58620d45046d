package store

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
)

// NonceStore remembers the nonces of signed requests until they expire, across every replica.
type NonceStore interface {
	// NonceUse records a nonce of a key and reports whether it was fresh. false means it was seen
	// before and has not expired: the request is a replay and must be refused. A nonce whose earlier
	// use has expired counts as fresh; ExpiresAt must outlast the window in which the signature's
	// created time is accepted, so that such a request is refused for its clock anyway.
	NonceUse(ctx context.Context, p NonceUseParams) (fresh bool, err error)
	// NoncePurge deletes expired nonces and returns how many.
	NoncePurge(ctx context.Context, p NoncePurgeParams) (int64, error)
}

const maxNonceLen = 255

type NonceUseParams struct {
	KeyID     string // the signature's keyid
	Nonce     string
	ExpiresAt time.Time
	Now       time.Time
}

type NoncePurgeParams struct {
	Now time.Time
}

func (s *sqlStore) NonceUse(ctx context.Context, p NonceUseParams) (bool, error) {
	if p.KeyID == "" || len(p.KeyID) > maxNonceLen {
		return false, invalid("key_id", "key id must be 1 to %d bytes", maxNonceLen)
	}
	if p.Nonce == "" || len(p.Nonce) > maxNonceLen {
		return false, invalid("nonce", "nonce must be 1 to %d bytes", maxNonceLen)
	}
	t := now(p.Now)
	if !p.ExpiresAt.After(t) {
		return false, invalid("expires_at", "a nonce must expire after now")
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
