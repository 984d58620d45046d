package cases

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestFromWire(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	good := channel.CaseReport{ID: 7, Recipe: "unit_health", State: channel.CaseOpen, OpenedAt: at, Summary: "nginx failed",
		Body: &channel.CaseBody{Mode: "repair", Attempts: []json.RawMessage{json.RawMessage(`{"n":1}`)}}}

	c, cut, err := fromWire(good)
	if err != nil || len(cut) != 0 || c.ID != 7 || c.Body == nil || c.Summary != "nginx failed" {
		t.Fatalf("good case: %+v %v %v", c, cut, err)
	}

	many := good
	for i := range channel.MaxCaseNotes + 5 {
		many.Notes = append(many.Notes, channel.CaseNote{Seq: channel.MaxCaseNotes + 5 - i, At: at, Text: strings.Repeat("n", channel.MaxCaseText+9)})
	}
	many.Body = &channel.CaseBody{Mode: "repair", HostReport: json.RawMessage(`"` + strings.Repeat("h", channel.MaxCaseBody) + `"`)}
	c, cut, err = fromWire(many)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != channel.MaxCaseNotes || c.Body != nil || strings.Join(cut, ",") != "notes,notes.text,body" {
		t.Fatalf("capped case: %d notes, body %v, cut %v", len(c.Notes), c.Body != nil, cut)
	}
	for _, n := range c.Notes {
		if n.Seq <= 5 || len(n.Text) > channel.MaxCaseText {
			t.Fatalf("kept note %d (%d bytes): the newest notes are kept, each capped", n.Seq, len(n.Text))
		}
	}

	bad := map[string]func(*channel.CaseReport){
		"id 0":          func(c *channel.CaseReport) { c.ID = 0 },
		"id over int64": func(c *channel.CaseReport) { c.ID = math.MaxInt64 + 1 },
		"recipe":        func(c *channel.CaseReport) { c.Recipe = "Unit Health" },
		"state":         func(c *channel.CaseReport) { c.State = "pending" },
		"no time":       func(c *channel.CaseReport) { c.OpenedAt = time.Time{} },
		"closed no at":  func(c *channel.CaseReport) { c.State = channel.CaseClosed },
		"note seq":      func(c *channel.CaseReport) { c.Notes = []channel.CaseNote{{Seq: -1, At: at}} },
	}
	for name, edit := range bad {
		r := good
		edit(&r)
		if _, _, err := fromWire(r); !errcode.Has(err, errcode.CaseInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzFromWire feeds claim bodies through the plane's case intake: whatever a node sends, a case is
// either refused with case.invalid or comes out within the store's contract.
func FuzzFromWire(f *testing.F) {
	f.Add([]byte(`{"cases":[{"id":1,"recipe":"unit_health","state":"open","opened_at":"2030-01-01T00:00:00Z","summary":"x","notes":[{"seq":1,"at":"2030-01-01T00:00:00Z","text":"y"}],"body":{"mode":"repair","attempts":[]}}]}`))
	f.Add([]byte(`{"cases":[{"id":18446744073709551615,"recipe":"a","state":"closed","opened_at":"2030-01-01T00:00:00Z","closed_at":"2030-01-01T00:00:00Z","summary":"\u0000\u001b[2J"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req channel.ClaimRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		for _, r := range req.Cases {
			c, _, err := fromWire(r)
			if err != nil {
				if !errcode.Has(err, errcode.CaseInvalid) {
					t.Fatalf("refused without case.invalid: %v", err)
				}
				continue
			}
			if err := c.Check(); err != nil {
				t.Fatalf("took a case the store refuses: %v", err)
			}
		}
	})
}

// TestCaseBodyMadeStorable: a body's raw JSON keeps its bytes through intake, except invalid UTF-8,
// which no database stores; the document stays valid JSON.
func TestCaseBodyMadeStorable(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	r := channel.CaseReport{ID: 1, Recipe: "unit_health", State: channel.CaseOpen, OpenedAt: at, Summary: "s",
		Body: &channel.CaseBody{Mode: "repair", Attempts: []json.RawMessage{json.RawMessage("{\"detail\": \"bad \xff\xfe unit\"}")}}}
	c, _, err := fromWire(r)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(c.Body) || !json.Valid(c.Body) || !strings.Contains(string(c.Body), "bad \uFFFD") {
		t.Fatalf("body %q", c.Body)
	}
}
