package storetest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var nodeTests = []test{
	{"Node/GetUnknown", func(f *fx) {
		_, err := f.s.NodeGet(f.ctx, store.NodeGetParams{ID: "node_missing"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
		_, err = f.s.NodeGet(f.ctx, store.NodeGetParams{Name: "nobody"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
		_, fp := nodeKey()
		_, err = f.s.NodeGetByKey(f.ctx, store.NodeGetByKeyParams{Fingerprint: fp})
		testkit.WantCode(f, err, errcode.NodeNotFound)
		_, err = f.s.NodeGetByKey(f.ctx, store.NodeGetByKeyParams{Fingerprint: "SHA256:short"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.NodeGet(f.ctx, store.NodeGetParams{})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Node/GetByName", func(f *fx) {
		n := f.node("web-1")
		got, err := f.s.NodeGet(f.ctx, store.NodeGetParams{Name: "web-1"})
		noErr(f, err, "NodeGet by name")
		same(f, "node", got, n)
	}},
	{"Node/Report", func(f *fx) {
		n := f.node("web-1")
		at := f.at(time.Minute)
		p := store.NodeReportParams{ID: n.ID, Now: at, AgentVersion: "1.2.3", StatementSequence: 7,
			StatementDigest: digest([]byte("s7")), Vocabulary: words("disk_usage", "host_report"),
			Recipes: json.RawMessage(`[{"name":"disk_full","verdict":"ok"}]`), Idle: false, ClaimSizeCap: 1 << 20,
			Facts: store.NodeFacts{CollectedAt: at.Add(-time.Second), OS: "debian-12", OSName: "Debian GNU/Linux 12 (bookworm)",
				Kernel: "6.1.0-28-amd64", Arch: "x86_64", Hostname: "web-1", CPUs: 4, CPUModel: "Test CPU", MemoryBytes: 8 << 30,
				MemoryFreeBytes: 4 << 30, DiskBytes: 100 << 30, DiskFreeBytes: 50 << 30, BootedAt: at.Add(-time.Hour),
				Addresses: []string{"192.0.2.10", "2001:db8::10"}}}
		got, err := f.s.NodeReport(f.ctx, p)
		noErr(f, err, "NodeReport")
		if !got.LastSeenAt.Equal(at) || got.AgentVersion != "1.2.3" || got.StatementSequence != 7 ||
			got.StatementDigest != p.StatementDigest || got.Idle || got.ClaimSizeCap != 1<<20 {
			f.Fatalf("reported node %+v", got)
		}
		same(f, "vocabulary", got.Vocabulary, p.Vocabulary)
		same(f, "facts", got.Facts, p.Facts)
		if !jsonEqual(got.Recipes, p.Recipes) {
			f.Fatalf("recipes %s", got.Recipes)
		}
		same(f, "node as stored", f.getNode(n.ID), got)
		if w, ok := got.Word("host_report"); !ok || w.Version != "1.0.0" {
			f.Fatalf("Word(host_report) = %+v, %v", w, ok)
		}

		// Refused reports change nothing.
		bad := []func(*store.NodeReportParams){
			func(p *store.NodeReportParams) { p.Vocabulary = append(words("a"), words("a")...) },
			func(p *store.NodeReportParams) { p.Vocabulary = []store.WordRef{{Version: "1"}} },
			func(p *store.NodeReportParams) { p.Recipes = json.RawMessage(`{"not":"a list"}`) },
			func(p *store.NodeReportParams) { p.Recipes = json.RawMessage(`null`) },
			func(p *store.NodeReportParams) { p.Recipes = json.RawMessage(`[`) },
			func(p *store.NodeReportParams) { p.AgentVersion = strings.Repeat("v", 300) },
			func(p *store.NodeReportParams) { p.StatementSequence = -1 },
			func(p *store.NodeReportParams) { p.AgentVersion = "1\x00" },
			func(p *store.NodeReportParams) { p.Vocabulary = []store.WordRef{{Name: "a\x00b"}} },
			func(p *store.NodeReportParams) { p.Recipes = json.RawMessage(`[{"name": "a\u0000"}]`) },
			func(p *store.NodeReportParams) { p.Recipes = json.RawMessage("[{\"name\": \"a\xff\"}]") },
			func(p *store.NodeReportParams) { p.Facts.OS = strings.Repeat("o", channel.MaxFactText+1) },
			func(p *store.NodeReportParams) { p.Facts.Kernel = "6\x00" },
			func(p *store.NodeReportParams) { p.Facts.Addresses = make([]string, channel.MaxFactAddresses+1) },
			func(p *store.NodeReportParams) { p.Facts.Addresses = []string{""} },
			func(p *store.NodeReportParams) { p.Facts.DiskBytes = -1 },
		}
		for i, edit := range bad {
			q := p
			q.Now = f.at(time.Hour)
			edit(&q)
			_, err := f.s.NodeReport(f.ctx, q)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad report %d: %v", i, err)
			}
		}
		same(f, "node after refused reports", f.getNode(n.ID), got)
		// A report without facts (an older agent) clears them: each report replaces the last.
		q := p
		q.Facts = store.NodeFacts{}
		cleared, err := f.s.NodeReport(f.ctx, q)
		noErr(f, err, "NodeReport without facts")
		same(f, "facts after a report of none", cleared.Facts, store.NodeFacts{})
		_, err = f.s.NodeReport(f.ctx, store.NodeReportParams{ID: "node_missing"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
	{"Node/Reach", func(f *fx) {
		n := f.node("web-1")
		none, err := f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{ID: n.ID})
		noErr(f, err, "NodeReachGet before any report")
		if none == nil || len(none) != 0 {
			f.Fatalf("reach before a report: %#v", none)
		}
		reach := []store.WordReach{
			{Word: "converge", Digest: digest([]byte("c")), Caps: []channel.CapReach{
				{Cap: "fs.install", Roots: []string{"/etc/nginx"}, Narrowed: true, Note: "never beneath the agent's own folders /etc/lexicon"},
				{Cap: "nft.apply", Narrowed: true, Denied: "this node's policy does not make the inbound firewall Lexicon's"},
				{Cap: "pkg.ensure", Packages: []string{"nginx"}, Origins: []string{"origin=Debian"}, Narrowed: true}}},
			{Word: "restore", Digest: digest([]byte("r")), Refused: "this node's policy does not accept destructive words", Caps: []channel.CapReach{}},
		}
		p := store.NodeReportParams{ID: n.ID, Now: f.at(time.Minute), AgentVersion: "1.2.3", Vocabulary: words("converge", "restore"), Reach: reach}
		_, err = f.s.NodeReport(f.ctx, p)
		noErr(f, err, "NodeReport with reach")
		got, err := f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{ID: n.ID})
		noErr(f, err, "NodeReachGet")
		same(f, "reach", got, reach)

		bad := []func(*store.NodeReportParams){
			func(p *store.NodeReportParams) { p.Reach = make([]store.WordReach, channel.MaxReachWords+1) },
			func(p *store.NodeReportParams) { p.Reach = []store.WordReach{{Digest: "d"}} },
			func(p *store.NodeReportParams) {
				p.Reach = []store.WordReach{{Word: "w", Caps: make([]channel.CapReach, channel.MaxReachCaps+1)}}
			},
			func(p *store.NodeReportParams) {
				p.Reach = []store.WordReach{{Word: "w", Caps: []channel.CapReach{{Cap: "fs.read", Roots: make([]string, channel.MaxReachList+1)}}}}
			},
			func(p *store.NodeReportParams) {
				p.Reach = []store.WordReach{{Word: "w", Caps: []channel.CapReach{{Cap: "fs.read", Roots: []string{"/a\x00"}}}}}
			},
			func(p *store.NodeReportParams) {
				p.Reach = []store.WordReach{{Word: "w", Refused: strings.Repeat("r", channel.MaxReachText+1)}}
			},
		}
		for i, edit := range bad {
			q := p
			edit(&q)
			_, err := f.s.NodeReport(f.ctx, q)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad reach %d: %v", i, err)
			}
		}
		got, err = f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{ID: n.ID})
		noErr(f, err, "NodeReachGet after refused reports")
		same(f, "reach after refused reports", got, reach)

		// A report without reach (an older agent) clears it: each report replaces the last.
		p.Reach = nil
		_, err = f.s.NodeReport(f.ctx, p)
		noErr(f, err, "NodeReport without reach")
		got, err = f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{ID: n.ID})
		noErr(f, err, "NodeReachGet after a report of none")
		if len(got) != 0 {
			f.Fatalf("reach after a report of none: %+v", got)
		}
		_, err = f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{ID: "node_missing"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
		_, err = f.s.NodeReachGet(f.ctx, store.NodeReachGetParams{})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Node/Disconnect", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		running := f.job(n, "disk_usage")
		f.claim(n, f.at(time.Second))
		queued := f.job(n, "disk_usage")
		at := f.at(time.Minute)
		res, err := f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: n.ID, By: "alice", Now: at})
		noErr(f, err, "NodeDisconnect")
		if res.Node.State != store.NodeDisconnected || !res.Node.EndedAt.Equal(at) {
			f.Fatalf("node %+v", res.Node)
		}
		if len(res.Cancelled) != 1 || res.Cancelled[0].ID != queued.ID || res.Cancelled[0].State != store.JobCancelled {
			f.Fatalf("cancelled %+v", res.Cancelled)
		}
		if len(res.Lost) != 1 || res.Lost[0].ID != running.ID || res.Lost[0].State != store.JobLost ||
			res.Lost[0].OutcomeCode != errcode.JobLost {
			f.Fatalf("lost %+v", res.Lost)
		}
		same(f, "node as stored", f.getNode(n.ID), res.Node)
		same(f, "cancelled job as stored", f.getJob(queued.ID), res.Cancelled[0])
		// The key proves nothing any more, and can never join again.
		_, err = f.s.NodeGetByKey(f.ctx, store.NodeGetByKeyParams{Fingerprint: n.Fingerprint})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		p := f.joinParams("web-1", "203.0.113.7")
		p.Key, p.Fingerprint = n.Key, n.Fingerprint
		_, err = f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinKeyRetired)
		// Nothing more can happen to it.
		_, err = f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: n.ID, Now: at})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		_, err = f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: n.ID, Now: at})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		_, err = f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: at})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		_, err = f.s.JobCreate(f.ctx, f.jobParams(n, "disk_usage"))
		testkit.WantCode(f, err, errcode.NodeNotActive)
		_, err = f.s.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: at})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: running.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: at})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		same(f, "node after refusals", f.getNode(n.ID), res.Node)
		_, err = f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: "node_missing", Now: at})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
	{"Node/Leave", func(f *fx) {
		n := f.node("web-1")
		res, err := f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: n.ID, Now: f.at(time.Minute)})
		noErr(f, err, "NodeLeave")
		if res.Node.State != store.NodeLeft || len(res.Cancelled) != 0 || len(res.Lost) != 0 {
			f.Fatalf("left %+v", res)
		}
		_, err = f.s.NodeGetByKey(f.ctx, store.NodeGetByKeyParams{Fingerprint: n.Fingerprint})
		testkit.WantCode(f, err, errcode.NodeNotActive)
		p := f.joinParams("web-1", "203.0.113.7")
		p.Key, p.Fingerprint = n.Key, n.Fingerprint
		_, err = f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinKeyRetired)
	}},
	{"Node/List", func(f *fx) {
		a := f.node("a")
		b := f.node("b")
		c := f.node("c")
		_, err := f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: b.ID, Now: f.at(0)})
		noErr(f, err, "NodeLeave")
		ids := func(p store.NodeListParams) ([]string, string) {
			f.Helper()
			res, err := f.s.NodeList(f.ctx, p)
			noErr(f, err, "NodeList")
			var out []string
			for _, n := range res.Nodes {
				out = append(out, n.ID)
			}
			return out, res.NextCursor
		}
		all, _ := ids(store.NodeListParams{})
		same(f, "all", all, []string{a.ID, b.ID, c.ID})
		active, _ := ids(store.NodeListParams{State: store.NodeActive})
		same(f, "active", active, []string{a.ID, c.ID})
		left, _ := ids(store.NodeListParams{State: store.NodeLeft})
		same(f, "left", left, []string{b.ID})
		page, cursor := ids(store.NodeListParams{Limit: 2})
		same(f, "page 1", page, []string{a.ID, b.ID})
		page, cursor = ids(store.NodeListParams{Limit: 2, Cursor: cursor})
		same(f, "page 2", page, []string{c.ID})
		if cursor != "" {
			f.Fatalf("cursor after the last page: %q", cursor)
		}
		_, err = f.s.NodeList(f.ctx, store.NodeListParams{State: "gone"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.NodeList(f.ctx, store.NodeListParams{Limit: store.MaxListLimit + 1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}

var nonceTests = []test{
	{"Nonce/UseOnce", func(f *fx) {
		use := func(key, nonce string, at time.Time) bool {
			f.Helper()
			fresh, err := f.s.NonceUse(f.ctx, store.NonceUseParams{KeyID: key, Nonce: nonce, ExpiresAt: at.Add(10 * time.Minute), Now: at})
			noErr(f, err, "NonceUse")
			return fresh
		}
		if !use("k1", "n1", f.at(0)) {
			f.Fatal("a fresh nonce was refused")
		}
		if use("k1", "n1", f.at(time.Minute)) {
			f.Fatal("a replayed nonce was accepted")
		}
		if !use("k2", "n1", f.at(time.Minute)) {
			f.Fatal("another key's nonce was refused")
		}
		// Once expired the nonce is forgotten (the signature's clock check refuses such a request).
		if !use("k1", "n1", f.at(10*time.Minute)) {
			f.Fatal("an expired nonce was still held")
		}
		if use("k1", "n1", f.at(11*time.Minute)) {
			f.Fatal("a nonce reused after expiry was not held again")
		}
		n, err := f.s.NoncePurge(f.ctx, store.NoncePurgeParams{Now: f.at(11 * time.Minute)})
		noErr(f, err, "NoncePurge")
		if n != 1 { // k2/n1 expired at 11m; k1/n1 lives to 20m
			f.Fatalf("purged %d, want 1", n)
		}
		if use("k1", "n1", f.at(12*time.Minute)) {
			f.Fatal("purge dropped a live nonce")
		}
		_, err = f.s.NonceUse(f.ctx, store.NonceUseParams{KeyID: "k", Nonce: "", ExpiresAt: f.at(time.Minute), Now: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.NonceUse(f.ctx, store.NonceUseParams{KeyID: "k", Nonce: "n", ExpiresAt: f.at(0), Now: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}
