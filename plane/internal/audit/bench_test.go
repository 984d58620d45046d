package audit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// BenchmarkAuditedChange is what the audit trail adds to one change on a SQLite file store: the intent
// inserted and the outcome written, both durable, around a handler that does nothing.
func BenchmarkAuditedChange(b *testing.B) {
	st := storetest.Open(b, filepath.Join(b.TempDir(), "plane.db"))
	room := audit.New(audit.Config{Store: st})
	h := room.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		func(*http.Request) (audit.Intent, bool) {
			return audit.Intent{Via: audit.ViaAPI, Actor: "root", Operation: "JobsCancel", Target: "job_1"}, true
		}, nil)
	req := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(context.Background())
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
