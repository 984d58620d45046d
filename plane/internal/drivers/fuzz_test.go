package drivers_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
)

// FuzzReconcileBody feeds reconcile bodies, as an operator's records file arrives on the plane,
// through decoding, normalization and the additive plan against a zone a person filled. Nothing may
// panic, and every wanted record must end up in exactly one of created, present or conflicts; a
// created record is never one the zone holds.
func FuzzReconcileBody(f *testing.F) {
	for _, s := range []string{
		`{"records": [{"type": "A", "name": "www", "value": "192.0.2.1", "ttl": 300}]}`,
		`{"records": [{"type": "cname", "name": "WWW", "value": "x.example"}, {"type": "A", "name": "www", "value": "192.0.2.1"}]}`,
		`{"records": [{"type": "MX", "name": "@", "value": "mx.example.", "priority": 10}], "dry_run": true}`,
		`{"records": [{"type": "TXT", "name": "_acme", "value": "\"quoted\" text"}]}`,
		`{"records": [{"type": "A", "name": "bad", "value": "999.1.1.1", "ttl": -1}]}`,
	} {
		f.Add([]byte(s))
	}
	zone := []dns.Record{
		{Type: "A", Name: "www", Value: "192.0.2.10"},
		{Type: "CNAME", Name: "docs", Value: "pages.example.net."},
		{Type: "TXT", Name: "@", Value: "v=spf1 -all"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req api.Reconcile
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if dec.Decode(&req) != nil {
			return
		}
		recs, err := drivers.RecordsFromAPI(req.Records)
		if err != nil {
			return
		}
		want, err := dns.NormalizeAll(recs)
		if err != nil {
			return
		}
		p := drivers.PlanAdditive(zone, want)
		placed := len(p.Create) + len(p.Present) + len(p.Conflicts)
		unique := 0
		for i, w := range want {
			dup := false
			for _, v := range want[:i] {
				dup = dup || dns.Same(v, w)
			}
			if !dup {
				unique++
			}
		}
		if placed != unique {
			t.Fatalf("%d unique wanted records, %d placed: %+v", unique, placed, p)
		}
		for _, c := range p.Create {
			for _, z := range zone {
				if z.Name == c.Name && z.Type == c.Type {
					t.Fatalf("created %+v beside the hand-made %+v", c, z)
				}
			}
		}
	})
}
