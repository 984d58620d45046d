package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func ExampleRoute_Path() {
	p, _ := api.DNSRecords.Path("ops account", "example.org")
	q := api.JobsListQuery{Node: "web-1", State: api.JobFailed}
	fmt.Println(api.DNSRecords.Method, api.Prefix+p)
	fmt.Println(api.JobsList.Method, api.Prefix+api.JobsList.Pattern+"?"+q.Values().Encode())
	// Output:
	// GET /api/v1/admin/dns/ops%20account/zones/example.org/records
	// GET /api/v1/admin/jobs?node=web-1&state=failed
}

func TestRoutesAreUniqueAndWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range api.Routes() {
		if seen[rt.String()] {
			t.Errorf("%s is listed twice", rt)
		}
		seen[rt.String()] = true
		if !strings.HasPrefix(rt.Pattern, "/") || (rt.Method != http.MethodGet && rt.Method != http.MethodPost) {
			t.Errorf("%s: malformed", rt)
		}
		if rt.Role != api.RoleViewer && rt.Role != api.RoleOperator && rt.Role != api.RoleAdmin {
			t.Errorf("%s: role %q", rt, rt.Role)
		}
		if rt.Status != http.StatusOK && rt.Status != http.StatusCreated {
			t.Errorf("%s: status %d", rt, rt.Status)
		}
		if rt.Method == http.MethodGet && rt.Status != http.StatusOK {
			t.Errorf("%s: a read answers 200", rt)
		}
	}
}

// TestPathEscapesEachSegment: a parameter stays one segment whatever it holds, so an id cannot reach
// another route, and a wrong number of parameters is refused rather than sent.
func TestPathEscapesEachSegment(t *testing.T) {
	p, err := api.JobsCancel.Path("../../nodes/n1/disconnect?x=1")
	if err != nil || p != "/jobs/..%2F..%2Fnodes%2Fn1%2Fdisconnect%3Fx=1/cancel" {
		t.Fatalf("Path = %q, %v", p, err)
	}
	for _, values := range [][]string{nil, {"a", "b"}} {
		if _, err := api.JobsCancel.Path(values...); err == nil {
			t.Errorf("Path(%q) of a one-parameter route: no error", values)
		}
	}
	if _, err := api.JobsList.Path("x"); err == nil {
		t.Error("Path with a parameter for a route that has none: no error")
	}
	if got := api.CloudTypes.Params(); !reflect.DeepEqual(got, []string{"account", "region"}) {
		t.Errorf("Params = %q", got)
	}
}

// TestQueriesRoundTrip: what a client encodes, the plane decodes to the same query.
func TestQueriesRoundTrip(t *testing.T) {
	check := func(name string, in any, values url.Values, parse func(url.Values) (any, error)) {
		t.Helper()
		out, err := parse(values)
		if err != nil || !reflect.DeepEqual(in, out) {
			t.Errorf("%s: %+v became %+v (%v)", name, in, out, err)
		}
	}
	j := api.JoinsListQuery{Status: api.JoinPending, Limit: 5, Cursor: "c"}
	check("joins", j, j.Values(), func(v url.Values) (any, error) { return api.ParseJoinsListQuery(v) })
	n := api.NodesListQuery{State: api.NodeLeft, Limit: 7, Cursor: "c"}
	check("nodes", n, n.Values(), func(v url.Values) (any, error) { return api.ParseNodesListQuery(v) })
	jb := api.JobsListQuery{Node: "web 1", State: api.JobLost, Limit: 9, Cursor: "c"}
	check("jobs", jb, jb.Values(), func(v url.Values) (any, error) { return api.ParseJobsListQuery(v) })
	i := api.IncidentsListQuery{NeedsYou: true, Node: "n", Condition: api.ConditionCleared, Limit: 3, Cursor: "c"}
	check("incidents", i, i.Values(), func(v url.Values) (any, error) { return api.ParseIncidentsListQuery(v) })
	r := api.ReleasesListQuery{Limit: 2}
	check("releases", r, r.Values(), func(v url.Values) (any, error) { return api.ParseReleasesListQuery(v) })
	d := api.DriversAuditQuery{Driver: "dns-memory", Account: "a", Limit: 4, Cursor: "c"}
	check("audit", d, d.Values(), func(v url.Values) (any, error) { return api.ParseDriversAuditQuery(v) })
	a := api.AccountsListQuery{Driver: "dns-memory"}
	check("accounts", a, a.Values(), func(v url.Values) (any, error) { return api.ParseAccountsListQuery(v) })
	c := api.CloudInstancesQuery{PageSize: 50, PageToken: "t"}
	check("instances", c, c.Values(), func(v url.Values) (any, error) { return api.ParseCloudInstancesQuery(v) })
	pq := api.ProvisioningsListQuery{Open: true, State: api.ProvFailed, Limit: 6}
	check("provisionings", pq, pq.Values(), func(v url.Values) (any, error) { return api.ParseProvisioningsListQuery(v) })
	if got := (api.JobsListQuery{}).Values(); len(got) != 0 {
		t.Errorf("an empty query encodes as %v", got)
	}
}

func TestQueriesRefuseMalformedValues(t *testing.T) {
	for field, parse := range map[string]func() error{
		"limit":     func() error { _, err := api.ParseJobsListQuery(url.Values{"limit": {"ten"}}); return err },
		"page_size": func() error { _, err := api.ParseCloudInstancesQuery(url.Values{"page_size": {"1e3"}}); return err },
		"needs_you": func() error { _, err := api.ParseIncidentsListQuery(url.Values{"needs_you": {"maybe"}}); return err },
		"open":      func() error { _, err := api.ParseProvisioningsListQuery(url.Values{"open": {"yes"}}); return err },
	} {
		err := parse()
		if !errcode.Has(err, errcode.RequestMalformed) || errcode.From(err, "").Details["field"] != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestJobStateFinal(t *testing.T) {
	for s, final := range map[api.JobState]bool{api.JobQueued: false, api.JobRunning: false, api.JobCompleted: true,
		api.JobFailed: true, api.JobRefused: true, api.JobLost: true, api.JobCancelled: true, "paused": false} {
		if s.Final() != final {
			t.Errorf("%s.Final() = %v", s, !final)
		}
	}
}

func TestRoleCovers(t *testing.T) {
	if !api.RoleAdmin.Covers(api.RoleOperator) || api.RoleViewer.Covers(api.RoleOperator) || api.Role("root").Covers(api.RoleViewer) ||
		!api.RoleViewer.Covers(api.RoleViewer) {
		t.Fatal("role order is wrong")
	}
}

func TestSnooze(t *testing.T) {
	for _, s := range strings.Split(strings.ReplaceAll(api.SnoozeLengths, " or ", ", "), ", ") {
		if _, ok := api.Snooze(s); !ok {
			t.Errorf("%s is named in SnoozeLengths but refused", s)
		}
	}
	if _, ok := api.Snooze("2h"); ok {
		t.Error("2h accepted")
	}
}
