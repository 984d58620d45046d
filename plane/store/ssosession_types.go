package store

import "time"

// SSOSession is a web UI browser of a person signed in through single sign-on: who the provider said
// they are, the role their groups gave at the last refresh, and the refresh token, sealed. The cookie's
// value is never stored: the store is keyed by its sha256.
type SSOSession struct {
	Subject, Name string
	Role          Role
	CSRF          string
	// RefreshSealed is the provider's refresh token as the plane sealed it.
	RefreshSealed []byte
	RefreshAt     time.Time
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

type SSOSessionCreateParams struct {
	IDHash        string // lowercase hex sha256 of the cookie's value
	Subject, Name string
	Role          Role
	CSRF          string
	RefreshSealed []byte
	RefreshAt     time.Time
	ExpiresAt     time.Time
	Now           time.Time
}

type SSOSessionGetParams struct {
	IDHash string
	Now    time.Time // a session that expired by then is not found
}

type SSOSessionRefreshParams struct {
	IDHash        string
	Name          string
	Role          Role
	RefreshSealed []byte
	RefreshAt     time.Time
	Now           time.Time
}

type SSOSessionDeleteParams struct {
	IDHash string
}
