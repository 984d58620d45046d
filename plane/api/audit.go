package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// AuditEvent is one change asked of the plane through this API or the web UI: who asked, from where,
// what, on what, and how it ended. The plane writes it before the change is made (Code "pending") and
// completes it after; one left pending means the plane stopped mid-change. It never holds a request
// body, a token's secret or a credential.
type AuditEvent struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Via is "api" (a bearer token) or "ui" (a web UI session, which runs as its token).
	Via string `json:"via"`
	// ActorID and Actor are the token's id and name; empty on a sign-in that named no known token.
	ActorID string `json:"actor_id,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// Address is the client's: the connection's for the API, the one behind the plane's trusted
	// proxies for the UI (lexicon-plane serve --trusted-proxy).
	Address string `json:"address,omitempty"`
	// Operation is the route's operation id in the API's document ("JobsCreate"); the UI's own
	// operations are "UISignIn" and "UISignOut".
	Operation string `json:"operation"`
	// Target is the route's parameters joined with "/" ("job_01…", "prod/inst-9"), or the id or name
	// of what a create made.
	Target string `json:"target,omitempty"`
	// Status is the HTTP status answered, 0 while pending.
	Status int `json:"status"`
	// Code is "pending", "ok", or the error code answered.
	Code       string `json:"code"`
	DurationMS int64  `json:"duration_ms"`
}

// AuditEventList is the answer of GET /audit, newest first.
type AuditEventList struct {
	Events     []AuditEvent `json:"events"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// AuditListQuery filters GET /audit. Actor is a token's name or id; Outcome is "ok", "pending",
// "failed" (any error) or one error code; Since and Until (exclusive) are RFC 3339 times.
type AuditListQuery struct {
	Actor     string `query:"actor"`
	Operation string `query:"operation"`
	Target    string `query:"target"`
	Outcome   string `query:"outcome"`
	Since     string `query:"since"`
	Until     string `query:"until"`
	Limit     int    `query:"limit"`
	Cursor    string `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q AuditListQuery) Values() url.Values {
	v := url.Values{}
	set(v, "actor", q.Actor)
	set(v, "operation", q.Operation)
	set(v, "target", q.Target)
	set(v, "outcome", q.Outcome)
	set(v, "since", q.Since)
	set(v, "until", q.Until)
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseAuditListQuery decodes a request's query.
func ParseAuditListQuery(v url.Values) (AuditListQuery, error) {
	q := AuditListQuery{Actor: v.Get("actor"), Operation: v.Get("operation"), Target: v.Get("target"), Outcome: v.Get("outcome"),
		Since: v.Get("since"), Until: v.Get("until"), Cursor: v.Get("cursor")}
	var err error
	if q.Limit, err = intParam(v, "limit"); err != nil {
		return q, err
	}
	_, _, err = q.Window()
	return q, err
}

// Window is the query's Since and Until as times, zero where absent; a malformed one is
// request.malformed.
func (q AuditListQuery) Window() (since, until time.Time, err error) {
	if since, err = timeText("since", q.Since); err != nil {
		return
	}
	until, err = timeText("until", q.Until)
	return
}

// AuditTime is how a time is written in an audit query.
func AuditTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func timeText(key, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errcode.New(errcode.RequestMalformed, "%s %q is not an RFC 3339 time", key, s).With(errcode.DetailField, key)
	}
	return t, nil
}

// Mutating reports whether a route changes the plane: every route but a GET does, and each such
// request is an audit event.
func (r Route) Mutating() bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

var (
	operationIDsOnce sync.Once
	operationIDs     map[string]string // "METHOD /pattern" -> operationId
)

// OperationID is the route's operationId in Spec (its variable's name here, "JobsCreate"): the name
// the audit trail gives the operation. A route the document lacks (a stale document, which the plane's
// tests refuse) is named by String.
func (r Route) OperationID() string {
	operationIDsOnce.Do(func() {
		operationIDs = map[string]string{}
		var doc struct {
			Paths map[string]map[string]struct {
				OperationID string `json:"operationId"`
			} `json:"paths"`
		}
		if json.Unmarshal(spec, &doc) != nil {
			return
		}
		for path, ops := range doc.Paths {
			pattern, ok := strings.CutPrefix(path, Prefix)
			if !ok {
				continue
			}
			for method, op := range ops {
				operationIDs[strings.ToUpper(method)+" "+pattern] = op.OperationID
			}
		}
	})
	if id := operationIDs[r.String()]; id != "" {
		return id
	}
	return r.String()
}
