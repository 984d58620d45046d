package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
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
	aq := api.AuditListQuery{Actor: "root", Operation: "JobsCreate", Target: "job_1", Outcome: "failed",
		Since: "2026-12-01T00:00:00Z", Until: "2026-12-02T00:00:00.5Z", Limit: 8, Cursor: "c"}
	check("audit trail", aq, aq.Values(), func(v url.Values) (any, error) { return api.ParseAuditListQuery(v) })
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
		"since":     func() error { _, err := api.ParseAuditListQuery(url.Values{"since": {"yesterday"}}); return err },
		"until": func() error {
			_, err := api.ParseAuditListQuery(url.Values{"until": {"2026-13-01T00:00:00Z"}})
			return err
		},
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

// TestRoutesDescribeThemselves: every route says what it answers and, for a read, takes no body, so
// the API's document has something to say of each.
func TestRoutesDescribeThemselves(t *testing.T) {
	for _, rt := range api.Routes() {
		if rt.Summary == "" || rt.Answer == nil {
			t.Errorf("%s: no summary or no answer type", rt)
		}
		if rt.Method == http.MethodGet && rt.Body != nil {
			t.Errorf("%s: a read takes a body", rt)
		}
		if rt.BodyOptional && rt.Body == nil {
			t.Errorf("%s: an optional body, but no body type", rt)
		}
	}
}

// TestQueryTagsAreTheParameters: a query type's tags name exactly the parameters its Values encodes,
// so the document names what clients send.
func TestQueryTagsAreTheParameters(t *testing.T) {
	for _, rt := range api.Routes() {
		if rt.Query == nil {
			continue
		}
		typ := reflect.TypeOf(rt.Query)
		full := reflect.New(typ).Elem()
		var tags []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("query")
			if tag == "" {
				t.Errorf("%s: %s.%s has no query tag", rt, typ.Name(), f.Name)
				continue
			}
			tags = append(tags, tag)
			switch f.Type.Kind() {
			case reflect.String:
				full.Field(i).SetString("x")
			case reflect.Int:
				full.Field(i).SetInt(1)
			case reflect.Bool:
				full.Field(i).SetBool(true)
			default:
				t.Errorf("%s: %s.%s is a %s; a query parameter is a string, a whole number or a bool", rt, typ.Name(), f.Name, f.Type)
			}
		}
		enc, ok := full.Interface().(interface{ Values() url.Values })
		if !ok {
			t.Errorf("%s: %s has no Values method", rt, typ.Name())
			continue
		}
		var names []string
		for k := range enc.Values() {
			names = append(names, k)
		}
		slices.Sort(names)
		slices.Sort(tags)
		if !slices.Equal(names, tags) {
			t.Errorf("%s: %s encodes %q, its tags name %q", rt, typ.Name(), names, tags)
		}
	}
}

// TestRouteCodesAreDeclared: every code a route names is one of the errcode table, its areas are
// spelled out, and the codes every route may answer are there.
func TestRouteCodesAreDeclared(t *testing.T) {
	for _, rt := range api.Routes() {
		codes := rt.Codes()
		for _, c := range codes {
			if _, ok := errcode.Lookup(c); !ok {
				t.Errorf("%s names %q, which errcode does not declare", rt, c)
			}
		}
		for _, c := range []string{errcode.AuthRequired, errcode.InternalError, errcode.StoreUnavailable} {
			if !slices.Contains(codes, c) {
				t.Errorf("%s: %s is missing", rt, c)
			}
		}
		if got := slices.Contains(codes, errcode.AuthForbidden); got != (rt.Role != api.RoleViewer) {
			t.Errorf("%s (role %s): auth.forbidden listed: %v", rt, rt.Role, got)
		}
	}
	if !slices.Contains(api.TokensRevoke.Codes(), errcode.TokenRevoked) {
		t.Errorf("token.* was not spelled out: %q", api.TokensRevoke.Codes())
	}
}

// FuzzParseAuditListQuery: any query string decodes to a query or request.malformed, never a panic, and
// a query that decodes encodes back to the same query.
func FuzzParseAuditListQuery(f *testing.F) {
	for _, seed := range []string{"", "actor=root&since=2026-12-01T00:00:00Z", "until=24h", "limit=-1&cursor=%00", "since=2026-12-01T00:00:00%2B01:00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := api.ParseAuditListQuery(v)
		if err != nil {
			if !errcode.Has(err, errcode.RequestMalformed) {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		again, err := api.ParseAuditListQuery(q.Values())
		if err != nil || !reflect.DeepEqual(q, again) {
			t.Fatalf("%q: %+v became %+v (%v)", raw, q, again, err)
		}
	})
}
