package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// node is a verifier as an agent runs one: a trust folder with the log key and a held-checkpoints
// file beside it.
type node struct {
	trust, held string
}

func (f *fixture) newNode(t *testing.T) node {
	t.Helper()
	return node{trust: f.newTrust(t, true), held: filepath.Join(t.TempDir(), "checkpoints")}
}

// verify verifies and accepts the release in dir as the agent does: it asks for the proofs the
// statement needs, from whichever readers it is given (the plane, in the agent's case; any of them may
// be lying), then verifies with them.
func (n node) verify(t *testing.T, dir string, readers ...*tlog.Reader) (*registry.Report, error) {
	t.Helper()
	tr, err := registry.OpenTrust(n.trust)
	must(t, err)
	must(t, tr.HoldCheckpoints(n.held))
	data, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
	must(t, err)
	var proofs []checkpoint.Proof
	for _, need := range tr.ProofsNeeded(data) {
		for _, r := range readers {
			if p, err := r.Prove(context.Background(), need.OldSize, need.NewSize); err == nil {
				proofs = append(proofs, p)
			}
		}
	}
	tr.UseProofs(proofs)
	_, rep, err := tr.VerifyDir(dir, now, false)
	return rep, err
}

func (n node) holds(t *testing.T) checkpoint.Checkpoint {
	t.Helper()
	tr, err := registry.OpenTrust(n.trust)
	must(t, err)
	must(t, tr.HoldCheckpoints(n.held))
	return tr.Checkpoints()["log.lexicon.test"]
}

func reader(t *testing.T, l *tlogtest.Log) *tlog.Reader {
	t.Helper()
	srv := l.Server()
	t.Cleanup(srv.Close)
	return &tlog.Reader{URL: srv.URL, Log: l.PublicKey()}
}

func (f *fixture) logIn(t *testing.T, l *tlogtest.Log, dir string) {
	t.Helper()
	srv := l.Server()
	defer srv.Close()
	was := f.logURL
	f.logURL = srv.URL
	f.addLog(t, dir)
	f.logURL = was
}

// TestSplitViewRefused: the log forks after release 1 and shows each node another release 2 under
// one log key. Each node took its own; shown the other history, each refuses it, with the proof that
// history's own log serves and with none.
func TestSplitViewRefused(t *testing.T) {
	f := newFixture(t)
	honest := reader(t, f.log)
	rel1 := f.build(t, 1, nil)
	f.addLog(t, rel1)
	a, b := f.newNode(t), f.newNode(t)
	for _, n := range []node{a, b} {
		if rep, err := n.verify(t, rel1, honest); err != nil {
			t.Fatalf("release 1: %v\n%+v", err, rep)
		}
	}
	forked := f.log.Fork()
	forkReader := reader(t, forked)
	must(t, f.log.AppendLeaf([]byte("what only node a is shown")))
	must(t, forked.AppendLeaf([]byte("what only node b is shown")))

	rel2a, rel2b := f.build(t, 2, nil), f.build(t, 2, nil)
	f.addLog(t, rel2a)
	f.logIn(t, forked, rel2b)
	if _, err := a.verify(t, rel2a, honest); err != nil {
		t.Fatalf("a takes its history: %v", err)
	}
	if _, err := b.verify(t, rel2b, forkReader); err != nil {
		t.Fatalf("b takes its history: %v", err)
	}
	if a.holds(t).Size != 3 || b.holds(t).Size != 3 || a.holds(t).Same(b.holds(t)) {
		t.Fatalf("a holds %d, b holds %d", a.holds(t).Size, b.holds(t).Size)
	}

	// Release 3 in each history; each node is shown the other's.
	rel3a, rel3b := f.build(t, 3, nil), f.build(t, 3, nil)
	f.addLog(t, rel3a)
	f.logIn(t, forked, rel3b)
	for _, c := range []struct {
		name   string
		n      node
		dir    string
		reason string
	}{
		{"a shown b's release 3", a, rel3b, checkpoint.ReasonProofInvalid},
		{"b shown a's release 3", b, rel3a, checkpoint.ReasonProofInvalid},
		{"a shown b's release 2", a, rel2b, checkpoint.ReasonFork},
	} {
		t.Run(c.name, func(t *testing.T) {
			held := c.n.holds(t)
			rep, err := c.n.verify(t, c.dir, honest, forkReader)
			wantInconsistent(t, err, c.reason)
			if got := failedCheck(rep); got != registry.CheckCheckpoint {
				t.Fatalf("failed at %s", got)
			}
			if !c.n.holds(t).Same(held) {
				t.Fatalf("the held checkpoint moved on a refusal")
			}
		})
	}
	// Without any proof the other history is refused too, for want of one.
	_, err := b.verify(t, rel3a)
	wantInconsistent(t, err, checkpoint.ReasonNoProof)
	// Each node still takes its own history's next release.
	if _, err := a.verify(t, rel3a, honest); err != nil {
		t.Fatalf("a's release 3: %v", err)
	}
}

