package storetest

import (
	"fmt"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// opened opens an incident on a fresh node that notifies the given webhooks, and returns it.
func (f *fx) opened(name string, notify ...string) store.Incident {
	f.Helper()
	n := f.node(name)
	f.intake(n, 0, notify, f.openCase(1, "unit_health", 0))
	return f.only(n, f.at(0))
}

func (f *fx) claimNotes(d time.Duration, p store.NotificationClaimParams) []store.Notification {
	f.Helper()
	p.Now = f.at(d)
	if p.Webhooks == nil {
		p.Webhooks = hooks
	}
	list, err := f.s.NotificationClaim(f.ctx, p)
	noErr(f, err, "NotificationClaim")
	return list
}

func (f *fx) record(n store.Notification, d time.Duration, p store.NotificationRecordParams) (store.Notification, error) {
	f.Helper()
	p.ID, p.Lease, p.Now = n.ID, n.Lease, f.at(d)
	return f.s.NotificationRecord(f.ctx, p)
}

var notificationTests = []test{
	{"Notification/DeliveredOnce", func(f *fx) {
		inc := f.opened("web-1", "pagerduty")
		got := f.claimNotes(0, store.NotificationClaimParams{})
		if len(got) != 1 || got[0].IncidentID != inc.ID || got[0].Webhook != "pagerduty" || got[0].Attempts != 1 ||
			got[0].Kind != store.EventOpened || got[0].Lease == "" {
			f.Fatalf("claimed %+v", got)
		}
		// Leased: no other claim takes it.
		if again := f.claimNotes(time.Second, store.NotificationClaimParams{}); len(again) != 0 {
			f.Fatalf("a leased notification was claimed again: %+v", again)
		}
		n, err := f.record(got[0], 2*time.Second, store.NotificationRecordParams{Delivered: true, Status: 202, Duration: 40 * time.Millisecond})
		noErr(f, err, "NotificationRecord")
		if n.State != store.NotificationDelivered || !n.FinishedAt.Equal(f.at(2*time.Second)) {
			f.Fatalf("recorded %+v", n)
		}
		if again := f.claimNotes(time.Hour, store.NotificationClaimParams{}); len(again) != 0 {
			f.Fatalf("a delivered notification was claimed again: %+v", again)
		}
		list := f.notificationsOf(inc.ID)
		if len(list) != 1 || len(list[0].History) != 1 || list[0].History[0].Status != 202 || list[0].History[0].Duration != 40 {
			f.Fatalf("history %+v", list)
		}
		// A second outcome for the same lease is refused.
		_, err = f.record(got[0], 3*time.Second, store.NotificationRecordParams{Delivered: true})
		testkit.WantCode(f, err, errcode.NotificationLeaseLost)
	}},
	{"Notification/RetriesAreBoundedAndRecorded", func(f *fx) {
		inc := f.opened("web-1", "pagerduty")
		p := store.NotificationClaimParams{MaxAttempts: 3}
		at := time.Duration(0)
		for i := 1; i <= 3; i++ {
			got := f.claimNotes(at, p)
			if len(got) != 1 || got[0].Attempts != i {
				f.Fatalf("attempt %d: claimed %+v", i, got)
			}
			retry := f.at(at + 10*time.Second)
			if i == 3 {
				retry = time.Time{} // the deliverer gives up with the last attempt
			}
			n, err := f.record(got[0], at+time.Second, store.NotificationRecordParams{Status: 503,
				Error: fmt.Sprintf("webhook.delivery_failed: 503 on try %d", i), RetryAt: retry})
			noErr(f, err, "NotificationRecord")
			if i < 3 {
				if n.State != store.NotificationPending || !n.NextAt.Equal(retry) {
					f.Fatalf("after attempt %d: %+v", i, n)
				}
				// Not due before its retry time.
				if early := f.claimNotes(at+5*time.Second, p); len(early) != 0 {
					f.Fatalf("claimed before its retry: %+v", early)
				}
			} else if n.State != store.NotificationFailed || n.LastError != "webhook.delivery_failed: 503 on try 3" {
				f.Fatalf("after the last attempt: %+v", n)
			}
			at += 10 * time.Second
		}
		if more := f.claimNotes(time.Hour, p); len(more) != 0 {
			f.Fatalf("a failed notification was claimed: %+v", more)
		}
		list := f.notificationsOf(inc.ID)
		if len(list[0].History) != 3 || list[0].History[2].Status != 503 || list[0].Attempts != 3 {
			f.Fatalf("history %+v", list[0])
		}
	}},
	{"Notification/ALostLeaseIsTakenOverAndCounted", func(f *fx) {
		f.opened("web-1", "pagerduty")
		p := store.NotificationClaimParams{Lease: time.Minute, MaxAttempts: 2}
		first := f.claimNotes(0, p)
		// The replica that claimed it died while sending; once the lease runs out another takes it.
		if got := f.claimNotes(59*time.Second, p); len(got) != 0 {
			f.Fatal("claimed under a live lease")
		}
		second := f.claimNotes(time.Minute, p)
		if len(second) != 1 || second[0].Attempts != 2 || second[0].Lease == first[0].Lease {
			f.Fatalf("take-over %+v", second)
		}
		_, err := f.record(first[0], time.Minute+time.Second, store.NotificationRecordParams{Delivered: true})
		testkit.WantCode(f, err, errcode.NotificationLeaseLost)
		// The second dies too: with its attempts spent, the notification fails with that reason.
		if got := f.claimNotes(3*time.Minute, p); len(got) != 0 {
			f.Fatalf("claimed past its attempts: %+v", got)
		}
		list := f.notificationsOf(first[0].IncidentID)
		if list[0].State != store.NotificationFailed || list[0].LastError == "" || len(list[0].History) != 2 ||
			list[0].History[0].Error == "" {
			f.Fatalf("notification %+v", list[0])
		}
	}},
	{"Notification/OnlyNamedWebhooks", func(f *fx) {
		f.opened("web-1", "pagerduty", "ops-json")
		got := f.claimNotes(0, store.NotificationClaimParams{Webhooks: []string{"ops-json"}})
		if len(got) != 1 || got[0].Webhook != "ops-json" {
			f.Fatalf("claimed %+v", got)
		}
		if got := f.claimNotes(0, store.NotificationClaimParams{Webhooks: []string{"elsewhere"}}); len(got) != 0 {
			f.Fatalf("claimed for an unknown webhook: %+v", got)
		}
		for _, p := range []store.NotificationClaimParams{{}, {Webhooks: []string{"Bad"}}, {Webhooks: hooks, Lease: time.Millisecond},
			{Webhooks: hooks, Limit: 1000}, {Webhooks: hooks, MaxAttempts: -1}} {
			_, err := f.s.NotificationClaim(f.ctx, p)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		_, err := f.s.NotificationRecord(f.ctx, store.NotificationRecordParams{ID: "ntf_missing", Lease: "lease_x", Delivered: true})
		testkit.WantCode(f, err, errcode.NotificationNotFound)
		_, err = f.s.NotificationRecord(f.ctx, store.NotificationRecordParams{ID: got[0].ID, Lease: got[0].Lease, Delivered: true, RetryAt: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Concurrent/NotificationClaimsAcrossReplicas", func(f *fx) {
		for i := range 10 {
			f.opened(fmt.Sprintf("web-%d", i), hooks...)
		}
		stores := []store.Store{f.s, f.env.Peer(f)}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for {
					got, err := stores[i%2].NotificationClaim(f.ctx, store.NotificationClaimParams{Webhooks: hooks, Now: f.at(time.Second), Limit: 3})
					if err != nil {
						f.Errorf("NotificationClaim: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, n := range got {
						seen[n.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 20 {
			f.Fatalf("%d notifications claimed, want 20", len(seen))
		}
		for id, k := range seen {
			if k != 1 {
				f.Fatalf("notification %s claimed %d times", id, k)
			}
		}
	}},
}
