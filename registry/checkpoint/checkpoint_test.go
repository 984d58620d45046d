package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const origin = "log.lexicon.test"

// testLog is a test log served over HTTP, and a reader of it.
type testLog struct {
	*tlogtest.Log
	reader *tlog.Reader
	n      int // leaves appended, to keep every leaf distinct
}

func newTestLog(t *testing.T, l *tlogtest.Log) *testLog {
	t.Helper()
	srv := l.Server()
	t.Cleanup(srv.Close)
	return &testLog{Log: l, reader: &tlog.Reader{URL: srv.URL, Log: l.PublicKey()}}
}

// grow appends n leaves (named by prefix, so a fork's leaves differ) and returns the checkpoint then.
func (l *testLog) grow(t *testing.T, n int, prefix string) checkpoint.Checkpoint {
	t.Helper()
	for range n {
		l.n++
		if err := l.AppendLeaf(fmt.Appendf(nil, "%s-%d", prefix, l.n)); err != nil {
			t.Fatal(err)
		}
	}
	return l.checkpoint(t)
}

// growB is grow for benchmarks.
func (l *testLog) growB(b *testing.B, n int) checkpoint.Checkpoint {
	b.Helper()
	for range n {
		l.n++
		if err := l.AppendLeaf(fmt.Appendf(nil, "b-%d", l.n)); err != nil {
			b.Fatal(err)
		}
	}
	return l.checkpoint(b)
}

func newReader(url string, l *tlogtest.Log) *tlog.Reader {
	return &tlog.Reader{URL: url, Log: l.PublicKey()}
}

