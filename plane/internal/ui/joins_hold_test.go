package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestJoinsPageShowsHoldReason: a provisioned join the plane left for a person shows its provisioning
// and why, as text.
func TestJoinsPageShowsHoldReason(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	j := p.pending("web-9")
	reason := "the join came from 198.51.100.66, which lin does not report <b>for</b> instance i-1"
	if _, err := p.store.JoinHold(context.Background(), store.JoinHoldParams{ID: j.ID, ProvisioningID: "prov_x", Reason: reason}); err != nil {
		t.Fatal(err)
	}
	b := p.browser()
	b.signIn(admin)
	body := b.get("/ui/joins", http.StatusOK)
	if !strings.Contains(body, "provisioning prov_x") || !strings.Contains(body, "which lin does not report &lt;b&gt;for&lt;/b&gt; instance i-1") {
		t.Fatalf("the joins page does not show the hold reason as text:\n%s", body)
	}
}
