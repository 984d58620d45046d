package openapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/openapi"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// apiDir is plane/api's source folder, from this package's.
const apiDir = "../../api"

// TestDocumentIsCurrent: the document the plane serves is the one plane/api makes now, so a route or
// a field added without regenerating fails here.
func TestDocumentIsCurrent(t *testing.T) {
	fresh, err := openapi.Generate(apiDir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, api.Spec()) {
		t.Fatal("plane/api/openapi.json is stale: run `make openapi` (go generate ./plane/api) and commit it")
	}
}

// TestDocumentIsValidOpenAPI31: kin-openapi's loader and validator pass the document as OpenAPI 3.1,
// and refuse it once it is broken, so the check is not one that cannot fail.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := openapi.Load(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != openapi.Version || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	for name, breakIt := range map[string]func(string) string{
		"an unresolved reference": func(s string) string {
			return strings.Replace(s, `"#/components/schemas/Job"`, `"#/components/schemas/NoSuchType"`, 1)
		},
		"a type that is not one": func(s string) string { return strings.Replace(s, `"type": "object"`, `"type": "dict"`, 1) },
		"no info":                func(s string) string { return strings.Replace(s, `"info": {`, `"nfo": {`, 1) },
	} {
		broken := breakIt(string(api.Spec()))
		if broken == string(api.Spec()) {
			t.Fatalf("%s: the document has nothing to break", name)
		}
		if _, err := openapi.Load([]byte(broken)); err == nil {
			t.Errorf("a document with %s passes", name)
		}
	}
}

// TestDocumentNamesEveryRoute: the document's operations are plane/api's routes and the document's
// own, each with its role, its answer and every code the route lists.
func TestDocumentNamesEveryRoute(t *testing.T) {
	doc, err := openapi.Load(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	var documented, table []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	for _, rt := range api.Routes() {
		table = append(table, rt.Method+" "+api.Prefix+rt.Pattern)
		op := doc.Paths.Find(api.Prefix + rt.Pattern).GetOperation(rt.Method)
		if op.Extensions["x-role"] != string(rt.Role) || op.Responses.Status(rt.Status) == nil {
			t.Errorf("%s: role %v, success %d documented: %v", rt, op.Extensions["x-role"], rt.Status, op.Responses.Status(rt.Status) != nil)
		}
		var codes []string
		for status, resp := range op.Responses.Map() {
			if status[0] == '2' {
				continue
			}
			for _, c := range resp.Value.Extensions["x-codes"].([]any) {
				codes = append(codes, c.(string))
				if fmt.Sprint(errcode.Status(c.(string))) != status {
					t.Errorf("%s: %s is under %s", rt, c, status)
				}
			}
		}
		slices.Sort(codes)
		if !slices.Equal(codes, rt.Codes()) {
			t.Errorf("%s: the document lists %q, the route %q", rt, codes, rt.Codes())
		}
	}
	table = append(table, http.MethodGet+" "+api.SpecPath, http.MethodGet+" "+api.SSOPath)
	slices.Sort(documented)
	slices.Sort(table)
	if !slices.Equal(documented, table) {
		t.Fatalf("documented:\n  %s\nplane/api:\n  %s", strings.Join(documented, "\n  "), strings.Join(table, "\n  "))
	}
	if s := doc.Components.Schemas["JobState"].Value; !slices.Contains(s.Enum, any(string(api.JobCancelled))) {
		t.Errorf("JobState's values are not its constants: %v", s.Enum)
	}
}

// TestCheckerFindsWhatBreaksTheDocument: the checker passes an answer as documented and reports one
// with an undocumented status, an undocumented code, a body of the wrong shape, and a request the
// document refuses that the plane accepted.
func TestCheckerFindsWhatBreaksTheDocument(t *testing.T) {
	c, err := openapi.NewChecker(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	answer := func(status int, v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	token := api.Token{ID: "tok_1", Name: "ci", Role: api.RoleViewer}
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		body    string
		handler http.HandlerFunc
		wantBad bool
	}{
		{"a documented answer", "GET", "/whoami", "", answer(200, token), false},
		{"a documented error", "POST", "/jobs/j1/cancel", "", answer(409, errcode.New(errcode.JobNotQueued, "running")), false},
		{"an undocumented status", "GET", "/whoami", "", answer(404, errcode.New(errcode.JobNotFound, "x")), true},
		{"an undocumented code", "POST", "/jobs/j1/cancel", "", answer(409, errcode.New(errcode.TokenExists, "x")), true},
		{"a field the type lacks", "GET", "/whoami", "", answer(200, map[string]any{"id": "t", "name": "n", "role": "viewer",
			"created_at": "2026-01-01T00:00:00Z", "secret": "x"}), true},
		{"a value outside its enum", "GET", "/whoami", "", answer(200, api.Token{ID: "t", Name: "n", Role: "root"}), true},
		{"a refused request, refused", "POST", "/tokens", `{"name":1}`, answer(400, errcode.New(errcode.RequestMalformed, "x")), false},
		{"a refused request, accepted", "POST", "/tokens", `{"name":1}`, answer(201, api.NewToken{Token: token, Secret: "lxt_x"}), true},
		{"an empty 405", "DELETE", "/whoami", "", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(405) }, true},
	} {
		var problems []string
		srv := httptest.NewServer(c.Handler(tc.handler, func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf(format, args...))
		}))
		req, _ := http.NewRequest(tc.method, srv.URL+api.Prefix+tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if (len(problems) > 0) != tc.wantBad {
			t.Errorf("%s: problems %q", tc.name, problems)
		}
	}
	if seen := c.Seen(); !slices.Contains(seen, "Whoami 200,404") {
		t.Errorf("seen: %q", seen)
	}
}
