package checkpoint_test

import (
	"context"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
)

// BenchmarkCheckpoint measures what a node adds to a logged statement's verification when it holds a
// checkpoint of the log: the signed checkpoint opened with the log key, a consistency proof from a held
// tree of 70,000 entries to one of 70,500, and a 2-of-3 witness policy.
func BenchmarkCheckpoint(b *testing.B) {
	lg := tlogtest.New(origin)
	w1, w2, w3 := tlogtest.NewWitness("w1.example"), tlogtest.NewWitness("w2.example"), tlogtest.NewWitness("w3.example")
	lg.AddWitness(w1)
	lg.AddWitness(w2)
	srv := lg.Server()
	defer srv.Close()
	l := &testLog{Log: lg}
	held := l.growB(b, 70_000)
	next := l.growB(b, 500)
	signed := next.Note
	p, err := newReader(srv.URL, lg).Prove(context.Background(), held.Size, next.Size)
	if err != nil {
		b.Fatal(err)
	}
	policy, err := checkpoint.NewPolicy(2, []keys.WitnessPublic{w1.PublicKey(), w2.PublicKey(), w3.PublicKey()})
	if err != nil {
		b.Fatal(err)
	}
	h := checkpoint.Held{origin: held}
	proofs := []checkpoint.Proof{p}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cp, err := checkpoint.Open(signed, lg.PublicKey())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := policy.Check(cp); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Check(cp, proofs); err != nil {
			b.Fatal(err)
		}
	}
}
