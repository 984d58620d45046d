// Package channel is the agent channel's wire format: the routes an agent calls on the plane, their
// JSON bodies and their caps. The agent and the plane both build on it, so the two can never disagree
// about a field.
//
// Every route is under /api/v1/agent/. join is unauthenticated and grants nothing; every other request
// is signed by the node key (registry/httpsig), and the plane acts on the identity the signature
// proves, never on a name or id in the body. Errors use the errcode envelope.
//
//	POST join         JoinRequest        -> JoinResponse        (202)
//	POST join_status  JoinStatusRequest  -> JoinStatusResponse
//	POST claim        ClaimRequest       -> ClaimResponse       (long poll, up to ~25 s)
//	POST result       ResultRequest      -> ResultResponse
//	POST job_status   JobStatusRequest   -> JobStatusResponse
//	POST leave        LeaveRequest       -> LeaveResponse
//	GET  artifact?statement=current | ?sha256=<hex> | ?agent=<os>-<arch>   -> bytes
//	GET  artifact?log_proof=<origin>&old=<size>&new=<size>                 -> consistency proof (JSON)
//
// artifact?log_proof= is the RFC 6962 consistency proof between two sizes of a log the plane reads,
// fetched by the plane from the log (registry/checkpoint's JSON form). A node asks for it when the
// statement it is offered is logged under another checkpoint than the one it holds; it verifies the
// proof against both signed checkpoints, so the plane is not trusted with it. A plane that cannot get
// one answers log.unavailable, and the node refuses the statement (statement.log_inconsistent). Every
// claim reports the checkpoints the node holds (ClaimRequest.Checkpoints), so the plane can compare
// nodes' views of each log.
//
// artifact?agent= serves the current release's agent binary for a platform only as a pinned
// artifact (artifact.not_pinned otherwise); the node checks its sha256 against the statement it
// verified, never against anything the response says. Every claim reports where the node's own
// update stands (ClaimRequest.Update).
//
// A machine the plane provisioned has no node key when it fetches its agent: artifact?agent= alone
// also answers an unsigned request carrying "Authorization: Lexicon-Provision <token>", the
// provisioning's one-time token, while that token is unused and unexpired; the machine checks the
// binary against the digest its user data carries. Its join then carries the same token
// (JoinRequest.Token), which binds the join to the provisioning and spends the token.
package channel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Routes.
const (
	Prefix         = "/api/v1/agent/"
	PathJoin       = Prefix + "join"
	PathJoinStatus = Prefix + "join_status"
	PathClaim      = Prefix + "claim"
	PathResult     = Prefix + "result"
	PathJobStatus  = Prefix + "job_status"
	PathLeave      = Prefix + "leave"
	PathArtifact   = Prefix + "artifact"
)

// Caps on request bodies. A claim may report a larger size (ClaimRequest.ClaimSize) for the claims
// after it, up to MaxClaimCap, because a node with a large vocabulary reports it on every claim.
const (
	DefaultBodyCap = 64 << 10
	MaxClaimCap    = 1 << 20
	ResultCap      = 2 << 20
	OutputCap      = 1 << 20
	TranscriptCap  = 64 << 10
	AuditCap       = 1000 // capability calls recorded per result
	ClaimWait      = 25 * time.Second
)

// Join states.
const (
	JoinPending  = "pending"
	JoinApproved = "approved"
	JoinRejected = "rejected"
	JoinExpired  = "expired"
)

// JobState is where a job stands: the one type the node is told, the plane stores and the admin API
// answers (plane/api and plane/store alias it). Queued and running are live; the rest are final.
type JobState string

const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobCompleted JobState = "completed" // the word ran and succeeded
	JobFailed    JobState = "failed"    // the word ran and failed, or an operator marked it failed
	JobRefused   JobState = "refused"   // the node would not run it (policy, capability, params)
	JobLost      JobState = "lost"      // it was handed out and never reported; it is never re-run
	JobCancelled JobState = "cancelled" // an operator cancelled it, or its node left, before it ran
)

// Final reports whether a job in state s will never change again. A state this build does not know is
// not final: a client watching a job keeps watching rather than take it for an end it cannot name.
func (s JobState) Final() bool {
	switch s {
	case JobCompleted, JobFailed, JobRefused, JobLost, JobCancelled:
		return true
	}
	return false
}

// Job outcomes as the node reports them: the final states a node can bring about itself.
const (
	OutcomeCompleted = JobCompleted
	OutcomeFailed    = JobFailed
	OutcomeRefused   = JobRefused
)

// JoinRequest asks to pair a node key with the plane. It grants nothing until an admin approves it
// after comparing the fingerprint both sides show.
type JoinRequest struct {
	Name         string   `json:"name"`
	Key          string   `json:"key"` // node-key:...
	Addresses    []string `json:"addresses"`
	AgentVersion string   `json:"agent_version"`
	// Token is the one-time token of the provisioning that made this machine, when one did: the plane
	// then approves the join itself if the provider reports the instance at the address the join came
	// from. A token that is unknown, used or expired is refused (provision.token_*).
	Token string `json:"token,omitempty"`
}

