package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Sizes of the claim race: the fleet of the end-to-end test.
const (
	raceNodes       = 20
	raceJobs        = 1000
	claimersPerNode = 3 // two on one replica, one on the other
)

type raceSize struct{ nodes, jobs int }

var concurrencyTests = []test{
	{"Concurrent/ClaimsAcrossReplicas", func(f *fx) {
		if f.env.Replicas {
			testClaimRace(f, []store.Store{f.s, f.env.Peer(f)}, raceSize{raceNodes, raceJobs}, false)
			return
		}
		testClaimRace(f, []store.Store{f.s, f.env.Peer(f)}, raceSize{raceNodes / 4, raceJobs / 10}, false)
	}},
	{"Concurrent/FinishClaimsAcrossReplicas", func(f *fx) {
		// As ClaimsAcrossReplicas, with each result carrying its claimer's next claim.
		if f.env.Replicas {
			testClaimRace(f, []store.Store{f.s, f.env.Peer(f)}, raceSize{raceNodes, raceJobs}, true)
			return
		}
		testClaimRace(f, []store.Store{f.s, f.env.Peer(f)}, raceSize{raceNodes / 4, raceJobs / 10}, true)
	}},
	{"Concurrent/ClaimsInOneInstance", func(f *fx) {
		size := raceSize{raceNodes, raceJobs}
		if raceDetector && !f.env.Replicas {
			size.jobs /= 5 // SQLite's one writer under the race detector: fewer jobs, as many claimers
		}
		testClaimRace(f, []store.Store{f.s, f.s}, size, false)
	}},
	{"Concurrent/NonceAcrossReplicas", func(f *fx) {
		stores := []store.Store{f.s, f.env.Peer(f)}
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				ok, err := stores[i%2].NonceUse(f.ctx, store.NonceUseParams{KeyID: "k", Nonce: "n",
					ExpiresAt: f.at(time.Minute), Now: f.at(0)})
				if err != nil {
					f.Errorf("NonceUse: %v", err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		wg.Wait()
		if n := fresh.Load(); n != 1 {
			f.Fatalf("%d uses of one nonce were fresh, want 1", n)
		}
	}},
	{"Concurrent/JoinCapAcrossReplicas", func(f *fx) {
		stores := []store.Store{f.s, f.env.Peer(f)}
		var made, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				p := f.joinParams("web", fmt.Sprintf("203.0.113.%d", i))
				p.MaxPending = 3
				_, err := stores[i%2].JoinCreate(f.ctx, p)
				switch {
				case err == nil:
					made.Add(1)
				case errcode.Has(err, errcode.JoinTooMany):
					refused.Add(1)
				default:
					f.Errorf("JoinCreate: %v", err)
				}
			})
		}
		wg.Wait()
		if made.Load() != 3 || refused.Load() != 7 {
			f.Fatalf("made %d, refused %d; want 3 and 7", made.Load(), refused.Load())
		}
	}},
	{"Concurrent/ReleaseSequenceAcrossReplicas", func(f *fx) {
		stores := []store.Store{f.s, f.env.Peer(f)}
		var made, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				_, err := stores[i%2].ReleasePut(f.ctx, f.release(1, artifact("word/a@1.0.0.wasm", []byte{byte(i)})))
				switch {
				case err == nil:
					made.Add(1)
				case errcode.Has(err, errcode.ReleaseRollback):
					refused.Add(1)
				default:
					f.Errorf("ReleasePut: %v", err)
				}
			})
		}
		wg.Wait()
		if made.Load() != 1 || refused.Load() != 3 {
			f.Fatalf("made %d, refused %d; want 1 and 3", made.Load(), refused.Load())
		}
	}},
	{"Concurrent/FinishRacesLoss", func(f *fx) {
		// A result and the agent's idle claim arrive together, through two replicas: exactly one wins.
		n := f.node("web-1", "w")
		peer := f.env.Peer(f)
		for i := range 20 {
			j := f.job(n, "w")
			f.claim(n, f.at(time.Duration(i)*time.Second))
			var finished bool
			var lost []store.Job
			var finishErr, loseErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				_, finishErr = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(0)})
				finished = finishErr == nil
			})
			wg.Go(func() {
				lost, loseErr = peer.JobLoseRunning(f.ctx, store.JobLoseRunningParams{NodeID: n.ID, Now: f.at(0)})
			})
			wg.Wait()
			noErr(f, loseErr, "JobLoseRunning")
			if finishErr != nil && !errcode.Has(finishErr, errcode.JobNotRunning) {
				f.Fatalf("JobFinish: %v", finishErr)
			}
			if finished == (len(lost) == 1) {
				f.Fatalf("round %d: finished=%v and lost %d jobs; exactly one must win", i, finished, len(lost))
			}
			want := store.JobLost
			if finished {
				want = store.JobCompleted
			}
			if got := f.getJob(j.ID).State; got != want {
				f.Fatalf("round %d: job is %s, want %s", i, got, want)
			}
		}
	}},
}

