// Package sso is single sign-on: the plane as an OpenID Connect relying party. It turns the provider's
// verified ID token into the role a person acts with (from a groups claim, through the mapping the
// plane's config file holds), for the web UI (authorization code with PKCE, refreshed on a cadence so
// a person removed from a group, or whose provider session ended, loses access) and for the admin API
// (an ID token as the bearer, as `lexicon login` gets one). Tokens stay for automation.
package sso

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/secretfile"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// File is the single sign-on config file (mode 600: it holds the client secret).
//
//	{"issuer": "https://id.example.com", "client_id": "lexicon", "client_secret": "…",
//	 "cli_client_id": "lexicon-cli", "groups_claim": "groups",
//	 "roles": {"fleet-admins": "admin", "fleet-ops": "operator", "staff": "viewer"},
//	 "refresh_every": "5m"}
type File struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// CLIClientID is the public client `lexicon login` signs in with (loopback redirect, PKCE); its ID
	// tokens are accepted as API bearers. Empty: the CLI cannot sign in.
	CLIClientID string `json:"cli_client_id,omitempty"`
	// GroupsClaim names the ID token's claim that lists the person's groups (default "groups").
	GroupsClaim string `json:"groups_claim,omitempty"`
	// Roles maps a group to a role; a person in several groups acts with the highest.
	Roles map[string]api.Role `json:"roles"`
	// RefreshEvery is how often a web UI session asks the provider again (default 5m).
	RefreshEvery string `json:"refresh_every,omitempty"`
}

// Config is a checked File.
type Config struct {
	Issuer, ClientID, ClientSecret, CLIClientID, GroupsClaim string
	Roles                                                    map[string]api.Role
	RefreshEvery                                             time.Duration
}

const maxFile = 64 << 10

// Load reads and checks the config file at path.
func Load(path string) (Config, error) {
	data, err := secretfile.Read(path, maxFile)
	if err != nil {
		return Config{}, errcode.New(errcode.SSOConfigInvalid, "single sign-on file: %v", err)
	}
	return Parse(data)
}

// Parse checks a config file's contents, strictly: unknown fields are refused.
func Parse(data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return Config{}, errcode.New(errcode.SSOConfigInvalid, "the single sign-on file is not the JSON it takes: %v", err)
	}
	if dec.More() {
		return Config{}, errcode.New(errcode.SSOConfigInvalid, "the single sign-on file holds more than one JSON value")
	}
	bad := func(field, format string, a ...any) (Config, error) {
		return Config{}, errcode.New(errcode.SSOConfigInvalid, "single sign-on: "+field+": "+format, a...).With(errcode.DetailField, field)
	}
	u, err := url.Parse(f.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		return bad("issuer", "%q is not an https URL (plain http only on loopback)", f.Issuer)
	}
	if f.ClientID == "" || f.ClientSecret == "" {
		return bad("client_id", "the web UI's client needs an id and a secret")
	}
	if f.CLIClientID == f.ClientID {
		return bad("cli_client_id", "the CLI's client must be another client than the web UI's")
	}
	if len(f.Roles) == 0 {
		return bad("roles", "map at least one group to a role")
	}
	for g, r := range f.Roles {
		if g == "" || (r != api.RoleViewer && r != api.RoleOperator && r != api.RoleAdmin) {
			return bad("roles", "group %q maps to %q; a role is viewer, operator or admin", g, r)
		}
	}
	c := Config{Issuer: f.Issuer, ClientID: f.ClientID, ClientSecret: f.ClientSecret, CLIClientID: f.CLIClientID,
		GroupsClaim: f.GroupsClaim, Roles: f.Roles, RefreshEvery: 5 * time.Minute}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	if f.RefreshEvery != "" {
		d, err := time.ParseDuration(f.RefreshEvery)
		if err != nil || d < 10*time.Second || d > 24*time.Hour {
			return bad("refresh_every", "%q is not a duration from 10s to 24h", f.RefreshEvery)
		}
		c.RefreshEvery = d
	}
	return c, nil
}

func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// Identity is a person as the provider vouched for them, with the role the mapping gives.
type Identity struct {
	Issuer, Subject string
	Name            string // email, else preferred_username, else the subject
	Groups          []string
	Role            api.Role
	Expiry          time.Time // the ID token's
}

// Token is the identity as the rooms take an actor: the id names the person, never a token row.
func (id Identity) Token() api.Token {
	return api.Token{ID: "sso:" + id.Subject, Name: id.Name, Role: id.Role}
}

// SSO signs people in through one provider.
type SSO struct {
	cfg      Config
	client   *http.Client
	provider *oidc.Provider
	web, cli *oidc.IDTokenVerifier
	oauth    oauth2.Config // RedirectURL set per sign-in
}

