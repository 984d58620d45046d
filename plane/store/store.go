// Package store keeps the plane's state (joins, nodes, nonces, jobs, tokens, releases, cases,
// provisionings, incidents and their notifications, and the replicas' heartbeats) behind one
// interface, on PostgreSQL for fleets served by several plane replicas or on embedded SQLite for one
// box.
//
//	s, err := open.URL(ctx, "postgres://postgres@127.0.0.1:5432/lexicon") // plane/store/open; or a file path
//	if err != nil { ... }
//	defer s.Close()
//	wake, stop := s.Notifier().Subscribe(nodeID)
//	defer stop()
//	job, err := s.JobClaim(ctx, store.JobClaimParams{NodeID: nodeID})
//	if job == nil { <-wake } // a job was queued for nodeID, claim again
//
// Every method is NounVerb(ctx, NounVerbParams). Every error carries a code from sdk/errcode: the area
// codes (join., node., job., token., release.) name the rule that refused, and a refused operation changed
// nothing. Times are UTC with microsecond precision; a zero Now in params means the store's clock. Ids are
// opaque strings that sort by creation.
//
// This package is the contract: the interface, its params and rows, and the limits and validators
// callers check input against. The rules are written once, in plane/store/internal/sqlstore; each
// database contributes only its driver and its SQL (plane/store/internal/postgres and
// internal/sqlite). plane/store/open is the only way to make a Store, and the suite in
// plane/store/storetest holds both databases to the same behaviour.
package store

