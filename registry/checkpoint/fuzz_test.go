package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func wantCodes(t *testing.T, err error, codes ...string) {
	t.Helper()
	got := errcode.Code(err)
	for _, c := range codes {
		if got == c {
			return
		}
	}
	t.Fatalf("refusal %q (%v), want one of %v", got, err, codes)
}

// FuzzParseProofs: any bytes are a list of proofs or a statement.malformed/too_large refusal; a list
// that parses keeps every cap and reads back the same.
func FuzzParseProofs(f *testing.F) {
	h := make([]byte, 32)
	good, _ := json.Marshal([]checkpoint.Proof{{Origin: "log.example", OldSize: 3, NewSize: 7, Hashes: [][]byte{h, h}}})
	f.Add(good)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"origin":"o","old_size":0,"new_size":1,"hashes":[]}]`))
	f.Add([]byte(`[{"origin":"o","old_size":2,"new_size":1,"hashes":[]}]`))
	f.Add([]byte(`[{"origin":"o","old_size":1,"new_size":1,"hashes":["AA=="]}]`))
	f.Add([]byte(`[{"origin":"o","old_size":1,"new_size":2,"hashes":[],"extra":1}]`))
	f.Add([]byte(`{"origin":"o","old_size":1,"new_size":2,"hashes":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := checkpoint.ParseProofs(data)
		if err != nil {
			wantCodes(t, err, errcode.StatementMalformed, errcode.StatementTooLarge)
			return
		}
		if len(ps) > checkpoint.MaxProofs {
			t.Fatalf("%d proofs", len(ps))
		}
		for _, p := range ps {
			if p.Origin == "" || p.OldSize == 0 || p.OldSize > p.NewSize || len(p.Hashes) > checkpoint.MaxProofHashes {
				t.Fatalf("proof %+v breaks a cap", p)
			}
			for _, h := range p.Hashes {
				if len(h) != 32 {
					t.Fatalf("hash of %d bytes", len(h))
				}
			}
		}
		again, _ := json.Marshal(ps)
		back, err := checkpoint.ParseProofs(again)
		if err != nil || len(back) != len(ps) {
			t.Fatalf("round trip: %v", err)
		}
		if p, err := checkpoint.ParseProof(data); err == nil && p.Origin == "" {
			t.Fatalf("single proof %+v has no origin", p)
		}
	})
}

// fuzzLog is a test log with one witness and a few checkpoints, for the seeds of the note targets.
func fuzzLog(f *testing.F) (*tlogtest.Log, *tlogtest.Witness, [][]byte) {
	lg := tlogtest.New("log.lexicon.test")
	w := tlogtest.NewWitness("w.example")
	lg.AddWitness(w)
	var notes [][]byte
	for i := range 3 {
		if err := lg.AppendLeaf([]byte{byte(i)}); err != nil {
			f.Fatal(err)
		}
		n, err := lg.Checkpoint(context.Background())
		if err != nil {
			f.Fatal(err)
		}
		notes = append(notes, n)
	}
	return lg, w, notes
}

// FuzzOpen: any bytes are a checkpoint the log signed or a coded refusal; a checkpoint that opens has
// the log's origin, a 32-byte root, and no more cosigners than the policy names.
func FuzzOpen(f *testing.F) {
	lg, w, notes := fuzzLog(f)
	for _, n := range notes {
		f.Add(n)
		f.Add(bytes.Replace(n, []byte("\n\n"), []byte("\nextension line\n\n"), 1))
		f.Add(append(bytes.Clone(n), "— w.example AAAAAAAA\n"...))
	}
	f.Add([]byte("log.lexicon.test\n1\nAAAA\n\n"))
	policy, err := checkpoint.NewPolicy(1, []keys.WitnessPublic{w.PublicKey()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := checkpoint.Open(data, lg.PublicKey())
		if err != nil {
			wantCodes(t, err, errcode.StatementMalformed, errcode.StatementTooLarge)
			return
		}
		if cp.Origin != "log.lexicon.test" || len(cp.Hash) != 32 || cp.Size == 0 {
			t.Fatalf("opened %+v", cp)
		}
		if got := policy.Cosigners(cp); len(got) > 1 {
			t.Fatalf("cosigners %v", got)
		}
		if _, err := policy.Check(cp); err != nil {
			wantCodes(t, err, errcode.StatementUnwitnessed)
		}
	})
}

// FuzzParseHeld: any bytes are held checkpoints, each verified by its log's key, or a coded refusal.
func FuzzParseHeld(f *testing.F) {
	lg, _, notes := fuzzLog(f)
	good, _ := json.Marshal(map[string][]string{"checkpoints": {string(notes[2])}})
	f.Add(good)
	two, _ := json.Marshal(map[string][]string{"checkpoints": {string(notes[0]), string(notes[1])}})
	f.Add(two)
	f.Add([]byte(`{"checkpoints":[]}`))
	f.Add([]byte(`{"checkpoints":["other.origin\n1\nAAAA\n\n— x AAAA\n"]}`))
	logs := []keys.LogPublic{lg.PublicKey()}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := checkpoint.ParseHeld(data, logs)
		if err != nil {
			wantCodes(t, err, errcode.StatementMalformed, errcode.StatementTooLarge)
			return
		}
		if len(h) > 1 {
			t.Fatalf("held %v", h.Origins())
		}
		back, err := checkpoint.ParseHeld(h.Marshal(), logs)
		if err != nil || len(back) != len(h) {
			t.Fatalf("round trip: %v", err)
		}
		for o, cp := range h {
			if !back[o].Same(cp) {
				t.Fatalf("round trip changed %s", o)
			}
		}
	})
}

// FuzzParsePolicy: any bytes are a witness policy or a key.malformed refusal; a policy that parses has
// a quorum it can meet and reads back the same.
func FuzzParsePolicy(f *testing.F) {
	w1, w2 := tlogtest.NewWitness("w1.example").PublicKey(), tlogtest.NewWitness("w2.example").PublicKey()
	p, _ := checkpoint.NewPolicy(2, []keys.WitnessPublic{w1, w2})
	f.Add(p.Marshal())
	f.Add([]byte("quorum 1\n" + w1.String() + "\n"))
	f.Add([]byte("quorum 3\n" + w1.String() + "\n"))
	f.Add([]byte("# c\n\nquorum  1\n" + w1.String()))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := checkpoint.ParsePolicy(data)
		if err != nil {
			wantCodes(t, err, errcode.KeyMalformed)
			return
		}
		if p.Quorum < 1 || p.Quorum > len(p.Witnesses) || len(p.Witnesses) > checkpoint.MaxWitnesses {
			t.Fatalf("policy %d of %d", p.Quorum, len(p.Witnesses))
		}
		back, err := checkpoint.ParsePolicy(p.Marshal())
		if err != nil || back.Quorum != p.Quorum || len(back.Witnesses) != len(p.Witnesses) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