// JoinResponse is the plane's receipt for a join request.
type JoinResponse struct {
	JoinID      string    `json:"join_id"`
	Fingerprint string    `json:"fingerprint"`
	Status      string    `json:"status"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// JoinStatusRequest asks how a join request stands; it is signed by the key that asked to join.
type JoinStatusRequest struct {
	JoinID string `json:"join_id"`
}

// JoinStatusResponse says whether the join was approved, and as which node.
type JoinStatusResponse struct {
	Status    string    `json:"status"`
	NodeID    string    `json:"node_id,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StatementRef names a release statement.
type StatementRef struct {
	Sequence uint64 `json:"sequence"`
	Digest   string `json:"digest"`
}

// Word is one word of a node's vocabulary as the node reports it.
type Word struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Class   string `json:"class"`
}

// ClaimRequest is a node's long poll for work, and its report of itself.
//
// The report (every field but Idle, Cases and the two report_ fields) changes seldom, so a node need
// not send it on every claim: ReportDigest names it (ClaimRequest.Digest), and once the plane's
// ClaimResponse.ReportDigest shows it holds that report, the node may send Brief claims, which carry the
// digest with ReportOmitted set and the report fields empty. A plane that lacks the report (its record
// was lost, or it changed) answers SendReport, and the node sends the full report on its next claim.
// A plane that knows nothing of digests never acknowledges one, so such a node keeps sending full
// reports; a plane still takes a full report without a digest, as older agents send.
type ClaimRequest struct {
	Idle       bool           `json:"idle"`
	Version    string         `json:"version"`
	Statement  StatementRef   `json:"statement"`
	Untrusted  string         `json:"untrusted,omitempty"` // why the node could not verify the plane's statement
	Vocabulary []Word         `json:"vocabulary"`
	Recipes    []RecipeReport `json:"recipes"`
	Cases      []CaseReport   `json:"cases,omitempty"`
	ClaimSize  int            `json:"claim_size,omitempty"`
	// Update is where the agent's own update stands; absent from agents older than self-update.
	Update *UpdateReport `json:"update,omitempty"`
	// Checkpoints are the transparency-log checkpoints the node holds, one a log: the views of the
	// logs its statements were verified under.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	// Facts are the node's host facts (HostFacts); absent from agents older than facts.
	Facts *HostFacts `json:"facts,omitempty"`
	// Reach is each word's capabilities as the node's policy narrows them (WordReach), sorted by word;
	// absent from agents older than it.
	Reach []WordReach `json:"reach,omitempty"`

	ReportDigest  string `json:"report_digest,omitempty"`  // Digest of this claim's report
	ReportOmitted bool   `json:"report_omitted,omitempty"` // the report fields are left out; see Brief
}

