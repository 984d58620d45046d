package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
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

// Route is one route of the admin API: the plane registers it, a client calls it, and the API's
// OpenAPI document (Spec) is generated from it. A route is added by giving it its types here and
// listing it in Routes; the plane's tests fail until the plane serves it and the document names it.
type Route struct {
	Method string
	// Pattern is the path under Prefix; a {name} segment is a parameter (an id or a name).
	Pattern string
	// Role is the least role a token needs.
	Role Role
	// Status is the HTTP status of a success.
	Status int
	// Summary says in a few words what the route does.
	Summary string
	// Query is the route's query type as a zero value (a struct whose fields are tagged
	// query:"name"), nil when the route takes no query.
	Query any
	// Body is what the route takes, as a zero value: a JSON type, a Stream for a body that is not
	// JSON, or nil for none. BodyOptional: an empty body stands for the zero value.
	Body         any
	BodyOptional bool
	// Answer is what a success answers, as a zero value: a JSON type or a Stream.
	Answer any
	// Errors are the codes the route answers beyond the ones every route may (see Codes); "area.*"
	// stands for every code of the area.
	Errors []string
}

// Stream is the media type of a body or an answer that is not JSON.
type Stream string

const (
	// TarStream is the body of POST /releases (see ReleaseBundleFile).
	TarStream Stream = "application/x-tar"
	// PrometheusText is the answer of GET /metrics.
	PrometheusText Stream = "text/plain"
)

