package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// refusing is a store that cannot record an intent.
type refusing struct{ audit.Store }

func (refusing) AuditEventStart(context.Context, store.AuditEventStartParams) (store.AuditEvent, error) {
	return store.AuditEvent{}, errcode.New(errcode.StoreUnavailable, "the store is down")
}

// TestNoIntentNoChange: a change whose intent cannot be recorded is refused before its handler runs.
func TestNoIntentNoChange(t *testing.T) {
	room := audit.New(audit.Config{Store: refusing{}})
	ran := false
	h := room.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }),
		func(*http.Request) (audit.Intent, bool) {
			return audit.Intent{Via: audit.ViaAPI, Operation: "JobsCreate"}, true
		},
		func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(errcode.Status(errcode.Code(err)))
		})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if ran || rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("ran %v, answered %d", ran, rec.Code)
	}
}

// TestPanicIsAnOutcome: a handler that panics leaves its event internal.error, not pending.
func TestPanicIsAnOutcome(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	room := audit.New(audit.Config{Store: st})
	h := room.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		func(*http.Request) (audit.Intent, bool) {
			return audit.Intent{Via: audit.ViaAPI, Operation: "JobsCreate"}, true
		},
		nil)
	func() {
		defer func() { _ = recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	}()
	res, err := st.AuditEventList(t.Context(), store.AuditEventListParams{})
	if err != nil || len(res.Events) != 1 || res.Events[0].Code != errcode.InternalError || res.Events[0].Status != 500 {
		t.Fatalf("%v %+v", err, res.Events)
	}
}

// TestWebhookDeliversInOrderThroughFailures: the webhook sends JSON lines in order, keeps a batch its
// destination refused until it is taken, and sends what is queued when stopped.
func TestWebhookDeliversInOrderThroughFailures(t *testing.T) {
	var mu sync.Mutex
	var got []string
	refuse := 2
	six := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		if refuse > 0 {
			refuse--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			var e api.AuditEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
			}
			got = append(got, e.ID+"/"+e.Code)
			if len(got) == 6 {
				close(six)
			}
		}
	}))
	defer ts.Close()
	w, err := audit.NewWebhook(ts.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Retry = time.Millisecond
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, id := range []string{"audit_1", "audit_2", "audit_3"} {
		for _, code := range []string{"pending", "ok"} {
			w.Export(api.AuditEvent{ID: id, Code: code})
			want = append(want, id+"/"+code)
		}
	}
	<-six // the refused batch was kept and sent again
	w.Export(api.AuditEvent{ID: "audit_4", Code: "pending"})
	want = append(want, "audit_4/pending")
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delivered %v, want %v", got, want)
		}
	}
	if _, err := audit.NewWebhook("file:///etc/passwd", nil, nil); err == nil {
		t.Fatal("a file URL was taken as a webhook")
	}
}
