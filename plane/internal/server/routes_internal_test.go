package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/openapi"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestRoutesMatchTable: the plane serves exactly the admin routes plane/api lists, so a client built
// on the table never calls a route the plane lacks, and the plane has no route the spec does not name.
func TestRoutesMatchTable(t *testing.T) {
	s := New(Config{Store: storetest.SQLiteOpener(t).Store, Drivers: &drivers.Manager{}})
	var served []string
	err := chi.Walk(s.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if p, ok := strings.CutPrefix(route, api.Prefix); ok {
			served = append(served, method+" "+p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, rt := range api.Routes() {
		table = append(table, rt.String())
	}
	slices.Sort(served)
	slices.Sort(table)
	if !slices.Equal(served, table) {
		t.Fatalf("the plane serves\n  %s\nplane/api lists\n  %s", strings.Join(served, "\n  "), strings.Join(table, "\n  "))
	}
}

// TestRoutesRefuseRoleBelow: every route that needs more than viewer refuses a token one role below
// with auth.forbidden naming the role the table gives it, before it reads anything.
func TestRoutesRefuseRoleBelow(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	doc, err := openapi.NewChecker(api.Spec())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(doc.Handler(New(Config{Store: st, Drivers: &drivers.Manager{}}).Handler(), t.Errorf))
	t.Cleanup(ts.Close)
	below := map[api.Role]store.Role{api.RoleOperator: store.RoleViewer, api.RoleAdmin: store.RoleOperator}
	tokens := map[store.Role]string{}
	for _, role := range below {
		tok, hash := NewToken()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		tokens[role] = tok
	}
	for _, rt := range api.Routes() {
		role, ok := below[rt.Role]
		if !ok {
			continue
		}
		params := make([]string, len(rt.Params()))
		for i := range params {
			params[i] = "x"
		}
		path, err := rt.Path(params...)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(rt.Method, ts.URL+api.Prefix+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tokens[role])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error errcode.Error }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || e.Error.Code != errcode.AuthForbidden || e.Error.Details["need"] != string(rt.Role) {
			t.Errorf("%s with a %s token: %d %+v", rt, role, resp.StatusCode, e.Error)
		}
	}
}

// TestAnswersCoverRows: every JSON field of a store row that the API shows is in its plane/api type,
// so a column added to a row is not silently dropped from the answer. The fields named here are left
// out on purpose.
func TestAnswersCoverRows(t *testing.T) {
	for _, tc := range []struct {
		row, answer any
		omitted     []string
	}{
		{store.Token{}, api.Token{}, nil},
		{store.Join{}, api.Join{}, nil},
		{store.Node{}, api.Node{}, []string{"report_digest"}}, // the node's cache key of its own report, nothing an operator reads
		{store.WordRef{}, api.WordRef{}, nil},
		{store.Job{}, api.Job{}, nil},
		{store.Incident{}, api.Incident{}, nil},
		{store.IncidentEvent{}, api.IncidentEvent{}, nil},
		{store.IncidentChange{}, api.IncidentChange{}, nil},
		{store.Case{}, api.Case{}, nil},
		{store.CaseNote{}, api.CaseNote{}, nil},
		{store.Notification{}, api.Notification{}, nil},
		{store.NotificationAttempt{}, api.NotificationAttempt{}, nil},
		{store.Release{}, api.Release{}, []string{"bundle"}}, // large, and a node fetches it on the agent channel
		{store.ArtifactRef{}, api.ArtifactRef{}, nil},
		{store.Account{}, api.Account{}, nil}, // the sealed credential is json:"-" in the row
		{store.DriverCall{}, api.DriverCall{}, nil},
		{store.Replica{}, api.Replica{}, []string{"lease"}}, // answered as lease_seconds
	} {
		rowFields, answerFields := jsonFields(reflect.TypeOf(tc.row)), jsonFields(reflect.TypeOf(tc.answer))
		for _, f := range rowFields {
			if !slices.Contains(answerFields, f) && !slices.Contains(tc.omitted, f) {
				t.Errorf("%T has %q, which %T lacks", tc.row, f, tc.answer)
			}
		}
	}
}

func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// TestReleaseBundleFileIsTheRegistrys: plane/api names the bundle of a release upload without linking
// the registry; it must be the name the registry writes.
func TestReleaseBundleFileIsTheRegistrys(t *testing.T) {
	if api.ReleaseBundleFile != registry.BundleFile {
		t.Fatalf("api.ReleaseBundleFile %q, registry.BundleFile %q", api.ReleaseBundleFile, registry.BundleFile)
	}
}