// New discovers the provider. client is used for every call to it (nil: http.DefaultClient).
func New(ctx context.Context, cfg Config, client *http.Client) (*SSO, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx = oidc.ClientContext(ctx, client)
	p, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, errcode.New(errcode.SSOUnavailable, "cannot discover the single sign-on provider %s: %v", cfg.Issuer, err)
	}
	s := &SSO{cfg: cfg, client: client, provider: p,
		web: p.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: p.Endpoint(),
			Scopes: []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess}}}
	if cfg.CLIClientID != "" {
		s.cli = p.Verifier(&oidc.Config{ClientID: cfg.CLIClientID})
	}
	return s, nil
}

// RefreshEvery is how long a web UI session goes before it asks the provider again.
func (s *SSO) RefreshEvery() time.Duration { return s.cfg.RefreshEvery }

// Public is what the CLI needs to sign in by itself: the provider and its public client.
func (s *SSO) Public() api.SSOInfo {
	return api.SSOInfo{Issuer: s.cfg.Issuer, ClientID: s.cfg.CLIClientID}
}

// Start is where a browser goes to sign in, with the verifier and state to keep for Finish.
func (s *SSO) Start(redirect, state, verifier string) string {
	c := s.oauth
	c.RedirectURL = redirect
	return c.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
}

// Finish exchanges the code the provider sent back for the person's identity and a refresh token.
func (s *SSO) Finish(ctx context.Context, redirect, code, verifier string) (Identity, string, error) {
	c := s.oauth
	c.RedirectURL = redirect
	tok, err := c.Exchange(oidc.ClientContext(ctx, s.client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, "", refused("the provider refused the sign-in", err)
	}
	return s.fromToken(ctx, tok)
}

// Refresh asks the provider again with the refresh token: a person whose provider session ended, or
// who is in no mapped group any longer, gets an error, and the caller ends their session.
func (s *SSO) Refresh(ctx context.Context, refresh string) (Identity, string, error) {
	ctx = oidc.ClientContext(ctx, s.client)
	tok, err := s.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh}).Token()
	if err != nil {
		return Identity{}, "", refused("the provider refused to refresh the session", err)
	}
	id, next, err := s.fromToken(ctx, tok)
	if next == "" {
		next = refresh // a provider that does not rotate refresh tokens keeps the old one valid
	}
	return id, next, err
}

func (s *SSO) fromToken(ctx context.Context, tok *oauth2.Token) (Identity, string, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, "", errcode.New(errcode.SSORefused, "the provider answered without an ID token")
	}
	id, err := s.verify(ctx, s.web, raw)
	return id, tok.RefreshToken, err
}

// Bearer verifies an ID token presented to the admin API: issued by the provider to the web UI's or
// the CLI's client, unexpired, with a group that maps to a role.
func (s *SSO) Bearer(ctx context.Context, raw string) (api.Token, error) {
	ctx = oidc.ClientContext(ctx, s.client)
	id, err := s.verify(ctx, s.web, raw)
	if err != nil && s.cli != nil && !errcode.Has(err, errcode.SSONoRole) {
		id, err = s.verify(ctx, s.cli, raw)
	}
	if err != nil {
		return api.Token{}, err
	}
	return id.Token(), nil
}

func (s *SSO) verify(ctx context.Context, v *oidc.IDTokenVerifier, raw string) (Identity, error) {
	t, err := v.Verify(oidc.ClientContext(ctx, s.client), raw)
	if err != nil {
		return Identity{}, refused("the ID token did not verify", err)
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return Identity{}, refused("the ID token's claims could not be read", err)
	}
	id := Identity{Issuer: t.Issuer, Subject: t.Subject, Expiry: t.Expiry, Name: t.Subject}
	for _, k := range []string{"email", "preferred_username"} {
		if v, ok := claims[k].(string); ok && v != "" {
			id.Name = v
			break
		}
	}
	id.Groups = groups(claims[s.cfg.GroupsClaim])
	id.Role = s.role(id.Groups)
	if id.Role == "" {
		return id, errcode.New(errcode.SSONoRole, "%s is in no group this plane maps to a role (claim %q: %s)",
			id.Name, s.cfg.GroupsClaim, strings.Join(id.Groups, ", "))
	}
	return id, nil
}

// role is the highest role any of the groups maps to; "" when none does.
func (s *SSO) role(groups []string) api.Role {
	var best api.Role
	for _, g := range groups {
		if r, ok := s.cfg.Roles[g]; ok && (best == "" || r.Covers(best) && r != best) {
			best = r
		}
	}
	return best
}

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	switch g := v.(type) {
	case string:
		return []string{g}
	case []any:
		out := make([]string, 0, len(g))
		for _, e := range g {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	return nil
}

// refused is sso.refused with the provider's reason in the message. The reason is the library's text
// about a token or an HTTP answer; it holds no secret of ours (the client secret is sent, never echoed).
func refused(what string, err error) error {
	return errcode.New(errcode.SSORefused, "%s: %s", what, reason(err))
}

func reason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		return fmt.Sprintf("%s %s", re.ErrorCode, re.ErrorDescription)
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
