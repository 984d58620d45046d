package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
	for _, q := range []string{"where=fact.os%3Ddebian-12%2Crole%3Dweb", "q=os%3Ddebian-12+web", "sort=-seen&limit=1&cursor=at%3A1", "where=fact.nosuch%3D1", "cursor=at%3A-1&q=x", "label=role%3Dweb", "word=disk_usage&version=0.1.0", "label=a%3D%27%20OR%201%3D1", "label==", "word=%00", "state=active&limit=5&cursor=x"} {
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

// TestNodeListWhereSearchSort: GET /nodes finds nodes by a selector naming labels and host facts, by a
// search over names, addresses, labels and facts, sorts and pages them; a bad filter is
// node.filter_invalid naming its parameter.
func TestNodeListWhereSearchSort(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	now := time.Now()
	names := []string{"db-1", "web-2", "web-1", "cache-1"}
	for i, name := range names {
		n := storetest.Node(t, p.st, name, "0.1.0", now.Add(time.Duration(i)*time.Second))
		os := "debian-12"
		if name == "cache-1" {
			os = "ubuntu-24.04"
		}
		if _, err := p.st.NodeReport(t.Context(), store.NodeReportParams{ID: n.ID, Now: now.Add(time.Duration(i) * time.Second), AgentVersion: "0.1.0",
			Idle: true, Facts: store.NodeFacts{CollectedAt: now, OS: os, Kernel: "6.1.0", Addresses: []string{fmt.Sprintf("192.0.2.%d", 10+i)}}}); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "web") {
			if _, err := p.st.NodeLabel(t.Context(), store.NodeLabelParams{ID: n.ID, Set: map[string]string{"role": "web"}, By: "t", Now: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func(query string) []string {
		t.Helper()
		var l api.NodeList
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes?"+query, nil, &l)
		var got []string
		for _, n := range l.Nodes {
			got = append(got, n.Name)
		}
		return got
	}
	for query, want := range map[string]string{
		"where=fact.os%3Ddebian-12&sort=name":               "db-1 web-1 web-2",
		"where=fact.os%3Ddebian-12%2Crole%3Dweb&sort=-name": "web-2 web-1",
		"where=fact.address%3D192.0.2.13":                   "cache-1",
		"q=os%3Dubuntu-24.04":                               "cache-1",
		"q=WEB+192.0.2.1&sort=name":                         "web-1 web-2",
		"q=role%3Dweb&sort=-seen":                           "web-1 web-2",
		"q=nothing-like-it":                                 "",
		"where=fact.kernel%3D6.1.0&sort=name":               "cache-1 db-1 web-1 web-2",
	} {
		if got := strings.Join(list(query), " "); got != want {
			t.Errorf("/nodes?%s: %q, want %q", query, got, want)
		}
	}
	// Pages: two by two in name order, the cursor handed out taking the next.
	var first, second api.NodeList
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes?where=fact.kernel%3D6.1.0&sort=name&limit=2", nil, &first)
	if len(first.Nodes) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %+v", first)
	}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes?where=fact.kernel%3D6.1.0&sort=name&limit=2&cursor="+url.QueryEscape(first.NextCursor), nil, &second)
	if len(second.Nodes) != 2 || second.Nodes[0].Name != "web-1" || second.NextCursor != "" {
		t.Fatalf("second page: %+v", second)
	}
	for _, query := range []string{"where=fact.nosuch%3D1", "where=web-1%2Crole%3Dweb", "where=Role%3Dx", "sort=size", "q=a&cursor=nope", "q=a&limit=-1"} {
		p.want(http.StatusBadRequest, errcode.NodeFilterInvalid, store.RoleViewer, http.MethodGet, "/nodes?"+query, nil, nil)
	}
}