import (
	"context"
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Counter is implemented by every store: how many SQL statements it has sent its database since it
// opened. The load harness reads it (lexicon-plane serve logs it on SIGUSR1) to report statements per
// job round trip.
type Counter interface {
	Statements() StatementCounts
}

// StatementCounts: Statements leaves out BEGIN and COMMIT; Transactions counts explicit transactions,
// not statements that commit on their own.
type StatementCounts struct {
	Statements, Transactions int64
}

// Store is the plane's whole state: one interface, its methods grouped below by the area they keep.
type Store interface {
	// Joins. The store keeps enrolment requests. A join grants nothing: only JoinApprove, given the fingerprint
	// an admin compared, makes a node.

	// JoinCreate records a pending join, or renews the pending join of the same key (Renewed is then
	// true and the join keeps its id). Refused: join.key_retired, join.key_enrolled, join.too_many.
	JoinCreate(ctx context.Context, p JoinCreateParams) (JoinCreateResult, error)
	// JoinGet returns a join. A pending join past its expiry reads as expired.
	JoinGet(ctx context.Context, p JoinGetParams) (Join, error)
	// JoinList returns joins oldest first, optionally of one status.
	JoinList(ctx context.Context, p JoinListParams) (JoinListResult, error)
	// JoinRenew moves a pending join's expiry to Now+TTL. Refused: join.expired, join.not_pending.
	JoinRenew(ctx context.Context, p JoinRenewParams) (Join, error)
	// JoinApprove creates the node and marks the join approved, in one transaction, if Fingerprint is
	// exactly the join's. Refused: join.fingerprint_mismatch, join.expired, join.not_pending,
	// join.key_retired, join.key_enrolled, node.name_taken.
	JoinApprove(ctx context.Context, p JoinApproveParams) (JoinApproveResult, error)
	// JoinReject marks a pending (or expired) join rejected and retires its key for good.
	// Refused: join.not_pending.
	JoinReject(ctx context.Context, p JoinRejectParams) (Join, error)
	// JoinHold records on a pending join the provisioning whose token it carried and why the plane
	// leaves it for a person ("" while the provider check has not decided). Refused: join.not_found,
	// join.not_pending.
	JoinHold(ctx context.Context, p JoinHoldParams) (Join, error)
	// JoinExpire marks pending joins past their expiry expired and returns how many it marked. Rules
	// never depend on it having run; it keeps the table honest for people reading it.
	JoinExpire(ctx context.Context, p JoinExpireParams) (int64, error)

	// Nodes. The store keeps enrolled nodes and what each reported on its last claim.

	// NodeGet returns a node by id, or the active node of a name.
	NodeGet(ctx context.Context, p NodeGetParams) (Node, error)
	// NodeGetByKey returns the ACTIVE node holding a key; it is the lookup behind every signed request.
	// A node that was disconnected or left is refused with node.not_active (details.state, details.id),
	// so a caller cannot serve an ended pairing by forgetting to look at State.
	NodeGetByKey(ctx context.Context, p NodeGetByKeyParams) (Node, error)
	// NodeList returns nodes in enrolment order, optionally of one state and narrowed by a label, a
	// word of the vocabulary and an agent version. Refused: store.param_invalid (a malformed filter).
	NodeList(ctx context.Context, p NodeListParams) (NodeListResult, error)
	// NodeCount counts nodes by state, and active ones by liveness, trust, floor and agent version,
	// in the database: the overview of a fleet of any size without reading its nodes.
	NodeCount(ctx context.Context, p NodeCountParams) (NodeCounts, error)
	// NodeReport records what an active node said on a claim, and when. Refused: node.not_active.
	NodeReport(ctx context.Context, p NodeReportParams) (Node, error)
	// NodeReachGet returns each word's reach as the node's last full report said it (NodeReport),
	// sorted by word; empty for an agent that reports none. Refused: node.not_found.
	NodeReachGet(ctx context.Context, p NodeReachGetParams) ([]WordReach, error)
	// NodeSeen records only when an active node was seen and whether it is idle: a claim whose report
	// the plane already holds (Node.ReportDigest). Refused: node.not_active.
	NodeSeen(ctx context.Context, p NodeSeenParams) error
	// NodeCheckpointList returns the log checkpoints nodes hold, as their reports said (NodeReport),
	// by node and origin: every active node's, or one node's.
	NodeCheckpointList(ctx context.Context, p NodeCheckpointListParams) ([]NodeCheckpoint, error)
	// LogConsistencyRecord records the plane's verdict on two checkpoints of one log, replacing any it
	// had on the same pair, and forgets verdicts on pairs no active node holds a side of any more.
	// The plane:log_split_view detector reads them. Refused: store.param_invalid.
	LogConsistencyRecord(ctx context.Context, p LogConsistencyRecordParams) error
	// LogConsistencyList returns the verdicts recorded, by origin and sizes.
	LogConsistencyList(ctx context.Context, p LogConsistencyListParams) ([]LogConsistency, error)
	// NodeDisconnect ends the pairing from the plane's side: the node becomes disconnected, its key is
	// retired, its queued jobs are cancelled and a running job is lost. Refused: node.not_active.
	NodeDisconnect(ctx context.Context, p NodeEndParams) (NodeEndResult, error)
	// NodeLeave is the same for the agent's signed goodbye: the node becomes left.
	NodeLeave(ctx context.Context, p NodeEndParams) (NodeEndResult, error)

	// NodeLabel sets and removes a node's labels. Refused: node.not_found, node.label_invalid (more
	// than MaxLabels once merged), store.param_invalid (a key or value outside ValidLabelKey/
	// ValidLabelValue: the nodes room refuses those first with node.label_invalid).
	NodeLabel(ctx context.Context, p NodeLabelParams) (Node, error)
	// NodeTargetSet moves a node's target release, returning the target it had. Refused:
	// node.not_found, release.not_found.
	NodeTargetSet(ctx context.Context, p NodeTargetSetParams) (NodeTargetSetResult, error)
	// FleetTarget returns the release new nodes are given (0 before any is published).
	FleetTarget(ctx context.Context) (int64, error)
	// FleetTargetSet moves the fleet's target. Refused: release.not_found.
	FleetTargetSet(ctx context.Context, p FleetTargetSetParams) error

	// Leases. Named locks on a subject with one holder each, until they expire. Every replica takes
	// them through the store, so no two holders are ever granted one lease; an expired lease is taken
	// over by whoever asks next.

	// LeaseAcquire grants the lease to Holder if it is free, expired or already Holder's (then its
	// expiry moves to Now+TTL). Refused: lease.held (details.reason: the holder).
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (Lease, error)
	// LeaseRenew moves the expiry of a lease Holder holds. Refused: lease.lost (another took it, or it
	// was released).
	LeaseRenew(ctx context.Context, p LeaseRenewParams) (Lease, error)
	// LeaseRelease gives a lease up; releasing one Holder does not hold does nothing.
	LeaseRelease(ctx context.Context, p LeaseReleaseParams) error
	// LeaseList returns leases by subject and name.
	LeaseList(ctx context.Context, p LeaseListParams) ([]Lease, error)

	// Rollouts. A rollout is a change reaching a selection of nodes stage by stage; its record (with a
	// step per node and an audit of events) is all the engine needs, so any replica can advance it
	// after a restart. Steps move only from the state the caller saw, so two replicas never start one
	// node twice.

	// RolloutCreate stores a running rollout with its steps, all pending. Refused: store.param_invalid.
	RolloutCreate(ctx context.Context, p RolloutCreateParams) (Rollout, error)
	// RolloutGet returns a rollout with its steps and events. Refused: rollout.not_found.
	RolloutGet(ctx context.Context, p RolloutGetParams) (Rollout, error)
	// RolloutList returns rollouts newest first, without steps and events; with Judging, only those not
	// running that still have a step running.
	RolloutList(ctx context.Context, p RolloutListParams) ([]Rollout, error)
	// RolloutSetState moves a rollout from one of the given states, and records who asked. Moving to
	// aborted skips its pending steps. Resuming a halted rollout forgets its misses and makes its failed steps pending again. Refused:
	// rollout.not_found, rollout.wrong_state.
	RolloutSetState(ctx context.Context, p RolloutSetStateParams) (Rollout, error)
	// RolloutStepUpdate moves a step from the state and phase the caller saw. Moved is false when the
	// step was no longer there (another replica moved it first).
	RolloutStepUpdate(ctx context.Context, p RolloutStepUpdateParams) (RolloutStepUpdateResult, error)
	// RolloutMiss counts a miss on a rollout and records it as an event. A running or paused rollout
	// halts when the misses exceed its budget; a halted or aborted one (a step under way when it stopped
	// missed) keeps its state. Refused: rollout.wrong_state (completed, reverted).
	RolloutMiss(ctx context.Context, p RolloutMissParams) (Rollout, error)

	// Nonces. The store remembers the nonces of signed requests until they expire, across every replica.

	// NonceUse records a nonce of a key and reports whether it was fresh. false means it was seen
	// before and has not expired: the request is a replay and must be refused. A nonce whose earlier
	// use has expired counts as fresh; ExpiresAt must outlast the window in which the signature's
	// created time is accepted, so that such a request is refused for its clock anyway.
	NonceUse(ctx context.Context, p NonceUseParams) (fresh bool, err error)
	// NoncePurge deletes expired nonces and returns how many.
	NoncePurge(ctx context.Context, p NoncePurgeParams) (int64, error)

	// Jobs. The store keeps jobs. A job is handed out at most once: it goes from queued to running only through
	// JobClaim, one at a time per node, and nothing ever sets it back to queued. A running job ends with its
	// node's result (JobFinish), as lost (JobLoseRunning, JobExpire, the node ending its pairing), or as failed
	// by an operator (JobMarkFailed). A lost job is never run again.

	// JobCreate queues a job for an active node that reports the word (with WordDigest, if given),
	// recording the version and digest the node reports, and wakes the node's waiters on every replica.
	// Refused: node.not_found, node.not_active, job.word_unavailable.
	JobCreate(ctx context.Context, p JobCreateParams) (Job, error)
	// JobClaim hands out the node's oldest queued job if the node has no running job, setting it
	// running with a deadline of Now plus the job's budget. It returns nil when there is nothing to
	// hand out. Refused: node.not_found, node.not_active.
	JobClaim(ctx context.Context, p JobClaimParams) (*Job, error)
	// JobFinish records a running job's result from the node that runs it. Outcome refused also counts
	// a refusal on the node, in the same transaction. Refused: job.not_found (also for another node's
	// job), job.not_running.
	JobFinish(ctx context.Context, p JobFinishParams) (Job, error)
	// JobLoseRunning makes the node's running job lost: its agent claimed while idle, so the job is no
	// longer running there. It returns the jobs it changed.
	JobLoseRunning(ctx context.Context, p JobLoseRunningParams) ([]Job, error)
	// JobClaimIdle is the claim of a node that says it is idle: JobLoseRunning, then JobClaim, in one
	// transaction. Refused: node.not_found, node.not_active.
	JobClaimIdle(ctx context.Context, p JobClaimParams) (JobClaimIdleResult, error)
	// JobFinishClaim is a result that carries the node's next claim: JobFinish, then, only if the
	// result was recorded, JobClaim, in one transaction. Refused as JobFinish, and then nothing is
	// claimed.
	JobFinishClaim(ctx context.Context, p JobFinishParams) (JobFinishClaimResult, error)
	// JobExpire makes every running job past its deadline lost and returns them.
	JobExpire(ctx context.Context, p JobExpireParams) ([]Job, error)
	// JobCancel cancels a queued job. Refused: job.not_found, job.not_queued.
	JobCancel(ctx context.Context, p JobCancelParams) (Job, error)
	// JobMarkFailed fails a queued or running job on an operator's word. A result arriving later is
	// refused with job.not_running. Refused: job.not_found, job.finished.
	JobMarkFailed(ctx context.Context, p JobMarkFailedParams) (Job, error)
	// JobGet returns a job with its output, transcript and audit.
	JobGet(ctx context.Context, p JobGetParams) (Job, error)
	// JobList returns jobs newest first, without output, transcript and audit (JobGet has them).
	JobList(ctx context.Context, p JobListParams) (JobListResult, error)

	// Batches. A batch is one word on every node a selector matched: its jobs are ordinary jobs carrying
	// the batch's id, created with it in one transaction. Jobs beyond the batch's MaxParallel wait held
	// (queued, never handed out) until BatchAdvance releases them; BatchAdvance also stops the batch once
	// its failures pass its ErrorBudget, cancelling the jobs still queued.

	// BatchCreate stores a batch and a queued job for each target that is active and reports the word
	// (at the target's digest, if given), the first MaxParallel handed out at once and the rest held;
	// a target that does not is recorded as skipped, with the caller's Skipped. It wakes the nodes
	// whose job may be handed out. Refused: node.not_found, job.word_unavailable (no target left),
	// store.param_invalid.
	BatchCreate(ctx context.Context, p BatchCreateParams) (Batch, error)
	// BatchGet returns a batch with its jobs counted by state. Refused: job.batch_not_found.
	BatchGet(ctx context.Context, p BatchGetParams) (Batch, error)
	// BatchList returns batches newest first, without counts.
	BatchList(ctx context.Context, p BatchListParams) (BatchListResult, error)
	// BatchJobList pages a batch's jobs in creation order, each with its node's name and output (not
	// transcript or audit), narrowed by state or by a job whose ending they share. Refused:
	// job.batch_not_found, store.param_invalid.
	BatchJobList(ctx context.Context, p BatchJobListParams) (BatchJobListResult, error)
	// BatchGroupList groups a batch's ended jobs by state, code and output, the largest groups first.
	// Refused: job.batch_not_found.
	BatchGroupList(ctx context.Context, p BatchGroupListParams) ([]BatchGroup, error)
	// BatchSkipList pages the nodes a batch matched but gave no job, by node id.
	BatchSkipList(ctx context.Context, p BatchSkipListParams) (BatchSkipListResult, error)
	// BatchAdvance is run after a batch's job ends: it stops the batch if its failures passed its
	// error budget (cancelling its queued jobs with job.batch_stopped), else releases held jobs up to
	// MaxParallel queued or running, waking their nodes. Advances of one batch are serialised; a
	// stopped batch, or one with neither bound nor budget, is left as it is. Refused:
	// job.batch_not_found.
	BatchAdvance(ctx context.Context, p BatchAdvanceParams) (BatchAdvanceResult, error)
	// BatchStalledList names batches that need an advance nobody ran (the plane stopped between a
	// job's end and its batch's advance): not stopped, jobs still queued, and held jobs with room to
	// run or failures past the budget. At most Limit, by id.
	BatchStalledList(ctx context.Context, p BatchStalledListParams) ([]string, error)

	// Tokens. The store keeps admin API bearer tokens by the sha256 of their text: the store never sees a
	// token.

	// TokenCreate stores a token's hash. Refused: token.exists.
	TokenCreate(ctx context.Context, p TokenCreateParams) (Token, error)
	// TokenGetByHash returns the unrevoked token with that hash; it is the lookup behind every admin
	// request. Refused: token.not_found, token.revoked.
	TokenGetByHash(ctx context.Context, p TokenGetByHashParams) (Token, error)
	// TokenList returns tokens in creation order.
	TokenList(ctx context.Context, p TokenListParams) ([]Token, error)
	// TokenRevoke revokes a token for good. Refused: token.not_found, token.revoked.
	TokenRevoke(ctx context.Context, p TokenRevokeParams) (Token, error)

	// JobNewestOutputs returns, for every node, its newest completed job of each of the words (at most
	// two), with the job's output: the reports the inventory reads a node's OS from.
	JobNewestOutputs(ctx context.Context, p JobNewestOutputsParams) ([]JobOutput, error)

	// Machines written down by hand (the inventory's third source).

	// MachinePut adds a machine (no ID) or replaces one's fields, confirming it either way. Refused:
	// machine.not_found, machine.name_taken, store.param_invalid.
	MachinePut(ctx context.Context, p MachinePutParams) (Machine, error)
	// MachineGet returns a machine. Refused: machine.not_found.
	MachineGet(ctx context.Context, p MachineGetParams) (Machine, error)
	// MachineList returns every machine written down, by name.
	MachineList(ctx context.Context) ([]Machine, error)
	// MachineConfirm records that somebody checked the machine is still as written. Refused:
	// machine.not_found.
	MachineConfirm(ctx context.Context, p MachineConfirmParams) (Machine, error)
	// MachineRemove deletes a machine. Refused: machine.not_found.
	MachineRemove(ctx context.Context, p MachineRemoveParams) error

	// UISessionCreate stores a web UI session for a live token, and drops the sessions that expired.
	// Refused: token.not_found, token.revoked, store.param_invalid.
	UISessionCreate(ctx context.Context, p UISessionCreateParams) (UISession, error)
	// UISessionGet returns a session that has not expired, with its token. Refused: auth.session_ended
	// (unknown or expired), token.revoked (its token was revoked since).
	UISessionGet(ctx context.Context, p UISessionGetParams) (UISession, error)
	// UISessionDelete ends a session (sign-out); ending one that is not there does nothing.
	UISessionDelete(ctx context.Context, p UISessionDeleteParams) error
	// SSOSessionCreate stores a web UI session of a person signed in through single sign-on, and drops
	// the ones that expired. Refused: store.param_invalid.
	SSOSessionCreate(ctx context.Context, p SSOSessionCreateParams) (SSOSession, error)
	// SSOSessionGet returns a session that has not expired. Refused: auth.session_ended.
	SSOSessionGet(ctx context.Context, p SSOSessionGetParams) (SSOSession, error)
	// SSOSessionRefresh keeps what the provider answered at a refresh: name, role, the (sealed) refresh
	// token and when to ask again. Refused: auth.session_ended, store.param_invalid.
	SSOSessionRefresh(ctx context.Context, p SSOSessionRefreshParams) error
	// SSOSessionDelete ends a session (sign-out, or a refresh the provider refused).
	SSOSessionDelete(ctx context.Context, p SSOSessionDeleteParams) error

	// Sealed values, for the master key rotation (plane/internal/keyrotate).

	// SealedValueList pages through one kind's sealed values in Ref order. Refused: store.param_invalid.
	SealedValueList(ctx context.Context, p SealedValueListParams) ([]SealedValue, error)
	// SealedValueReseal replaces a sealed value (and its key id) if the row still holds p.Old; false
	// when it does not (changed or gone). Refused: store.param_invalid.
	SealedValueReseal(ctx context.Context, p SealedValueResealParams) (bool, error)

	// Releases. The store keeps published releases and their artifacts. Artifact bytes live in the database, so
	// that every replica can serve every artifact.

	// ReleasePut stores a release and its artifacts in one transaction. The caller has verified the
	// release; the store checks that every artifact's bytes hash to its digest and that the sequence
	// is above the newest release's. Refused: release.rollback, module.digest_mismatch.
	ReleasePut(ctx context.Context, p ReleasePutParams) (Release, error)
	// ReleaseCurrent returns the newest release, with its bundle. Refused: release.not_found.
	ReleaseCurrent(ctx context.Context) (Release, error)
	// ReleaseGet returns a release by sequence, with its bundle. Refused: release.not_found.
	ReleaseGet(ctx context.Context, p ReleaseGetParams) (Release, error)
	// ReleaseList returns releases newest first, without their bundles.
	ReleaseList(ctx context.Context, p ReleaseListParams) ([]Release, error)
	// ArtifactGet returns an artifact's bytes as stored. The store does not re-hash them on the way
	// out: agents verify every artifact against the statement they verified. Refused: module.not_found.
	ArtifactGet(ctx context.Context, p ArtifactGetParams) (Artifact, error)
	// ArtifactHas reports whether an artifact is stored.
	ArtifactHas(ctx context.Context, p ArtifactGetParams) (bool, error)

	// RolloutParamsGet returns a node's own params for a rollout's change, nil when the node takes the
	// rollout's.
	RolloutParamsGet(ctx context.Context, p RolloutParamsGetParams) (json.RawMessage, error)
	// ArtifactReleased reports whether a release pins an artifact: those are served to any node, the
	// content of roles only to the nodes whose roles name it.
	ArtifactReleased(ctx context.Context, p ArtifactGetParams) (bool, error)

	// Roles. The store keeps roles, every version of each, the content their files name (as artifacts,
	// never deleted while a version names them), and their assignments to nodes by selector.

	// RoleCreate stores version 1 of a new role and the content it names. Refused: role.exists,
	// module.digest_mismatch (a content that does not hash to its digest).
	RoleCreate(ctx context.Context, p RolePutParams) (RoleVersion, error)
	// RoleEdit stores a role's next version and the content it names; older versions are kept.
	// Refused: role.not_found, role.stale (Base is not the newest version), module.digest_mismatch.
	RoleEdit(ctx context.Context, p RolePutParams) (RoleVersion, error)
	// RoleGet returns a role's newest version, or the one asked for. Refused: role.not_found.
	RoleGet(ctx context.Context, p RoleGetParams) (RoleVersion, error)
	// RoleList returns every role's newest version, by name.
	RoleList(ctx context.Context, p RoleListParams) ([]RoleVersion, error)
	// RoleHistory returns every version of a role, newest first. Refused: role.not_found.
	RoleHistory(ctx context.Context, p RoleHistoryParams) ([]RoleVersion, error)
	// RoleAssign carries a role to the nodes a selector picks; assigning it again by the same selector
	// returns the assignment as it was. Refused: role.not_found.
	RoleAssign(ctx context.Context, p RoleAssignParams) (RoleAssignment, error)
	// RoleUnassign removes an assignment. Refused: role.not_found (no such role or assignment).
	RoleUnassign(ctx context.Context, p RoleUnassignParams) error
	// RoleAssignmentList returns the assignments of a role, or of every role, by role and selector.
	RoleAssignmentList(ctx context.Context, p RoleAssignmentListParams) ([]RoleAssignment, error)

	// Drivers. The store keeps what the plane needs to run drivers: which drivers an admin enabled, the
	// accounts they serve (each credential sealed by the plane before it reaches the store), and the audit log
	// of every driver call. Which executable runs is never stored here: it is the digest the current release
	// pins, read from the release on every start.

	// DriverEnable records that name is enabled, with the digest the current release pinned when the
	// admin enabled it. Every replica starts the drivers this table says are enabled.
	DriverEnable(ctx context.Context, p DriverSetParams) (DriverState, error)
	// DriverDisable records that name is disabled. Disabling a driver never enabled records it too.
	DriverDisable(ctx context.Context, p DriverSetParams) (DriverState, error)
	// DriverGet returns a driver's state; a driver never enabled is returned disabled, not refused.
	DriverGet(ctx context.Context, p DriverGetParams) (DriverState, error)
	// DriverList returns every driver ever enabled or disabled, by name.
	DriverList(ctx context.Context) ([]DriverState, error)

	// AccountCreate stores an account with its sealed credential. Refused: account.exists.
	AccountCreate(ctx context.Context, p AccountCreateParams) (Account, error)
	// AccountGet returns an account with its sealed credential. Refused: account.not_found.
	AccountGet(ctx context.Context, p AccountGetParams) (Account, error)
	// AccountList returns accounts by name, without their sealed credentials.
	AccountList(ctx context.Context, p AccountListParams) ([]Account, error)
	// AccountRemove deletes an account and its sealed credential, returning what it deleted (without
	// the credential). Refused: account.not_found.
	AccountRemove(ctx context.Context, p AccountRemoveParams) (Account, error)
	// AccountSetTest marks an account test (or not): the safety catch lets automation make destructive
	// calls on a test account's instances without their tag. Refused: account.not_found.
	AccountSetTest(ctx context.Context, p AccountSetTestParams) (Account, error)

	// DriverCallAdd appends a record to the audit log of driver calls.
	DriverCallAdd(ctx context.Context, p DriverCallAddParams) (DriverCall, error)
	// DriverCallStart records the intent of a call before the driver is asked: a row with code
	// CodePending, which DriverCallFinish completes. A plane that dies mid-call leaves it pending.
	DriverCallStart(ctx context.Context, p DriverCallStartParams) (DriverCall, error)
	// DriverCallFinish records a started call's outcome. Refused (store.param_invalid, field id): no
	// pending call with that id, so an outcome is written once.
	DriverCallFinish(ctx context.Context, p DriverCallFinishParams) (DriverCall, error)
	// DriverCallList returns audit records newest first.
	DriverCallList(ctx context.Context, p DriverCallListParams) (DriverCallListResult, error)

	// AuditEventStart records the intent of a change before it is made: an event with code
	// CodePending, which AuditEventFinish completes. A plane that stops mid-change leaves it pending.
	AuditEventStart(ctx context.Context, p AuditEventStartParams) (AuditEvent, error)
	// AuditEventFinish records a started event's outcome. Refused (store.param_invalid, field id): no
	// pending event with that id, so an outcome is written once.
	AuditEventFinish(ctx context.Context, p AuditEventFinishParams) (AuditEvent, error)
	// AuditEventList returns events newest first, filtered.
	AuditEventList(ctx context.Context, p AuditEventListParams) (AuditEventListResult, error)
	// AuditEventPrune removes events older than p.Before, oldest first, and says how many.
	AuditEventPrune(ctx context.Context, p PruneParams) (int64, error)
	// DriverCallPrune removes driver-call records older than p.Before, oldest first, and says how many.
	DriverCallPrune(ctx context.Context, p PruneParams) (int64, error)
	// JobPrune removes finished jobs (with their outputs and transcripts) that finished before p.Before,
	// oldest first, except those a batch, a rollout step or a backup record names; it says how many.
	JobPrune(ctx context.Context, p PruneParams) (int64, error)
	// IncidentPrune removes cleared incidents triaged resolved or ignored whose last change is before
	// p.Before, with their events, notes and notifications, oldest first; it says how many.
	IncidentPrune(ctx context.Context, p PruneParams) (int64, error)
	// BatchPrune removes batches every job of which ended before p.Before, with their jobs and skipped
	// nodes, oldest first; it says how many batches. A batch goes whole or not at all.
	BatchPrune(ctx context.Context, p PruneParams) (int64, error)

	// Cases. The store keeps the cases nodes report on their claims: one escalation of one recipe on one node,
	// numbered by the node. Intake is the only way in, and it holds these rules: a new id is stored, notes are
	// appended to a known id, a close is recorded, a closed id is never reopened, a recipe has at most one open
	// case per node (a higher open id closes the older one, noting that its close went unheard; a lower one is
	// refused), and a node has at most MaxOpen open cases. An open case keeps an incident open (source
	// recipe:<name>); its close clears it.

	// CaseIntake applies a claim's cases in id order, each under the rules above, and returns what
	// became of each. A case a rule refuses is an outcome with a coded error (case.closed,
	// case.superseded, case.too_many_open), not an error of the call: the others are still recorded.
	// The call fails only when the store does (or node.not_found, node.not_active,
	// store.param_invalid for a report that breaks CaseReport.Check: check first).
	CaseIntake(ctx context.Context, p CaseIntakeParams) (CaseIntakeResult, error)
	// CaseGet returns one case with its notes and body.
	CaseGet(ctx context.Context, p CaseGetParams) (Case, error)
	// CaseList returns a node's cases, newest first, without notes and body.
	CaseList(ctx context.Context, p CaseListParams) ([]Case, error)

	// Provisionings. A provisioning is a machine a cloud driver makes for the plane, followed from the
	// create call to its node's join; its record (state, instance, token hash, timeline) is all the
	// engine needs, so any replica resumes it after a restart. Updates move only from the state the
	// caller saw.

	// ProvisioningCreate records a provisioning in state creating. Refused: provision.name_taken (an
	// active node or a live provisioning has the name), store.param_invalid.
	ProvisioningCreate(ctx context.Context, p ProvisioningCreateParams) (Provisioning, error)
	// ProvisioningGet returns one provisioning with its timeline. Refused: provision.not_found.
	ProvisioningGet(ctx context.Context, p ProvisioningGetParams) (Provisioning, error)
	// ProvisioningList returns provisionings newest first, without timelines.
	ProvisioningList(ctx context.Context, p ProvisioningListParams) ([]Provisioning, error)
	// ProvisioningUpdate moves a provisioning from the state the caller saw. Refused:
	// provision.not_found, store.param_invalid.
	ProvisioningUpdate(ctx context.Context, p ProvisioningUpdateParams) (ProvisioningUpdateResult, error)
	// ProvisioningTokenCheck returns the provisioning whose token has that hash if the token may still
	// be used. Refused: provision.token_invalid, provision.token_used, provision.token_expired.
	ProvisioningTokenCheck(ctx context.Context, p ProvisioningTokenParams) (Provisioning, error)
	// ProvisioningTokenUse spends the token on a join, once: the provisioning moves from installing
	// (or booting) to joining, bound to the join, and the join records the provisioning. Refused as
	// ProvisioningTokenCheck, and join.not_found.
	ProvisioningTokenUse(ctx context.Context, p ProvisioningTokenParams) (Provisioning, error)
	// EnrolmentCreate mints an enrolment: a one-time join token (its hash) for a machine that already
	// exists. Refused: store.param_invalid (labels, an expiry not after now).
	EnrolmentCreate(ctx context.Context, p EnrolmentCreateParams) (Enrolment, error)
	// EnrolmentTokenCheck returns the enrolment whose token has that hash if the token may still be
	// used. Refused: provision.token_invalid, provision.token_used, provision.token_expired.
	EnrolmentTokenCheck(ctx context.Context, p EnrolmentTokenParams) (Enrolment, error)
	// EnrolmentTokenUse spends the token on a join, once. Refused as EnrolmentTokenCheck.
	EnrolmentTokenUse(ctx context.Context, p EnrolmentTokenParams) (Enrolment, error)
	// ProvisioningTransferSet records the transfer the provider reports for a joined provisioning's
	// instance. Refused: provision.not_found (none joined with an instance has that id).
	ProvisioningTransferSet(ctx context.Context, p ProvisioningTransferParams) (Provisioning, error)
	// ProvisioningAdopt records an existing instance as the provisioning of an existing active node
	// (state joined, no tag: automation never deletes it). Refused: node.not_found, node.not_active.
	ProvisioningAdopt(ctx context.Context, p ProvisioningAdoptParams) (Provisioning, error)

	// Incidents. The store keeps incidents: one condition (a source) on one node, or on one subject of the
	// plane itself (a driver, a replica, a route; no node), with two separate answers. Is
	// it still happening? Its source says: open or cleared. What is being done? A person says: triage new,
	// snoozed until a time, resolved or ignored. Every change is an event on the incident's timeline, and
	// nothing is written while nothing changes, however often the reconciler looks.  Sources are agent cases
	// (recipe:<name>, written by CaseIntake) and the plane's own detectors (plane:<name>, written by
	// IncidentReconcile), which read only stored state. An incident that clears while its triage is still new
	// is resolved by the plane, with that reason; a condition that comes back within ReopenWithin of clearing
	// reopens its incident as new, and later opens a new one. Opening and reopening each write one notification
	// per configured webhook, in the same transaction.

	// IncidentReconcile runs every detector against the stored state and opens, reopens and clears
	// the plane's incidents to match; it also clears the incidents of nodes that are no longer
	// active. Every replica may run it: runs are serialised, and a run that finds the incidents as
	// they should be writes nothing.
	IncidentReconcile(ctx context.Context, p IncidentReconcileParams) (IncidentReconcileResult, error)
	// IncidentGet returns one incident. Refused: incident.not_found.
	IncidentGet(ctx context.Context, p IncidentGetParams) (Incident, error)
	// IncidentList returns incidents newest first, optionally only those that need a person.
	IncidentList(ctx context.Context, p IncidentListParams) (IncidentListResult, error)
	// IncidentEventList returns an incident's timeline, oldest first. Refused: incident.not_found.
	IncidentEventList(ctx context.Context, p IncidentEventListParams) ([]IncidentEvent, error)
	// IncidentTriage records a person's answer. Setting the triage it already has (and the same
	// snooze) changes nothing and writes no event. Refused: incident.not_found.
	IncidentTriage(ctx context.Context, p IncidentTriageParams) (IncidentChange, error)
	// IncidentNote adds a person's note to the timeline. Refused: incident.not_found.
	IncidentNote(ctx context.Context, p IncidentNoteParams) (IncidentEvent, error)
	// IncidentCount counts incidents by condition and triage (what the plane's metrics report); a
	// combination no incident has is left out.
	IncidentCount(ctx context.Context, p IncidentCountParams) ([]IncidentCount, error)

	// Notifications. The store keeps the webhook notifications incidents send: an outbox. A notification is
	// written in the transaction that opened or reopened its incident, one per webhook, so it exists exactly
	// when the event does; clearing the incident writes one for each webhook that was told it opened. A plane
	// replica claims due notifications under a lease (no other replica takes them until it runs out), records an attempt before it sends and the outcome after, and either finishes the
	// notification or schedules its next try. Attempts are bounded: a notification whose attempts ran out fails
	// for good.

	// NotificationClaim leases up to Limit due, pending notifications for the named webhooks, counting
	// an attempt on each (written before the delivery, so a replica that dies while sending still spent
	// it). Notifications whose attempts ran out and whose last lease expired fail first.
	NotificationClaim(ctx context.Context, p NotificationClaimParams) ([]Notification, error)
	// NotificationRecord records the outcome of a leased attempt: delivered, retried at RetryAt, or
	// failed for good. Refused: notification.not_found, notification.lease_lost (another replica holds
	// it now, or it is finished).
	NotificationRecord(ctx context.Context, p NotificationRecordParams) (Notification, error)
	// NotificationList returns an incident's notifications, oldest first, with their attempts.
	NotificationList(ctx context.Context, p NotificationListParams) ([]Notification, error)

	// Schedules. A schedule runs a word on the nodes a selector picks, on an interval or a cron
	// expression; the store keeps it and its next run, and claims each firing once (ScheduleFire).

	// ScheduleCreate stores a schedule. Refused: schedule.name_taken, store.param_invalid.
	ScheduleCreate(ctx context.Context, p ScheduleCreateParams) (Schedule, error)
	// ScheduleGet returns a schedule by id or name. Refused: schedule.not_found.
	ScheduleGet(ctx context.Context, p ScheduleGetParams) (Schedule, error)
	// ScheduleList returns schedules by name; with Due, those not paused whose next run has come,
	// soonest first.
	ScheduleList(ctx context.Context, p ScheduleListParams) ([]Schedule, error)
	// ScheduleUpdate sets a schedule's editable fields and its next run. Refused: schedule.not_found.
	ScheduleUpdate(ctx context.Context, p ScheduleUpdateParams) (Schedule, error)
	// ScheduleFire claims one firing: it moves the next run from From to Next only if it still is From
	// and the schedule is not paused (Fired false otherwise, nothing changed). Refused:
	// schedule.not_found.
	ScheduleFire(ctx context.Context, p ScheduleFireParams) (ScheduleFireResult, error)
	// ScheduleRunRecord records what the last firing queued, skipped and failed. Refused:
	// schedule.not_found.
	ScheduleRunRecord(ctx context.Context, p ScheduleRunRecordParams) (Schedule, error)
	// ScheduleDelete removes a schedule (the jobs it queued stay). Refused: schedule.not_found.
	ScheduleDelete(ctx context.Context, p ScheduleDeleteParams) error

	// PackageReportList returns every active node, by name, with its newest completed report of
	// p.Word and what two older reports said (the fleet security view), in one query. Refused:
	// store.param_invalid for any word but packages_report.
	PackageReportList(ctx context.Context, p PackageReportListParams) ([]PackageReport, error)
	// SecuritySettingsGet returns the critical package list an admin set at run time (Set false when
	// none is, or it was reset).
	SecuritySettingsGet(ctx context.Context) (SecuritySettings, error)
	// SecuritySettingsSet stores the critical package list, or forgets it (Reset). Refused:
	// security.critical_invalid, store.param_invalid.
	SecuritySettingsSet(ctx context.Context, p SecuritySettingsSetParams) (SecuritySettings, error)
	// Backups. The store keeps the buckets nodes back up to (their secrets sealed by the caller), the
	// backup policies (NodeID "" the fleet's), the jobs the plane dispatched for backups with its
	// verdict on each, and the findings the backup detectors read.

	// BackupTargetCreate stores a target. Refused: backup.target_exists, store.param_invalid.
	BackupTargetCreate(ctx context.Context, p BackupTargetCreateParams) (BackupTarget, error)
	// BackupTargetGet returns a target. Refused: backup.target_not_found.
	BackupTargetGet(ctx context.Context, p BackupTargetGetParams) (BackupTarget, error)
	// BackupTargetList returns every target by name.
	BackupTargetList(ctx context.Context, p BackupTargetListParams) ([]BackupTarget, error)
	// BackupTargetDelete removes a target. Refused: backup.target_not_found.
	BackupTargetDelete(ctx context.Context, p BackupTargetDeleteParams) error
	// BackupPolicySet stores the fleet's policy (NodeID "") or a node's, replacing the one it had.
	BackupPolicySet(ctx context.Context, p BackupPolicySetParams) (BackupPolicy, error)
	// BackupPolicyList returns every policy, the fleet's first.
	BackupPolicyList(ctx context.Context, p BackupPolicyListParams) ([]BackupPolicy, error)
	// BackupPolicyDelete removes a node's own policy (it follows the fleet's again); none is no error.
	BackupPolicyDelete(ctx context.Context, p BackupPolicyDeleteParams) error
	// BackupJobCreate records a job the plane dispatched for a node's backups, as dispatched.
	BackupJobCreate(ctx context.Context, p BackupJobCreateParams) (BackupJob, error)
	// BackupJobGet returns a recorded backup job. Refused: job.not_found.
	BackupJobGet(ctx context.Context, p BackupJobGetParams) (BackupJob, error)
	// BackupJobList returns recorded backup jobs, the newest started first.
	BackupJobList(ctx context.Context, p BackupJobListParams) ([]BackupJob, error)
	// BackupJobListRecent returns the newest PerNode jobs of each of NodeIDs, by node id, in one
	// statement: what a pass over the fleet judges each node's backups by.
	BackupJobListRecent(ctx context.Context, p BackupJobListRecentParams) (map[string][]BackupJob, error)
	// BackupJobSetRun records the run a job's grant names; a job's run is set once.
	BackupJobSetRun(ctx context.Context, p BackupJobSetRunParams) error
	// BackupJobJudge records the verdict on a dispatched job and reports whether it moved (a job
	// judged already keeps its verdict).
	BackupJobJudge(ctx context.Context, p BackupJobJudgeParams) (bool, error)
	// BackupFindingsSet replaces a node's backup findings, which the backup detectors read.
	BackupFindingsSet(ctx context.Context, p BackupFindingsSetParams) error
	// BackupFindingsList returns the findings of every node, or of one.
	BackupFindingsList(ctx context.Context, p BackupFindingsListParams) ([]BackupNodeFinding, error)

	// Replicas. Every plane process heartbeats into the store: what it is, where it listens, what it runs,
	// its memory (the peak kept per replica id across restarts) and what its routes served. The plane's
	// own detectors (IncidentReconcile) read them, so every replica judges from the same rows.

	// ReplicaHeartbeat records that a replica is alive, with its memory sample and route counts, and
	// drops its route counts older than an hour.
	ReplicaHeartbeat(ctx context.Context, p ReplicaHeartbeatParams) (Replica, error)
	// ReplicaList returns every replica known, by id, with whether each is missing at Now.
	ReplicaList(ctx context.Context, p ReplicaListParams) ([]Replica, error)
	// ReplicaForget removes a replica (and its route counts); the next reconcile clears its incidents.
	// A replica still heartbeating is refused (replica.alive): it would come back at once.
	// Refused: replica.not_found, replica.alive.
	ReplicaForget(ctx context.Context, p ReplicaForgetParams) (Replica, error)
	// MigrationCheck reports whether the database's migrations are exactly this binary's: nil, or
	// store.schema_newer (a newer plane upgraded it since this one started) or store.migration_failed
	// (one of this binary's is not recorded).
	MigrationCheck(ctx context.Context) error

	// Notifier returns the wake-ups for jobs queued by any replica sharing this database.
	Notifier() Notifier
	// MigrationList returns the schema migrations applied to the database, oldest first.
	MigrationList(ctx context.Context) ([]Migration, error)
	// Ping reports whether the database answers (store.unavailable if not).
	Ping(ctx context.Context) error
	// Close stops the listener and closes every connection. Waiters are released.
	Close() error
}

// Notifier wakes long polls when a job is queued for their node. It is separate from Store because a
// plane process holds one listener and fans it out to thousands of waiters in memory.
type Notifier interface {
	// Subscribe returns a channel that receives a value each time a job is queued for nodeID (values
	// coalesce: one pending wake-up stands for any number of jobs), and a function that unsubscribes.
	// Subscribe before claiming, so that a job queued between the claim and the wait is not missed.
	// After the listener loses its connection every subscriber is woken, since queued jobs may have
	// been missed while it was down.
	Subscribe(nodeID string) (wake <-chan struct{}, stop func())
}

// MaxListLimit is the most rows one call of a list method returns.
const MaxListLimit = 1000

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.StoreParamInvalid, format, args...).With(errcode.DetailField, field)
}
