package ui_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
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

// TestJobEventsEndWithTheSession: a job's live stream, opened while signed in, ends with an "ended"
// event (auth.session_ended) once the session is signed out elsewhere, once its token is revoked, or
// once the session expires, though the job is still queued.
func TestJobEventsEndWithTheSession(t *testing.T) {
	for _, end := range []string{"signout", "revoke", "expire"} {
		t.Run(end, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Now()
			p := newPlaneWith(t, wire.Config{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
			raw, tok := p.token(store.RoleViewer)
			n := storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
			j, err := p.store.JobCreate(t.Context(), store.JobCreateParams{NodeID: n.ID, Word: "w", WordDigest: n.Vocabulary[0].Digest, Class: "look", Params: []byte(`{}`), CreatedBy: "test", Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			b := p.browser()
			b.signIn(raw)
			events := openEvents(t, b, "/ui/jobs/"+j.ID+"/events")
			if e := <-events; !strings.Contains(e, `"state":"queued"`) {
				t.Fatalf("first event %s", e)
			}
			switch end {
			case "signout":
				b.get("/ui/", http.StatusOK)
				b.post("/ui/signout", nil, http.StatusSeeOther)
			case "revoke":
				if _, err := p.store.TokenRevoke(t.Context(), store.TokenRevokeParams{ID: tok.ID, Now: time.Now()}); err != nil {
					t.Fatal(err)
				}
			case "expire":
				mu.Lock()
				now = now.Add(ui.SessionTTL)
				mu.Unlock()
			}
			var got []string
			for e := range events { // the stream closing ends this loop; a stream that outlives the session hangs the test
				got = append(got, e)
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], "ended ") || !strings.Contains(got[0], errcode.AuthSessionEnded) {
				t.Fatalf("after %s the stream sent %q, want one ended event with %s", end, got, errcode.AuthSessionEnded)
			}
		})
	}
}

// openEvents opens an event stream with b's session and sends each event, as "NAME DATA", until the
// server closes it.
func openEvents(t *testing.T, b *browser, path string) <-chan string {
	t.Helper()
	res, err := b.c.Get(b.p.ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := make(chan string)
	go func() {
		defer close(events)
		name := "message"
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				name = v
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- name + " " + data
				name = "message"
			}
		}
	}()
	return events
}
