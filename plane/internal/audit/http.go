package audit

import (
	"context"
	"net/http"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Describe says what a request is about to change, from the request alone (its route, its
// authenticated actor, its address); ok false leaves the request unaudited (a read).
type Describe func(r *http.Request) (in Intent, ok bool)

// Refuse answers a request whose intent could not be recorded, in the surface's own form (the API's
// envelope, the UI's error page).
type Refuse func(w http.ResponseWriter, r *http.Request, err error)

// Wrap records one event around each request next serves that describe marks: the intent before next
// runs (a request whose intent cannot be recorded is refused and changes nothing), the outcome after,
// with the status answered and the code the handler noted. A handler that panics is recorded as
// internal.error before the panic goes on.
func (r *Room) Wrap(next http.Handler, describe Describe, refuse Refuse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		in, ok := describe(req)
		if !ok {
			next.ServeHTTP(w, req)
			return
		}
		begun, err := r.Begin(req.Context(), in)
		if err != nil {
			r.log.Error("audit intent not recorded; the change is refused", "operation", in.Operation, "err", err)
			refuse(w, req, err)
			return
		}
		n := &notes{}
		rec := &recorder{ResponseWriter: w}
		finished := false
		defer func() {
			if finished {
				return
			}
			// next panicked: the outcome is the plane's failure, whatever was written.
			r.End(req.Context(), begun, Outcome{Status: http.StatusInternalServerError, Code: errcode.InternalError,
				ActorID: n.actorID, Actor: n.actor, Target: n.target})
		}()
		next.ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), notesKey{}, n)))
		finished = true
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		code := n.code
		switch {
		case code == "" && status < 400:
			code = store.CodeOK
		case code == "":
			code = errcode.InternalError // a failure that named no code is the plane's own
			if status < 500 {
				code = errcode.RequestMalformed
			}
		}
		r.End(req.Context(), begun, Outcome{Status: status, Code: code, ActorID: n.actorID, Actor: n.actor, Target: n.target})
	})
}

type notesKey struct{}

// notes are what a handler adds to its request's event.
type notes struct {
	code, actorID, actor, target string
}

func notesFrom(ctx context.Context) *notes {
	n, _ := ctx.Value(notesKey{}).(*notes)
	return n
}

// NoteCode records the error code a request answered; the surfaces call it where they write an error.
// Outside an audited request it does nothing.
func NoteCode(ctx context.Context, code string) {
	if n := notesFrom(ctx); n != nil {
		n.code = code
	}
}

// NoteActor records who a request turned out to be (a sign-in, once its token is known).
func NoteActor(ctx context.Context, id, name string) {
	if n := notesFrom(ctx); n != nil {
		n.actorID, n.actor = id, name
	}
}

// NoteTarget records what a request made (a create's id), when its route named no target.
func NoteTarget(ctx context.Context, target string) {
	if n := notesFrom(ctx); n != nil {
		n.target = target
	}
}

// recorder keeps the status a handler answered.
type recorder struct {
	http.ResponseWriter
	status int
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
