package openapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Checker holds a plane's traffic to the document: each request to a documented operation and its
// answer are validated with kin-openapi's openapi3filter, and every operation seen is counted, so a
// test suite can say which routes it exercised.
//
// An answer must match the document: its status is documented for the operation, its body matches
// the status's schema, and an error's code is one of the codes that response lists. A request the
// document refuses is a problem only when the plane accepted it (2xx): tests send malformed requests
// on purpose, and the plane refusing them is what they check. A request body without a Content-Type
// is read as the operation's one media type, as the plane reads it.
type Checker struct {
	doc    *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[int]int // operationId -> status -> answers
}

// NewChecker makes a checker of a document (api.Spec()).
func NewChecker(spec []byte) (*Checker, error) {
	doc, err := Load(spec)
	if err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Checker{doc: doc, router: router, seen: map[string]map[int]int{}}, nil
}

// Handler serves h, checking every request under /api/v1/ and its answer; report is told of each
// problem (t.Errorf). Other paths (the agent channel, which nodes sign and the document leaves out,
// and the web UI) pass through.
func (c *Checker) Handler(h http.Handler, report func(format string, args ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") || strings.HasPrefix(r.URL.Path, channel.Prefix) {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		// Checked before the client has the answer, so a problem is reported while its test runs.
		for _, p := range c.check(r, body, rec.Result()) {
			report("%s %s: %s", r.Method, r.URL.RequestURI(), p)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// check returns what is wrong with one exchange.
func (c *Checker) check(r *http.Request, reqBody []byte, resp *http.Response) []string {
	answer, _ := io.ReadAll(resp.Body)
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		// No documented operation: the plane must answer the envelope, as it does for an unknown
		// route or a wrong method (or a missing token, checked before the route is).
		if e := errcode.Parse(answer); e == nil || resp.StatusCode < 400 {
			return []string{fmt.Sprintf("undocumented (%v), answered %d %.200s rather than the error envelope", err, resp.StatusCode, answer)}
		}
		if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
			return []string{"405 without an Allow header"}
		}
		return nil
	}
	c.count(route.Operation.OperationID, resp.StatusCode)
	ctx := context.Background()
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	req := r.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil && len(rb.Value.Content) == 1 && req.Header.Get("Content-Type") == "" {
		for media := range rb.Value.Content { // the plane reads a body as its route's one media type, labelled or not
			req.Header.Set("Content-Type", media)
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	var problems []string
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && resp.StatusCode/100 == 2 {
		problems = append(problems, fmt.Sprintf("the plane accepted (%d) a request the document refuses: %v", resp.StatusCode, err))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
	if err := openapi3filter.ValidateResponse(ctx, out.SetBodyBytes(answer)); err != nil {
		problems = append(problems, fmt.Sprintf("the answer %d %.300s does not match the document: %v", resp.StatusCode, answer, err))
	}
	if resp.StatusCode >= 400 {
		e := errcode.Parse(answer)
		codes := documentedCodes(route.Operation, resp.StatusCode)
		if e == nil || !slices.Contains(codes, e.Code) {
			problems = append(problems, fmt.Sprintf("answered %d %.300s; the document lists %q for it", resp.StatusCode, answer, codes))
		}
	}
	return problems
}

// documentedCodes are the codes an operation's response for status lists (x-codes).
func documentedCodes(op *openapi3.Operation, status int) []string {
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return nil
	}
	var codes []string
	switch v := ref.Value.Extensions["x-codes"].(type) {
	case []any:
		for _, c := range v {
			if s, ok := c.(string); ok {
				codes = append(codes, s)
			}
		}
	case []string:
		codes = v
	}
	return codes
}

func (c *Checker) count(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[op] == nil {
		c.seen[op] = map[int]int{}
	}
	c.seen[op][status]++
}

// Seen returns the operations answered so far, each with the statuses it answered
// ("JobsCancel 200,404").
func (c *Checker) Seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for op, statuses := range c.seen {
		var ss []string
		for s := range statuses {
			ss = append(ss, strconv.Itoa(s))
		}
		sort.Strings(ss)
		out = append(out, op+" "+strings.Join(ss, ","))
	}
	sort.Strings(out)
	return out
}

// Unseen returns the document's operations no request reached.
func (c *Checker) Unseen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			if _, ok := c.seen[op.OperationID]; !ok {
				out = append(out, op.OperationID)
			}
		}
	}
	sort.Strings(out)
	return out
}
