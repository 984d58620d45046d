package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestRoutesMatchTable: the plane serves exactly the admin routes plane/api lists, so a client built
// on the table never calls a route the plane lacks, and the plane has no route the spec does not name.
func TestRoutesMatchTable(t *testing.T) {
	s := wire.New(wire.Config{Store: storetest.SQLiteOpener(t).Store, Drivers: &drivers.Manager{}})
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
	ts := httptest.NewServer(checked(t, wire.New(wire.Config{Store: st, Drivers: &drivers.Manager{}}).Handler()))
	t.Cleanup(ts.Close)
	below := map[api.Role]store.Role{api.RoleOperator: store.RoleViewer, api.RoleAdmin: store.RoleOperator}
	bearer := map[store.Role]string{}
	for _, role := range below {
		tok, hash := tokens.Mint()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		bearer[role] = tok
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
		req.Header.Set("Authorization", "Bearer "+bearer[role])
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
