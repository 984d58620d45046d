package store

import "time"

// Role is what a token may do: viewer reads; operator also runs words of class look and change; admin
// also runs destructive words, approves joins, and manages tokens and releases.
type Role string

const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// Token is an admin API token, without its hash.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

type TokenCreateParams struct {
	Name string
	Role Role
	Hash string // lowercase hex sha256 of the token's text
	Now  time.Time
}

type TokenGetByHashParams struct {
	Hash string
}

type TokenListParams struct {
	IncludeRevoked bool
}

type TokenRevokeParams struct {
	ID  string
	Now time.Time
}