// testClaimRace queues jobs for nodes while claimers on two stores race for them. Every job must be
// handed out exactly once, and no node may ever hold two claimed jobs at once. With finishClaim a
// claimer finishes with JobFinishClaim and works on the job it hands out, if any.
func testClaimRace(f *fx, stores []store.Store, size raceSize, finishClaim bool) {
	if size.jobs%(2*size.nodes) != 0 {
		f.Fatalf("%d jobs do not split evenly over 2 creators and %d nodes", size.jobs, size.nodes)
	}
	nodes := make([]store.Node, size.nodes)
	for i := range nodes {
		nodes[i] = f.node(fmt.Sprintf("node-%02d", i), "w")
	}
	perNode := size.jobs / size.nodes

	var (
		mu       sync.Mutex
		handed   = map[string]string{} // job id -> node id
		inFlight = make([]atomic.Int32, size.nodes)
		finished = make([]atomic.Int32, size.nodes)
		wg       sync.WaitGroup
		// A claimer that found nothing waits for the node's next job or result instead of spinning,
		// as an agent waits on its long poll; the claimer that just finished claims at once, so every
		// hand-out is still raced by at least two claimers.
		kick = make([]chan struct{}, size.nodes)
		done = make([]chan struct{}, size.nodes)
	)
	for i := range nodes {
		kick[i], done[i] = make(chan struct{}, 1), make(chan struct{})
	}
	// On any error every claimer stops, rather than wait for a kick that will not come.
	abort := make(chan struct{})
	var abortOnce sync.Once
	fail := func(format string, args ...any) {
		f.Errorf(format, args...)
		abortOnce.Do(func() { close(abort) })
	}
	nudge := func(i int) {
		select {
		case kick[i] <- struct{}{}:
		default:
		}
	}
	// Creators queue jobs through both replicas while the claimers run.
	for c := range 2 {
		wg.Go(func() {
			for k := range size.jobs / 2 {
				i := (k*2 + c) % size.nodes
				p := f.jobParams(nodes[i], "w")
				p.Now = time.Time{}
				if _, err := stores[c].JobCreate(f.ctx, p); err != nil {
					fail("JobCreate: %v", err)
					return
				}
				nudge(i)
			}
		})
	}
	for i, n := range nodes {
		for c := range claimersPerNode {
			s := stores[c%2]
			wg.Go(func() {
				var next *store.Job // handed out with the last result
				for finished[i].Load() < int32(perNode) && !f.Failed() {
					j := next
					next = nil
					var err error
					if j == nil {
						j, err = s.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID})
					}
					if err != nil {
						fail("JobClaim: %v", err)
						return
					}
					if j == nil {
						select {
						case <-kick[i]:
						case <-done[i]:
						case <-abort:
						}
						continue
					}
					if now := inFlight[i].Add(1); now != 1 {
						fail("node %s holds %d claimed jobs at once", n.ID, now)
					}
					mu.Lock()
					if prev, dup := handed[j.ID]; dup {
						fail("job %s handed out twice (to %s and %s)", j.ID, prev, n.ID)
					}
					handed[j.ID] = n.ID
					mu.Unlock()
					if j.NodeID != n.ID {
						fail("job %s of node %s handed to %s", j.ID, j.NodeID, n.ID)
					}
					// Release our mark before finishing: once the result commits, another claimer
					// may rightly take the next job.
					inFlight[i].Add(-1)
					if finishClaim {
						res, err := s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted})
						if err != nil {
							fail("JobFinishClaim: %v", err)
							return
						}
						next = res.Next
					} else if _, err := s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted}); err != nil {
						fail("JobFinish: %v", err)
						return
					}
					if finished[i].Add(1) == int32(perNode) {
						close(done[i])
					}
					nudge(i)
				}
			})
		}
	}
	wg.Wait()
	if f.Failed() {
		return
	}
	if len(handed) != size.jobs {
		f.Fatalf("%d jobs handed out, want %d", len(handed), size.jobs)
	}
	var completed int
	cursor := ""
	for {
		res, err := f.s.JobList(f.ctx, store.JobListParams{Limit: store.MaxListLimit, Cursor: cursor})
		noErr(f, err, "JobList")
		for _, j := range res.Jobs {
			if j.State != store.JobCompleted {
				f.Fatalf("job %s is %s after the race", j.ID, j.State)
			}
			completed++
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if completed != size.jobs {
		f.Fatalf("%d jobs completed, want %d", completed, size.jobs)
	}
}
