package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestFleetAndNodeFilters: GET /fleet counts what GET /nodes lists, and GET /nodes narrows by label,
// word and agent version, refusing a label that is not key=value.
func TestFleetAndNodeFilters(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	now := time.Now()
	web := storetest.Node(t, p.st, "web-1", "0.2.0", now)
	storetest.Node(t, p.st, "web-2", "0.1.0", now)
	if _, err := p.st.NodeLabel(t.Context(), store.NodeLabelParams{ID: web.ID, Set: map[string]string{"role": "web"}, By: "t", Now: now}); err != nil {
		t.Fatal(err)
	}
	var f api.Fleet
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/fleet", nil, &f)
	var all api.NodeList
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes", nil, &all)
	if f.Total != len(all.Nodes) || f.Active != f.Total || f.Online+f.Silent != f.Active || f.SilentAfterSeconds != 600 {
		t.Fatalf("fleet %+v against %d nodes listed", f, len(all.Nodes))
	}
	versions := map[string]int{}
	for _, n := range all.Nodes {
		versions[n.AgentVersion]++
	}
	for _, v := range f.Versions {
		if versions[v.Version] != v.Nodes {
			t.Fatalf("fleet versions %+v, listed %v", f.Versions, versions)
		}
	}
	for query, want := range map[string]int{"?label=role%3Dweb": 1, "?version=0.1.0": 1, "?word=w": 2, "?word=nosuch": 0, "?label=role%3Dweb&version=0.1.0": 0} {
		var l api.NodeList
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes"+query, nil, &l)
		if len(l.Nodes) != want {
			t.Errorf("/nodes%s: %d nodes, want %d", query, len(l.Nodes), want)
		}
	}
	p.want(http.StatusBadRequest, errcode.RequestMalformed, store.RoleViewer, http.MethodGet, "/nodes?label=role", nil, nil)
	p.want(http.StatusUnprocessableEntity, errcode.NodeLabelInvalid, store.RoleViewer, http.MethodGet, "/nodes?label=Role%3Dweb", nil, nil)
}

// FuzzNodeListQuery sends arbitrary queries to GET /nodes (the filters are outside input reaching SQL
// as parameters): each answers a list or a coded refusal, never the plane's own failure.
func FuzzNodeListQuery(f *testing.F) {
	p := newFuzzPlane(f)
	for _, q := range []string{"label=role%3Dweb", "word=disk_usage&version=0.1.0", "label=a%3D%27%20OR%201%3D1", "label==", "word=%00", "state=active&limit=5&cursor=x"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "http://plane.test"+api.Prefix+"/nodes", nil)
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+p.admin)
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, req)
		p.check(t, "GET /nodes?"+query, rec, http.StatusOK)
	})
}
