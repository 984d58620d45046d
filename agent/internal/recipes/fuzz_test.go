package recipes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// FuzzVerdict: whatever a check writes, the agent reads a verdict it can report: one of three, a
// capped valid-UTF-8 detail, and repair params only on a failing one.
func FuzzVerdict(f *testing.F) {
	f.Add([]byte(`{"verdict":"fail","detail":"nginx.service is failed","repair":{"unit":"nginx.service"}}`))
	f.Add([]byte(`{"verdict":"pass","detail":"ok","repair":{"unit":"x"}}`))
	f.Add([]byte(`{"verdict":"maybe"}`))
	f.Add([]byte(`{"verdict":"fail","detail":"\xff\xfe","repair":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, out []byte) {
		v := parseVerdict(out)
		switch v.verdict {
		case channel.VerdictPass, channel.VerdictFail, channel.VerdictUnknown:
		default:
			t.Fatalf("verdict %q", v.verdict)
		}
		if len(v.detail) > channel.MaxCaseText || !utf8.ValidString(v.detail) {
			t.Fatalf("detail of %d bytes, valid %v", len(v.detail), utf8.ValidString(v.detail))
		}
		if v.repair != nil && (v.verdict != channel.VerdictFail || !json.Valid(v.repair)) {
			t.Fatalf("repair %q on %s", v.repair, v.verdict)
		}
	})
}

// FuzzLedger: a ledger is the agent's own file, but a crash can tear it and a disk can damage it:
// reading and folding whatever it holds never panics, and a run never has more attempts than its lines.
func FuzzLedger(f *testing.F) {
	f.Add([]byte(`{"at":"2026-11-30T09:00:00Z","event":"check","verdict":"fail"}` + "\n" +
		`{"at":"2026-11-30T09:05:00Z","event":"attempt","n":1}` + "\n" + `{"at":"2026-11-30T09:05:01Z","event":"outc`))
	f.Add([]byte("{\"event\":\"outcome\",\"n\":-1}\n{\"event\":\"held\"}\n\x00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "r.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		events, _, err := ledger{path: path}.read()
		if err != nil {
			return // a line over the scanner's cap
		}
		var st runState
		for _, ev := range events {
			st.apply(ev)
		}
		if len(st.attempts) > len(events) {
			t.Fatalf("%d attempts from %d events", len(st.attempts), len(events))
		}
		st.due(time.Now())
		st.interrupted()
	})
}
