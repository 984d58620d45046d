package storetest

import (
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var provisioningTests = []test{
	{"Provisioning/CreateGetListAndNameTaken", func(f *fx) {
		pr := f.provisioning("web-9")
		if pr.State != store.ProvCreating || !strings.HasPrefix(pr.Tag, "lexicon-prov-") || pr.InstanceID != "" {
			f.Fatalf("new provisioning: %+v", pr)
		}
		same(f, "labels", pr.Labels, map[string]string{"role": "web"})
		got, err := f.s.ProvisioningGet(f.ctx, store.ProvisioningGetParams{ID: pr.ID})
		noErr(f, err, "ProvisioningGet")
		if len(got.Events) != 1 || got.Events[0].State != store.ProvCreating || got.Events[0].Actor != "admin" {
			f.Fatalf("timeline: %+v", got.Events)
		}
		_, err = f.s.ProvisioningCreate(f.ctx, f.provParams("web-9"))
		testkit.WantCode(f, err, errcode.ProvisionNameTaken)
		f.node("db-1")
		_, err = f.s.ProvisioningCreate(f.ctx, f.provParams("db-1"))
		testkit.WantCode(f, err, errcode.ProvisionNameTaken)
		for _, bad := range []func(*store.ProvisioningCreateParams){
			func(p *store.ProvisioningCreateParams) { p.Name = "no spaces" },
			func(p *store.ProvisioningCreateParams) { p.Region = "" },
			func(p *store.ProvisioningCreateParams) { p.DNSZone = "example.org" },
			func(p *store.ProvisioningCreateParams) { p.Labels = map[string]string{"Bad": "x"} },
		} {
			p := f.provParams("web-10")
			bad(&p)
			_, err := f.s.ProvisioningCreate(f.ctx, p)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		_, err = f.s.ProvisioningGet(f.ctx, store.ProvisioningGetParams{ID: "prov_missing"})
		testkit.WantCode(f, err, errcode.ProvisionNotFound)
		list, err := f.s.ProvisioningList(f.ctx, store.ProvisioningListParams{Open: true})
		noErr(f, err, "ProvisioningList")
		if len(list) != 1 || list[0].ID != pr.ID {
			f.Fatalf("open list: %+v", list)
		}
	}},
	{"Provisioning/UpdateMovesOnlyFromState", func(f *fx) {
		pr := f.provisioning("web-1")
		res, err := f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvCreating, To: store.ProvBooting,
			InstanceID: "i-1", Addresses: []string{"192.0.2.7"}, Detail: "created i-1", By: "plane", Now: f.at(time.Second)})
		noErr(f, err, "ProvisioningUpdate")
		if !res.Moved || res.Provisioning.State != store.ProvBooting || res.Provisioning.InstanceID != "i-1" ||
			!res.Provisioning.StateAt.Equal(f.at(time.Second)) {
			f.Fatalf("update: %+v", res)
		}
		res, err = f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvCreating, To: store.ProvFailed,
			Reason: "late", By: "plane", Now: f.at(2 * time.Second)})
		noErr(f, err, "stale ProvisioningUpdate")
		if res.Moved || res.Provisioning.State != store.ProvBooting {
			f.Fatalf("a stale update moved: %+v", res)
		}
		res, err = f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvBooting, To: store.ProvFailed,
			Reason: "timed out", Detail: "timed out", By: "plane", Now: f.at(3 * time.Second)})
		noErr(f, err, "fail")
		if res.Provisioning.FinishedAt.IsZero() || res.Provisioning.Reason != "timed out" {
			f.Fatalf("failed record: %+v", res.Provisioning)
		}
		// A failed provisioning with its instance undeleted is still the engine's work.
		list, err := f.s.ProvisioningList(f.ctx, store.ProvisioningListParams{Open: true})
		noErr(f, err, "ProvisioningList")
		if len(list) != 1 {
			f.Fatalf("failed with an instance is not open: %+v", list)
		}
		// Its name is free again.
		_ = f.provisioning("web-1")
		_, err = f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvFailed, To: store.ProvFailed,
			TokenHash: "XYZ", By: "plane"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Provisioning/TokenOnceAndExpiry", func(f *fx) {
		pr := f.provisioning("web-1")
		hash := strings.Repeat("ab", 32)
		_, err := f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvCreating, To: store.ProvInstalling,
			TokenHash: hash, TokenExpiresAt: f.at(time.Hour), InstanceID: "i-1", By: "plane", Now: f.at(0)})
		noErr(f, err, "mint")
		got, err := f.s.ProvisioningTokenCheck(f.ctx, store.ProvisioningTokenParams{TokenHash: hash, Now: f.at(time.Minute)})
		noErr(f, err, "ProvisioningTokenCheck")
		if got.ID != pr.ID {
			f.Fatalf("token names %s", got.ID)
		}
		_, err = f.s.ProvisioningTokenCheck(f.ctx, store.ProvisioningTokenParams{TokenHash: strings.Repeat("cd", 32), Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.ProvisionTokenInvalid)
		_, err = f.s.ProvisioningTokenCheck(f.ctx, store.ProvisioningTokenParams{TokenHash: hash, Now: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.ProvisionTokenExpired)

		j1, j2 := f.join("web-1", "192.0.2.7"), f.join("web-1", "192.0.2.8")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, j := range []store.Join{j1, j2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = f.s.ProvisioningTokenUse(f.ctx, store.ProvisioningTokenParams{TokenHash: hash, JoinID: j.ID, Now: f.at(time.Minute)})
			}()
		}
		wg.Wait()
		used := 0
		for _, err := range errs {
			if err == nil {
				used++
			} else {
				testkit.WantCode(f, err, errcode.ProvisionTokenUsed)
			}
		}
		if used != 1 {
			f.Fatalf("the token was spent %d times: %v", used, errs)
		}
		after, err := f.s.ProvisioningGet(f.ctx, store.ProvisioningGetParams{ID: pr.ID})
		noErr(f, err, "get")
		if after.State != store.ProvJoining || after.JoinID == "" || after.TokenUsedAt.IsZero() {
			f.Fatalf("after use: %+v", after)
		}
		if j := f.getJoin(after.JoinID); j.ProvisioningID != pr.ID {
			f.Fatalf("the join does not name its provisioning: %+v", j)
		}
		_, err = f.s.ProvisioningTokenUse(f.ctx, store.ProvisioningTokenParams{TokenHash: hash, JoinID: j1.ID, Now: f.at(2 * time.Minute)})
		testkit.WantCode(f, err, errcode.ProvisionTokenUsed)
		held, err := f.s.JoinHold(f.ctx, store.JoinHoldParams{ID: after.JoinID, Reason: "the join came from 192.0.2.8, not an address of i-1"})
		noErr(f, err, "JoinHold")
		if held.HoldReason == "" || held.ProvisioningID != pr.ID {
			f.Fatalf("held: %+v", held)
		}
		list, err := f.s.JoinList(f.ctx, store.JoinListParams{Status: store.JoinPending})
		noErr(f, err, "JoinList")
		found := false
		for _, j := range list.Joins {
			found = found || (j.ID == held.ID && j.HoldReason == held.HoldReason)
		}
		if !found {
			f.Fatalf("JoinList does not show the hold reason: %+v", list.Joins)
		}
	}},
	{"Provisioning/OrphanIncident", func(f *fx) {
		pr := f.provisioning("web-1")
		_, err := f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvCreating, To: store.ProvFailed,
			InstanceID: "i-1", Reason: "timed out; delete failed", Cleanup: store.CleanupFailed, By: "plane", Now: f.at(0)})
		noErr(f, err, "fail")
		res, err := f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(time.Second)})
		noErr(f, err, "IncidentReconcile")
		opened := false
		for _, c := range res.Changes {
			opened = opened || (c.Incident.Source == store.DetectorProvisioningOrphan && c.Incident.Subject == "provisioning:"+pr.ID)
		}
		if !opened {
			f.Fatalf("no orphan incident: %+v", res.Changes)
		}
		_, err = f.s.ProvisioningUpdate(f.ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: store.ProvFailed, To: store.ProvCleanedUp,
			Cleanup: store.CleanupDeleted, By: "plane", Now: f.at(time.Minute)})
		noErr(f, err, "cleaned")
		res, err = f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(2 * time.Minute)})
		noErr(f, err, "IncidentReconcile")
		if len(res.Changes) == 0 || res.Changes[0].Incident.Condition != store.ConditionCleared {
			f.Fatalf("the orphan incident did not clear: %+v", res.Changes)
		}
	}},
	{"Provisioning/TransferIncidentAt80Percent", func(f *fx) {
		n := f.node("old-1")
		pr, err := f.s.ProvisioningAdopt(f.ctx, store.ProvisioningAdoptParams{Account: "lin", InstanceID: "i-9", NodeID: n.ID, By: "admin"})
		noErr(f, err, "ProvisioningAdopt")
		creating := f.provisioning("web-1")
		_, err = f.s.ProvisioningTransferSet(f.ctx, store.ProvisioningTransferParams{ID: creating.ID, Used: 1, Allowance: 2})
		testkit.WantCode(f, err, errcode.ProvisionNotFound)
		reconcile := func(d time.Duration) []store.IncidentChange {
			res, err := f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(d)})
			noErr(f, err, "IncidentReconcile")
			var out []store.IncidentChange
			for _, c := range res.Changes {
				if c.Incident.Source == store.DetectorMachineTransfer {
					out = append(out, c)
				}
			}
			return out
		}
		const tb = int64(1) << 40
		got, err := f.s.ProvisioningTransferSet(f.ctx, store.ProvisioningTransferParams{ID: pr.ID, Used: tb * 79 / 100, Allowance: tb, Now: f.at(time.Hour)})
		noErr(f, err, "ProvisioningTransferSet")
		if got.TransferUsed != tb*79/100 || got.TransferAllowance != tb || got.TransferAt.IsZero() {
			f.Fatalf("transfer: %+v", got)
		}
		if c := reconcile(time.Hour); len(c) != 0 {
			f.Fatalf("an incident below 80%%: %+v", c)
		}
		_, err = f.s.ProvisioningTransferSet(f.ctx, store.ProvisioningTransferParams{ID: pr.ID, Used: tb * 81 / 100, Allowance: tb, Now: f.at(25 * time.Hour)})
		noErr(f, err, "ProvisioningTransferSet")
		c := reconcile(25 * time.Hour)
		if len(c) != 1 || c[0].Incident.Subject != "provisioning:"+pr.ID || !strings.Contains(c[0].Incident.Summary, "of its monthly transfer") {
			f.Fatalf("no transfer incident at 81%%: %+v", c)
		}
		// Notified once: a higher figure the next day changes nothing.
		_, err = f.s.ProvisioningTransferSet(f.ctx, store.ProvisioningTransferParams{ID: pr.ID, Used: tb * 90 / 100, Allowance: tb, Now: f.at(49 * time.Hour)})
		noErr(f, err, "ProvisioningTransferSet")
		if c := reconcile(49 * time.Hour); len(c) != 0 {
			f.Fatalf("a second change while over: %+v", c)
		}
		list, err := f.s.ProvisioningList(f.ctx, store.ProvisioningListParams{State: store.ProvJoined})
		noErr(f, err, "ProvisioningList")
		if len(list) != 1 || list[0].ID != pr.ID {
			f.Fatalf("joined list: %+v", list)
		}
	}},
	{"Provisioning/Adopt", func(f *fx) {
		n := f.node("old-1")
		pr, err := f.s.ProvisioningAdopt(f.ctx, store.ProvisioningAdoptParams{Account: "lin", InstanceID: "i-9", NodeID: n.ID,
			Addresses: []string{"192.0.2.9"}, By: "admin"})
		noErr(f, err, "ProvisioningAdopt")
		if pr.State != store.ProvJoined || pr.NodeID != n.ID || pr.Tag != "" || pr.Name != "old-1" {
			f.Fatalf("adopted: %+v", pr)
		}
		_, err = f.s.ProvisioningAdopt(f.ctx, store.ProvisioningAdoptParams{Account: "lin", InstanceID: "i-9", NodeID: "node_missing", By: "admin"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
}

func (f *fx) provParams(name string) store.ProvisioningCreateParams {
	return store.ProvisioningCreateParams{Name: name, Account: "lin", Region: "us-east", Type: "g6-nanode-1", Image: "debian-13",
		Labels: map[string]string{"role": "web"}, By: "admin", Now: f.at(0)}
}

func (f *fx) provisioning(name string) store.Provisioning {
	f.Helper()
	pr, err := f.s.ProvisioningCreate(f.ctx, f.provParams(name))
	noErr(f, err, "ProvisioningCreate")
	return pr
}
