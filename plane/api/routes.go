package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Prefix is where the admin API is served; Route patterns are relative to it.
const Prefix = "/api/v1/admin"

// Role is what an admin token may do. Each role may do everything the roles below it may.
type Role string

const (
	RoleViewer   Role = "viewer"   // read
	RoleOperator Role = "operator" // queue look and change words, cancel jobs, triage incidents, call drivers
	RoleAdmin    Role = "admin"    // approve joins, destructive words, publish releases, manage drivers
)

// Covers reports whether r may do what need allows; an unknown role covers nothing.
func (r Role) Covers(need Role) bool {
	return r.rank() > 0 && r.rank() >= need.rank()
}

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Route is one route of the admin API: the plane registers it, a client calls it.
type Route struct {
	Method string
	// Pattern is the path under Prefix; a {name} segment is a parameter (an id or a name).
	Pattern string
	// Role is the least role a token needs.
	Role Role
	// Status is the HTTP status of a success.
	Status int
}

// The routes, in the order of the package doc.
var (
	Whoami = Route{http.MethodGet, "/whoami", RoleViewer, http.StatusOK}

	// The token routes manage admin tokens over the API (before, only on the plane's host with
	// lexicon-plane token); the secret of a new token is in TokensCreate's answer and nowhere else.
	TokensList   = Route{http.MethodGet, "/tokens", RoleAdmin, http.StatusOK}
	TokensCreate = Route{http.MethodPost, "/tokens", RoleAdmin, http.StatusCreated}
	TokensRevoke = Route{http.MethodPost, "/tokens/{id}/revoke", RoleAdmin, http.StatusOK}

	JoinsList    = Route{http.MethodGet, "/joins", RoleViewer, http.StatusOK}
	JoinsApprove = Route{http.MethodPost, "/joins/{id}/approve", RoleAdmin, http.StatusOK}
	JoinsReject  = Route{http.MethodPost, "/joins/{id}/reject", RoleAdmin, http.StatusOK}

	NodesList = Route{http.MethodGet, "/nodes", RoleViewer, http.StatusOK}
	// FleetShow counts the nodes in the store rather than listing them: the overview of any fleet.
	FleetShow       = Route{http.MethodGet, "/fleet", RoleViewer, http.StatusOK}
	NodesShow       = Route{http.MethodGet, "/nodes/{id}", RoleViewer, http.StatusOK}
	NodesDisconnect = Route{http.MethodPost, "/nodes/{id}/disconnect", RoleAdmin, http.StatusOK}
	NodesLabel      = Route{http.MethodPost, "/nodes/{id}/labels", RoleOperator, http.StatusOK}
	// NodesWord is one word of a node's vocabulary with its signed manifest's params schema: what a
	// form for a job is made from.
	NodesWord = Route{http.MethodGet, "/nodes/{id}/words/{word}", RoleViewer, http.StatusOK}

	// JobsCreate needs operator for look and change words and admin for destructive ones: the plane
	// checks the word's class, as its signed manifest states it, once the route's role passed.
	JobsCreate     = Route{http.MethodPost, "/jobs", RoleOperator, http.StatusCreated}
	JobsList       = Route{http.MethodGet, "/jobs", RoleViewer, http.StatusOK}
	JobsShow       = Route{http.MethodGet, "/jobs/{id}", RoleViewer, http.StatusOK}
	JobsCancel     = Route{http.MethodPost, "/jobs/{id}/cancel", RoleOperator, http.StatusOK}
	JobsMarkFailed = Route{http.MethodPost, "/jobs/{id}/mark-failed", RoleOperator, http.StatusOK}

	IncidentsList   = Route{http.MethodGet, "/incidents", RoleViewer, http.StatusOK}
	IncidentsShow   = Route{http.MethodGet, "/incidents/{id}", RoleViewer, http.StatusOK}
	IncidentsTriage = Route{http.MethodPost, "/incidents/{id}/triage", RoleOperator, http.StatusOK}
	IncidentsNote   = Route{http.MethodPost, "/incidents/{id}/notes", RoleOperator, http.StatusCreated}

	ReleasesList = Route{http.MethodGet, "/releases", RoleViewer, http.StatusOK}
	// ReleasesShow and ReleasesDiff read the statements the plane verified when it stored them.
	ReleasesShow = Route{http.MethodGet, "/releases/{sequence}", RoleViewer, http.StatusOK}
	ReleasesDiff = Route{http.MethodGet, "/releases/{sequence}/diff/{to}", RoleViewer, http.StatusOK}
	// ReleasesPublish takes a tar stream (Content-Type application/x-tar) of statement.bundle.json and
	// sha256/<hex> files, at most MaxReleaseUpload bytes.
	ReleasesPublish = Route{http.MethodPost, "/releases", RoleAdmin, http.StatusCreated}

	// RolloutsStart needs operator; the plane then checks the role the change needs: admin for a
	// release, the word's class for a job (as JobsCreate does). RolloutsResume checks that role too:
	// resuming starts changes again.
	RolloutsStart  = Route{http.MethodPost, "/rollouts", RoleOperator, http.StatusCreated}
	RolloutsList   = Route{http.MethodGet, "/rollouts", RoleViewer, http.StatusOK}
	RolloutsShow   = Route{http.MethodGet, "/rollouts/{id}", RoleViewer, http.StatusOK}
	RolloutsPause  = Route{http.MethodPost, "/rollouts/{id}/pause", RoleOperator, http.StatusOK}
	RolloutsResume = Route{http.MethodPost, "/rollouts/{id}/resume", RoleOperator, http.StatusOK}
	RolloutsAbort  = Route{http.MethodPost, "/rollouts/{id}/abort", RoleOperator, http.StatusOK}
	RolloutsRevert = Route{http.MethodPost, "/rollouts/{id}/revert", RoleAdmin, http.StatusOK}

	DriversList    = Route{http.MethodGet, "/drivers", RoleViewer, http.StatusOK}
	DriversStatus  = Route{http.MethodGet, "/drivers/status", RoleViewer, http.StatusOK}
	DriversAudit   = Route{http.MethodGet, "/drivers/audit", RoleViewer, http.StatusOK}
	DriversEnable  = Route{http.MethodPost, "/drivers/{name}/enable", RoleAdmin, http.StatusOK}
	DriversDisable = Route{http.MethodPost, "/drivers/{name}/disable", RoleAdmin, http.StatusOK}
	// DriversSchema is the settings schema an account form is made from; it asks the enabled driver,
	// so it needs the role that adds accounts.
	DriversSchema = Route{http.MethodGet, "/drivers/{name}/schema", RoleAdmin, http.StatusOK}

	AccountsList   = Route{http.MethodGet, "/accounts", RoleViewer, http.StatusOK}
	AccountsAdd    = Route{http.MethodPost, "/accounts", RoleAdmin, http.StatusCreated}
	AccountsRemove = Route{http.MethodPost, "/accounts/{name}/remove", RoleAdmin, http.StatusOK}
	// AccountsSetTest marks an account test or not; on a test account automation may delete instances
	// it did not tag, so only an admin marks one.
	AccountsSetTest = Route{http.MethodPost, "/accounts/{name}/test", RoleAdmin, http.StatusOK}

	// The DNS and cloud routes reach a provider with a sealed credential, so even reading needs
	// operator; a reconcile only ever adds records.
	DNSZones     = Route{http.MethodGet, "/dns/{account}/zones", RoleOperator, http.StatusOK}
	DNSRecords   = Route{http.MethodGet, "/dns/{account}/zones/{zone}/records", RoleOperator, http.StatusOK}
	DNSReconcile = Route{http.MethodPost, "/dns/{account}/zones/{zone}/reconcile", RoleOperator, http.StatusOK}

	CloudRegions   = Route{http.MethodGet, "/cloud/{account}/regions", RoleOperator, http.StatusOK}
	CloudTypes     = Route{http.MethodGet, "/cloud/{account}/regions/{region}/types", RoleOperator, http.StatusOK}
	CloudInstances = Route{http.MethodGet, "/cloud/{account}/instances", RoleOperator, http.StatusOK}
	CloudCreate    = Route{http.MethodPost, "/cloud/{account}/instances", RoleOperator, http.StatusCreated}
	CloudGet       = Route{http.MethodGet, "/cloud/{account}/instances/{id}", RoleOperator, http.StatusOK}
	// CloudDelete is destructive: admin, and the instance's label typed back.
	CloudDelete     = Route{http.MethodPost, "/cloud/{account}/instances/{id}/delete", RoleAdmin, http.StatusOK}
	CloudPowerOn    = Route{http.MethodPost, "/cloud/{account}/instances/{id}/power-on", RoleOperator, http.StatusOK}
	CloudPowerOff   = Route{http.MethodPost, "/cloud/{account}/instances/{id}/power-off", RoleOperator, http.StatusOK}
	CloudReboot     = Route{http.MethodPost, "/cloud/{account}/instances/{id}/reboot", RoleOperator, http.StatusOK}
	CloudReverseDNS = Route{http.MethodPost, "/cloud/{account}/instances/{id}/reverse-dns", RoleOperator, http.StatusOK}
	CloudTransfer   = Route{http.MethodGet, "/cloud/{account}/instances/{id}/transfer", RoleOperator, http.StatusOK}
	CloudSwapIPv4   = Route{http.MethodPost, "/cloud/{account}/swap-ipv4", RoleOperator, http.StatusOK}
	CloudAccount    = Route{http.MethodGet, "/cloud/{account}/account", RoleOperator, http.StatusOK}

	// Provisioning makes a machine through a cloud account and joins its agent (see ProvisionRequest).
	// NodesAdopt links an existing instance to an existing node by their addresses.
	NodesProvision    = Route{http.MethodPost, "/provisionings", RoleAdmin, http.StatusCreated}
	ProvisioningsList = Route{http.MethodGet, "/provisionings", RoleViewer, http.StatusOK}
	ProvisioningsShow = Route{http.MethodGet, "/provisionings/{id}", RoleViewer, http.StatusOK}
	NodesAdopt        = Route{http.MethodPost, "/nodes/{id}/adopt", RoleAdmin, http.StatusOK}
	// NodesDecommission removes a provisioned node's records, deletes its instance and disconnects it.
	NodesDecommission = Route{http.MethodPost, "/nodes/{id}/decommission", RoleAdmin, http.StatusOK}

	// Metrics answers the Prometheus text format, not JSON (see the package doc).
	Metrics            = Route{http.MethodGet, "/metrics", RoleViewer, http.StatusOK}
	PlaneShowStatus    = Route{http.MethodGet, "/plane/status", RoleViewer, http.StatusOK}
	PlaneForgetReplica = Route{http.MethodPost, "/plane/replicas/{id}/forget", RoleAdmin, http.StatusOK}
)

