package store

import "time"

type NonceUseParams struct {
	KeyID     string // the signature's keyid
	Nonce     string
	ExpiresAt time.Time
	Now       time.Time
}

type NoncePurgeParams struct {
	Now time.Time
}
