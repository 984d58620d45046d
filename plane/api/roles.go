package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/url"
	"time"
)

//go:embed role.schema.json
var roleSchema []byte

// RoleSchema is the published JSON Schema (draft 2020-12) of a role file, the document `lexicon roles
// create` and `edit` send. The plane holds every role file to it, and to the footprint's own rules.
func RoleSchema() []byte { return bytes.Clone(roleSchema) }

// RoleFile is the body of POST /roles and POST /roles/{name}/versions: a role file, YAML or JSON, as
// its text. Base, for an edit, is the version the edit was made from: the edit is refused with
// role.stale when the role has moved past it (0 edits whatever is newest).
type RoleFile struct {
	File string `json:"file"`
	Base int    `json:"base,omitempty"`
}

// RoleVersion is one version of a role (Role is a token's). Footprint is the role's own footprint (lexicon/footprint/v1: each
// file by sha256 and size, every default filled in); Items counts its items. Show adds the role's
// assignments and the active nodes that carry it now.
type RoleVersion struct {
	Name        string           `json:"name"`
	Version     int              `json:"version"`
	Description string           `json:"description,omitempty"`
	Enforce     bool             `json:"enforce"`
	Items       int              `json:"items"`
	Footprint   json.RawMessage  `json:"footprint,omitempty"`
	CreatedBy   string           `json:"created_by"`
	CreatedAt   time.Time        `json:"created_at"`
	Assignments []RoleAssignment `json:"assignments,omitempty"`
	Nodes       []string         `json:"nodes,omitempty"`
}

// RoleList is the answer of GET /roles: every role's newest version, by name.
type RoleList struct {
	Roles []RoleVersion `json:"roles"`
}

// RoleHistory is the answer of GET /roles/{name}/versions: every version, newest first.
type RoleHistory struct {
	Versions []RoleVersion `json:"versions"`
}

// RoleAssignRequest is the body of POST /roles/{name}/assign and /unassign: a selector as rollouts
// take one ("all", node names "web-1,web-2", or labels "tier=web,zone=a").
type RoleAssignRequest struct {
	Selector string `json:"selector"`
}

// RoleAssignment carries a role to the nodes its selector picks; Nodes names the active ones it picks
// now (in the answer of assign).
type RoleAssignment struct {
	Role      string    `json:"role"`
	Selector  string    `json:"selector"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	Nodes     []string  `json:"nodes,omitempty"`
}

// RolesPlanRequest is the body of POST /roles/{name}/plan: the nodes that carry the role, narrowed by
// an optional selector, are each sent their whole footprint to plan (the converge word in plan mode).
type RolesPlanRequest struct {
	Selector string `json:"selector,omitempty"`
}

// RolePlan is the answer of POST /roles/{name}/plan: one plan job per node. A node the plane could
// not ask (it does not report the converge word, its roles conflict) has Code and Message instead of
// a job.
type RolePlan struct {
	Role  string         `json:"role"`
	Nodes []RolePlanNode `json:"nodes"`
}

// RolePlanNode is one node of a plan: the job that plans it, or why none was queued.
type RolePlanNode struct {
	NodeID   string `json:"node_id"`
	NodeName string `json:"node_name"`
	JobID    string `json:"job_id,omitempty"`
	Items    int    `json:"items"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
}

// RolesApplyRequest is the body of POST /roles/{name}/apply: the nodes that carry the role, narrowed by
// an optional selector, converge to their footprints as a staged rollout of the converge word (the
// stages, canary, parallelism, error budget and step timeout of RolloutRequest).
type RolesApplyRequest struct {
	Selector      string   `json:"selector,omitempty"`
	Stages        []string `json:"stages,omitempty"`
	Canary        int      `json:"canary,omitempty"`
	Percentages   []string `json:"percentages,omitempty"`
	MaxParallel   int      `json:"max_parallel,omitempty"`
	ErrorBudget   int      `json:"error_budget,omitempty"`
	StepTimeoutMS int64    `json:"step_timeout_ms,omitempty"`
}

// NodeFootprint is the answer of GET /nodes/{id}/footprint: the roles the node carries, the footprint
// the plane renders from them, and each item's state as the node's newest converge (apply or plan)
// reported it. Code and Message say why no footprint renders (role.conflict).
type NodeFootprint struct {
	NodeID    string             `json:"node_id"`
	NodeName  string             `json:"node_name"`
	Roles     []string           `json:"roles"` // name@version
	Footprint json.RawMessage    `json:"footprint,omitempty"`
	Items     []FootprintItem    `json:"items"`
	Converge  *FootprintConverge `json:"converge,omitempty"`
	Code      string             `json:"code,omitempty"`
	Message   string             `json:"message,omitempty"`
}

// FootprintConverge names the converge job the items' states come from.
type FootprintConverge struct {
	JobID      string    `json:"job_id"`
	Mode       string    `json:"mode"`   // apply or plan
	Result     string    `json:"result"` // converged, planned, failed, refused
	FinishedAt time.Time `json:"finished_at"`
}

// FootprintItem is one item of a node's footprint: its id ("file:/etc/nginx/nginx.conf"), kind, the
// role that declares it, whether drift of it is repaired, and its state in the newest converge
// (unchanged, changed, would_change, failed, refused, skipped; "unknown" when no converge reported
// it), with what differs, its code and message, and for a planned file its diff.
type FootprintItem struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Role    string   `json:"role"`
	Enforce bool     `json:"enforce"`
	State   string   `json:"state"`
	Changes []string `json:"changes,omitempty"`
	Code    string   `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
	Diff    string   `json:"diff,omitempty"`
}

// RoleShowQuery picks a version of GET /roles/{name}: 0 or absent is the newest.
type RoleShowQuery struct {
	Version int `query:"version"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q RoleShowQuery) Values() url.Values {
	v := url.Values{}
	setInt(v, "version", q.Version)
	return v
}

// ParseRoleShowQuery decodes a request's query.
func ParseRoleShowQuery(v url.Values) (RoleShowQuery, error) {
	n, err := intParam(v, "version")
	return RoleShowQuery{Version: n}, err
}
