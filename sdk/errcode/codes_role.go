package errcode

// Codes of roles: named, versioned declarations of what machines carry, assigned to nodes by label
// selector and rendered into each node's footprint. Returned as errors, nothing changed: a refused
// create, edit or assignment left every role and assignment as it was.
const (
	// RoleInvalid: a role file does not decode, fails the role schema or breaks a rule of the format
	// (details.field is a JSON pointer to the member at fault, "/files/0/mode").
	RoleInvalid = "role.invalid"
	// RoleTooLarge: a role file, or one file's content in it, is over the plane's limit
	// (details.limit_bytes; details.field names the file when it is one file).
	RoleTooLarge = "role.too_large"
	// RoleNotFound: no role has that name (or that version; details.name, details.version).
	RoleNotFound = "role.not_found"
	// RoleExists: a role of that name exists already; edit it to make a new version.
	RoleExists = "role.exists"
	// RoleConflict: two roles a node would carry claim the same item differently: the same path with
	// other content, a package present and absent, a user with another shell (details.item names the
	// item, details.roles the two roles, details.node_id a node that would carry both).
	RoleConflict = "role.conflict"
	// RoleNoMatch: an assignment's selector matches no active node now (details.field "selector").
	RoleNoMatch = "role.no_match"
	// RoleStale: an edit names the version it was made from and the role has moved past it since
	// (details.version is the role's newest).
	RoleStale = "role.stale"
	// RoleNoNodes: a plan or apply found no node that carries a role (or the one asked for).
	RoleNoNodes = "role.no_nodes"
)

var areaRole = Area{Name: "role", Reserved: true, Codes: []Spec{
	{RoleInvalid, statusBadRequest, Unchanged},
	{RoleTooLarge, statusTooLarge, Unchanged},
	{RoleNotFound, statusNotFound, Unchanged},
	{RoleExists, statusConflict, Unchanged},
	{RoleConflict, statusConflict, Unchanged},
	{RoleNoMatch, statusUnprocessable, Unchanged},
	{RoleStale, statusConflict, Unchanged},
	{RoleNoNodes, statusUnprocessable, Unchanged},
}}
