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

var driverTests = []test{
	{"Driver/EnableDisable", func(f *fx) {
		d, err := f.s.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
		noErr(f, err, "DriverGet")
		same(f, "never enabled", d, store.DriverState{Name: "dns-memory"})

		pinned := digest([]byte("driver v1"))
		on, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: pinned, By: "alice", Now: f.at(0)})
		noErr(f, err, "DriverEnable")
		same(f, "enabled", on, store.DriverState{Name: "dns-memory", Enabled: true, Digest: pinned, ChangedAt: f.at(0), ChangedBy: "alice"})
		got, err := f.s.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
		noErr(f, err, "DriverGet")
		same(f, "read back", got, on)

		// Disabling keeps the digest the admin last enabled, for the record.
		off, err := f.s.DriverDisable(f.ctx, store.DriverSetParams{Name: "dns-memory", By: "bob", Now: f.at(time.Minute)})
		noErr(f, err, "DriverDisable")
		same(f, "disabled", off, store.DriverState{Name: "dns-memory", Digest: pinned, ChangedAt: f.at(time.Minute), ChangedBy: "bob"})

		// A driver disabled before it was ever enabled is recorded too.
		never, err := f.s.DriverDisable(f.ctx, store.DriverSetParams{Name: "cloud-linode", By: "bob", Now: f.at(time.Minute)})
		noErr(f, err, "DriverDisable")
		if never.Enabled || never.Digest != "" {
			f.Fatalf("disabled unknown driver: %+v", never)
		}
		again, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: digest([]byte("driver v2")), By: "carol", Now: f.at(time.Hour)})
		noErr(f, err, "DriverEnable")
		list, err := f.s.DriverList(f.ctx)
		noErr(f, err, "DriverList")
		same(f, "list", list, []store.DriverState{never, again})
	}},
	{"Driver/UnconfinedConsent", func(f *fx) {
		// The consent to run unconfined is stored with the enabled driver, kept (for the record) when it
		// is disabled, and replaced by whatever the next enable says.
		pinned := digest([]byte("driver v1"))
		on, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: pinned, Unconfined: true, By: "alice", Now: f.at(0)})
		noErr(f, err, "DriverEnable")
		got, err := f.s.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
		noErr(f, err, "DriverGet")
		if !on.Unconfined || !got.Unconfined {
			f.Fatalf("consent not stored: %+v, read back %+v", on, got)
		}
		off, err := f.s.DriverDisable(f.ctx, store.DriverSetParams{Name: "dns-memory", Unconfined: false, By: "bob", Now: f.at(time.Minute)})
		noErr(f, err, "DriverDisable")
		if off.Enabled || !off.Unconfined {
			f.Fatalf("disable changed the recorded consent: %+v", off)
		}
		again, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: pinned, By: "carol", Now: f.at(time.Hour)})
		noErr(f, err, "DriverEnable")
		list, err := f.s.DriverList(f.ctx)
		noErr(f, err, "DriverList")
		if again.Unconfined || len(list) != 1 || list[0].Unconfined {
			f.Fatalf("enabling without consent kept the old one: %+v, list %+v", again, list)
		}
	}},
	{"Driver/InvalidRefused", func(f *fx) {
		good := digest([]byte("x"))
		for i, p := range []store.DriverSetParams{
			{Name: "", Digest: good},
			{Name: "DNS-Memory", Digest: good},
			{Name: "dns/memory", Digest: good},
			{Name: strings.Repeat("a", 65), Digest: good},
			{Name: "dns-memory", Digest: ""},
			{Name: "dns-memory", Digest: strings.ToUpper(good)},
			{Name: "dns-memory", Digest: good, By: strings.Repeat("b", 256)},
		} {
			_, err := f.s.DriverEnable(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad enable %d: %v", i, err)
			}
		}
		_, err := f.s.DriverGet(f.ctx, store.DriverGetParams{Name: "../etc"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		list, err := f.s.DriverList(f.ctx)
		noErr(f, err, "DriverList")
		if len(list) != 0 {
			f.Fatalf("refused changes were stored: %+v", list)
		}
	}},
	{"Driver/SeenByPeer", func(f *fx) {
		peer := f.env.Peer(f)
		_, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: digest([]byte("d")), By: "alice"})
		noErr(f, err, "DriverEnable")
		d, err := peer.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
		noErr(f, err, "peer DriverGet")
		if !d.Enabled {
			f.Fatalf("peer sees %+v", d)
		}
		_, err = peer.DriverDisable(f.ctx, store.DriverSetParams{Name: "dns-memory", By: "bob"})
		noErr(f, err, "peer DriverDisable")
		d, err = f.s.DriverGet(f.ctx, store.DriverGetParams{Name: "dns-memory"})
		noErr(f, err, "DriverGet")
		if d.Enabled {
			f.Fatalf("a driver disabled by a peer is still enabled here: %+v", d)
		}
	}},
	{"Account/Lifecycle", func(f *fx) {
		sealed := []byte{1, 2, 3, 0, 255, 7}
		p := store.AccountCreateParams{Name: "prod-dns", Driver: "dns-rfc2136", Settings: json.RawMessage(`{"server": "192.0.2.53:53", "zones": ["example.com"]}`),
			Sealed: sealed, KeyID: "0123456789abcdef", By: "alice", Now: f.at(0)}
		a, err := f.s.AccountCreate(f.ctx, p)
		noErr(f, err, "AccountCreate")
		if !strings.HasPrefix(a.ID, "acct_") || a.Name != "prod-dns" || a.Driver != "dns-rfc2136" || a.KeyID != p.KeyID ||
			a.CreatedBy != "alice" || !a.CreatedAt.Equal(f.at(0)) || a.Sealed != nil {
			f.Fatalf("created %+v", a)
		}
		got, err := f.s.AccountGet(f.ctx, store.AccountGetParams{Name: "prod-dns"})
		noErr(f, err, "AccountGet")
		if !bytes.Equal(got.Sealed, sealed) || !jsonEqual(got.Settings, p.Settings) || got.ID != a.ID {
			f.Fatalf("read back %+v", got)
		}
		// The sealed credential never travels as JSON.
		out, _ := json.Marshal(got)
		if bytes.Contains(out, []byte("sealed")) || bytes.Contains(out, []byte(fmt.Sprint(sealed))) {
			f.Fatalf("account JSON holds the sealed credential: %s", out)
		}

		_, err = f.s.AccountCreate(f.ctx, store.AccountCreateParams{Name: "prod-dns", Driver: "dns-memory", Settings: json.RawMessage(`{}`),
			Sealed: []byte{9}, KeyID: p.KeyID, By: "mallory"})
		testkit.WantCode(f, err, errcode.AccountExists)
		again, err := f.s.AccountGet(f.ctx, store.AccountGetParams{Name: "prod-dns"})
		noErr(f, err, "AccountGet")
		if !bytes.Equal(again.Sealed, sealed) || again.Driver != "dns-rfc2136" {
			f.Fatalf("a refused create changed the account: %+v", again)
		}

		cloud, err := f.s.AccountCreate(f.ctx, store.AccountCreateParams{Name: "lab", Driver: "cloud-linode", Settings: json.RawMessage(`{}`),
			Sealed: []byte{4}, KeyID: p.KeyID, By: "alice", Now: f.at(time.Second)})
		noErr(f, err, "AccountCreate")
		list, err := f.s.AccountList(f.ctx, store.AccountListParams{})
		noErr(f, err, "AccountList")
		if len(list) != 2 || list[0].Name != "lab" || list[1].Name != "prod-dns" || list[0].Sealed != nil || list[1].Sealed != nil {
			f.Fatalf("list %+v", list)
		}
		only, err := f.s.AccountList(f.ctx, store.AccountListParams{Driver: "cloud-linode"})
		noErr(f, err, "AccountList")
		if len(only) != 1 || only[0].ID != cloud.ID {
			f.Fatalf("list by driver %+v", only)
		}

		removed, err := f.s.AccountRemove(f.ctx, store.AccountRemoveParams{Name: "prod-dns"})
		noErr(f, err, "AccountRemove")
		if removed.ID != a.ID || removed.Sealed != nil {
			f.Fatalf("removed %+v", removed)
		}
		_, err = f.s.AccountGet(f.ctx, store.AccountGetParams{Name: "prod-dns"})
		testkit.WantCode(f, err, errcode.AccountNotFound)
		_, err = f.s.AccountRemove(f.ctx, store.AccountRemoveParams{Name: "prod-dns"})
		testkit.WantCode(f, err, errcode.AccountNotFound)
		// The name is free again, and the new account is a new one.
		re, err := f.s.AccountCreate(f.ctx, p)
		noErr(f, err, "AccountCreate again")
		if re.ID == a.ID {
			f.Fatalf("a re-added account kept the old id %s", re.ID)
		}
	}},
	{"Account/InvalidRefused", func(f *fx) {
		good := store.AccountCreateParams{Name: "a", Driver: "dns-memory", Settings: json.RawMessage(`{}`), Sealed: []byte{1},
			KeyID: "0123456789abcdef", By: "alice"}
		edits := []func(*store.AccountCreateParams){
			func(p *store.AccountCreateParams) { p.Name = "" },
			func(p *store.AccountCreateParams) { p.Name = "Prod" },
			func(p *store.AccountCreateParams) { p.Name = "a/b" },
			func(p *store.AccountCreateParams) { p.Name = "-a" },
			func(p *store.AccountCreateParams) { p.Driver = "" },
			func(p *store.AccountCreateParams) { p.Settings = json.RawMessage(`[]`) },
			func(p *store.AccountCreateParams) { p.Settings = json.RawMessage(`null`) },
			func(p *store.AccountCreateParams) { p.Settings = json.RawMessage(`{"a":`) },
			func(p *store.AccountCreateParams) {
				p.Settings = json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxAccountSettings) + `"}`)
			},
			func(p *store.AccountCreateParams) { p.Sealed = nil },
			func(p *store.AccountCreateParams) { p.Sealed = make([]byte, store.MaxSealedCredential+1) },
			func(p *store.AccountCreateParams) { p.KeyID = "" },
			func(p *store.AccountCreateParams) { p.KeyID = "XYZ" },
			func(p *store.AccountCreateParams) { p.By = "" },
		}
		for i, edit := range edits {
			p := good
			edit(&p)
			_, err := f.s.AccountCreate(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad account %d: %v", i, err)
			}
		}
		list, err := f.s.AccountList(f.ctx, store.AccountListParams{})
		noErr(f, err, "AccountList")
		if len(list) != 0 {
			f.Fatalf("refused accounts were stored: %+v", list)
		}
	}},
	{"DriverCall/AuditLog", func(f *fx) {
		add := func(account, drv, op, code string, at time.Duration) store.DriverCall {
			f.Helper()
			c, err := f.s.DriverCallAdd(f.ctx, store.DriverCallAddParams{Actor: "alice", Account: account, Driver: drv, Operation: op,
				Target: "example.com.", Code: code, Duration: 1500 * time.Microsecond, Now: f.at(at)})
			noErr(f, err, "DriverCallAdd")
			return c
		}
		c1 := add("prod-dns", "dns-rfc2136", store.OpDNSGetRecords, store.CodeOK, 0)
		c2 := add("lab", "cloud-linode", store.OpCloudRegions, errcode.DriverCrashed, time.Second)
		c3 := add("prod-dns", "dns-rfc2136", store.OpDNSAppendRecords, store.CodeOK, 2*time.Second)
		c4 := add("", "dns-rfc2136", store.OpDriverEnable, store.CodeOK, 3*time.Second)
		if c1.DurationMS != 1 || c1.Actor != "alice" || !strings.HasPrefix(c1.ID, "call_") {
			f.Fatalf("recorded %+v", c1)
		}
		all, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{})
		noErr(f, err, "DriverCallList")
		same(f, "newest first", all.Calls, []store.DriverCall{c4, c3, c2, c1})
		byAccount, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Account: "prod-dns"})
		noErr(f, err, "DriverCallList")
		same(f, "by account", byAccount.Calls, []store.DriverCall{c3, c1})
		byDriver, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Driver: "dns-rfc2136"})
		noErr(f, err, "DriverCallList")
		same(f, "by driver", byDriver.Calls, []store.DriverCall{c4, c3, c1})

		page, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Limit: 3})
		noErr(f, err, "DriverCallList")
		if len(page.Calls) != 3 || page.NextCursor != c2.ID {
			f.Fatalf("first page %+v", page)
		}
		rest, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Limit: 3, Cursor: page.NextCursor})
		noErr(f, err, "DriverCallList")
		if len(rest.Calls) != 1 || rest.Calls[0].ID != c1.ID || rest.NextCursor != "" {
			f.Fatalf("second page %+v", rest)
		}
		_, err = f.s.DriverCallList(f.ctx, store.DriverCallListParams{Limit: store.MaxListLimit + 1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"DriverCall/InvalidRefused", func(f *fx) {
		good := store.DriverCallAddParams{Actor: "alice", Driver: "dns-memory", Operation: store.OpDNSListZones, Code: store.CodeOK}
		edits := []func(*store.DriverCallAddParams){
			func(p *store.DriverCallAddParams) { p.Actor = "" },
			func(p *store.DriverCallAddParams) { p.Driver = "" },
			func(p *store.DriverCallAddParams) { p.Account = "Not An Account" },
			func(p *store.DriverCallAddParams) { p.Operation = "" },
			func(p *store.DriverCallAddParams) { p.Code = "" },
			func(p *store.DriverCallAddParams) { p.Target = strings.Repeat("t", 10000) },
			func(p *store.DriverCallAddParams) { p.Duration = -time.Second },
		}
		for i, edit := range edits {
			p := good
			edit(&p)
			_, err := f.s.DriverCallAdd(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad record %d: %v", i, err)
			}
		}
		all, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{})
		noErr(f, err, "DriverCallList")
		if len(all.Calls) != 0 {
			f.Fatalf("refused records were stored: %+v", all.Calls)
		}
	}},
	{"Account/TestMark", func(f *fx) {
		p := store.AccountCreateParams{Name: "lab", Driver: "cloud-mock", Settings: json.RawMessage(`{}`), Sealed: []byte{1},
			KeyID: "0123456789abcdef", Test: true, By: "alice", Now: f.at(0)}
		a, err := f.s.AccountCreate(f.ctx, p)
		noErr(f, err, "AccountCreate")
		if !a.Test {
			f.Fatalf("created without its test mark: %+v", a)
		}
		got, err := f.s.AccountGet(f.ctx, store.AccountGetParams{Name: "lab"})
		noErr(f, err, "AccountGet")
		if !got.Test {
			f.Fatalf("read back without its test mark: %+v", got)
		}
		off, err := f.s.AccountSetTest(f.ctx, store.AccountSetTestParams{Name: "lab", Test: false})
		noErr(f, err, "AccountSetTest")
		if off.Test || off.ID != a.ID || off.Sealed != nil {
			f.Fatalf("unmarked %+v", off)
		}
		list, err := f.s.AccountList(f.ctx, store.AccountListParams{})
		noErr(f, err, "AccountList")
		if len(list) != 1 || list[0].Test {
			f.Fatalf("list after unmarking %+v", list)
		}
		on, err := f.s.AccountSetTest(f.ctx, store.AccountSetTestParams{Name: "lab", Test: true})
		noErr(f, err, "AccountSetTest")
		if !on.Test {
			f.Fatalf("marked %+v", on)
		}
		_, err = f.s.AccountSetTest(f.ctx, store.AccountSetTestParams{Name: "nope", Test: true})
		testkit.WantCode(f, err, errcode.AccountNotFound)
		_, err = f.s.AccountSetTest(f.ctx, store.AccountSetTestParams{Name: "Not/A/Name", Test: true})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"DriverCall/StartFinish", func(f *fx) {
		started, err := f.s.DriverCallStart(f.ctx, store.DriverCallStartParams{Actor: "alice", Account: "lab", Driver: "cloud-mock",
			Operation: store.OpCloudDelete, Target: "m-000001", Now: f.at(0)})
		noErr(f, err, "DriverCallStart")
		if started.Code != store.CodePending || started.DurationMS != 0 || !started.At.Equal(f.at(0)) {
			f.Fatalf("started %+v", started)
		}
		// The intent is in the log before any outcome: a plane that dies here leaves it pending.
		all, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Account: "lab"})
		noErr(f, err, "DriverCallList")
		same(f, "pending", all.Calls, []store.DriverCall{started})

		done, err := f.s.DriverCallFinish(f.ctx, store.DriverCallFinishParams{ID: started.ID, Code: errcode.CloudConflict, Duration: 2500 * time.Millisecond})
		noErr(f, err, "DriverCallFinish")
		want := started
		want.Code, want.DurationMS = errcode.CloudConflict, 2500
		same(f, "finished", done, want)
		all, err = f.s.DriverCallList(f.ctx, store.DriverCallListParams{Account: "lab"})
		noErr(f, err, "DriverCallList")
		same(f, "finished in the log", all.Calls, []store.DriverCall{want})

		// An outcome is written once; an unknown id and a pending outcome are refused.
		for i, p := range []store.DriverCallFinishParams{
			{ID: started.ID, Code: store.CodeOK},
			{ID: "call_nope", Code: store.CodeOK},
			{ID: "", Code: store.CodeOK},
			{ID: started.ID, Code: store.CodePending},
			{ID: started.ID, Code: ""},
			{ID: started.ID, Code: store.CodeOK, Duration: -time.Second},
		} {
			_, err := f.s.DriverCallFinish(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad finish %d: %v", i, err)
			}
		}
		again, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{Account: "lab"})
		noErr(f, err, "DriverCallList")
		same(f, "unchanged by refused finishes", again.Calls, []store.DriverCall{want})

		_, err = f.s.DriverCallStart(f.ctx, store.DriverCallStartParams{Driver: "cloud-mock", Operation: store.OpCloudReboot})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}
