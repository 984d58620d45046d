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

// MaxTokenName bounds a token's name in bytes. A token's name is who the store records as having done a
// thing, so every actor field ("by") has the same bound; the web UI's form and the tokens room use it
// too, so the three cannot disagree.
const MaxTokenName = 255

// ValidRole reports whether r is one of the three roles.
func ValidRole(r Role) bool { return r == RoleViewer || r == RoleOperator || r == RoleAdmin }

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
