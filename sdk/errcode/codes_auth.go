package errcode

// Codes of the admin API's bearer token as a request presents it. Nothing changed when any of them is
// returned.
const (
	// AuthRequired: the admin API needs a valid bearer token.
	AuthRequired = "auth.required"
	// AuthForbidden: the token's role may not do this (details.need).
	AuthForbidden = "auth.forbidden"
	// AuthCSRF: a web UI form came without the session's CSRF token, or with another one.
	AuthCSRF = "auth.csrf"
	// AuthSessionEnded: the web UI session is unknown, expired or signed out; sign in again.
	AuthSessionEnded = "auth.session_ended"
	// AuthSignInLimited: too many failed web UI sign-ins from this address; wait and try again
	// (details.retry_after_ms).
	AuthSignInLimited = "auth.signin_limited"
)

var areaAuth = Area{Name: "auth", Reserved: true, Codes: []Spec{
	{AuthRequired, statusUnauthorized, Unchanged},
	{AuthForbidden, statusForbidden, Unchanged},
	{AuthCSRF, statusForbidden, Unchanged},
	{AuthSessionEnded, statusUnauthorized, Unchanged},
	{AuthSignInLimited, statusTooManyRequests, Unchanged},
}}
