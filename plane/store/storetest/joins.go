package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var migrationTests = []test{
	{"Migration/AppliedOnceAndRecorded", func(f *fx) {
		first, err := f.s.MigrationList(f.ctx)
		noErr(f, err, "MigrationList")
		if len(first) == 0 {
			f.Fatal("no migration recorded")
		}
		for i, m := range first {
			if m.Version != i+1 || m.Name == "" || m.AppliedAt.IsZero() {
				f.Fatalf("migration %d recorded as %+v", i+1, m)
			}
		}
		// Opening again runs the migrations again, which must find nothing to do.
		peer := f.env.Peer(f)
		again, err := peer.MigrationList(f.ctx)
		noErr(f, err, "MigrationList")
		same(f, "migrations", again, first)
		noErr(f, f.s.Ping(f.ctx), "Ping")
	}},
	{"Store/ClosedRefuses", func(f *fx) {
		peer := f.env.Peer(f)
		noErr(f, peer.Close(), "Close")
		noErr(f, peer.Close(), "second Close")
		testkit.WantCode(f, peer.Ping(f.ctx), errcode.StoreClosed)
		_, err := peer.JobClaim(f.ctx, store.JobClaimParams{NodeID: "node_x"})
		testkit.WantCode(f, err, errcode.StoreClosed)
		_, err = peer.NonceUse(f.ctx, store.NonceUseParams{KeyID: "k", Nonce: "n", ExpiresAt: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.StoreClosed)
	}},
}

var joinTests = []test{
	{"Join/CreateAndGet", func(f *fx) {
		p := f.joinParams("web-1", "203.0.113.7")
		res, err := f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate")
		j := res.Join
		if res.Renewed || !strings.HasPrefix(j.ID, "join_") || j.Status != store.JoinPending {
			f.Fatalf("created %+v renewed=%v", j, res.Renewed)
		}
		if j.Name != p.Name || j.Key != p.Key || j.Fingerprint != p.Fingerprint || j.SourceAddress != p.SourceAddress ||
			!j.CreatedAt.Equal(p.Now) || !j.ExpiresAt.Equal(p.Now.Add(store.JoinTTL)) {
			f.Fatalf("created %+v from %+v", j, p)
		}
		same(f, "join as stored", f.getJoin(j.ID), j)
		_, err = f.s.JoinGet(f.ctx, store.JoinGetParams{ID: "join_missing"})
		testkit.WantCode(f, err, errcode.JoinNotFound)
	}},
	{"Join/InvalidRefused", func(f *fx) {
		key, fp := nodeKey()
		cases := []struct {
			name  string
			edit  func(*store.JoinCreateParams)
			field string
		}{
			{"empty name", func(p *store.JoinCreateParams) { p.Name = "" }, "name"},
			{"name with space", func(p *store.JoinCreateParams) { p.Name = "web 1" }, "name"},
			{"long name", func(p *store.JoinCreateParams) { p.Name = strings.Repeat("a", 64) }, "name"},
			{"key without prefix", func(p *store.JoinCreateParams) { p.Key = strings.TrimPrefix(key, "node-key:") }, "key"},
			{"publisher key", func(p *store.JoinCreateParams) { p.Key = "publisher-key:abc" }, "key"},
			{"fingerprint not sha256", func(p *store.JoinCreateParams) { p.Fingerprint = "MD5:" + fp[7:] }, "fingerprint"},
			{"fingerprint short", func(p *store.JoinCreateParams) { p.Fingerprint = fp[:len(fp)-1] }, "fingerprint"},
			{"too many addresses", func(p *store.JoinCreateParams) { p.Addresses = make([]string, 33) }, "addresses"},
			{"empty address", func(p *store.JoinCreateParams) { p.Addresses = []string{""} }, "addresses"},
			{"no source", func(p *store.JoinCreateParams) { p.SourceAddress = "" }, "source_address"},
			{"negative ttl", func(p *store.JoinCreateParams) { p.TTL = -time.Second }, "ttl"},
		}
		for _, c := range cases {
			f.Run(c.name, func(t *testing.T) {
				p := store.JoinCreateParams{Name: "web-1", Key: key, Fingerprint: fp, SourceAddress: "203.0.113.7", Now: f.at(0)}
				c.edit(&p)
				_, err := f.s.JoinCreate(f.ctx, p)
				testkit.WantCode(t, err, errcode.StoreParamInvalid)
				var e *errcode.Error
				if errors.As(err, &e); e.Details["field"] != c.field {
					t.Fatalf("field = %v, want %s", e.Details["field"], c.field)
				}
			})
		}
		list, err := f.s.JoinList(f.ctx, store.JoinListParams{Now: f.at(0)})
		noErr(f, err, "JoinList")
		if len(list.Joins) != 0 {
			f.Fatalf("refused joins were stored: %+v", list.Joins)
		}
	}},
	{"Join/SameKeyRenews", func(f *fx) {
		p := f.joinParams("web-1", "203.0.113.7")
		first, err := f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate")
		p.Now = f.at(30 * time.Minute)
		again, err := f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate again")
		if !again.Renewed || again.Join.ID != first.Join.ID || !again.Join.ExpiresAt.Equal(p.Now.Add(store.JoinTTL)) {
			f.Fatalf("second create %+v, first %+v", again, first)
		}
		same(f, "stored join", f.getJoin(first.Join.ID), again.Join)
	}},
	{"Join/ExpiredKeyJoinsAfresh", func(f *fx) {
		p := f.joinParams("web-1", "203.0.113.7")
		first, err := f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate")
		p.Now = f.at(store.JoinTTL + time.Second)
		again, err := f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate after expiry")
		if again.Renewed || again.Join.ID == first.Join.ID {
			f.Fatalf("an expired join was renewed: %+v", again)
		}
		old, err := f.s.JoinGet(f.ctx, store.JoinGetParams{ID: first.Join.ID, Now: p.Now})
		noErr(f, err, "JoinGet")
		if old.Status != store.JoinExpired {
			f.Fatalf("old join is %s", old.Status)
		}
	}},
	{"Join/Renew", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		r, err := f.s.JoinRenew(f.ctx, store.JoinRenewParams{ID: j.ID, Now: f.at(50 * time.Minute)})
		noErr(f, err, "JoinRenew")
		if !r.ExpiresAt.Equal(f.at(50*time.Minute + store.JoinTTL)) {
			f.Fatalf("renewed to %s", r.ExpiresAt)
		}
		// Past the renewed expiry it cannot be renewed again, and nothing changes.
		late := r.ExpiresAt.Add(time.Millisecond)
		_, err = f.s.JoinRenew(f.ctx, store.JoinRenewParams{ID: j.ID, Now: late})
		testkit.WantCode(f, err, errcode.JoinExpired)
		same(f, "join", f.getJoin(j.ID), r)
		_, err = f.s.JoinRenew(f.ctx, store.JoinRenewParams{ID: "join_missing", Now: late})
		testkit.WantCode(f, err, errcode.JoinNotFound)
	}},
	{"Join/CapOverall", func(f *fx) {
		for i := range 3 {
			p := f.joinParams("web-1", "203.0.113."+string(rune('1'+i)))
			p.MaxPending = 3
			_, err := f.s.JoinCreate(f.ctx, p)
			noErr(f, err, "JoinCreate")
		}
		p := f.joinParams("web-9", "203.0.113.9")
		p.MaxPending = 3
		_, err := f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinTooMany)
		list, err := f.s.JoinList(f.ctx, store.JoinListParams{Now: f.at(0)})
		noErr(f, err, "JoinList")
		if len(list.Joins) != 3 {
			f.Fatalf("%d joins stored, want 3", len(list.Joins))
		}
		// Expired joins do not count.
		p.Now = f.at(store.JoinTTL)
		_, err = f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate once the others expired")
	}},
	{"Join/CapPerSource", func(f *fx) {
		for range 2 {
			p := f.joinParams("web-1", "203.0.113.7")
			p.MaxPendingPerSource = 2
			_, err := f.s.JoinCreate(f.ctx, p)
			noErr(f, err, "JoinCreate")
		}
		p := f.joinParams("web-1", "203.0.113.7")
		p.MaxPendingPerSource = 2
		_, err := f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinTooMany)
		var e *errcode.Error
		if errors.As(err, &e); e.Details["scope"] != "source" {
			f.Fatalf("scope = %v", e.Details["scope"])
		}
		// Another source is not blocked by a busy neighbour.
		p.SourceAddress = "203.0.113.8"
		_, err = f.s.JoinCreate(f.ctx, p)
		noErr(f, err, "JoinCreate from another source")
	}},
	{"Join/ApproveNeedsExactFingerprint", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		wrong := []string{
			strings.ToLower(j.Fingerprint),
			" " + j.Fingerprint,
			j.Fingerprint + "\n",
			j.Fingerprint[:len(j.Fingerprint)-1] + "A",
			strings.TrimPrefix(j.Fingerprint, "SHA256:"),
			"",
		}
		for _, fp := range wrong {
			if fp == j.Fingerprint {
				continue
			}
			_, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: fp, Now: f.at(time.Minute)})
			testkit.WantCode(f, err, errcode.JoinFingerprintMismatch)
		}
		same(f, "join", f.getJoin(j.ID), j)
		nodes, err := f.s.NodeList(f.ctx, store.NodeListParams{})
		noErr(f, err, "NodeList")
		if len(nodes.Nodes) != 0 {
			f.Fatalf("a refused approval made nodes: %+v", nodes.Nodes)
		}
	}},
	{"Join/Approve", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		at := f.at(time.Minute)
		res, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, By: "alice", Now: at})
		noErr(f, err, "JoinApprove")
		n := res.Node
		if !strings.HasPrefix(n.ID, "node_") || n.Name != "web-1" || n.Key != j.Key || n.Fingerprint != j.Fingerprint ||
			n.State != store.NodeActive || !n.CreatedAt.Equal(at) || len(n.Addresses) != 2 || n.Refusals != 0 {
			f.Fatalf("node %+v", n)
		}
		if res.Join.Status != store.JoinApproved || res.Join.NodeID != n.ID || res.Join.DecidedBy != "alice" ||
			!res.Join.DecidedAt.Equal(at) {
			f.Fatalf("join %+v", res.Join)
		}
		same(f, "join as stored", f.getJoin(j.ID), res.Join)
		same(f, "node as stored", f.getNode(n.ID), n)
		byKey, err := f.s.NodeGetByKey(f.ctx, store.NodeGetByKeyParams{Fingerprint: j.Fingerprint})
		noErr(f, err, "NodeGetByKey")
		same(f, "node by key", byKey, n)

		_, err = f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Now: at})
		testkit.WantCode(f, err, errcode.JoinNotPending)
		_, err = f.s.JoinReject(f.ctx, store.JoinRejectParams{ID: j.ID, Now: at})
		testkit.WantCode(f, err, errcode.JoinNotPending)
		// The enrolled key cannot open another join.
		p := f.joinParams("web-2", "203.0.113.7")
		p.Key, p.Fingerprint = j.Key, j.Fingerprint
		_, err = f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinKeyEnrolled)
		_, err = f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: "join_missing", Fingerprint: j.Fingerprint, Now: at})
		testkit.WantCode(f, err, errcode.JoinNotFound)
	}},
	{"Join/ApproveExpiredRefused", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		_, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Now: j.ExpiresAt})
		testkit.WantCode(f, err, errcode.JoinExpired)
		nodes, err := f.s.NodeList(f.ctx, store.NodeListParams{})
		noErr(f, err, "NodeList")
		if len(nodes.Nodes) != 0 {
			f.Fatal("an expired join made a node")
		}
	}},
	{"Join/ApproveNameTaken", func(f *fx) {
		first := f.node("web-1")
		j := f.join("web-1", "203.0.113.7")
		_, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.NodeNameTaken)
		same(f, "join", f.getJoin(j.ID), j)
		res, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Name: "web-2", Now: f.at(time.Minute)})
		noErr(f, err, "JoinApprove under another name")
		if res.Node.Name != "web-2" {
			f.Fatalf("named %s", res.Node.Name)
		}
		// Once the first node is gone its name is free again.
		_, err = f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: first.ID, Now: f.at(time.Minute)})
		noErr(f, err, "NodeDisconnect")
		k := f.join("web-1", "203.0.113.7")
		_, err = f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: k.ID, Fingerprint: k.Fingerprint, Now: f.at(time.Minute)})
		noErr(f, err, "JoinApprove reusing a freed name")
	}},
	{"Join/RejectRetiresKey", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		r, err := f.s.JoinReject(f.ctx, store.JoinRejectParams{ID: j.ID, By: "alice", Now: f.at(time.Minute)})
		noErr(f, err, "JoinReject")
		if r.Status != store.JoinRejected || r.DecidedBy != "alice" {
			f.Fatalf("rejected join %+v", r)
		}
		same(f, "join as stored", f.getJoin(j.ID), r)
		p := f.joinParams("web-1", "203.0.113.7")
		p.Key, p.Fingerprint, p.Now = j.Key, j.Fingerprint, f.at(2*time.Minute)
		_, err = f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinKeyRetired)
		_, err = f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.JoinNotPending)
		_, err = f.s.JoinReject(f.ctx, store.JoinRejectParams{ID: j.ID, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.JoinNotPending)
		// The machine comes back with a fresh key.
		_, err = f.s.JoinCreate(f.ctx, f.joinParams("web-1", "203.0.113.7"))
		noErr(f, err, "JoinCreate with a fresh key")
	}},
	{"Join/RejectExpiredRetiresKey", func(f *fx) {
		j := f.join("web-1", "203.0.113.7")
		_, err := f.s.JoinReject(f.ctx, store.JoinRejectParams{ID: j.ID, Now: j.ExpiresAt.Add(time.Hour)})
		noErr(f, err, "JoinReject")
		p := f.joinParams("web-1", "203.0.113.7")
		p.Key, p.Fingerprint = j.Key, j.Fingerprint
		_, err = f.s.JoinCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.JoinKeyRetired)
	}},
	{"Join/ListAndExpire", func(f *fx) {
		a := f.join("a", "203.0.113.1")
		b := f.join("b", "203.0.113.2")
		c := f.join("c", "203.0.113.3")
		_, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: a.ID, Fingerprint: a.Fingerprint, Now: f.at(0)})
		noErr(f, err, "JoinApprove")
		_, err = f.s.JoinReject(f.ctx, store.JoinRejectParams{ID: b.ID, Now: f.at(0)})
		noErr(f, err, "JoinReject")
		later := f.at(store.JoinTTL)
		ids := func(st store.JoinStatus, at time.Time) []string {
			f.Helper()
			res, err := f.s.JoinList(f.ctx, store.JoinListParams{Status: st, Now: at})
			noErr(f, err, "JoinList")
			var out []string
			for _, j := range res.Joins {
				if st != "" && j.Status != st {
					f.Fatalf("JoinList(%s) returned a %s join", st, j.Status)
				}
				out = append(out, j.ID)
			}
			return out
		}
		same(f, "all", ids("", f.at(0)), []string{a.ID, b.ID, c.ID})
		same(f, "pending", ids(store.JoinPending, f.at(0)), []string{c.ID})
		same(f, "approved", ids(store.JoinApproved, f.at(0)), []string{a.ID})
		same(f, "rejected", ids(store.JoinRejected, f.at(0)), []string{b.ID})
		// Past its expiry c reads as expired before JoinExpire has run, and is marked by it.
		same(f, "expired, unmarked", ids(store.JoinExpired, later), []string{c.ID})
		same(f, "pending later", ids(store.JoinPending, later), []string(nil))
		n, err := f.s.JoinExpire(f.ctx, store.JoinExpireParams{Now: f.at(0)})
		noErr(f, err, "JoinExpire")
		if n != 0 {
			f.Fatalf("JoinExpire marked %d live joins", n)
		}
		n, err = f.s.JoinExpire(f.ctx, store.JoinExpireParams{Now: later})
		noErr(f, err, "JoinExpire")
		if n != 1 {
			f.Fatalf("JoinExpire marked %d, want 1", n)
		}
		same(f, "expired, marked", ids(store.JoinExpired, f.at(0)), []string{c.ID})
		_, err = f.s.JoinList(f.ctx, store.JoinListParams{Status: "bogus"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Join/ListPages", func(f *fx) {
		var want []string
		for range 5 {
			want = append(want, f.join("web", "203.0.113.1").ID)
		}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			res, err := f.s.JoinList(f.ctx, store.JoinListParams{Limit: 2, Cursor: cursor, Now: f.at(0)})
			noErr(f, err, "JoinList")
			for _, j := range res.Joins {
				got = append(got, j.ID)
			}
			if res.NextCursor == "" {
				if pages != 2 {
					f.Fatalf("%d pages, want 3", pages+1)
				}
				break
			}
			cursor = res.NextCursor
		}
		same(f, "paged ids", got, want)
	}},
}