// TestRolledBackCheckpoint: the log loses entries and grows again from an earlier size. A node that
// held the larger tree refuses a statement logged in the new history, whose tree is smaller than
// the one held; a statement logged earlier in the one history still verifies with its proof.
func TestRolledBackCheckpoint(t *testing.T) {
	f := newFixture(t)
	honest := reader(t, f.log)
	rel1 := f.build(t, 1, nil)
	f.addLog(t, rel1)
	rolledBack := f.log.Fork() // the log as it stood after release 1
	for _, leaf := range []string{"x", "y", "z"} {
		must(t, f.log.AppendLeaf([]byte(leaf)))
	}
	rel2 := f.build(t, 2, nil)
	f.addLog(t, rel2) // size 5
	n := f.newNode(t)
	if _, err := n.verify(t, rel2, honest); err != nil {
		t.Fatal(err)
	}

	rel3 := f.build(t, 3, nil)
	f.logIn(t, rolledBack, rel3) // size 2: smaller than the 5 held
	_, err := n.verify(t, rel3)
	wantInconsistent(t, err, checkpoint.ReasonNoProof)
	must(t, rolledBack.AppendLeaf([]byte("more")))
	must(t, rolledBack.AppendLeaf([]byte("more still")))
	must(t, rolledBack.AppendLeaf([]byte("and more"))) // the rolled-back log reaches 5 again, differently
	_, err = n.verify(t, rel3, reader(t, rolledBack), honest)
	wantInconsistent(t, err, checkpoint.ReasonProofInvalid)

	// An older statement of the same history (a node that restarts on it) verifies with its proof
	// and the larger checkpoint stays held.
	m := f.newNode(t)
	if _, err := m.verify(t, rel2, honest); err != nil {
		t.Fatal(err)
	}
	tr, err := registry.OpenTrust(m.trust)
	must(t, err)
	must(t, tr.HoldCheckpoints(m.held))
	data, err := os.ReadFile(filepath.Join(rel1, registry.BundleFile))
	must(t, err)
	needs := tr.ProofsNeeded(data)
	if len(needs) != 1 || needs[0].OldSize != 1 || needs[0].NewSize != 5 {
		t.Fatalf("needs %v", needs)
	}
	p, err := honest.Prove(context.Background(), 1, 5)
	must(t, err)
	tr.UseProofs([]checkpoint.Proof{p})
	// Sequence 1 is below the 2 accepted, so the statement fails later, at the sequence: the log view
	// itself passed.
	_, err = tr.Verify(data, now)
	testkit.WantCode(t, err, errcode.StatementRollback)
	if m.holds(t).Size != 5 {
		t.Fatalf("held %d", m.holds(t).Size)
	}
}

// TestWitnessedCheckpoints: with a witness policy in the trust folder, a statement whose checkpoint
// lacks the quorum of cosignatures is refused; one the log's witnesses cosigned verifies.
func TestWitnessedCheckpoints(t *testing.T) {
	f := newFixture(t)
	w1, w2, w3 := tlogtest.NewWitness("w1.example"), tlogtest.NewWitness("w2.example"), tlogtest.NewWitness("w3.example")
	p, err := checkpoint.NewPolicy(2, []keys.WitnessPublic{w1.PublicKey(), w2.PublicKey(), w3.PublicKey()})
	must(t, err)
	n := f.newNode(t)
	must(t, registry.SetWitnessPolicy(n.trust, &p))

	rel1 := f.build(t, 1, nil)
	f.log.AddWitness(w1)
	f.addLog(t, rel1)
	rep, err := n.verify(t, rel1)
	testkit.WantCode(t, err, errcode.StatementUnwitnessed)
	if got := failedCheck(rep); got != registry.CheckCheckpoint {
		t.Fatalf("failed at %s", got)
	}

	rel2 := f.build(t, 2, nil)
	f.log.AddWitness(w3)
	f.addLog(t, rel2)
	if rep, err := n.verify(t, rel2); err != nil {
		t.Fatalf("2 of 3 cosigned: %v\n%+v", err, rep)
	}
	// Removing the policy removes the requirement: it is the admin's file, like the held keys.
	must(t, registry.SetWitnessPolicy(n.trust, nil))
	tr, err := registry.OpenTrust(n.trust)
	must(t, err)
	if tr.Witnesses() != nil {
		t.Fatal("policy still held")
	}
}

func wantInconsistent(t *testing.T, err error, reason string) {
	t.Helper()
	testkit.WantCode(t, err, errcode.StatementLogInconsistent)
	if got := errcode.From(err, "").Details[errcode.DetailReason]; got != reason {
		t.Fatalf("reason %v, want %s: %v", got, reason, err)
	}
}

func failedCheck(rep *registry.Report) string {
	for _, c := range rep.Checks {
		if !c.OK && !c.Skipped {
			return c.Check
		}
	}
	return ""
}
