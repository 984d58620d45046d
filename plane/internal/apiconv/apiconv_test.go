package apiconv_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestAnswersCoverRows: every JSON field of a store row that the API shows is in its plane/api type,
// so a column added to a row is not silently dropped from the answer. The fields named here are left
// out on purpose.
func TestAnswersCoverRows(t *testing.T) {
	for _, tc := range []struct {
		row, answer any
		omitted     []string
	}{
		{store.Token{}, api.Token{}, nil},
		{store.Join{}, api.Join{}, nil},
		{store.Node{}, api.Node{}, []string{"report_digest"}}, // the node's cache key of its own report, nothing an operator reads
		{store.WordRef{}, api.WordRef{}, nil},
		{store.Job{}, api.Job{}, nil},
		{store.Incident{}, api.Incident{}, nil},
		{store.IncidentEvent{}, api.IncidentEvent{}, nil},
		{store.IncidentChange{}, api.IncidentChange{}, nil},
		{store.Case{}, api.Case{}, nil},
		{store.CaseNote{}, api.CaseNote{}, nil},
		{store.Notification{}, api.Notification{}, nil},
		{store.NotificationAttempt{}, api.NotificationAttempt{}, nil},
		{store.Release{}, api.Release{}, []string{"bundle"}}, // large, and a node fetches it on the agent channel
		{store.ArtifactRef{}, api.ArtifactRef{}, nil},
		{store.Account{}, api.Account{}, nil}, // the sealed credential is json:"-" in the row
		{store.DriverCall{}, api.DriverCall{}, nil},
		{store.Replica{}, api.Replica{}, []string{"lease"}}, // answered as lease_seconds
	} {
		rowFields, answerFields := jsonFields(reflect.TypeOf(tc.row)), jsonFields(reflect.TypeOf(tc.answer))
		for _, f := range rowFields {
			if !slices.Contains(answerFields, f) && !slices.Contains(tc.omitted, f) {
				t.Errorf("%T has %q, which %T lacks", tc.row, f, tc.answer)
			}
		}
	}
}

func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
