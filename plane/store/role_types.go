package store

import (
	"encoding/json"
	"regexp"
	"time"
)

// MaxRoleSpec bounds a role version's spec (its rendered footprint as JSON).
const MaxRoleSpec = 4 << 20

// RoleVersion is one version of a role: its spec as the roles room rendered it (the store does not read
// it), who made it and when. A role's newest version is the role.
type RoleVersion struct {
	Name      string          `json:"name"`
	Version   int             `json:"version"`
	Spec      json.RawMessage `json:"spec"`
	CreatedAt time.Time       `json:"created_at"`
	CreatedBy string          `json:"created_by"`
}

// RoleContent is the content of one file a role version names, stored as an artifact by its sha256.
type RoleContent struct {
	Digest string // lowercase hex sha256 of Data
	Data   []byte
}

// RolePutParams makes a role (RoleCreate, version 1) or its next version (RoleEdit). Contents are the
// files the spec names, by digest; content already stored is not sent again. Base, for an edit, is the
// version the edit was made from: the edit is refused when the role has moved past it (0 takes
// whatever is newest).
type RolePutParams struct {
	Name     string
	Spec     json.RawMessage
	Contents []RoleContent
	Base     int
	By       string
	Now      time.Time
}

type RoleGetParams struct {
	Name    string
	Version int // 0: the newest
}

type RoleListParams struct{}

type RoleHistoryParams struct {
	Name string
}

// RoleAssignment carries a role to the nodes a selector picks (the rollouts' selector: "all", names, or
// labels), now and as nodes come and change.
type RoleAssignment struct {
	Role      string    `json:"role"`
	Selector  string    `json:"selector"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
}

type RoleAssignParams struct {
	Role     string
	Selector string
	By       string
	Now      time.Time
}

type RoleUnassignParams struct {
	Role     string
	Selector string
}

type RoleAssignmentListParams struct {
	Role string // "": every role's
}

// MaxSelector bounds an assignment's selector.
const MaxSelector = 1024

var roleNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// ValidRoleName reports whether name can name a role: 1 to 63 of a-z, 0-9 and '-', starting with a
// letter.
func ValidRoleName(name string) bool { return roleNameRE.MatchString(name) }
