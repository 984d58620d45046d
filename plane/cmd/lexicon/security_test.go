package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestFleetCritical: `lexicon fleet critical` shows the plane's own list; an operator may not set it;
// an admin sets it (the security view then judges by it and says so), a bad pattern exits 1 with
// security.critical_invalid and changes nothing, --none sets an empty list, reset goes back to the
// plane's own; each change is in the audit trail.
func TestFleetCritical(t *testing.T) {
	f := newFleet(t)
	show := func() api.SecurityCritical {
		t.Helper()
		code, out, errOut := f.lexicon("fleet", "critical", "show", "-o", "json")
		var c api.SecurityCritical
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("fleet critical show: %d %s %s", code, out, errOut)
		}
		return c
	}
	if c := show(); c.Source != api.CriticalFromPlane || !slices.Contains(c.Critical, "openssl") || !slices.Equal(c.Critical, c.Plane) {
		t.Fatalf("the plane's own list: %+v", c)
	}
	if code, _, errOut := f.lexicon("fleet", "critical", "set", "liblexfix1"); code != 1 || !strings.Contains(errOut, "auth.forbidden") {
		t.Fatalf("an operator set the list: %d %s", code, errOut)
	}
	tok, hash := tokens.Mint()
	if _, err := f.st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "sec-admin", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	f.token = tok
	code, out, errOut := f.lexicon("fleet", "critical", "set", "liblexfix1", "linux-image-*")
	if code != 0 || !strings.Contains(out, "critical: liblexfix1, linux-image-*") || !strings.Contains(out, "set by sec-admin") {
		t.Fatalf("fleet critical set: %d\n%s\n%s", code, out, errOut)
	}
	if c := show(); c.Source != api.CriticalFromSet || !slices.Equal(c.Critical, []string{"liblexfix1", "linux-image-*"}) || c.UpdatedBy != "sec-admin" ||
		!slices.Contains(c.Plane, "openssl") {
		t.Fatalf("after set: %+v", c)
	}
	code, out, _ = f.lexicon("fleet", "security", "-o", "json")
	var v api.SecurityView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.CriticalSource != api.CriticalFromSet || !slices.Equal(v.Critical, []string{"liblexfix1", "linux-image-*"}) {
		t.Fatalf("the view after set: %d %s", code, out)
	}
	for _, bad := range [][]string{{"Open SSL"}, {"lib[ssl"}, {"sudo", "sudo"}} {
		if code, out, errOut := f.lexicon(append([]string{"fleet", "critical", "set", "-o", "json"}, bad...)...); code != 1 ||
			!strings.Contains(out+errOut, "security.critical_invalid") {
			t.Errorf("set %q: %d %s %s", bad, code, out, errOut)
		}
	}
	if code, _, errOut := f.lexicon("fleet", "critical", "set"); code != 2 || !strings.Contains(errOut, "usage") {
		t.Errorf("set with nothing: %d %s", code, errOut)
	}
	if c := show(); !slices.Equal(c.Critical, []string{"liblexfix1", "linux-image-*"}) {
		t.Fatalf("a refused set changed the list: %+v", c)
	}
	if code, out, _ := f.lexicon("fleet", "critical", "set", "--none"); code != 0 || !strings.Contains(out, "no package is critical") {
		t.Fatalf("set --none: %d %s", code, out)
	}
	if code, out, _ := f.lexicon("fleet", "critical", "reset"); code != 0 || !strings.Contains(out, "the plane's own list") {
		t.Fatalf("reset: %d %s", code, out)
	}
	if c := show(); c.Source != api.CriticalFromPlane || !slices.Contains(c.Critical, "openssl") {
		t.Fatalf("after reset: %+v", c)
	}
	code, out, _ = f.lexicon("audit", "list", "--operation", "FleetSecurityCriticalSet", "-o", "json")
	var l api.AuditEventList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("audit list: %d %s", code, out)
	}
	var ok, failed int
	for _, e := range l.Events {
		if e.Code == "ok" {
			ok++
		} else {
			failed++
		}
	}
	// Three sets made (the list, --none, reset); the operator's refusal and three bad lists.
	if ok != 3 || failed != 4 {
		t.Fatalf("the trail: %d ok, %d refused: %+v", ok, failed, l.Events)
	}
}