// Digest is the digest of the claim's report: sha256 of its JSON with Idle, Cases and the report_
// fields left out, in hex. A field added to the report later is covered without a change here (and
// Brief must then leave it out too). The plane treats the digest as opaque: it only compares it with
// the one it stored with the node's last full report.
func (c ClaimRequest) Digest() string {
	c.Idle, c.Cases, c.ReportDigest, c.ReportOmitted = false, nil, "", false
	data, _ := json.Marshal(c)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// MaxCheckpoints caps the checkpoints a claim reports: one per log the node's trust folder holds.
const MaxCheckpoints = 16

// Checkpoint is a log checkpoint a node holds, without its signatures: the log's origin, the tree size
// and the RFC 6962 root hash (standard base64, as a checkpoint writes it).
type Checkpoint struct {
	Origin   string `json:"origin"`
	Size     uint64 `json:"size"`
	RootHash string `json:"root_hash"`
}

// Brief is the claim without its report: Idle, Cases and the digest of the report it leaves out.
func (c ClaimRequest) Brief() ClaimRequest {
	return ClaimRequest{Idle: c.Idle, Cases: c.Cases, ReportDigest: c.Digest(), ReportOmitted: true}
}

// Update states, a closed set. verify_failed, probe_failed and rejected are refusals: the node
// refused the agent the statement offers and keeps the one it runs.
const (
	UpdateNone         = "none"          // no update applies: turned off by policy, or nothing pinned for this platform
	UpdateCurrent      = "current"       // the agent runs the binary its statement pins
	UpdatePending      = "pending"       // a pinned agent is offered and not installed yet
	UpdateProbing      = "probing"       // the pinned agent is fetched and verified, and its probe is under way
	UpdateTrial        = "trial"         // the new agent runs on trial; the old one is kept as fallback
	UpdateFetchFailed  = "fetch_failed"  // the pinned binary could not be fetched; tried again later
	UpdateVerifyFailed = "verify_failed" // the bytes served do not hash to the pin
	UpdateProbeFailed  = "probe_failed"  // the staged binary did not answer version as the statement names
	UpdateRejected     = "rejected"      // the version failed its trial and was rolled back; never installed again
)

// UpdateStates lists every update state.
var UpdateStates = []string{UpdateNone, UpdateCurrent, UpdatePending, UpdateProbing, UpdateTrial, UpdateFetchFailed,
	UpdateVerifyFailed, UpdateProbeFailed, UpdateRejected}

// UpdateRefused reports whether state is one of the refusals.
func UpdateRefused(state string) bool {
	return state == UpdateVerifyFailed || state == UpdateProbeFailed || state == UpdateRejected
}

// MaxUpdateHistory caps the update events a claim carries.
const MaxUpdateHistory = 16

// UpdateReport is where a node's self-update stands, reported on every claim.
type UpdateReport struct {
	State   string `json:"state"`
	Offered string `json:"offered,omitempty"` // the agent version the node's statement offers
	Reason  string `json:"reason,omitempty"`  // why, for none and the refusals
	// NeedsNewerAgent is the floor of the newest statement the node verified, when its agent is below
	// it: the node keeps its vocabulary and updates itself first.
	NeedsNewerAgent string        `json:"needs_newer_agent,omitempty"`
	History         []UpdateEvent `json:"history,omitempty"`
}

// UpdateEvent is one step of the node's update history, newest last.
type UpdateEvent struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event"` // installed, accepted, rolled_back, refused, trial_restarted
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// Recipe states as a claim reports them.
const (
	RecipeActive        = "active"
	RecipeNotApplicable = "not_applicable"
	RecipeHeld          = "held"
)

// Check verdicts.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictUnknown = "unknown"
)

// RecipeReport is one of the node's recipes as a claim reports it: which module, where it stands, and
// its last verdict.
type RecipeReport struct {
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Digest      string    `json:"digest"`
	State       string    `json:"state"`
	LastVerdict string    `json:"last_verdict,omitempty"`
	LastCheckAt time.Time `json:"last_check_at,omitzero"`
	Detail      string    `json:"detail,omitempty"`
}

// Case states.
const (
	CaseOpen   = "open"
	CaseClosed = "closed"
)

// CaseReport is the most recent case of one recipe, open or closed, as a summary. Notes the plane may
// not have seen yet ride along, and so does the body, until a claim carrying them succeeds. Case ids
// increase per node, so the plane can tell a newer case from an older one.
type CaseReport struct {
	ID       uint64     `json:"id"`
	Recipe   string     `json:"recipe"`
	State    string     `json:"state"`
	OpenedAt time.Time  `json:"opened_at"`
	ClosedAt time.Time  `json:"closed_at,omitzero"`
	Summary  string     `json:"summary"`
	Notes    []CaseNote `json:"notes,omitempty"`
	Body     *CaseBody  `json:"body,omitempty"`
}

