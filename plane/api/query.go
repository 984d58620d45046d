package api

import (
	"net/url"
	"strconv"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The query parameters of the routes that take them. A client encodes one with Values (empty fields
// are left out); the plane decodes it with the matching Parse function, which refuses a malformed
// value with request.malformed naming the parameter (details.field). A zero Limit means the route's
// default; the plane caps it. Each field's query tag names its parameter for the API's document.

// JoinsListQuery filters GET /joins. An empty Status lists every join.
type JoinsListQuery struct {
	Status JoinStatus `query:"status"`
	Limit  int        `query:"limit"`
	Cursor string     `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q JoinsListQuery) Values() url.Values {
	v := url.Values{}
	set(v, "status", string(q.Status))
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseJoinsListQuery decodes a request's query.
func ParseJoinsListQuery(v url.Values) (JoinsListQuery, error) {
	limit, err := intParam(v, "limit")
	return JoinsListQuery{Status: JoinStatus(v.Get("status")), Limit: limit, Cursor: v.Get("cursor")}, err
}

// NodesListQuery filters GET /nodes. An empty State lists every node; Label ("key=value"), Word (a
// word of the node's vocabulary) and Version (its agent version, exactly) narrow the list further.
//
// Where is a node selector, the grammar rollouts select by: comma-separated terms that must all hold,
// each a label (role=web), a host fact (fact.os=debian-12, fact.kernel=6.1.0-28-amd64,
// fact.address=192.0.2.10; the facts are registry/channel.FactKeys), or node names alone
// (web-1,web-2). Search is words that must each appear, case-insensitively, in the node's name, id,
// an address, a label (key=value) or a host fact (os=debian-12 matches the fact os exactly). Sort is
// name, seen (last report), version (agent) or created (the default, enrolment order), "-" before it
// descending. A Where, Search or Sort pages by an offset cursor the plane hands out.
type NodesListQuery struct {
	State   NodeState `query:"state"`
	Label   string    `query:"label"`
	Word    string    `query:"word"`
	Version string    `query:"version"`
	Where   string    `query:"where"`
	Search  string    `query:"q"`
	Sort    string    `query:"sort"`
	Limit   int       `query:"limit"`
	Cursor  string    `query:"cursor"`
}

// NodeSorts are the sort keys GET /nodes takes ("-" before one sorts descending).
var NodeSorts = []string{"created", "name", "seen", "version"}

// Values encodes the query for a request, leaving out empty fields.
func (q NodesListQuery) Values() url.Values {
	v := url.Values{}
	set(v, "state", string(q.State))
	set(v, "label", q.Label)
	set(v, "word", q.Word)
	set(v, "version", q.Version)
	set(v, "where", q.Where)
	set(v, "q", q.Search)
	set(v, "sort", q.Sort)
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseNodesListQuery decodes a request's query.
func ParseNodesListQuery(v url.Values) (NodesListQuery, error) {
	limit, err := intParam(v, "limit")
	return NodesListQuery{State: NodeState(v.Get("state")), Label: v.Get("label"), Word: v.Get("word"), Version: v.Get("version"),
		Where: v.Get("where"), Search: v.Get("q"), Sort: v.Get("sort"), Limit: limit, Cursor: v.Get("cursor")}, err
}

// JobsListQuery filters GET /jobs. Node is a node's id or name.
type JobsListQuery struct {
	Node   string   `query:"node"`
	State  JobState `query:"state"`
	Limit  int      `query:"limit"`
	Cursor string   `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q JobsListQuery) Values() url.Values {
	v := url.Values{}
	set(v, "node", q.Node)
	set(v, "state", string(q.State))
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseJobsListQuery decodes a request's query.
func ParseJobsListQuery(v url.Values) (JobsListQuery, error) {
	limit, err := intParam(v, "limit")
	return JobsListQuery{Node: v.Get("node"), State: JobState(v.Get("state")), Limit: limit, Cursor: v.Get("cursor")}, err
}

// IncidentsListQuery filters GET /incidents. NeedsYou keeps only incidents that are new, or snoozed
// and due; Node is a node's id or name.
type IncidentsListQuery struct {
	NeedsYou  bool      `query:"needs_you"`
	Node      string    `query:"node"`
	Condition Condition `query:"condition"`
	Limit     int       `query:"limit"`
	Cursor    string    `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q IncidentsListQuery) Values() url.Values {
	v := url.Values{}
	if q.NeedsYou {
		v.Set("needs_you", "true")
	}
	set(v, "node", q.Node)
	set(v, "condition", string(q.Condition))
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseIncidentsListQuery decodes a request's query.
func ParseIncidentsListQuery(v url.Values) (IncidentsListQuery, error) {
	q := IncidentsListQuery{Node: v.Get("node"), Condition: Condition(v.Get("condition")), Cursor: v.Get("cursor")}
	switch v.Get("needs_you") {
	case "", "false", "0":
	case "true", "1":
		q.NeedsYou = true
	default:
		return q, errcode.New(errcode.RequestMalformed, "needs_you is true or false").With(errcode.DetailField, "needs_you")
	}
	var err error
	q.Limit, err = intParam(v, "limit")
	return q, err
}

// ReleasesListQuery bounds GET /releases.
type ReleasesListQuery struct {
	Limit int `query:"limit"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q ReleasesListQuery) Values() url.Values {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	return v
}

// ParseReleasesListQuery decodes a request's query.
func ParseReleasesListQuery(v url.Values) (ReleasesListQuery, error) {
	limit, err := intParam(v, "limit")
	return ReleasesListQuery{Limit: limit}, err
}

// ReleasesPublishQuery is the query of POST /releases: DeployAll also starts a fleet-wide rollout of
// the release once it is stored.
type ReleasesPublishQuery struct {
	DeployAll bool `query:"deploy_all"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q ReleasesPublishQuery) Values() url.Values {
	v := url.Values{}
	if q.DeployAll {
		v.Set("deploy_all", "true")
	}
	return v
}

// ParseReleasesPublishQuery decodes a request's query; deploy_all is true or false.
func ParseReleasesPublishQuery(v url.Values) (ReleasesPublishQuery, error) {
	switch s := v.Get("deploy_all"); s {
	case "", "false":
		return ReleasesPublishQuery{}, nil
	case "true":
		return ReleasesPublishQuery{DeployAll: true}, nil
	default:
		return ReleasesPublishQuery{}, errcode.New(errcode.RequestMalformed, "deploy_all is true or false, not %q", s).With(errcode.DetailField, "deploy_all")
	}
}

// ParseSequence reads a release's sequence from a path parameter named param: a positive integer.
func ParseSequence(raw, param string) (int64, error) {
	seq, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || seq <= 0 {
		return 0, errcode.New(errcode.RequestMalformed, "a release is named by its sequence, a positive integer, not %q", raw).With(errcode.DetailField, param)
	}
	return seq, nil
}

// DriversAuditQuery filters GET /drivers/audit.
type DriversAuditQuery struct {
	Driver  string `query:"driver"`
	Account string `query:"account"`
	Limit   int    `query:"limit"`
	Cursor  string `query:"cursor"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q DriversAuditQuery) Values() url.Values {
	v := url.Values{}
	set(v, "driver", q.Driver)
	set(v, "account", q.Account)
	setInt(v, "limit", q.Limit)
	set(v, "cursor", q.Cursor)
	return v
}

// ParseDriversAuditQuery decodes a request's query.
func ParseDriversAuditQuery(v url.Values) (DriversAuditQuery, error) {
	limit, err := intParam(v, "limit")
	return DriversAuditQuery{Driver: v.Get("driver"), Account: v.Get("account"), Limit: limit, Cursor: v.Get("cursor")}, err
}

// AccountsListQuery filters GET /accounts.
type AccountsListQuery struct {
	Driver string `query:"driver"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q AccountsListQuery) Values() url.Values {
	v := url.Values{}
	set(v, "driver", q.Driver)
	return v
}

// ParseAccountsListQuery decodes a request's query.
func ParseAccountsListQuery(v url.Values) (AccountsListQuery, error) {
	return AccountsListQuery{Driver: v.Get("driver")}, nil
}

// CloudInstancesQuery pages GET /cloud/{account}/instances: PageSize 0 means the driver's default,
// and PageToken is the NextPageToken of the page before.
type CloudInstancesQuery struct {
	PageSize  int    `query:"page_size"`
	PageToken string `query:"page_token"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q CloudInstancesQuery) Values() url.Values {
	v := url.Values{}
	setInt(v, "page_size", q.PageSize)
	set(v, "page_token", q.PageToken)
	return v
}

// ParseCloudInstancesQuery decodes a request's query.
func ParseCloudInstancesQuery(v url.Values) (CloudInstancesQuery, error) {
	size, err := intParam(v, "page_size")
	return CloudInstancesQuery{PageSize: size, PageToken: v.Get("page_token")}, err
}

func set(v url.Values, key, value string) {
	if value != "" {
		v.Set(key, value)
	}
}

func setInt(v url.Values, key string, n int) {
	if n != 0 {
		v.Set(key, strconv.Itoa(n))
	}
}

// intParam reads a whole-number parameter; absent is 0.
func intParam(v url.Values, key string) (int, error) {
	s := v.Get(key)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errcode.New(errcode.RequestMalformed, "%s %q is not a whole number", key, s).With(errcode.DetailField, key)
	}
	return n, nil
}

// RolloutsListQuery filters GET /rollouts.
type RolloutsListQuery struct {
	State string `query:"state"`
	Limit int    `query:"limit"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q RolloutsListQuery) Values() url.Values {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	setInt(v, "limit", q.Limit)
	return v
}

// ParseRolloutsListQuery decodes a request's query.
func ParseRolloutsListQuery(v url.Values) (RolloutsListQuery, error) {
	limit, err := intParam(v, "limit")
	return RolloutsListQuery{State: v.Get("state"), Limit: limit}, err
}

// ProvisioningsListQuery filters GET /provisionings: Open keeps the ones the plane still has work on
// (live, or failed with an instance not yet deleted).
type ProvisioningsListQuery struct {
	Open  bool   `query:"open"`
	State string `query:"state"`
	Limit int    `query:"limit"`
}

// Values encodes the query for a request, leaving out empty fields.
func (q ProvisioningsListQuery) Values() url.Values {
	v := url.Values{}
	if q.Open {
		v.Set("open", "true")
	}
	set(v, "state", q.State)
	setInt(v, "limit", q.Limit)
	return v
}

// ParseProvisioningsListQuery decodes a request's query.
func ParseProvisioningsListQuery(v url.Values) (ProvisioningsListQuery, error) {
	limit, err := intParam(v, "limit")
	if err != nil {
		return ProvisioningsListQuery{}, err
	}
	q := ProvisioningsListQuery{State: v.Get("state"), Limit: limit}
	switch v.Get("open") {
	case "", "false":
	case "true":
		q.Open = true
	default:
		return q, errcode.New(errcode.RequestMalformed, "open %q is not true or false", v.Get("open")).With(errcode.DetailField, "open")
	}
	return q, nil
}
