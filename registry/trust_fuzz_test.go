package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzParseState: any state file is read or refused with a statement code; a state that is read is
// within the cap and survives the write Accept makes of it unchanged.
func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"sequence":7,"statement":"` + strings.Repeat("a", 64) + `","require_log":true}` + "\n"))
	f.Add([]byte(`{"sequence": 0}`))
	f.Add([]byte(`{"sequence": "seven"}`))
	f.Add([]byte(`{"sequence": 1, "sequence": 2}`))
	f.Add([]byte(`{"sequence": 1, "extra": true}`))
	f.Add([]byte(`{"sequence": 18446744073709551616}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseState(data)
		if err != nil {
			switch errcode.Code(err) {
			case errcode.StatementMalformed:
			case errcode.StatementTooLarge:
				if len(data) <= keys.MaxFileSize {
					t.Fatalf("%d bytes refused as too large", len(data))
				}
			default:
				t.Fatalf("uncoded refusal: %v", err)
			}
			return
		}
		if len(data) > keys.MaxFileSize {
			t.Fatalf("%d bytes over the cap were read", len(data))
		}
		out, _ := json.Marshal(st)
		back, err := parseState(out)
		if err != nil || back != st {
			t.Fatalf("state %+v written as %s reads back as %+v (%v)", st, out, back, err)
		}
	})
}

// FuzzTrustLine: any statement_keys line is applied or refused with key.malformed. A line that is
// applied holds or retires exactly its key, the line Accept would write for that entry applies the same,
// and a retirement already held is never loosened.
func FuzzTrustLine(f *testing.F) {
	k := keys.NewPublisher().Public().String()
	for _, s := range []string{k, k + " from 5", "retire " + k + " from 3", "retire " + k, k + " from x", k + " to 5",
		"retire", "retire retire " + k, k + " from 18446744073709551615", k + " from -1", "node-key:AAAA", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		tr := &Trust{held: map[string]heldKey{}}
		if err := tr.addLine(line); err != nil {
			if errcode.Code(err) != errcode.KeyMalformed {
				t.Fatalf("%q refused without key.malformed: %v", line, err)
			}
			if len(tr.held) != 0 {
				t.Fatalf("refused line %q changed the held keys", line)
			}
			return
		}
		if len(tr.held) != 1 {
			t.Fatalf("line %q holds %d keys", line, len(tr.held))
		}
		var h heldKey
		for fp, v := range tr.held {
			if fp != v.key.Fingerprint() {
				t.Fatalf("line %q held under %s, not its fingerprint %s", line, fp, v.key.Fingerprint())
			}
			h = v
		}
		retire := strings.HasPrefix(strings.TrimSpace(line), "retire")
		canonical := fmt.Sprintf("%s from %d", h.key, h.from)
		if retire {
			if h.retired == 0 || h.validAt(h.retired) {
				t.Fatalf("retirement %q leaves the key valid: %+v", line, h)
			}
			canonical = fmt.Sprintf("retire %s from %d", h.key, h.retired)
		}
		again := &Trust{held: map[string]heldKey{}}
		if err := again.addLine(canonical); err != nil {
			t.Fatalf("%q applied as %q is refused: %v", line, canonical, err)
		}
		if g := again.held[h.key.Fingerprint()]; !g.key.Equal(h.key) || g.from != h.from || g.retired != h.retired {
			t.Fatalf("%q applied as %q: %+v, want %+v", line, canonical, g, h)
		}
		// Retirements only ever tighten: the line on top of a key retired from 10 leaves it retired by 10.
		held := &Trust{held: map[string]heldKey{}}
		if err := held.addLine(fmt.Sprintf("retire %s from 10", h.key)); err != nil {
			t.Fatal(err)
		}
		if err := held.addLine(line); err != nil {
			t.Fatalf("%q applied once, refused on top of a retirement: %v", line, err)
		}
		if r := held.held[h.key.Fingerprint()].retired; r == 0 || r > 10 {
			t.Fatalf("%q loosened a retirement from 10 to %d", line, r)
		}
	})
}