// CaseNote is one further failing tick on an open case. Seq increases within a case.
type CaseNote struct {
	Seq  int       `json:"seq"`
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// CaseBody is composed once, when the escalation opens: what the node tried and what it looked like.
type CaseBody struct {
	Mode       string            `json:"mode"` // repair, report-only, or check-only (the recipe has no repair)
	Attempts   []json.RawMessage `json:"attempts"`
	HostReport json.RawMessage   `json:"host_report,omitempty"`
	Vocabulary []Word            `json:"vocabulary"`
	Recipes    []RecipeReport    `json:"recipes"`
}

// Caps on what a node says about its recipes and cases; the plane re-checks them on intake.
const (
	MaxRecipes       = 64
	MaxCases         = 64
	MaxCaseText      = 1024
	MaxCaseNotes     = 32
	MaxCaseBody      = 256 << 10
	MaxOpenCasesNode = 16
)

// Job is work handed to a node: a word and its params, never a command.
type Job struct {
	ID       string          `json:"id"`
	Word     string          `json:"word"`
	Version  string          `json:"version"`
	Digest   string          `json:"digest"`
	Class    string          `json:"class"`
	Params   json.RawMessage `json:"params"`
	Deadline time.Time       `json:"deadline"`
	// Grant is what a backup, verify or restore job needs from its bucket. The agent hands it to the
	// word host, never to the word: the word sees neither the bucket's address nor the signatures.
	Grant *BackupGrant `json:"grant,omitempty"`
}

// BackupGrant gives one job access to a backup target without its credentials: requests the plane
// presigned with its own, each for one method on one key, valid until Expires. The plane keeps the
// credentials; the node holds only these requests, for the job's duration.
//
// A write grant (Run set) holds PUTs for fresh keys under Prefix, the run's own, each signed with
// "If-None-Match: *" so that the bucket refuses to replace a key that exists: the node can add a run,
// never overwrite or delete anything. Objects are used in order for the run's segments and its index;
// Manifest is written last, and a run without its manifest is not a restore point.
//
// A read grant (Runs set) holds GETs for the manifests and objects of one chain of runs, the full run
// first and the run to verify or restore last, all under Prefix, the node's own.
type BackupGrant struct {
	// Target names the target, for messages.
	Target string `json:"target"`
	// Node is the node's id, the folder of its runs under the target's prefix.
	Node string `json:"node"`
	// Prefix is the key prefix every request of the grant lies under.
	Prefix string `json:"prefix"`
	// Expires is when the requests stop working.
	Expires time.Time `json:"expires"`

	// Run is the run a write grant adds.
	Run string `json:"run,omitempty"`
	// Parent is the newest run of this node the plane has seen land in the bucket: an incremental run
	// may build on it, and on nothing else. Empty: the run is a full one.
	Parent string `json:"parent,omitempty"`
	// Recipients are the age recipients (age1...) every object is encrypted to besides the node's own
	// key: the fleet's recovery key, whose private half no plane or node holds.
	Recipients []string `json:"recipients,omitempty"`
	// Objects are PUTs of the run's fresh keys, used in order.
	Objects []Presigned `json:"objects,omitempty"`
	// Manifest is the PUT of the run's manifest, written last.
	Manifest *Presigned `json:"manifest,omitempty"`

	// Runs are GETs of a chain of runs, the full run first (a read grant).
	Runs []GrantRun `json:"runs,omitempty"`
}

// GrantRun is the GETs of one run: its manifest and every object the manifest names.
type GrantRun struct {
	Run      string      `json:"run"`
	Manifest Presigned   `json:"manifest"`
	Objects  []Presigned `json:"objects"`
}

// Presigned is one request the plane signed: the method, URL and headers to send as they are. The URL
// carries the signature, so it is a secret for as long as it is valid: it is never logged, and errors
// name the key instead.
type Presigned struct {
	Key    string            `json:"key"`
	Method string            `json:"method"`
	URL    string            `json:"url"`
	Header map[string]string `json:"header,omitempty"`
}

// ClaimResponse carries a job, or none when the wait ran out, and the statement the plane serves so
// the node knows when to fetch a new one.
type ClaimResponse struct {
	Job       *Job         `json:"job"`
	Statement StatementRef `json:"statement"`

	// ReportDigest is the digest of the report the plane holds for this node, empty if none: while it
	// equals the node's own, the node may send Brief claims.
	ReportDigest string `json:"report_digest,omitempty"`
	// SendReport asks for the full report on the next claim: a brief claim named a report the plane
	// does not hold.
	SendReport bool `json:"send_report,omitempty"`
}

// Capability is one call a word made through lexicon_v1, allowed or not.
type Capability struct {
	Cap     string          `json:"cap"`
	Args    json.RawMessage `json:"args,omitempty"`
	Allowed bool            `json:"allowed"`
}

// ResultRequest reports how a job ended. Output is already redacted on the node.
//
// Claim, when set, is the node's next claim (finish-and-claim): the plane records the result and hands
// out the node's next job in the same transaction, answering in ResultResponse.Claim without holding
// the request. It is never a long poll: with no job to hand out the answer carries none, and the node
// long-polls with a claim of its own. A result the plane refuses is answered with the error alone; no
// job is claimed for it. A plane that knows nothing of Claim ignores it and answers without one.
type ResultRequest struct {
	JobID        string          `json:"job_id"`
	Outcome      JobState        `json:"outcome"`
	Code         string          `json:"code,omitempty"`
	Message      string          `json:"message,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Transcript   string          `json:"transcript,omitempty"`
	Capabilities []Capability    `json:"capabilities,omitempty"`
	DurationMS   int64           `json:"duration_ms"`
	Claim        *ClaimRequest   `json:"claim,omitempty"`
}

// ResultResponse acknowledges a result, and answers its Claim if it carried one.
type ResultResponse struct {
	JobID string         `json:"job_id"`
	State JobState       `json:"state"`
	Claim *ClaimResponse `json:"claim,omitempty"`
}

// JobStatusRequest asks the state of a job handed to this node.
type JobStatusRequest struct {
	JobID string `json:"job_id"`
}

// JobStatusResponse is a job's state on the plane.
type JobStatusResponse struct {
	JobID string   `json:"job_id"`
	State JobState `json:"state"`
}

// LeaveRequest is a node's one signed goodbye.
type LeaveRequest struct {
	Reason string `json:"reason,omitempty"`
}

// LeaveResponse confirms the pairing ended.
type LeaveResponse struct {
	NodeID string `json:"node_id"`
	State  string `json:"state"`
}