func (l *testLog) checkpoint(t testing.TB) checkpoint.Checkpoint {
	t.Helper()
	signed, err := l.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Open(signed, l.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func (l *testLog) prove(t *testing.T, older, newer uint64) checkpoint.Proof {
	t.Helper()
	p, err := l.reader.Prove(context.Background(), older, newer)
	if err != nil {
		t.Fatalf("prove %d..%d: %v", older, newer, err)
	}
	return p
}

// TestProofsFromTiles: proofs built from the test log's tiles verify with transparency-dev/merkle
// across tile boundaries and levels, and a proof for other sizes or roots does not.
func TestProofsFromTiles(t *testing.T) {
	l := newTestLog(t, tlogtest.New(origin))
	var cps []checkpoint.Checkpoint
	for _, size := range []int{1, 2, 7, 255, 256, 257, 511, 700, 65536, 65537, 66000} {
		cps = append(cps, l.grow(t, size-l.n, "a"))
	}
	for i, older := range cps {
		for _, newer := range cps[i:] {
			p := l.prove(t, older.Size, newer.Size)
			if err := p.Verify(older, newer); err != nil {
				t.Fatalf("%d..%d: %v", older.Size, newer.Size, err)
			}
			if _, err := (checkpoint.Held{origin: older}).Check(newer, []checkpoint.Proof{p}); err != nil {
				t.Fatalf("held %d, next %d: %v", older.Size, newer.Size, err)
			}
			if older.Size != newer.Size && len(p.Hashes) > 0 {
				bad := p
				bad.Hashes = slices.Clone(p.Hashes)
				bad.Hashes[0] = make([]byte, 32)
				if bad.Verify(older, newer) == nil {
					t.Fatalf("%d..%d: an altered proof verifies", older.Size, newer.Size)
				}
			}
		}
	}
	if _, err := l.reader.Prove(context.Background(), 5, 70000); !errcode.Has(err, errcode.LogUnavailable) {
		t.Fatalf("proof beyond the log's size: %v", err)
	}
}

// TestForkedLog: two histories signed by one key. A verifier holding one refuses the other, whatever
// proof it is given: at the same size the roots differ, and at other sizes no proof joins them.
func TestForkedLog(t *testing.T) {
	a := newTestLog(t, tlogtest.New(origin))
	a.grow(t, 300, "common")
	b := newTestLog(t, a.Fork())
	b.n = a.n
	seenA := a.grow(t, 10, "a")
	seenB := b.grow(t, 10, "b")
	held := checkpoint.Held{origin: seenA}

	_, err := held.Check(seenB, nil)
	testkit.WantCode(t, err, errcode.StatementLogInconsistent)
	wantReason(t, err, checkpoint.ReasonFork)

	laterB := b.grow(t, 50, "b")
	_, err = held.Check(laterB, nil)
	wantReason(t, err, checkpoint.ReasonNoProof)
	// The forked log proves its own history: that proof joins seenB, not the root held.
	_, err = held.Check(laterB, []checkpoint.Proof{b.prove(t, seenA.Size, laterB.Size)})
	wantReason(t, err, checkpoint.ReasonProofInvalid)

	// The honest history still goes forward.
	laterA := a.grow(t, 50, "a")
	next, err := held.Check(laterA, []checkpoint.Proof{b.prove(t, seenA.Size, laterA.Size), a.prove(t, seenA.Size, laterA.Size)})
	if err != nil || !next.Same(laterA) {
		t.Fatalf("honest growth: %v %+v", err, next)
	}
}

// TestRolledBackCheckpoint: a smaller tree than the one held is taken only when proven a prefix of
// it, and the larger stays held; a log that rolled back and grew again differently is refused.
func TestRolledBackCheckpoint(t *testing.T) {
	a := newTestLog(t, tlogtest.New(origin))
	a.grow(t, 100, "common")
	rolled := newTestLog(t, a.Fork()) // the log as it was at 100, before it lost what came after
	rolled.n = a.n
	old := a.grow(t, 20, "a")
	held := checkpoint.Held{origin: a.grow(t, 30, "a")}

	_, err := held.Check(old, nil)
	wantReason(t, err, checkpoint.ReasonNoProof)
	keep, err := held.Check(old, []checkpoint.Proof{a.prove(t, old.Size, held[origin].Size)})
	if err != nil || !keep.Same(held[origin]) {
		t.Fatalf("an older prefix with its proof: %v; held %d", err, keep.Size)
	}

	again := rolled.grow(t, 25, "again") // size 125, below the 150 held, another history after 100
	_, err = held.Check(again, nil)
	wantReason(t, err, checkpoint.ReasonNoProof)
	rolled.grow(t, 25, "again") // the rolled-back log reaches 150 too: a proof 125..150 in its history
	_, err = held.Check(again, []checkpoint.Proof{rolled.prove(t, again.Size, held[origin].Size)})
	wantReason(t, err, checkpoint.ReasonProofInvalid)
	_, err = held.Check(rolled.checkpoint(t), nil)
	wantReason(t, err, checkpoint.ReasonFork)
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	testkit.WantCode(t, err, errcode.StatementLogInconsistent)
	if got := errcode.From(err, "").Details[errcode.DetailReason]; got != reason {
		t.Fatalf("reason %v, want %s (%v)", got, reason, err)
	}
}

// TestWitnessPolicy: k of n witnesses; a witness not in the policy does not count, and a bad line
// claiming to be a held witness counts as absent rather than spoiling the note.
func TestWitnessPolicy(t *testing.T) {
	w1, w2, w3, stranger := tlogtest.NewWitness("w1.example"), tlogtest.NewWitness("w2.example"),
		tlogtest.NewWitness("w3.example"), tlogtest.NewWitness("stranger.example")
	lg := tlogtest.New(origin)
	lg.AddWitness(w1)
	lg.AddWitness(stranger)
	l := newTestLog(t, lg)
	cp := l.grow(t, 3, "a")

	policy := func(k int, ws ...*tlogtest.Witness) checkpoint.Policy {
		var pubs []keys.WitnessPublic
		for _, w := range ws {
			pubs = append(pubs, w.PublicKey())
		}
		p, err := checkpoint.NewPolicy(k, pubs)
		if err != nil {
			t.Fatal(err)
		}
		// What the trust folder holds reads back the same.
		back, err := checkpoint.ParsePolicy(p.Marshal())
		if err != nil || back.Quorum != k || len(back.Witnesses) != len(ws) {
			t.Fatalf("policy round trip: %v %+v", err, back)
		}
		return back
	}
	if got, err := policy(1, w1, w2, w3).Check(cp); err != nil || len(got) != 1 {
		t.Fatalf("1 of 3 with w1 cosigning: %v", err)
	}
	_, err := policy(2, w1, w2, w3).Check(cp)
	testkit.WantCode(t, err, errcode.StatementUnwitnessed)
	if d := errcode.From(err, "").Details; d[errcode.DetailCount] != 1 || d[errcode.DetailLimit] != 2 {
		t.Fatalf("details %v", d)
	}

	withW2, err := w2.Cosign(cp.Note)
	must(t, err)
	cp2, err := checkpoint.Open(withW2, l.PublicKey())
	must(t, err)
	if _, err := policy(2, w1, w2, w3).Check(cp2); err != nil {
		t.Fatalf("2 of 3 with w1 and w2: %v", err)
	}
	// w3's line signed over another checkpoint: it is not w3's cosignature of this one.
	other := l.grow(t, 1, "b")
	w3other, err := w3.Cosign(other.Note)
	must(t, err)
	forged := append(slices.Clone(withW2), w3other[len(other.Note):]...)
	cp3, err := checkpoint.Open(forged, l.PublicKey())
	must(t, err)
	if got := policy(3, w1, w2, w3).Cosigners(cp3); !slices.Equal(got, []string{"w1.example", "w2.example"}) {
		t.Fatalf("cosigners %v", got)
	}
	_, err = policy(3, w1, w2, w3).Check(cp3)
	testkit.WantCode(t, err, errcode.StatementUnwitnessed)
}

func TestPolicyFileRefusals(t *testing.T) {
	w := tlogtest.NewWitness("w.example").PublicKey()
	for name, text := range map[string]string{
		"no quorum":        w.String() + "\n",
		"quorum too large": "quorum 2\n" + w.String() + "\n",
		"quorum zero":      "quorum 0\n" + w.String() + "\n",
		"two quorums":      "quorum 1\nquorum 1\n" + w.String() + "\n",
		"quorum spelled":   "quorum 01\n" + w.String() + "\n",
		"witness twice":    "quorum 1\n" + w.String() + "\n" + w.String() + "\n",
		"bare vkey":        "quorum 1\n" + w.VKey() + "\n",
		"unknown line":     "quorum 1\n" + w.String() + "\nwitness w.example\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := checkpoint.ParsePolicy([]byte(text))
			testkit.WantCode(t, err, errcode.KeyMalformed)
		})
	}
}

