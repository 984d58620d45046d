package storetest

import (
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var notifyTests = []test{
	{"Notify/JobQueuedWakesItsNode", func(f *fx) {
		x := f.node("x", "w")
		y := f.node("y", "w")
		wakeX, stopX := f.s.Notifier().Subscribe(x.ID)
		defer stopX()
		wakeY, stopY := f.s.Notifier().Subscribe(y.ID)
		defer stopY()
		f.ready(f.s, f.s.Notifier())
		drain(wakeX, wakeY)
		f.job(x, "w")
		testkit.Wait(f, wakeX, "waiter of x")
		f.job(y, "w")
		testkit.Wait(f, wakeY, "waiter of y")
		// Wake-ups of one listener arrive in order: had y's job woken x, x would hold a value by now.
		select {
		case <-wakeX:
			f.Fatal("a job for y woke the waiter of x")
		default:
		}
	}},
	{"Notify/RefusedJobWakesNobody", func(f *fx) {
		x := f.node("x", "w")
		wake, stop := f.s.Notifier().Subscribe(x.ID)
		defer stop()
		f.ready(f.s, f.s.Notifier())
		drain(wake)
		_, err := f.s.JobCreate(f.ctx, f.jobParams(x, "unreported"))
		if err == nil {
			f.Fatal("JobCreate of an unreported word succeeded")
		}
		f.job(x, "w")
		testkit.Wait(f, wake, "waiter of x")
		select {
		case <-wake:
			f.Fatal("the refused job woke the waiter too")
		default:
		}
	}},
	{"Notify/OtherReplicaWoken", func(f *fx) {
		if !f.env.PeerWakes {
			f.Skip("this store wakes waiters of its own process only")
		}
		x := f.node("x", "w")
		peer := f.env.Peer(f)
		wake, stop := peer.Notifier().Subscribe(x.ID)
		defer stop()
		f.ready(peer, peer.Notifier())
		drain(wake)
		f.job(x, "w") // queued through the first store, heard by the peer's listener
		testkit.Wait(f, wake, "waiter on the other replica")
		j, err := peer.JobClaim(f.ctx, store.JobClaimParams{NodeID: x.ID})
		noErr(f, err, "JobClaim on the other replica")
		if j == nil {
			f.Fatal("the woken replica found no job")
		}
	}},
	{"Notify/CloseReleasesWaiters", func(f *fx) {
		peer := f.env.Peer(f)
		wake, stop := peer.Notifier().Subscribe("node_x")
		defer stop()
		f.ready(peer, peer.Notifier())
		drain(wake)
		noErr(f, peer.Close(), "Close")
		testkit.Wait(f, wake, "waiter of a closed store")
		late, stopLate := peer.Notifier().Subscribe("node_x")
		defer stopLate()
		testkit.Wait(f, late, "subscriber after close")
	}},
}

// ready returns once n is listening. A listener that has just connected wakes every waiter once (jobs
// may have been queued while it was not listening), so tests whose waiters subscribed before must drain
// them after ready to start from a known state. The probe's first wake-up comes from that catch-up
// or from the probe's own job; either happens only once the listener is listening.
func (f *fx) ready(s store.Store, n store.Notifier) {
	f.Helper()
	probe := f.node("probe", "w")
	wake, stop := n.Subscribe(probe.ID)
	defer stop()
	_, err := s.JobCreate(f.ctx, f.jobParams(probe, "w"))
	noErr(f, err, "JobCreate for the probe")
	testkit.Wait(f, wake, "probe waiter")
}

// drain empties wake-up channels without waiting.
func drain(chs ...<-chan struct{}) {
	for _, ch := range chs {
		select {
		case <-ch:
		default:
		}
	}
}