// Routes returns every route of the admin API.
func Routes() []Route {
	return []Route{
		Whoami,
		TokensList, TokensCreate, TokensRevoke,
		JoinsList, JoinsApprove, JoinsReject,
		NodesList, FleetShow, NodesShow, NodesDisconnect, NodesLabel, NodesWord,
		JobsCreate, JobsList, JobsShow, JobsCancel, JobsMarkFailed,
		IncidentsList, IncidentsShow, IncidentsTriage, IncidentsNote,
		ReleasesList, ReleasesShow, ReleasesDiff, ReleasesPublish,
		RolloutsStart, RolloutsList, RolloutsShow, RolloutsPause, RolloutsResume, RolloutsAbort, RolloutsRevert,
		DriversList, DriversStatus, DriversAudit, DriversEnable, DriversDisable, DriversSchema,
		AccountsList, AccountsAdd, AccountsRemove, AccountsSetTest,
		DNSZones, DNSRecords, DNSReconcile,
		CloudRegions, CloudTypes, CloudInstances,
		CloudCreate, CloudGet, CloudDelete, CloudPowerOn, CloudPowerOff, CloudReboot, CloudReverseDNS, CloudTransfer,
		CloudSwapIPv4, CloudAccount,
		NodesProvision, ProvisioningsList, ProvisioningsShow, NodesAdopt, NodesDecommission,
		Metrics,
		PlaneShowStatus, PlaneForgetReplica,
	}
}

// Params names the route's parameters in order: "/dns/{account}/zones/{zone}/records" has account
// and zone.
func (r Route) Params() []string {
	var names []string
	for _, seg := range strings.Split(r.Pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(name, "}"))
		}
	}
	return names
}

// Path is the route's path under Prefix with its parameters filled in order, each escaped as one
// path segment, so an id or a name can never reach another route. It fails when the number of values
// is not the number of parameters.
func (r Route) Path(values ...string) (string, error) {
	segs := strings.Split(r.Pattern, "/")
	n := 0
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") {
			if n >= len(values) {
				break
			}
			segs[i] = url.PathEscape(values[n])
			n++
		}
	}
	if want := len(r.Params()); n != want || len(values) != want {
		return "", fmt.Errorf("%s %s takes %d parameters, not %d", r.Method, r.Pattern, want, len(values))
	}
	return strings.Join(segs, "/"), nil
}

// String is the route as the package doc writes it: "POST /jobs/{id}/cancel".
func (r Route) String() string { return r.Method + " " + r.Pattern }
