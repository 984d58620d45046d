package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// TestNodePageShowsCheckpoints: the log checkpoints a node reported are on its page, as its own text.
func TestNodePageShowsCheckpoints(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	now := time.Now()
	fleet := storetest.Fleet(t, p.store, "node", 2, now)
	root := "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: fleet[0].ID, Now: now, Idle: true,
		Checkpoints: []store.NodeCheckpoint{{Origin: "log.lexicon.test", Size: 42, RootHash: root}}}); err != nil {
		t.Fatal(err)
	}
	b := p.browser()
	b.signIn(viewer)
	page := b.get("/ui/nodes/"+fleet[0].ID, http.StatusOK)
	if want := `<code>log.lexicon.test</code> at size 42, root <code>` + strings.ReplaceAll(root, "+", "&#43;") + `</code>`; !strings.Contains(page, want) {
		t.Fatalf("the node page lacks %s:\n%s", want, page)
	}
	if other := b.get("/ui/nodes/"+fleet[1].ID, http.StatusOK); !strings.Contains(other, `id="checkpoints">none reported`) {
		t.Fatalf("a node with no checkpoint:\n%s", other)
	}
}
