// Package storetest is the conformance suite every plane store passes: one set of tests and benchmarks,
// run against SQLite and against PostgreSQL, so the two cannot disagree on a rule.
//
//	func TestPostgres(t *testing.T)       { storetest.Run(t, storetest.PostgresOpener) }
//	func TestSQLite(t *testing.T)         { storetest.Run(t, storetest.SQLiteOpener) }
//	func BenchmarkPostgres(b *testing.B)  { storetest.Bench(b, storetest.PostgresOpener) }
//
// PostgresURL gives any test (the plane's end-to-end tests too) a fresh schema of its own.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// Env is one store under test, fresh and empty.
type Env struct {
	Store store.Store
	// Peer opens another instance on the same database, as a second plane replica would, and closes
	// it at the end of the test.
	Peer func(t testing.TB) store.Store
	// PeerWakes says that a job queued through one instance wakes the waiters of another. PostgreSQL
	// does (LISTEN/NOTIFY); SQLite's wake-ups stay in the process that queued the job.
	PeerWakes bool
	// Replicas says that several instances share this database in production (PostgreSQL): the
	// claim race then runs at full size across two instances. A single-process store (SQLite) runs
	// it at full size on one instance, and across two at a tenth of the size: a second process on the
	// file (a CLI) must not break the rules either, but is not where the load is.
	Replicas bool
}

// Opener makes a fresh Env for one test.
type Opener func(t testing.TB) Env

// Open opens the store at url and closes it when the test ends.
func Open(t testing.TB, url string) store.Store {
	t.Helper()
	s, err := open.URL(context.Background(), url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type test struct {
	name string
	fn   func(*fx)
}

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open Opener) {
	groups := [][]test{migrationTests, joinTests, nodeTests, nonceTests, jobTests, tokenTests, releaseTests,
		notifyTests, concurrencyTests, driverTests, caseTests, incidentTests, notificationTests, healthTests,
		rolloutTests, provisioningTests, roundTripTests, logViewTests, machineTests, batchTests, batchRaceTests, backupTests,
		auditTests, enrolmentTests, pruneTests}
	for _, g := range groups {
		for _, tc := range g {
			t.Run(tc.name, func(t *testing.T) {
				tc.fn(newFx(t, open(t)))
			})
		}
	}
}

// fx is one test's fixture: its store, a context, and a fixed clock to pass as Now.
type fx struct {
	*testing.T
	env Env
	s   store.Store
	ctx context.Context
	t0  time.Time
}

func newFx(t *testing.T, env Env) *fx {
	return &fx{T: t, env: env, s: env.Store, ctx: t.Context(), t0: time.Now().UTC().Truncate(time.Microsecond)}
}

// at is the fixture's clock d after its start.
func (f *fx) at(d time.Duration) time.Time { return f.t0.Add(d) }

// nodeKey makes a real node key: its text form and fingerprint.
func nodeKey() (string, string) {
	pub := keys.NewNode().Public()
	return pub.String(), pub.Fingerprint()
}

func (f *fx) joinParams(name, source string) store.JoinCreateParams {
	k, fp := nodeKey()
	return store.JoinCreateParams{Name: name, Key: k, Fingerprint: fp, Addresses: []string{"192.0.2.10", "2001:db8::10"},
		SourceAddress: source, Now: f.at(0)}
}

func (f *fx) join(name, source string) store.Join {
	f.Helper()
	res, err := f.s.JoinCreate(f.ctx, f.joinParams(name, source))
	if err != nil {
		f.Fatalf("JoinCreate: %v", err)
	}
	return res.Join
}

// words makes a vocabulary of look words.
func words(names ...string) []store.WordRef {
	out := make([]store.WordRef, len(names))
	for i, n := range names {
		out[i] = store.WordRef{Name: n, Version: "1.0.0", Digest: digest([]byte(n)), Class: "look"}
	}
	return out
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// node enrols an active node that reports the given words.
func (f *fx) node(name string, vocab ...string) store.Node {
	f.Helper()
	j := f.join(name, "198.51.100.1")
	res, err := f.s.JoinApprove(f.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, By: "admin", Now: f.at(0)})
	if err != nil {
		f.Fatalf("JoinApprove: %v", err)
	}
	n, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: res.Node.ID, Now: f.at(0), AgentVersion: "1.0.0",
		StatementSequence: 1, StatementDigest: digest([]byte("statement")), Vocabulary: words(vocab...), Idle: true})
	if err != nil {
		f.Fatalf("NodeReport: %v", err)
	}
	return n
}

func (f *fx) jobParams(n store.Node, word string) store.JobCreateParams {
	return store.JobCreateParams{NodeID: n.ID, Word: word, Class: "look", Params: json.RawMessage(`{"path":"/"}`),
		CreatedBy: "operator", Now: f.at(0)}
}

func (f *fx) job(n store.Node, word string) store.Job {
	f.Helper()
	j, err := f.s.JobCreate(f.ctx, f.jobParams(n, word))
	if err != nil {
		f.Fatalf("JobCreate: %v", err)
	}
	return j
}

// claim claims for n and fails the test unless a job is handed out.
func (f *fx) claim(n store.Node, at time.Time) store.Job {
	f.Helper()
	j, err := f.s.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: at})
	if err != nil {
		f.Fatalf("JobClaim: %v", err)
	}
	if j == nil {
		f.Fatalf("JobClaim handed out nothing")
	}
	return *j
}

// noClaim fails the test if a claim for n hands out a job.
func (f *fx) noClaim(n store.Node, at time.Time) {
	f.Helper()
	j, err := f.s.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: at})
	if err != nil {
		f.Fatalf("JobClaim: %v", err)
	}
	if j != nil {
		f.Fatalf("JobClaim handed out job %s (%s)", j.ID, j.State)
	}
}

func (f *fx) getJob(id string) store.Job {
	f.Helper()
	j, err := f.s.JobGet(f.ctx, store.JobGetParams{ID: id})
	if err != nil {
		f.Fatalf("JobGet: %v", err)
	}
	return j
}

func (f *fx) getNode(id string) store.Node {
	f.Helper()
	n, err := f.s.NodeGet(f.ctx, store.NodeGetParams{ID: id})
	if err != nil {
		f.Fatalf("NodeGet: %v", err)
	}
	return n
}

func (f *fx) getJoin(id string) store.Join {
	f.Helper()
	j, err := f.s.JoinGet(f.ctx, store.JoinGetParams{ID: id, Now: f.at(0)})
	if err != nil {
		f.Fatalf("JoinGet: %v", err)
	}
	return j
}

func noErr(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// same fails the test unless got equals want: the proof that a refused operation changed nothing.
func same[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s changed:\n got %+v\nwant %+v", what, got, want)
	}
}

// jsonEqual reports whether a and b hold the same JSON value (PostgreSQL's jsonb rewrites spacing).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
