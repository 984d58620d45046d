package tokens_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestTokens: a minted token resolves to itself until revoked, then is auth.required like one never
// made; its secret is in the create answer only; Need holds a token to a role.
func TestTokens(t *testing.T) {
	room := tokens.New(tokens.Config{Store: storetest.SQLiteOpener(t).Store})
	ctx := t.Context()
	admin := api.Token{Name: "root", Role: api.RoleAdmin}
	made, err := room.Create(ctx, admin, api.TokenRequest{Name: "ci", Role: api.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	if !tokens.LooksLikeToken(made.Secret) || !strings.HasPrefix(made.Secret, tokens.Prefix) {
		t.Fatalf("secret %q", made.Secret)
	}
	who, err := room.Authenticate(ctx, made.Secret)
	if err != nil || who.ID != made.Token.ID || who.Role != api.RoleOperator {
		t.Fatalf("authenticate: %+v %v", who, err)
	}
	list, err := room.List(ctx, admin)
	if err != nil || len(list.Tokens) != 1 || list.Tokens[0].Name != "ci" {
		t.Fatalf("list: %+v %v", list, err)
	}
	testkit.WantCode(t, tokens.Need(who, api.RoleAdmin), errcode.AuthForbidden)
	if err := tokens.Need(who, api.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if _, err := room.Revoke(ctx, admin, made.Token.ID); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{made.Secret, tokens.Prefix + "never-made", ""} {
		_, err := room.Authenticate(ctx, raw)
		testkit.WantCode(t, err, errcode.AuthRequired)
	}
}

// TestTokenCreateRefusals: a bad name or role is the tokens area's own code, never the store's, and
// nothing is made; the name's bound is MaxName exactly.
func TestTokenCreateRefusals(t *testing.T) {
	room := tokens.New(tokens.Config{Store: storetest.SQLiteOpener(t).Store})
	ctx := t.Context()
	admin := api.Token{Name: "root", Role: api.RoleAdmin}
	for name, c := range map[string]struct {
		req  api.TokenRequest
		code string
	}{
		"empty name":   {api.TokenRequest{Name: "", Role: api.RoleViewer}, errcode.TokenNameInvalid},
		"long name":    {api.TokenRequest{Name: strings.Repeat("n", tokens.MaxName+1), Role: api.RoleViewer}, errcode.TokenNameInvalid},
		"unknown role": {api.TokenRequest{Name: "x", Role: "root"}, errcode.TokenRoleInvalid},
		"empty role":   {api.TokenRequest{Name: "x"}, errcode.TokenRoleInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := room.Create(ctx, admin, c.req)
			testkit.WantCode(t, err, c.code)
		})
	}
	if list, _ := room.List(ctx, admin); len(list.Tokens) != 0 {
		t.Fatalf("a refused create made %d tokens", len(list.Tokens))
	}
	if _, err := room.Create(ctx, admin, api.TokenRequest{Name: strings.Repeat("n", tokens.MaxName), Role: api.RoleViewer}); err != nil {
		t.Fatalf("a name at the bound: %v", err)
	}
}
