package storetest

import (
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func init() { tokenTests = append(tokenTests, uiSessionTests...) }

var uiSessionTests = []test{
	// UISession/Lifecycle: a session is found until it expires or is deleted, with its token; a revoked
	// token ends it; expired sessions are swept when the next one is made.
	{"UISession/Lifecycle", func(f *fx) {
		tok, err := f.s.TokenCreate(f.ctx, store.TokenCreateParams{Name: "ui", Role: store.RoleOperator, Hash: digest([]byte("ui")), Now: f.at(0)})
		noErr(f, err, "TokenCreate")
		id, csrf := digest([]byte("cookie-1")), strings.Repeat("c", 43)
		s, err := f.s.UISessionCreate(f.ctx, store.UISessionCreateParams{IDHash: id, TokenID: tok.ID, CSRF: csrf, ExpiresAt: f.at(time.Hour), Now: f.at(0)})
		noErr(f, err, "UISessionCreate")
		if s.Token.ID != tok.ID || s.CSRF != csrf {
			f.Fatalf("created %+v", s)
		}
		got, err := f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: id, Now: f.at(time.Minute)})
		noErr(f, err, "UISessionGet")
		if got.Token.ID != tok.ID || got.Token.Role != store.RoleOperator || got.CSRF != csrf || !got.ExpiresAt.Equal(f.at(time.Hour)) {
			f.Fatalf("got %+v", got)
		}
		_, err = f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: id, Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)
		_, err = f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: digest([]byte("nobody")), Now: f.at(0)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)

		// A second session sweeps the expired first one: it is gone even for a clock set back.
		other := digest([]byte("cookie-2"))
		_, err = f.s.UISessionCreate(f.ctx, store.UISessionCreateParams{IDHash: other, TokenID: tok.ID, CSRF: csrf, ExpiresAt: f.at(3 * time.Hour), Now: f.at(2 * time.Hour)})
		noErr(f, err, "UISessionCreate")
		_, err = f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: id, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)

		noErr(f, f.s.UISessionDelete(f.ctx, store.UISessionDeleteParams{IDHash: other}), "UISessionDelete")
		noErr(f, f.s.UISessionDelete(f.ctx, store.UISessionDeleteParams{IDHash: other}), "UISessionDelete again")
		_, err = f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: other, Now: f.at(2 * time.Hour)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)

		third := digest([]byte("cookie-3"))
		_, err = f.s.UISessionCreate(f.ctx, store.UISessionCreateParams{IDHash: third, TokenID: tok.ID, CSRF: csrf, ExpiresAt: f.at(5 * time.Hour), Now: f.at(2 * time.Hour)})
		noErr(f, err, "UISessionCreate")
		_, err = f.s.TokenRevoke(f.ctx, store.TokenRevokeParams{ID: tok.ID, Now: f.at(2 * time.Hour)})
		noErr(f, err, "TokenRevoke")
		_, err = f.s.UISessionGet(f.ctx, store.UISessionGetParams{IDHash: third, Now: f.at(2 * time.Hour)})
		testkit.WantCode(f, err, errcode.TokenRevoked)
		_, err = f.s.UISessionCreate(f.ctx, store.UISessionCreateParams{IDHash: digest([]byte("cookie-4")), TokenID: tok.ID, CSRF: csrf, ExpiresAt: f.at(5 * time.Hour), Now: f.at(2 * time.Hour)})
		testkit.WantCode(f, err, errcode.TokenRevoked)
	}},
	{"UISession/Refusals", func(f *fx) {
		tok, err := f.s.TokenCreate(f.ctx, store.TokenCreateParams{Name: "ui", Role: store.RoleViewer, Hash: digest([]byte("ui")), Now: f.at(0)})
		noErr(f, err, "TokenCreate")
		ok := store.UISessionCreateParams{IDHash: digest([]byte("c")), TokenID: tok.ID, CSRF: strings.Repeat("c", 43), ExpiresAt: f.at(time.Hour), Now: f.at(0)}
		for name, mut := range map[string]func(*store.UISessionCreateParams){
			"id not a hash": func(p *store.UISessionCreateParams) { p.IDHash = "cookie" },
			"short csrf":    func(p *store.UISessionCreateParams) { p.CSRF = "x" },
			"expired":       func(p *store.UISessionCreateParams) { p.ExpiresAt = p.Now },
		} {
			p := ok
			mut(&p)
			_, err := f.s.UISessionCreate(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Errorf("%s: %v", name, err)
			}
		}
		p := ok
		p.TokenID = "token_nosuch"
		_, err = f.s.UISessionCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.TokenNotFound)
		_, err = f.s.UISessionCreate(f.ctx, ok)
		noErr(f, err, "UISessionCreate")
		_, err = f.s.UISessionCreate(f.ctx, ok)
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}

