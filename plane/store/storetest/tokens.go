package storetest

import (
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var tokenTests = []test{
	{"Token/Lifecycle", func(f *fx) {
		hash := digest([]byte("lexicon-token-one"))
		tok, err := f.s.TokenCreate(f.ctx, store.TokenCreateParams{Name: "ci", Role: store.RoleOperator, Hash: hash, Now: f.at(0)})
		noErr(f, err, "TokenCreate")
		if !strings.HasPrefix(tok.ID, "token_") || tok.Role != store.RoleOperator || tok.Name != "ci" || !tok.CreatedAt.Equal(f.at(0)) {
			f.Fatalf("created %+v", tok)
		}
		got, err := f.s.TokenGetByHash(f.ctx, store.TokenGetByHashParams{Hash: hash})
		noErr(f, err, "TokenGetByHash")
		same(f, "token", got, tok)
		_, err = f.s.TokenCreate(f.ctx, store.TokenCreateParams{Name: "again", Role: store.RoleAdmin, Hash: hash, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.TokenExists)
		other, err := f.s.TokenCreate(f.ctx, store.TokenCreateParams{Name: "viewer", Role: store.RoleViewer, Hash: digest([]byte("two")), Now: f.at(0)})
		noErr(f, err, "TokenCreate")

		revoked, err := f.s.TokenRevoke(f.ctx, store.TokenRevokeParams{ID: tok.ID, Now: f.at(time.Minute)})
		noErr(f, err, "TokenRevoke")
		if !revoked.RevokedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("revoked %+v", revoked)
		}
		_, err = f.s.TokenGetByHash(f.ctx, store.TokenGetByHashParams{Hash: hash})
		testkit.WantCode(f, err, errcode.TokenRevoked)
		_, err = f.s.TokenRevoke(f.ctx, store.TokenRevokeParams{ID: tok.ID, Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.TokenRevoked)
		_, err = f.s.TokenRevoke(f.ctx, store.TokenRevokeParams{ID: "token_missing"})
		testkit.WantCode(f, err, errcode.TokenNotFound)
		_, err = f.s.TokenGetByHash(f.ctx, store.TokenGetByHashParams{Hash: digest([]byte("never"))})
		testkit.WantCode(f, err, errcode.TokenNotFound)

		live, err := f.s.TokenList(f.ctx, store.TokenListParams{})
		noErr(f, err, "TokenList")
		same(f, "live tokens", live, []store.Token{other})
		all, err := f.s.TokenList(f.ctx, store.TokenListParams{IncludeRevoked: true})
		noErr(f, err, "TokenList")
		same(f, "all tokens", all, []store.Token{revoked, other})
	}},
	{"Token/InvalidRefused", func(f *fx) {
		good := digest([]byte("x"))
		bad := []store.TokenCreateParams{
			{Name: "", Role: store.RoleAdmin, Hash: good},
			{Name: "x", Role: "root", Hash: good},
			{Name: "x", Role: store.RoleAdmin, Hash: strings.ToUpper(good)},
			{Name: "x", Role: store.RoleAdmin, Hash: "lexicon-token-in-clear"},
		}
		for i, p := range bad {
			_, err := f.s.TokenCreate(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad token %d: %v", i, err)
			}
		}
		all, err := f.s.TokenList(f.ctx, store.TokenListParams{IncludeRevoked: true})
		noErr(f, err, "TokenList")
		if len(all) != 0 {
			f.Fatalf("refused tokens were stored: %+v", all)
		}
	}},
}
