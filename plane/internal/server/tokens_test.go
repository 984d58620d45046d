package server_test

import (
	"net/http"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestTokenRoutesMakeAdminsForAdminsOnly holds plane/api's statement on tokens: POST /tokens makes a
// token of any role, admin included, and only for an admin token, so no token makes one above its
// own role; the admin token it made is one (it may make tokens in turn).
func TestTokenRoutesMakeAdminsForAdminsOnly(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator} {
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, http.MethodPost, "/tokens", []byte(`{"name":"up","role":"admin"}`), nil)
	}
	var made api.NewToken
	p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/tokens", []byte(`{"name":"second-admin","role":"admin"}`), &made)
	p.tokens["second"] = made.Secret
	var who api.Token
	p.want(http.StatusOK, "", "second", http.MethodGet, "/whoami", nil, &who)
	if who.Role != api.RoleAdmin || who.ID != made.Token.ID {
		t.Fatalf("the new token is %+v", who)
	}
	p.want(http.StatusCreated, "", "second", http.MethodPost, "/tokens", []byte(`{"name":"third","role":"viewer"}`), nil)
}