// TestHeldFile: written root-only and atomically, read back verified; a checkpoint altered on disk is
// refused, and one of a log no longer held is dropped.
func TestHeldFile(t *testing.T) {
	l := newTestLog(t, tlogtest.New(origin))
	other := newTestLog(t, tlogtest.New("other.lexicon.test"))
	held := checkpoint.Held{origin: l.grow(t, 5, "a"), "other.lexicon.test": other.grow(t, 2, "o")}
	path := filepath.Join(t.TempDir(), "checkpoints")
	must(t, held.Write(path))
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	back, err := checkpoint.ReadHeld(path, []keys.LogPublic{l.PublicKey(), other.PublicKey()})
	must(t, err)
	if len(back) != 2 || !back[origin].Same(held[origin]) {
		t.Fatalf("read back %+v", back)
	}
	back, err = checkpoint.ReadHeld(path, []keys.LogPublic{l.PublicKey()})
	must(t, err)
	if len(back) != 1 {
		t.Fatalf("a log no longer held is kept: %v", back.Origins())
	}
	// Another log key under the same origin (a log that changed its key, or a forged file).
	impostor := tlogtest.New(origin)
	_, err = checkpoint.ReadHeld(path, []keys.LogPublic{impostor.PublicKey()})
	testkit.WantCode(t, err, errcode.StatementMalformed)

	none, err := checkpoint.ReadHeld(filepath.Join(t.TempDir(), "none"), nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("missing file: %v %v", none, err)
	}
	must(t, os.Chmod(path, 0o666))
	_, err = checkpoint.ReadHeld(path, []keys.LogPublic{l.PublicKey()})
	testkit.WantCode(t, err, errcode.KeyFileUntrusted)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
