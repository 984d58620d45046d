// Package tokens keeps the admin API's bearer tokens: it mints them (the secret is shown once; the
// store keeps its hash), resolves a bearer to the token it names, holds a token to the role an action
// needs, and lists and revokes them.
package tokens

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Prefix marks Lexicon admin tokens, so a leaked one is recognisable in a scanner's rules.
const Prefix = "lxt_"

// Mint makes an admin token and the hash the store keeps; the token itself is shown once.
func Mint() (token, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	token = Prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, Hash(token)
}

// Hash is how a token is stored and looked up.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// LooksLikeToken reports whether s has an admin token's prefix (it may still name no token).
func LooksLikeToken(s string) bool { return strings.HasPrefix(s, Prefix) || IsIDToken(s) }

// IsIDToken tells an OpenID Connect ID token (a JWT of three base64url parts) from a Lexicon token.
func IsIDToken(s string) bool { return !strings.HasPrefix(s, Prefix) && strings.Count(s, ".") == 2 }

// Need refuses a token below role with auth.forbidden naming the role needed.
func Need(who api.Token, role api.Role) error {
	if !who.Role.Covers(role) {
		return errcode.New(errcode.AuthForbidden, "this needs the %s role; token %s is %s", role, who.Name, who.Role).With(errcode.DetailNeed, string(role))
	}
	return nil
}

// Store is what the tokens room reads and writes.
type Store interface {
	TokenCreate(ctx context.Context, p store.TokenCreateParams) (store.Token, error)
	TokenGetByHash(ctx context.Context, p store.TokenGetByHashParams) (store.Token, error)
	TokenList(ctx context.Context, p store.TokenListParams) ([]store.Token, error)
	TokenRevoke(ctx context.Context, p store.TokenRevokeParams) (store.Token, error)
}

// Config sets up the room.
type Config struct {
	Store Store
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SSO verifies a single sign-on provider's ID token presented as the bearer; nil when the plane
	// has no single sign-on.
	SSO IDTokenVerifier
}

// IDTokenVerifier turns a provider's ID token into the person it names, acting with their mapped role.
type IDTokenVerifier interface {
	Bearer(ctx context.Context, raw string) (api.Token, error)
}

// Room is the tokens' Go API, which the HTTP server and the web UI both call.
type Room struct {
	store Store
	log   *slog.Logger
	now   func() time.Time
	sso   IDTokenVerifier
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{store: c.Store, log: services.Logger(c.Log), now: c.Now, sso: c.SSO}
}

// Authenticate resolves a bearer token to the token it names. An unknown or revoked token is
// auth.required: the caller learns no more than that it is not signed in. With single sign-on, an ID
// token (a JWT: three dotted parts, which a Lexicon token never has) is verified by the provider's
// keys instead, and acts as the person it names.
func (r *Room) Authenticate(ctx context.Context, raw string) (api.Token, error) {
	if IsIDToken(raw) {
		if r.sso == nil {
			return api.Token{}, errcode.New(errcode.AuthRequired, "the bearer is an ID token, and this plane has no single sign-on")
		}
		return r.sso.Bearer(ctx, raw)
	}
	t, err := r.store.TokenGetByHash(ctx, store.TokenGetByHashParams{Hash: Hash(raw)})
	if errcode.Has(err, errcode.TokenNotFound) || errcode.Has(err, errcode.TokenRevoked) || raw == "" {
		return api.Token{}, errcode.New(errcode.AuthRequired, "the token is unknown or revoked")
	}
	if err != nil {
		return api.Token{}, err
	}
	return apiconv.Token(t), nil
}

// List lists every token, revoked ones too, in creation order; neither a secret nor a hash is in it.
func (r *Room) List(ctx context.Context, who api.Token) (api.TokenList, error) {
	list, err := r.store.TokenList(ctx, store.TokenListParams{IncludeRevoked: true})
	return api.TokenList{Tokens: apiconv.Each(list, apiconv.Token)}, err
}

// MaxName is the longest token name, in bytes: the store's bound, which the web UI's form also uses.
const MaxName = store.MaxTokenName

// Create makes a token. The secret is in the answer and nowhere else.
func (r *Room) Create(ctx context.Context, who api.Token, req api.TokenRequest) (api.NewToken, error) {
	if req.Name == "" || len(req.Name) > MaxName {
		return api.NewToken{}, errcode.New(errcode.TokenNameInvalid, "a token's name must be 1 to %d bytes", MaxName).
			With(errcode.DetailField, "name").With(errcode.DetailMax, MaxName)
	}
	if !store.ValidRole(store.Role(req.Role)) {
		return api.NewToken{}, errcode.New(errcode.TokenRoleInvalid, "role %q is not viewer, operator or admin", req.Role).With(errcode.DetailField, "role")
	}
	secret, hash := Mint()
	t, err := r.store.TokenCreate(ctx, store.TokenCreateParams{Name: req.Name, Role: store.Role(req.Role), Hash: hash, Now: r.now()})
	if err != nil {
		return api.NewToken{}, err
	}
	r.log.Info("token created", "token", t.ID, "name", t.Name, "role", t.Role, "by", who.Name)
	return api.NewToken{Token: apiconv.Token(t), Secret: secret}, nil
}

// Revoke revokes a token for good; its UI sessions end on their next request.
func (r *Room) Revoke(ctx context.Context, who api.Token, id string) (api.Token, error) {
	t, err := r.store.TokenRevoke(ctx, store.TokenRevokeParams{ID: id, Now: r.now()})
	if err != nil {
		return api.Token{}, err
	}
	r.log.Info("token revoked", "token", t.ID, "name", t.Name, "by", who.Name)
	return apiconv.Token(t), nil
}
