package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/openapi"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// checker holds every plane this package's tests start to the API's document: each admin request
// and its answer are validated against it with kin-openapi's openapi3filter, so every route the
// tests exercise, and every error they provoke, is checked as they run.
var checker = sync.OnceValue(func() *openapi.Checker {
	c, err := openapi.NewChecker(api.Spec())
	if err != nil {
		panic(err)
	}
	return c
})

// checked is h held to the document; a problem fails t.
func checked(t testing.TB, h http.Handler) http.Handler { return checker().Handler(h, t.Errorf) }

// reportDocumentCoverage says, under -v, which documented operations the tests reached.
func reportDocumentCoverage() {
	if !testing.Verbose() {
		return
	}
	seen, unseen := checker().Seen(), checker().Unseen()
	fmt.Fprintf(os.Stderr, "openapi: %d operations answered, %d never reached: %s\n", len(seen), len(unseen), strings.Join(unseen, ", "))
	for _, s := range seen {
		fmt.Fprintln(os.Stderr, "openapi:   ", s)
	}
}

// TestServedRoutesAreDocumented: the routes the plane serves under /api/v1/, but for the agent
// channel (registry/channel, signed by nodes), are exactly the document's operations, walked from the
// plane's own router; a route added to the plane and not to plane/api's table, or the other way
// round, fails here.
func TestServedRoutesAreDocumented(t *testing.T) {
	s := wire.New(wire.Config{Store: storetest.SQLiteOpener(t).Store, Drivers: &drivers.Manager{}})
	var served []string
	err := chi.Walk(s.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/v1/") && !strings.HasPrefix(route, channel.Prefix) {
			served = append(served, method+" "+route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("the plane serves\n  %s\nthe document names\n  %s\n(add the route to plane/api's table with its types, then make openapi)",
			strings.Join(served, "\n  "), strings.Join(documented, "\n  "))
	}
}

// TestSpecServedWithoutToken: the document is served as plane/api holds it, to anyone.
func TestSpecServedWithoutToken(t *testing.T) {
	p := newPlane(t, wire.Config{})
	resp, err := http.Get(p.url + api.SpecPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(body) != string(api.Spec()) {
		t.Fatalf("%d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestWrongMethodAndUnknownRoute: a wrong method answers 405 with the envelope and Allow, on the admin
// API and the agent channel alike; an unknown path under /api/v1/ answers 404 with the envelope.
func TestWrongMethodAndUnknownRoute(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodDelete, api.Prefix + "/jobs", 405, errcode.RouteMethodNotAllowed, "GET, POST"},
		{http.MethodGet, api.Prefix + "/jobs/j1/cancel", 405, errcode.RouteMethodNotAllowed, "POST"},
		{http.MethodPut, api.Prefix + "/nodes/n1", 405, errcode.RouteMethodNotAllowed, "GET"},
		{"BREW", api.Prefix + "/whoami", 405, errcode.RouteMethodNotAllowed, "GET"},
		{http.MethodPost, api.SpecPath, 405, errcode.RouteMethodNotAllowed, "GET"},
		{http.MethodGet, channel.PathClaim, 405, errcode.RouteMethodNotAllowed, "POST"},
		{http.MethodGet, api.Prefix + "/no-such-route", 404, errcode.RouteNotFound, ""},
		{http.MethodGet, "/api/v1/no-such-route", 404, errcode.RouteNotFound, ""},
		{"BREW", "/api/v1/no-such-route", 404, errcode.RouteNotFound, ""},
	} {
		req, _ := http.NewRequest(tc.method, p.url+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+p.tokens[store.RoleAdmin])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env errcode.Envelope
		err = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || env.Error.Code != tc.code || resp.Header.Get("Allow") != tc.allow ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d Allow %q %+v (%v)", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), env.Error, err)
		}
		if tc.status == 405 && fmt.Sprint(env.Error.Details[errcode.DetailAllow]) != fmt.Sprint(strings.Split(tc.allow, ", ")) {
			t.Errorf("%s %s: details.allow %v", tc.method, tc.path, env.Error.Details[errcode.DetailAllow])
		}
	}
}

// TestLessTravelledRoutes exercises, through the document's checker, the routes no other test of this
// package reaches, each with a success and a refusal.
func TestLessTravelledRoutes(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	const viewer, operator = store.RoleViewer, store.RoleOperator
	get, post := http.MethodGet, http.MethodPost

	var n api.Node
	p.want(http.StatusOK, "", operator, post, "/nodes/n1/labels", []byte(`{"set":{"role":"web"}}`), &n)
	if n.Labels["role"] != "web" {
		t.Fatalf("labels %v", n.Labels)
	}
	p.want(http.StatusForbidden, errcode.AuthForbidden, viewer, post, "/nodes/n1/labels", []byte(`{"set":{"role":"db"}}`), nil)
	p.want(http.StatusNotFound, errcode.NodeNotFound, operator, post, "/nodes/nowhere/labels", []byte(`{"remove":["role"]}`), nil)

	p.want(http.StatusUnprocessableEntity, errcode.JobWordUnavailable, viewer, get, "/nodes/n1/words/no_such_word", nil, nil)
	p.want(http.StatusNotFound, errcode.NodeNotFound, viewer, get, "/nodes/nowhere/words/probe", nil, nil)
	p.want(http.StatusNotFound, errcode.JobNotFound, viewer, get, "/jobs/job_missing", nil, nil)

	var list api.RolloutList
	p.want(http.StatusOK, "", viewer, get, "/rollouts?state=running&limit=5", nil, &list)
	if list.Rollouts == nil {
		t.Fatal("rollouts: null rather than a list")
	}
	p.want(http.StatusBadRequest, errcode.RequestMalformed, viewer, get, "/rollouts?limit=five", nil, nil)

	status, _, body := p.admin(viewer, get, "/metrics", nil)
	if status != http.StatusOK || !strings.Contains(string(body), "# TYPE") {
		t.Fatalf("metrics: %d %.200s", status, body)
	}
}