func init() { tokenTests = append(tokenTests, ssoSessionTests...) }

var ssoSessionTests = []test{
	// SSOSession/Lifecycle: a session of a person signed in through single sign-on is found until it
	// expires or is deleted; a refresh keeps the new role and refresh token; a refresh of an ended
	// session is auth.session_ended; bad fields are store.param_invalid and store nothing.
	{"SSOSession/Lifecycle", func(f *fx) {
		id, csrf := digest([]byte("sso-cookie")), strings.Repeat("c", 43)
		p := store.SSOSessionCreateParams{IDHash: id, Subject: "sub-1", Name: "ada@example.com", Role: store.RoleAdmin, CSRF: csrf,
			RefreshSealed: []byte("sealed-1"), RefreshAt: f.at(5 * time.Minute), ExpiresAt: f.at(time.Hour), Now: f.at(0)}
		for _, bad := range []func(p *store.SSOSessionCreateParams){
			func(p *store.SSOSessionCreateParams) { p.Role = "root" },
			func(p *store.SSOSessionCreateParams) { p.Subject = "" },
			func(p *store.SSOSessionCreateParams) { p.RefreshSealed = nil },
			func(p *store.SSOSessionCreateParams) { p.ExpiresAt = f.at(0) },
		} {
			q := p
			bad(&q)
			_, err := f.s.SSOSessionCreate(f.ctx, q)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		_, err := f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: id, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)

		_, err = f.s.SSOSessionCreate(f.ctx, p)
		noErr(f, err, "SSOSessionCreate")
		got, err := f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: id, Now: f.at(time.Minute)})
		noErr(f, err, "SSOSessionGet")
		if got.Subject != "sub-1" || got.Name != "ada@example.com" || got.Role != store.RoleAdmin || got.CSRF != csrf ||
			string(got.RefreshSealed) != "sealed-1" || !got.RefreshAt.Equal(f.at(5*time.Minute)) || !got.ExpiresAt.Equal(f.at(time.Hour)) {
			f.Fatalf("got %+v", got)
		}
		noErr(f, f.s.SSOSessionRefresh(f.ctx, store.SSOSessionRefreshParams{IDHash: id, Name: "ada@example.com", Role: store.RoleViewer,
			RefreshSealed: []byte("sealed-2"), RefreshAt: f.at(10 * time.Minute), Now: f.at(5 * time.Minute)}), "SSOSessionRefresh")
		got, err = f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: id, Now: f.at(6 * time.Minute)})
		noErr(f, err, "SSOSessionGet")
		if got.Role != store.RoleViewer || string(got.RefreshSealed) != "sealed-2" || !got.RefreshAt.Equal(f.at(10*time.Minute)) {
			f.Fatalf("after refresh %+v", got)
		}
		_, err = f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: id, Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)
		err = f.s.SSOSessionRefresh(f.ctx, store.SSOSessionRefreshParams{IDHash: id, Name: "ada@example.com", Role: store.RoleViewer,
			RefreshSealed: []byte("sealed-3"), RefreshAt: f.at(2 * time.Hour), Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)

		noErr(f, f.s.SSOSessionDelete(f.ctx, store.SSOSessionDeleteParams{IDHash: id}), "SSOSessionDelete")
		_, err = f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: id, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.AuthSessionEnded)
	}},
}
