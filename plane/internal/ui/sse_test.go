package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// TestJobEvents follows a job over Server-Sent Events from queued to completed: the stream sends the
// state and transcript as they change and ends when the job is final.
func TestJobEvents(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	n := storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	ctx := context.Background()
	j, err := p.store.JobCreate(ctx, store.JobCreateParams{NodeID: n.ID, Word: "w", WordDigest: n.Vocabulary[0].Digest, Class: "look", Params: []byte(`{}`), CreatedBy: "test", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b := p.browser()
	b.signIn(viewer)
	page := b.get("/ui/jobs/"+j.ID, http.StatusOK)
	if !strings.Contains(page, `data-live="/ui/jobs/`+j.ID+`/events"`) || !strings.Contains(page, `id="refresh"`) {
		t.Fatal("a running job's page has no live part or no refresh link")
	}
	res, err := b.c.Get(p.ts.URL + "/ui/jobs/" + j.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	if e := <-events; !strings.Contains(e, `"state":"queued"`) {
		t.Fatalf("first event %s", e)
	}
	if _, err := p.store.JobClaim(ctx, store.JobClaimParams{NodeID: n.ID, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if e := <-events; !strings.Contains(e, `"state":"running"`) {
		t.Fatalf("after the claim: %s", e)
	}
	if _, err := p.store.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted, Output: []byte(`{}`), Transcript: "step one done", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if e := <-events; !strings.Contains(e, `"state":"completed"`) || !strings.Contains(e, "step one done") {
		t.Fatalf("after the result: %s", e)
	}
	if e, open := <-events; open {
		t.Fatalf("the stream goes on after the job is final: %s", e)
	}
	if page := b.get("/ui/jobs/"+j.ID, http.StatusOK); strings.Contains(page, "data-live") {
		t.Fatal("a final job's page is still live")
	}
}
