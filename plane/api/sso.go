package api

// SSOPath is where the plane says, without a token, which single sign-on provider `lexicon login`
// signs in with: the provider and the public client are what any browser sign-in shows anyway.
const SSOPath = "/api/v1/sso"

// SSOInfo is GET SSOPath's answer. A plane without single sign-on answers sso.unavailable.
type SSOInfo struct {
	Issuer string `json:"issuer"`
	// ClientID is the CLI's public client; empty when the CLI may not sign in.
	ClientID string `json:"client_id"`
}
