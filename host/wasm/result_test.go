package wasm

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestWordFailureReservedAreas: a word reporting a code of an area the codes table reserves fails as
// word.failed with what it said as the reason; its own areas and capability.* pass through.
func TestWordFailureReservedAreas(t *testing.T) {
	cases := []struct {
		reported, code string
	}{
		{"restart_unit.failed", "restart_unit.failed"},
		{errcode.CapabilityDenied, errcode.CapabilityDenied},
		{errcode.RecipeNoVerdict, errcode.RecipeNoVerdict},
		{errcode.WordFailed, errcode.WordFailed},
		{errcode.WordDeadlineExceeded, errcode.WordFailed},
		{errcode.StoreUnavailable, errcode.WordFailed},
		{errcode.PlaneUnreachable, errcode.WordFailed},
		{errcode.AgentBusy, errcode.WordFailed},
		{errcode.DriverCrashed, errcode.WordFailed},
		{errcode.InternalError, errcode.WordFailed},
		{errcode.JobLost, errcode.WordFailed},
		{"Not A Code", errcode.WordFailed},
	}
	for _, c := range cases {
		t.Run(c.reported, func(t *testing.T) {
			e, ok := wordFailure([]byte(`{"error":{"code":"` + c.reported + `","message":"m"}}`))
			if !ok || e.Code != c.code {
				t.Fatalf("wordFailure(%q) = %v, %v; want %s", c.reported, e, ok, c.code)
			}
			if c.code == errcode.WordFailed && c.reported != errcode.WordFailed && e.Details["reason"] != c.reported {
				t.Errorf("reason = %v, want %q", e.Details["reason"], c.reported)
			}
		})
	}
}