// The routes, in the order of the package doc.
var (
	Whoami = Route{Method: http.MethodGet, Pattern: "/whoami", Role: RoleViewer, Status: http.StatusOK,
		Summary: "The token this request was made with", Answer: Token{}}

	// The token routes manage admin tokens over the API (before, only on the plane's host with
	// lexicon-plane token); the secret of a new token is in TokensCreate's answer and nowhere else.
	TokensList = Route{Method: http.MethodGet, Pattern: "/tokens", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "List every token, revoked ones too", Answer: TokenList{}}
	TokensCreate = Route{Method: http.MethodPost, Pattern: "/tokens", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Make a token of any role; its secret is in this answer only", Body: TokenRequest{}, Answer: NewToken{},
		Errors: []string{"token.*"}}
	TokensRevoke = Route{Method: http.MethodPost, Pattern: "/tokens/{id}/revoke", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Revoke a token and end its UI sessions", Answer: Token{}, Errors: []string{"token.*"}}

	JoinsList = Route{Method: http.MethodGet, Pattern: "/joins", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List join requests", Query: JoinsListQuery{}, Answer: JoinList{}, Errors: []string{errcode.StoreParamInvalid}}
	JoinsApprove = Route{Method: http.MethodPost, Pattern: "/joins/{id}/approve", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Approve a join whose fingerprint matches: the machine becomes a node", Body: ApproveRequest{}, Answer: Approved{},
		Errors: []string{"join.*", errcode.NodeNameTaken, errcode.StoreParamInvalid}}
	JoinsReject = Route{Method: http.MethodPost, Pattern: "/joins/{id}/reject", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Reject a join and retire its key", Answer: Join{}, Errors: []string{"join.*"}}

	NodesList = Route{Method: http.MethodGet, Pattern: "/nodes", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List nodes", Query: NodesListQuery{}, Answer: NodeList{}, Errors: []string{errcode.NodeLabelInvalid, errcode.NodeFilterInvalid, errcode.StoreParamInvalid}}
	// FleetShow counts the nodes in the store rather than listing them: the overview of any fleet.
	FleetShow = Route{Method: http.MethodGet, Pattern: "/fleet", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Count the nodes by state, liveness and agent version", Answer: Fleet{}}
	NodesShow = Route{Method: http.MethodGet, Pattern: "/nodes/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a node, by id or name", Answer: Node{}, Errors: []string{errcode.NodeNotFound}}
	NodesDisconnect = Route{Method: http.MethodPost, Pattern: "/nodes/{id}/disconnect", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Disconnect a node: its queued jobs are cancelled, its running one lost", Answer: Disconnected{},
		Errors: []string{"node.*"}}
	NodesLabel = Route{Method: http.MethodPost, Pattern: "/nodes/{id}/labels", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Set and remove a node's labels", Body: LabelRequest{}, Answer: Node{},
		Errors: []string{errcode.NodeNotFound, errcode.NodeLabelInvalid}}
	// NodesWord is one word of a node's vocabulary with its signed manifest's params schema: what a
	// form for a job is made from.
	NodesWord = Route{Method: http.MethodGet, Pattern: "/nodes/{id}/words/{word}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a word a node runs, with its params schema", Answer: Word{},
		Errors: []string{errcode.NodeNotFound, errcode.JobWordUnavailable}}

	// JobsCreate needs operator for look and change words and admin for destructive ones: the plane
	// checks the word's class, as its signed manifest states it, once the route's role passed.
	JobsCreate = Route{Method: http.MethodPost, Pattern: "/jobs", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Queue a word with its params for one node", Body: JobRequest{}, Answer: Job{},
		Errors: []string{errcode.NodeNotFound, errcode.NodeNotActive, errcode.JobWordUnavailable, errcode.JobNeedsNewerAgent,
			errcode.WordParamInvalid, "lease.*", errcode.StoreParamInvalid}}
	JobsList = Route{Method: http.MethodGet, Pattern: "/jobs", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List jobs, newest first", Query: JobsListQuery{}, Answer: JobList{},
		Errors: []string{errcode.NodeNotFound, errcode.StoreParamInvalid}}
	JobsShow = Route{Method: http.MethodGet, Pattern: "/jobs/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a job and its outcome", Answer: Job{}, Errors: []string{errcode.JobNotFound}}
	JobsCancel = Route{Method: http.MethodPost, Pattern: "/jobs/{id}/cancel", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Cancel a job that is still queued", Answer: Job{}, Errors: []string{errcode.JobNotFound, errcode.JobNotQueued}}
	JobsMarkFailed = Route{Method: http.MethodPost, Pattern: "/jobs/{id}/mark-failed", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Mark a job that is not final failed", Body: MarkFailedRequest{}, BodyOptional: true, Answer: Job{},
		Errors: []string{errcode.JobNotFound, errcode.JobFinished}}

	// BatchesCreate runs one word on every node a selector matches, as one batch: the same role and
	// params checks as JobsCreate, once for the word's class.
	BatchesCreate = Route{Method: http.MethodPost, Pattern: "/batches", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Run a word on every node a selector matches, one job a node, as one batch", Body: BatchRequest{}, Answer: Batch{},
		Errors: []string{errcode.JobSelectorInvalid, errcode.JobSelectorEmpty, errcode.JobBoundsInvalid, errcode.JobWordUnavailable,
			errcode.WordParamInvalid, errcode.NodeNotFound, errcode.StoreParamInvalid}}
	BatchesList = Route{Method: http.MethodGet, Pattern: "/batches", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List batches, newest first", Query: BatchesListQuery{}, Answer: BatchList{},
		Errors: []string{errcode.StoreParamInvalid}}
	BatchesShow = Route{Method: http.MethodGet, Pattern: "/batches/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a batch: its jobs counted, its outputs grouped, its skipped nodes", Answer: Batch{},
		Errors: []string{errcode.JobBatchNotFound}}
	BatchesJobs = Route{Method: http.MethodGet, Pattern: "/batches/{id}/jobs", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Page a batch's jobs with their outputs, by state or group", Query: BatchJobsQuery{}, Answer: BatchJobList{},
		Errors: []string{errcode.JobBatchNotFound, errcode.StoreParamInvalid}}
	BatchesSkips = Route{Method: http.MethodGet, Pattern: "/batches/{id}/skips", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Page the nodes a batch matched but gave no job", Query: BatchesListQuery{}, Answer: BatchSkipList{},
		Errors: []string{errcode.JobBatchNotFound, errcode.StoreParamInvalid}}

	IncidentsList = Route{Method: http.MethodGet, Pattern: "/incidents", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List incidents, newest first", Query: IncidentsListQuery{}, Answer: IncidentList{},
		Errors: []string{errcode.NodeNotFound, errcode.StoreParamInvalid}}
	IncidentsShow = Route{Method: http.MethodGet, Pattern: "/incidents/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show an incident with its timeline, case and notifications", Answer: IncidentDetail{},
		Errors: []string{errcode.IncidentNotFound}}
	IncidentsTriage = Route{Method: http.MethodPost, Pattern: "/incidents/{id}/triage", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Triage an incident: new, snoozed, resolved or ignored", Body: TriageRequest{}, Answer: IncidentChange{},
		Errors: []string{errcode.IncidentNotFound, errcode.StoreParamInvalid}}
	IncidentsNote = Route{Method: http.MethodPost, Pattern: "/incidents/{id}/notes", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Add a note to an incident's timeline", Body: NoteRequest{}, Answer: IncidentEvent{},
		Errors: []string{errcode.IncidentNotFound, errcode.StoreParamInvalid}}

	ReleasesList = Route{Method: http.MethodGet, Pattern: "/releases", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List published releases, newest first", Query: ReleasesListQuery{}, Answer: ReleaseList{}}
	// ReleasesShow and ReleasesDiff read the statements the plane verified when it stored them.
	ReleasesShow = Route{Method: http.MethodGet, Pattern: "/releases/{sequence}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a release and what its statement pins", Answer: ReleaseDetail{},
		Errors: []string{errcode.RequestMalformed, errcode.ReleaseNotFound, "statement.*", errcode.ModuleDigestMismatch}}
	ReleasesDiff = Route{Method: http.MethodGet, Pattern: "/releases/{sequence}/diff/{to}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Compare two published releases", Answer: ReleaseDiff{},
		Errors: []string{errcode.RequestMalformed, errcode.ReleaseNotFound, "statement.*", errcode.ModuleDigestMismatch}}
	// ReleasesPublish takes a tar stream (Content-Type application/x-tar) of statement.bundle.json and
	// sha256/<hex> files, at most MaxReleaseUpload bytes.
	ReleasesPublish = Route{Method: http.MethodPost, Pattern: "/releases", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Publish a release: the plane verifies it as a node would", Query: ReleasesPublishQuery{}, Body: TarStream,
		Answer: Release{}, Errors: []string{"statement.*", "module.*", "release.*", "key.*", "contract.*", "manifest.*",
			"rollout.*", "lease.*"}}

	// RolloutsStart needs operator; the plane then checks the role the change needs: admin for a
	// release, the word's class for a job (as JobsCreate does). RolloutsResume checks that role too:
	// resuming starts changes again.
	RolloutsStart = Route{Method: http.MethodPost, Pattern: "/rollouts", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Start a rollout of a release or a word over a selection of nodes", Body: RolloutRequest{}, Answer: Rollout{},
		Errors: []string{"rollout.*", errcode.ReleaseNotFound, errcode.WordParamInvalid, "lease.*", errcode.StoreParamInvalid}}
	// FleetPatch starts a patch rollout (RolloutsStart's rules, the word's class: change, operator).
	FleetPatch = Route{Method: http.MethodPost, Pattern: "/fleet/patch", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Patch the fleet: a staged rollout of install_security_updates, services on replaced code restarted, each node verified by packages_report",
		Body:    FleetPatchRequest{}, Answer: Rollout{}, Errors: []string{"rollout.*", errcode.StoreParamInvalid}}
	MachinesList = Route{Method: http.MethodGet, Pattern: "/machines", Role: RoleViewer, Status: http.StatusOK,
		Summary: "The machine inventory: managed nodes, cloud servers no node runs on, machines written down; red first",
		Answer:  MachineList{}, Errors: []string{errcode.StoreParamInvalid}}
	MachinesAdd = Route{Method: http.MethodPost, Pattern: "/machines", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Write a machine down (saving confirms it)", Body: MachineRequest{}, Answer: Machine{}, Errors: []string{"machine.*", errcode.StoreParamInvalid}}
	MachinesEdit = Route{Method: http.MethodPost, Pattern: "/machines/{id}/edit", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Rewrite a machine written down (saving confirms it)", Body: MachineRequest{}, Answer: Machine{}, Errors: []string{"machine.*", errcode.StoreParamInvalid}}
	MachinesConfirm = Route{Method: http.MethodPost, Pattern: "/machines/{id}/confirm", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Confirm a machine written down is still as written", Answer: Machine{}, Errors: []string{errcode.MachineNotFound}}
	MachinesRemove = Route{Method: http.MethodPost, Pattern: "/machines/{id}/remove", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Remove a machine written down", Answer: Machine{}, Errors: []string{errcode.MachineNotFound}}
	RolloutsList = Route{Method: http.MethodGet, Pattern: "/rollouts", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List rollouts", Query: RolloutsListQuery{}, Answer: RolloutList{}, Errors: []string{errcode.StoreParamInvalid}}
	RolloutsShow = Route{Method: http.MethodGet, Pattern: "/rollouts/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a rollout with its steps and events", Answer: Rollout{}, Errors: []string{errcode.RolloutNotFound}}
	RolloutsPause = Route{Method: http.MethodPost, Pattern: "/rollouts/{id}/pause", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Pause a running rollout", Answer: Rollout{}, Errors: []string{errcode.RolloutNotFound, errcode.RolloutWrongState}}
	RolloutsResume = Route{Method: http.MethodPost, Pattern: "/rollouts/{id}/resume", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Resume a paused or halted rollout", Answer: Rollout{}, Errors: []string{errcode.RolloutNotFound, errcode.RolloutWrongState}}
	RolloutsAbort = Route{Method: http.MethodPost, Pattern: "/rollouts/{id}/abort", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Abort a rollout: no further node is changed", Answer: Rollout{},
		Errors: []string{errcode.RolloutNotFound, errcode.RolloutWrongState}}
	RolloutsRevert = Route{Method: http.MethodPost, Pattern: "/rollouts/{id}/revert", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Move the nodes a release rollout changed back to their previous release", Answer: Rollout{},
		Errors: []string{"rollout.*", "lease.*"}}

	FleetSecurity = Route{Method: http.MethodGet, Pattern: "/fleet/security", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Every node's package security, red, amber, grey or green with its reasons, red rows first", Answer: SecurityView{},
		Errors: []string{errcode.StoreParamInvalid}}
	FleetSecurityCritical = Route{Method: http.MethodGet, Pattern: "/fleet/security/critical", Role: RoleViewer, Status: http.StatusOK,
		Summary: "The critical package list in force, where it comes from, and the plane's own", Answer: SecurityCritical{}}
	// FleetSecurityCriticalSet needs admin: the list decides which nodes the page shows red and which
	// incidents open.
	FleetSecurityCriticalSet = Route{Method: http.MethodPost, Pattern: "/fleet/security/critical", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Set the critical package list (stored, audited), or reset it to the plane's own", Body: SecurityCriticalRequest{},
		Answer: SecurityCritical{}, Errors: []string{errcode.SecurityCriticalInvalid, errcode.StoreParamInvalid}}

	// Schedules: SchedulesCreate and SchedulesEdit need operator, and the plane then checks the role the
	// word's class needs (as JobsCreate does): the schedule's jobs are queued with that token's role.
	SchedulesCreate = Route{Method: http.MethodPost, Pattern: "/schedules", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Create a schedule: a word run on a selection of nodes on an interval or a cron expression", Body: ScheduleRequest{},
		Answer: Schedule{}, Errors: []string{"schedule.*", errcode.WordParamInvalid, errcode.AuthForbidden, errcode.StoreParamInvalid}}
	SchedulesList = Route{Method: http.MethodGet, Pattern: "/schedules", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List schedules with their last and next run", Answer: ScheduleList{}, Errors: []string{errcode.StoreParamInvalid}}
	SchedulesShow = Route{Method: http.MethodGet, Pattern: "/schedules/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a schedule (by id or name)", Answer: Schedule{}, Errors: []string{errcode.ScheduleNotFound}}
	SchedulesEdit = Route{Method: http.MethodPost, Pattern: "/schedules/{id}/edit", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Change a schedule's word, params, selector, interval or cron expression", Body: ScheduleEdit{}, Answer: Schedule{},
		Errors: []string{"schedule.*", errcode.WordParamInvalid, errcode.AuthForbidden, errcode.StoreParamInvalid}}
	SchedulesPause = Route{Method: http.MethodPost, Pattern: "/schedules/{id}/pause", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Pause a schedule: it fires no more until resumed", Answer: Schedule{}, Errors: []string{errcode.ScheduleNotFound}}
	SchedulesResume = Route{Method: http.MethodPost, Pattern: "/schedules/{id}/resume", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Resume a paused schedule from its next tick", Answer: Schedule{}, Errors: []string{errcode.ScheduleNotFound, errcode.ScheduleCronInvalid}}
	SchedulesDelete = Route{Method: http.MethodPost, Pattern: "/schedules/{id}/delete", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Delete a schedule (the jobs it queued stay)", Answer: Schedule{}, Errors: []string{errcode.ScheduleNotFound}}

	DriversList = Route{Method: http.MethodGet, Pattern: "/drivers", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List the drivers the current release pins", Answer: DriverList{}, Errors: []string{errcode.DriverUnavailable}}
	DriversStatus = Route{Method: http.MethodGet, Pattern: "/drivers/status", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show the driver processes of the replica that answers", Answer: StatusList{}, Errors: []string{errcode.DriverUnavailable}}
	DriversAudit = Route{Method: http.MethodGet, Pattern: "/drivers/audit", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Page through the audit of driver calls, newest first", Query: DriversAuditQuery{}, Answer: DriverCallList{},
		Errors: []string{errcode.DriverUnavailable, errcode.StoreParamInvalid}}
	DriversEnable = Route{Method: http.MethodPost, Pattern: "/drivers/{name}/enable", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Enable a driver the current release pins", Body: DriverEnable{}, BodyOptional: true, Answer: Driver{},
		Errors: []string{"driver.*"}}
	DriversDisable = Route{Method: http.MethodPost, Pattern: "/drivers/{name}/disable", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Disable a driver and stop its processes", Answer: Driver{}, Errors: []string{"driver.*"}}
	// DriversSchema is the settings schema an account form is made from; it asks the enabled driver,
	// so it needs the role that adds accounts.
	DriversSchema = Route{Method: http.MethodGet, Pattern: "/drivers/{name}/schema", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "The JSON Schema of an enabled driver's account settings", Answer: DriverSchema{}, Errors: []string{"driver.*"}}

	AccountsList = Route{Method: http.MethodGet, Pattern: "/accounts", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List driver accounts, never their credentials", Query: AccountsListQuery{}, Answer: AccountList{},
		Errors: []string{errcode.DriverUnavailable}}
	AccountsAdd = Route{Method: http.MethodPost, Pattern: "/accounts", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Add a driver account; the plane seals its credential", Body: AccountAdd{}, Answer: Account{},
		Errors: []string{"account.*", "driver.*", errcode.StoreParamInvalid}}
	AccountsRemove = Route{Method: http.MethodPost, Pattern: "/accounts/{name}/remove", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Remove a driver account", Answer: Account{}, Errors: []string{errcode.AccountNotFound, errcode.DriverUnavailable}}
	// AccountsSetTest marks an account test or not; on a test account automation may delete instances
	// it did not tag, so only an admin marks one.
	AccountsSetTest = Route{Method: http.MethodPost, Pattern: "/accounts/{name}/test", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Mark or unmark a test account", Body: AccountTest{}, Answer: Account{},
		Errors: []string{errcode.AccountNotFound, errcode.DriverUnavailable}}

	// The DNS and cloud routes reach a provider with a sealed credential, so even reading needs
	// operator; a reconcile only ever adds records.
	DNSZones = Route{Method: http.MethodGet, Pattern: "/dns/{account}/zones", Role: RoleOperator, Status: http.StatusOK,
		Summary: "List an account's DNS zones", Answer: ZoneList{}, Errors: driverCallCodes("dns.*")}
	DNSRecords = Route{Method: http.MethodGet, Pattern: "/dns/{account}/zones/{zone}/records", Role: RoleOperator, Status: http.StatusOK,
		Summary: "List a zone's records", Answer: RecordList{}, Errors: driverCallCodes("dns.*")}
	DNSReconcile = Route{Method: http.MethodPost, Pattern: "/dns/{account}/zones/{zone}/reconcile", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Add the wanted records a zone lacks; never change or remove one", Body: Reconcile{}, Answer: ReconcileReport{},
		Errors: driverCallCodes("dns.*")}

	CloudRegions = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/regions", Role: RoleOperator, Status: http.StatusOK,
		Summary: "List a cloud account's regions", Answer: RegionList{}, Errors: driverCallCodes("cloud.*")}
	CloudTypes = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/regions/{region}/types", Role: RoleOperator, Status: http.StatusOK,
		Summary: "List a region's instance types", Answer: TypeList{}, Errors: driverCallCodes("cloud.*")}
	CloudInstances = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/instances", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Page through an account's instances", Query: CloudInstancesQuery{}, Answer: InstancePage{},
		Errors: driverCallCodes("cloud.*")}
	CloudCreate = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Create an instance", Body: CloudCreateRequest{}, Answer: Instance{}, Errors: driverCallCodes("cloud.*")}
	CloudGet = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/instances/{id}", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Show an instance", Answer: Instance{}, Errors: driverCallCodes("cloud.*")}
	// CloudDelete is destructive: admin, and the instance's label typed back.
	CloudDelete = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances/{id}/delete", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Delete an instance whose label is typed back", Body: CloudDeleteRequest{}, Answer: Instance{},
		Errors: driverCallCodes("cloud.*")}
	CloudPowerOn = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances/{id}/power-on", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Power an instance on", Answer: CloudAccepted{}, Errors: driverCallCodes("cloud.*")}
	CloudPowerOff = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances/{id}/power-off", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Power an instance off", Answer: CloudAccepted{}, Errors: driverCallCodes("cloud.*")}
	CloudReboot = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances/{id}/reboot", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Reboot an instance", Answer: CloudAccepted{}, Errors: driverCallCodes("cloud.*")}
	CloudReverseDNS = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/instances/{id}/reverse-dns", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Set the reverse DNS name of one of an instance's addresses", Body: ReverseDNSRequest{}, Answer: CloudAccepted{},
		Errors: driverCallCodes("cloud.*")}
	CloudTransfer = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/instances/{id}/transfer", Role: RoleOperator, Status: http.StatusOK,
		Summary: "An instance's network transfer this billing month", Answer: Transfer{}, Errors: driverCallCodes("cloud.*")}
	CloudSwapIPv4 = Route{Method: http.MethodPost, Pattern: "/cloud/{account}/swap-ipv4", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Swap the IPv4 addresses of two instances", Body: SwapIPv4Request{}, Answer: CloudAccepted{},
		Errors: driverCallCodes("cloud.*")}
	CloudAccount = Route{Method: http.MethodGet, Pattern: "/cloud/{account}/account", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Who a cloud account's credential belongs to, and its driver's features", Answer: CloudAccountInfo{},
		Errors: driverCallCodes("cloud.*")}

	// Provisioning makes a machine through a cloud account and joins its agent (see ProvisionRequest).
	// NodesAdopt links an existing instance to an existing node by their addresses.
	// The backup routes: the fleet's and a node's backup health, the targets (saving one probes it:
	// list, put, get and delete of a probe object, and a failure names its step in
	// details.operation), and the policies (the fleet's default, a node's own, a recorded off).
	BackupsFleet = Route{Method: http.MethodGet, Pattern: "/backups", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Every node's backup health: last run, last full, last verified, size, reasons for red", Answer: BackupFleet{}}
	BackupsNode = Route{Method: http.MethodGet, Pattern: "/backups/nodes/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "A node's backup health, the policy it follows and its recent backup jobs", Answer: BackupNode{},
		Errors: []string{errcode.NodeNotFound}}
	BackupsRestore = Route{Method: http.MethodPost, Pattern: "/backups/nodes/{id}/restore", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Queue a restore of one of the node's witnessed runs into a new folder or database, with a read grant of its chain",
		Body:    BackupRestoreRequest{}, Answer: Job{},
		Errors: []string{errcode.NodeNotFound, errcode.BackupRunNotFound, errcode.UsageInvalid, errcode.JobWordUnavailable, "backup.*"}}
	BackupTargetsList = Route{Method: http.MethodGet, Pattern: "/backups/targets", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List backup targets (never their secrets)", Answer: BackupTargetList{}}
	BackupTargetsAdd = Route{Method: http.MethodPost, Pattern: "/backups/targets", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Probe a backup target and save it, its secret sealed", Body: BackupTargetRequest{}, Answer: BackupTarget{},
		Errors: []string{"backup.*", errcode.UsageInvalid, errcode.StoreParamInvalid}}
	BackupTargetsShow = Route{Method: http.MethodGet, Pattern: "/backups/targets/{name}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a backup target", Answer: BackupTarget{}, Errors: []string{errcode.BackupTargetNotFound}}
	BackupTargetsRemove = Route{Method: http.MethodPost, Pattern: "/backups/targets/{name}/remove", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Forget a backup target; its runs stay in the bucket", Answer: BackupTarget{}, Errors: []string{errcode.BackupTargetNotFound}}
	BackupTargetsCheck = Route{Method: http.MethodPost, Pattern: "/backups/targets/{name}/check", Role: RoleOperator, Status: http.StatusOK,
		Summary: "Probe a saved backup target again: each step's outcome", Answer: BackupCheck{},
		Errors: []string{errcode.BackupTargetNotFound, errcode.AccountSealBroken}}
	BackupPoliciesList = Route{Method: http.MethodGet, Pattern: "/backups/policies", Role: RoleViewer, Status: http.StatusOK,
		Summary: "The fleet's backup policy and every node's own", Answer: BackupPolicyList{}}
	BackupPolicyFleet = Route{Method: http.MethodPost, Pattern: "/backups/policies/fleet", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Set the fleet's backup policy, which every node without its own follows", Body: BackupPolicy{}, Answer: BackupPolicy{},
		Errors: []string{errcode.BackupKeepBelowFloor, errcode.BackupTargetNotFound, errcode.StoreParamInvalid}}
	BackupPolicyShow = Route{Method: http.MethodGet, Pattern: "/backups/policies/nodes/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "The backup policy a node follows, and where it comes from", Answer: BackupPolicy{}, Errors: []string{errcode.NodeNotFound}}
	BackupPolicySet = Route{Method: http.MethodPost, Pattern: "/backups/policies/nodes/{id}", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Set a node's own backup policy (enabled false: a recorded off)", Body: BackupPolicy{}, Answer: BackupPolicy{},
		Errors: []string{errcode.NodeNotFound, errcode.BackupKeepBelowFloor, errcode.BackupTargetNotFound, errcode.StoreParamInvalid}}
	BackupPolicyClear = Route{Method: http.MethodPost, Pattern: "/backups/policies/nodes/{id}/clear", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Remove a node's own backup policy: it follows the fleet's again", Answer: BackupPolicy{},
		Errors: []string{errcode.NodeNotFound}}

	NodesProvision = Route{Method: http.MethodPost, Pattern: "/provisionings", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Make a machine through a cloud account and join its agent", Body: ProvisionRequest{}, Answer: Provisioning{},
		Errors: driverCallCodes("cloud.*", "provision.*", errcode.NodeLabelInvalid, errcode.UsageInvalid)}
	ProvisioningsList = Route{Method: http.MethodGet, Pattern: "/provisionings", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List provisionings, newest first", Query: ProvisioningsListQuery{}, Answer: ProvisioningList{},
		Errors: []string{errcode.DriverUnavailable, errcode.StoreParamInvalid}}
	ProvisioningsShow = Route{Method: http.MethodGet, Pattern: "/provisionings/{id}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a provisioning with its timeline", Answer: Provisioning{},
		Errors: []string{errcode.DriverUnavailable, errcode.ProvisionNotFound}}
	NodesAdopt = Route{Method: http.MethodPost, Pattern: "/nodes/{id}/adopt", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Link an existing instance to an existing node by their addresses", Body: AdoptRequest{}, Answer: Provisioning{},
		Errors: driverCallCodes("cloud.*", "provision.*", "node.*", errcode.UsageInvalid)}
	// NodesInstallCommand enrols a machine that already exists: admin, since its join may be approved
	// without a person.
	NodesInstallCommand = Route{Method: http.MethodPost, Pattern: "/nodes/install-command", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Make a one-line command that installs the agent on an existing machine and joins it", Body: InstallCommandRequest{},
		BodyOptional: true, Answer: InstallCommand{},
		Errors: []string{errcode.UsageInvalid, errcode.ReleaseNotFound, errcode.ArtifactNotPinned, errcode.StoreParamInvalid}}
	// NodesDecommission removes a provisioned node's records, deletes its instance and disconnects it.
	NodesDecommission = Route{Method: http.MethodPost, Pattern: "/nodes/{id}/decommission", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Remove a provisioned node's records, delete its instance and disconnect it", Body: DecommissionRequest{},
		Answer: Decommissioned{}, Errors: driverCallCodes("cloud.*", "dns.*", "provision.*", "node.*", errcode.UsageInvalid)}

	// AuditList needs admin: the trail says who did what from where.
	AuditList = Route{Method: http.MethodGet, Pattern: "/audit", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Page through the audit trail of changes, newest first", Query: AuditListQuery{}, Answer: AuditEventList{},
		Errors: []string{errcode.StoreParamInvalid}}

	// Metrics answers the Prometheus text format, not JSON (see the package doc).
	Metrics = Route{Method: http.MethodGet, Pattern: "/metrics", Role: RoleViewer, Status: http.StatusOK,
		Summary: "This replica's metrics in the Prometheus text format", Answer: PrometheusText}
	PlaneShowStatus = Route{Method: http.MethodGet, Pattern: "/plane/status", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Every replica of the plane, and which one answered", Answer: PlaneStatus{}}
	PlaneForgetReplica = Route{Method: http.MethodPost, Pattern: "/plane/replicas/{id}/forget", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Forget a replica that stopped heartbeating", Answer: Replica{}, Errors: []string{"replica.*"}}
)

// The role routes: a role is a named, versioned declaration of what machines carry; assigned by
// selector, it renders into each node's footprint, which plan shows and apply converges as a staged
// rollout of the converge word. Writing roles and applying them take admin (a role can add users and
// keys); planning changes nothing on a node and takes operator.
var (
	RolesList = Route{Method: http.MethodGet, Pattern: "/roles", Role: RoleViewer, Status: http.StatusOK,
		Summary: "List roles at their newest versions", Answer: RoleList{}}
	RolesCreate = Route{Method: http.MethodPost, Pattern: "/roles", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Make a role from a role file (YAML or JSON)", Body: RoleFile{}, Answer: RoleVersion{},
		Errors: []string{errcode.RoleInvalid, errcode.RoleTooLarge, errcode.RoleExists, errcode.StoreParamInvalid}}
	RolesShow = Route{Method: http.MethodGet, Pattern: "/roles/{name}", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Show a role (a version of it), its assignments and the nodes that carry it", Query: RoleShowQuery{}, Answer: RoleVersion{},
		Errors: []string{errcode.RoleNotFound, errcode.StoreParamInvalid}}
	RolesEdit = Route{Method: http.MethodPost, Pattern: "/roles/{name}/versions", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Make a role's next version from a role file; refused if a node carrying it would carry a conflict", Body: RoleFile{}, Answer: RoleVersion{},
		Errors: []string{errcode.RoleInvalid, errcode.RoleTooLarge, errcode.RoleNotFound, errcode.RoleStale, errcode.RoleConflict, errcode.StoreParamInvalid}}
	RolesHistory = Route{Method: http.MethodGet, Pattern: "/roles/{name}/versions", Role: RoleViewer, Status: http.StatusOK,
		Summary: "Every version of a role, newest first", Answer: RoleHistory{}, Errors: []string{errcode.RoleNotFound, errcode.StoreParamInvalid}}
	RolesAssign = Route{Method: http.MethodPost, Pattern: "/roles/{name}/assign", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Carry a role to the nodes a selector picks; refused if a node would carry a conflict or none is picked", Body: RoleAssignRequest{}, Answer: RoleAssignment{},
		Errors: []string{errcode.RoleNotFound, errcode.RoleConflict, errcode.RoleNoMatch, errcode.RolloutSelectorInvalid, errcode.StoreParamInvalid}}
	RolesUnassign = Route{Method: http.MethodPost, Pattern: "/roles/{name}/unassign", Role: RoleAdmin, Status: http.StatusOK,
		Summary: "Remove an assignment of a role", Body: RoleAssignRequest{}, Answer: RoleAssignment{},
		Errors: []string{errcode.RoleNotFound, errcode.StoreParamInvalid}}
	RolesPlan = Route{Method: http.MethodPost, Pattern: "/roles/{name}/plan", Role: RoleOperator, Status: http.StatusCreated,
		Summary: "Queue a plan (converge in plan mode) on every node carrying a role", Body: RolesPlanRequest{}, BodyOptional: true, Answer: RolePlan{},
		Errors: []string{errcode.RoleNotFound, errcode.RoleNoNodes, errcode.RolloutSelectorInvalid, errcode.StoreParamInvalid}}
	RolesApply = Route{Method: http.MethodPost, Pattern: "/roles/{name}/apply", Role: RoleAdmin, Status: http.StatusCreated,
		Summary: "Converge every node carrying a role to its footprint, as a staged rollout", Body: RolesApplyRequest{}, BodyOptional: true, Answer: Rollout{},
		Errors: []string{errcode.RoleNotFound, errcode.RoleNoNodes, errcode.RoleConflict, "rollout.*", "lease.*", errcode.JobWordUnavailable, errcode.WordParamInvalid, errcode.StoreParamInvalid}}
	NodesFootprint = Route{Method: http.MethodGet, Pattern: "/nodes/{id}/footprint", Role: RoleViewer, Status: http.StatusOK,
		Summary: "A node's roles, its rendered footprint and each item's state in its newest converge", Answer: NodeFootprint{},
		Errors: []string{errcode.NodeNotFound, errcode.StoreParamInvalid}}
)

// driverCallCodes are the codes of a route that calls a driver with an account's credential, and
// more.
func driverCallCodes(more ...string) []string {
	return append([]string{"driver.*", errcode.AccountNotFound, errcode.AccountWrongKind, errcode.AccountKeyMismatch,
		errcode.AccountSealBroken}, more...)
}

// Routes returns every route of the admin API.
func Routes() []Route {
	return []Route{
		Whoami,
		TokensList, TokensCreate, TokensRevoke,
		JoinsList, JoinsApprove, JoinsReject,
		NodesList, FleetShow, NodesShow, NodesDisconnect, NodesLabel, NodesWord,
		JobsCreate, JobsList, JobsShow, JobsCancel, JobsMarkFailed,
		BatchesCreate, BatchesList, BatchesShow, BatchesJobs, BatchesSkips,
		IncidentsList, IncidentsShow, IncidentsTriage, IncidentsNote,
		ReleasesList, ReleasesShow, ReleasesDiff, ReleasesPublish,
		RolloutsStart, RolloutsList, RolloutsShow, FleetPatch,
		MachinesList, MachinesAdd, MachinesEdit, MachinesConfirm, MachinesRemove, RolloutsPause, RolloutsResume, RolloutsAbort, RolloutsRevert,
		FleetSecurity, FleetSecurityCritical, FleetSecurityCriticalSet,
		SchedulesCreate, SchedulesList, SchedulesShow, SchedulesEdit, SchedulesPause, SchedulesResume, SchedulesDelete,
		RolesList, RolesCreate, RolesShow, RolesEdit, RolesHistory, RolesAssign, RolesUnassign, RolesPlan, RolesApply, NodesFootprint,
		DriversList, DriversStatus, DriversAudit, DriversEnable, DriversDisable, DriversSchema,
		AccountsList, AccountsAdd, AccountsRemove, AccountsSetTest,
		DNSZones, DNSRecords, DNSReconcile,
		CloudRegions, CloudTypes, CloudInstances,
		CloudCreate, CloudGet, CloudDelete, CloudPowerOn, CloudPowerOff, CloudReboot, CloudReverseDNS, CloudTransfer,
		CloudSwapIPv4, CloudAccount,
		NodesProvision, ProvisioningsList, ProvisioningsShow, NodesAdopt, NodesDecommission, NodesInstallCommand,
		BackupsFleet, BackupsNode, BackupsRestore, BackupTargetsList, BackupTargetsAdd, BackupTargetsShow, BackupTargetsRemove, BackupTargetsCheck,
		BackupPoliciesList, BackupPolicyFleet, BackupPolicyShow, BackupPolicySet, BackupPolicyClear,
		AuditList,
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

// Codes returns every error code the route may answer, sorted: the route's Errors with each "area.*"
// spelled out, and the ones every route may answer. Every route may answer auth.required (no token,
// or an unknown or revoked one), request.rate_limited (too many of those from one address),
// internal.error and the store's store.unavailable, store.busy and store.closed; a route that needs
// more than viewer auth.forbidden; one with a query or a body request.malformed; one with a body
// request.too_large.
func (r Route) Codes() []string {
	codes := []string{errcode.AuthRequired, errcode.RequestRateLimited, errcode.InternalError,
		errcode.StoreUnavailable, errcode.StoreBusy, errcode.StoreClosed}
	if r.Role != RoleViewer {
		codes = append(codes, errcode.AuthForbidden)
	}
	if r.Query != nil || r.Body != nil {
		codes = append(codes, errcode.RequestMalformed)
	}
	if r.Body != nil {
		codes = append(codes, errcode.RequestTooLarge)
	}
	for _, c := range r.Errors {
		area, ok := strings.CutSuffix(c, ".*")
		if !ok {
			codes = append(codes, c)
			continue
		}
		for _, a := range errcode.Areas() {
			if a.Name == area {
				for _, s := range a.Codes {
					codes = append(codes, s.Code)
				}
			}
		}
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}
