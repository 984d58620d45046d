package errcode

// Codes of single sign-on through an OpenID Connect provider. Nothing changed when any is returned.
const (
	// SSOConfigInvalid: the plane's single sign-on file cannot be read, is open to other users, or
	// is not what it takes (details.field).
	SSOConfigInvalid = "sso.config_invalid"
	// SSOUnavailable: the plane has no single sign-on configured, or cannot reach its provider.
	SSOUnavailable = "sso.unavailable"
	// SSORefused: the provider refused the sign-in or its refresh, or what it answered did not verify
	// (another issuer or audience, a bad signature, an expired token, a state that is not this
	// browser's).
	SSORefused = "sso.refused"
	// SSONoRole: the identity verified, but none of its groups maps to a role on this plane.
	SSONoRole = "sso.no_role"
)

var areaSSO = Area{Name: "sso", Reserved: true, Codes: []Spec{
	{SSOConfigInvalid, statusBadRequest, Unchanged},
	{SSOUnavailable, statusUnavailable, Unchanged},
	{SSORefused, statusUnauthorized, Unchanged},
	{SSONoRole, statusForbidden, Unchanged},
}}
