package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func init() { backupTests = append(backupTests, sealedTests...) }

var sealedTests = []test{
	// Sealed/ListAndReseal: every kind pages in Ref order with the bytes, names and key id that bind
	// it; a re-seal replaces the value and key id only while the row still holds the old bytes (a
	// second re-seal from the same read, or one of a deleted row, is false and changes nothing); bad
	// parameters are store.param_invalid.
	{"Sealed/ListAndReseal", func(f *fx) {
		const oldKey, newKey = "0123456789abcdef", "fedcba9876543210"
		for i := range 3 {
			_, err := f.s.AccountCreate(f.ctx, store.AccountCreateParams{Name: fmt.Sprintf("acct-%d", i), Driver: "dns-rfc2136",
				Settings: json.RawMessage(`{}`), Sealed: []byte{byte(i), 0, 255}, KeyID: oldKey, By: "alice", Now: f.at(0)})
			noErr(f, err, "AccountCreate")
		}
		_, err := f.s.BackupTargetCreate(f.ctx, store.BackupTargetCreateParams{Target: backupTarget("b2"), Now: f.at(0)})
		noErr(f, err, "BackupTargetCreate")
		sid := digest([]byte("sealed-sso"))
		_, err = f.s.SSOSessionCreate(f.ctx, store.SSOSessionCreateParams{IDHash: sid, Subject: "sub", Name: "ada", Role: store.RoleAdmin,
			CSRF: strings.Repeat("c", 43), RefreshSealed: []byte("refresh-1"), RefreshAt: f.at(time.Minute), ExpiresAt: f.at(time.Hour), Now: f.at(0)})
		noErr(f, err, "SSOSessionCreate")

		// Accounts page two at a time and come back whole.
		var accts []store.SealedValue
		for after := ""; ; {
			page, err := f.s.SealedValueList(f.ctx, store.SealedValueListParams{Kind: store.SealedAccount, After: after, Limit: 2})
			noErr(f, err, "SealedValueList")
			if len(page) == 0 {
				break
			}
			accts = append(accts, page...)
			after = page[len(page)-1].Ref
		}
		if len(accts) != 3 {
			f.Fatalf("paged %d accounts, want 3: %+v", len(accts), accts)
		}
		for _, v := range accts {
			if !strings.HasPrefix(v.Ref, "acct_") || !strings.HasPrefix(v.Name, "acct-") || v.Driver != "dns-rfc2136" || v.KeyID != oldKey ||
				len(v.Sealed) != 3 || v.Kind != store.SealedAccount {
				f.Fatalf("sealed account %+v", v)
			}
		}
		tg, err := f.s.SealedValueList(f.ctx, store.SealedValueListParams{Kind: store.SealedBackupTarget, Limit: 10})
		noErr(f, err, "SealedValueList targets")
		if len(tg) != 1 || tg[0].Ref != "b2" || tg[0].Name != "b2" || string(tg[0].Sealed) != "sealed-secret" || tg[0].KeyID != oldKey {
			f.Fatalf("sealed targets %+v", tg)
		}
		ss, err := f.s.SealedValueList(f.ctx, store.SealedValueListParams{Kind: store.SealedSSOSession, Limit: 10})
		noErr(f, err, "SealedValueList sessions")
		if len(ss) != 1 || ss[0].Ref != sid || string(ss[0].Sealed) != "refresh-1" || ss[0].KeyID != "" {
			f.Fatalf("sealed sessions %+v", ss)
		}

		// Compare-and-set, each kind.
		for _, v := range []store.SealedValue{accts[1], tg[0], ss[0]} {
			p := store.SealedValueResealParams{Kind: v.Kind, Ref: v.Ref, Old: v.Sealed, New: []byte("new-" + v.Ref), KeyID: newKey}
			ok, err := f.s.SealedValueReseal(f.ctx, p)
			noErr(f, err, "SealedValueReseal")
			if !ok {
				f.Fatalf("re-seal of %s %s from the bytes it holds was refused", v.Kind, v.Ref)
			}
			p.New = []byte("stale")
			ok, err = f.s.SealedValueReseal(f.ctx, p)
			noErr(f, err, "SealedValueReseal again")
			if ok {
				f.Fatalf("a second re-seal of %s %s from stale bytes went through", v.Kind, v.Ref)
			}
		}
		a, err := f.s.AccountGet(f.ctx, store.AccountGetParams{Name: accts[1].Name})
		noErr(f, err, "AccountGet")
		if string(a.Sealed) != "new-"+accts[1].Ref || a.KeyID != newKey {
			f.Fatalf("re-sealed account %+v", a)
		}
		other, err := f.s.AccountGet(f.ctx, store.AccountGetParams{Name: accts[0].Name})
		noErr(f, err, "AccountGet other")
		if !bytes.Equal(other.Sealed, accts[0].Sealed) || other.KeyID != oldKey {
			f.Fatalf("a re-seal changed another account: %+v", other)
		}
		t, err := f.s.BackupTargetGet(f.ctx, store.BackupTargetGetParams{Name: "b2"})
		noErr(f, err, "BackupTargetGet")
		if string(t.Sealed) != "new-b2" || t.KeyID != newKey {
			f.Fatalf("re-sealed target %+v", t)
		}
		s, err := f.s.SSOSessionGet(f.ctx, store.SSOSessionGetParams{IDHash: sid, Now: f.at(time.Second)})
		noErr(f, err, "SSOSessionGet")
		if string(s.RefreshSealed) != "new-"+sid {
			f.Fatalf("re-sealed session %+v", s)
		}
		ok, err := f.s.SealedValueReseal(f.ctx, store.SealedValueResealParams{Kind: store.SealedBackupTarget, Ref: "gone", Old: []byte("x"),
			New: []byte("y"), KeyID: newKey})
		noErr(f, err, "SealedValueReseal gone")
		if ok {
			f.Fatal("a re-seal of a row that is not there went through")
		}

		for _, bad := range []store.SealedValueListParams{{Kind: "tokens", Limit: 1}, {Kind: store.SealedAccount, Limit: 0},
			{Kind: store.SealedAccount, Limit: store.MaxSealedPage + 1}, {Kind: store.SealedAccount, Limit: 1, After: "a\x00"}} {
			_, err := f.s.SealedValueList(f.ctx, bad)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		good := store.SealedValueResealParams{Kind: store.SealedAccount, Ref: accts[0].Ref, Old: accts[0].Sealed, New: []byte("n"), KeyID: newKey}
		for _, mut := range []func(p *store.SealedValueResealParams){
			func(p *store.SealedValueResealParams) { p.Kind = "tokens" },
			func(p *store.SealedValueResealParams) { p.Ref = "" },
			func(p *store.SealedValueResealParams) { p.Old = nil },
			func(p *store.SealedValueResealParams) { p.New = nil },
			func(p *store.SealedValueResealParams) { p.KeyID = "XYZ" },
		} {
			p := good
			mut(&p)
			_, err := f.s.SealedValueReseal(f.ctx, p)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		other, err = f.s.AccountGet(f.ctx, store.AccountGetParams{Name: accts[0].Name})
		noErr(f, err, "AccountGet after refused")
		if !bytes.Equal(other.Sealed, accts[0].Sealed) || other.KeyID != oldKey {
			f.Fatalf("a refused re-seal changed the account: %+v", other)
		}
	}},
}
