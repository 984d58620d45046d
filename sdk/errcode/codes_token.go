package errcode

// Codes of admin API tokens. Nothing changed when any of them is returned.
const (
	// TokenNotFound: no token has that id or hash.
	TokenNotFound = "token.not_found"
	// TokenRevoked: the token was revoked; it grants nothing.
	TokenRevoked = "token.revoked"
	// TokenExists: a token with that hash is already stored.
	TokenExists = "token.exists"
	// TokenNameInvalid: a token's name is empty or longer than the plane keeps (details.field, details.max).
	TokenNameInvalid = "token.name_invalid"
	// TokenRoleInvalid: a token's role is not viewer, operator or admin (details.field).
	TokenRoleInvalid = "token.role_invalid"
)

var areaToken = Area{Name: "token", Reserved: true, Codes: []Spec{
	{TokenNotFound, statusNotFound, Unchanged},
	{TokenRevoked, statusBadRequest, Unchanged},
	{TokenExists, statusConflict, Unchanged},
	{TokenNameInvalid, statusUnprocessable, Unchanged},
	{TokenRoleInvalid, statusUnprocessable, Unchanged},
}}
