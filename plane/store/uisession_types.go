package store

import "time"

// UISession is a signed-in web UI browser: the token it acts as, read again with the session so that
// a revoked token ends it, and the CSRF token its forms carry. The cookie's value is never stored:
// the store is keyed by its sha256.
type UISession struct {
	Token     Token
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

type UISessionCreateParams struct {
	IDHash    string // lowercase hex sha256 of the cookie's value
	TokenID   string
	CSRF      string
	ExpiresAt time.Time
	Now       time.Time
}

type UISessionGetParams struct {
	IDHash string
	Now    time.Time // a session that expired by then is not found
}

type UISessionDeleteParams struct {
	IDHash string
}
