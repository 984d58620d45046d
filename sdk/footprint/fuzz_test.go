package footprint_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// FuzzDecode: Decode never panics, refuses only with footprint.invalid, and what it accepts encodes
// back to a footprint it decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(web))
	for _, c := range bad {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := footprint.Decode(data)
		if err != nil {
			if !errcode.Has(err, errcode.FootprintInvalid) {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		b, err := json.Marshal(fp)
		if err != nil {
			t.Fatal(err)
		}
		again, err := footprint.Decode(b)
		if err != nil || !reflect.DeepEqual(fp, again) {
			t.Fatalf("round trip: %v\n%s", err, b)
		}
	})
}
