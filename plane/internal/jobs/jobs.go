package jobs

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodetext"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the jobs room reads and writes.
type Store interface {
	JobCreate(ctx context.Context, p store.JobCreateParams) (store.Job, error)
	JobGet(ctx context.Context, p store.JobGetParams) (store.Job, error)
	JobList(ctx context.Context, p store.JobListParams) (store.JobListResult, error)
	JobCancel(ctx context.Context, p store.JobCancelParams) (store.Job, error)
	JobMarkFailed(ctx context.Context, p store.JobMarkFailedParams) (store.Job, error)
	JobClaim(ctx context.Context, p store.JobClaimParams) (*store.Job, error)
	JobClaimIdle(ctx context.Context, p store.JobClaimParams) (store.JobClaimIdleResult, error)
	JobFinish(ctx context.Context, p store.JobFinishParams) (store.Job, error)
	JobFinishClaim(ctx context.Context, p store.JobFinishParams) (store.JobFinishClaimResult, error)
	Notifier() store.Notifier

	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	BatchCreate(ctx context.Context, p store.BatchCreateParams) (store.Batch, error)
	BatchGet(ctx context.Context, p store.BatchGetParams) (store.Batch, error)
	BatchList(ctx context.Context, p store.BatchListParams) (store.BatchListResult, error)
	BatchJobList(ctx context.Context, p store.BatchJobListParams) (store.BatchJobListResult, error)
	BatchGroupList(ctx context.Context, p store.BatchGroupListParams) ([]store.BatchGroup, error)
	BatchSkipList(ctx context.Context, p store.BatchSkipListParams) (store.BatchSkipListResult, error)
	BatchAdvancer
}

// Manifests finds the signed manifest of a word a node runs, by the word's name and the module digest
// the node reports (the releases room's catalog).
type Manifests interface {
	Word(ctx context.Context, name, module string) (*manifest.Manifest, bool, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Nodes finds the node a job is for and takes in what a claim reports.
	Nodes *nodes.Room
	// Manifests finds the manifest a job is authorised and checked by.
	Manifests Manifests
	// Leases grants the node's change lease an exclusive job holds.
	Leases *lease.Room
	// Metrics counts jobs and claims (nil: not counted).
	Metrics *metrics.Plane
	// Grants makes the bucket grant of a job the backups room dispatched, at its hand-out (nil: no
	// job carries one).
	Grants Grants
}

// Grants makes a job's backup grant when the job is handed out: presigned requests are made fresh
// for the claim and never stored. A job that needs none gets nil.
type Grants interface {
	// Needs says whether a job of word may carry a grant: only those are looked up.
	Needs(word string) bool
	Grant(ctx context.Context, job store.Job) (*channel.BackupGrant, error)
}

// Room is the jobs' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c        RoomConfig
	log      *slog.Logger
	batches  *batchMover
	draining chan struct{} // closed by Drain
	drain    sync.Once
}

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	log := services.Logger(c.Log)
	return &Room{c: c, log: log, batches: &batchMover{st: c.Store, log: log, m: c.Metrics}, draining: make(chan struct{})}
}

// Drain ends every long poll, held now or started later, without a job, as its hold running out would.
// A plane that is stopping calls it first: a job handed out then could be marked running while the
// answer that carries it never reaches the node, which would then lose it by claiming idle.
func (r *Room) Drain() { r.drain.Do(func() { close(r.draining) }) }

// Params are the params a job of word m runs with: raw, or {} when none were given, checked against
// the params schema of m's signed manifest (word.param_invalid naming the field). It is the plane's one
// check of a job's params, for a job queued by hand and for the words of a rollout alike; the node
// checks again and is the authority.
func Params(m *manifest.Manifest, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := m.CheckParams(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Budget is how long a job of word m may run from its claim before it is lost: the word's own wall
// time and a minute more (fetching and reporting take time too), or 0 for the store's default.
func Budget(m *manifest.Manifest) time.Duration {
	if ms := m.Limits.WallTimeMS; ms > 0 {
		return time.Duration(ms)*time.Millisecond + time.Minute
	}
	return 0
}

// Create queues a job, checked on the plane for a good error (the node checks again and is the
// authority): the node must report the word, the token's role must cover the word's class as its
// signed manifest states it (operator for look and change, admin for destructive), and the params must
// satisfy the word's schema. Exclusive takes the node's change lease for the job first.
func (r *Room) Create(ctx context.Context, who api.Token, req api.JobRequest) (api.Job, error) {
	return r.create(ctx, who, req, nil)
}

// CreateBackup is Create for the backups room's schedule: the plane's record of the backup job is
// stored with the job, in its transaction, so that the node never claims a job whose grant the plane
// cannot make yet.
func (r *Room) CreateBackup(ctx context.Context, who api.Token, req api.JobRequest, b store.BackupJob) (api.Job, error) {
	return r.create(ctx, who, req, &b)
}

func (r *Room) create(ctx context.Context, who api.Token, req api.JobRequest, backup *store.BackupJob) (api.Job, error) {
	node, err := r.c.Nodes.Get(ctx, req.Node)
	if err != nil {
		return api.Job{}, err
	}
	ref, ok := node.Word(req.Word)
	if !ok && node.Update.NeedsNewerAgent != "" {
		return api.Job{}, errcode.New(errcode.JobNeedsNewerAgent,
			"node %s does not hold the word %q yet: its agent %s is below the release's floor %s and is updating itself first; queue the job again once it reports the word",
			node.Name, req.Word, node.AgentVersion, node.Update.NeedsNewerAgent).
			With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word).With(errcode.DetailVersion, node.Update.NeedsNewerAgent)
	}
	if !ok {
		return api.Job{}, errcode.New(errcode.JobWordUnavailable,
			"node %s does not report the word %q: publish a release that pins it (lexicon releases publish) and wait for the node to load it, or choose a node that reports it (lexicon nodes show %s)",
			node.Name, req.Word, node.Name).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	// The manifest is the one its own row pins for this word and module: another word on the same
	// module has its own class and schema, and must never lend them.
	m, known, err := r.c.Manifests.Word(ctx, req.Word, ref.Digest)
	if err != nil {
		return api.Job{}, err
	}
	if !known {
		return api.Job{}, errcode.New(errcode.JobWordUnavailable,
			"node %s reports %s with digest %s, which no release on this plane pins; publish its release or wait for the node to update",
			node.Name, req.Word, ref.Digest).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	role := api.RoleOperator
	if m.Class == manifest.ClassDestructive {
		role = api.RoleAdmin
	}
	if err := tokens.Need(who, role); err != nil {
		return api.Job{}, err
	}
	params, err := Params(m, req.Params)
	if err != nil {
		return api.Job{}, err
	}
	budget := Budget(m)
	leaseTTL := budget + 10*time.Minute // queued, then running for at most its budget
	if budget == 0 {
		leaseTTL = store.DefaultJobBudget + 10*time.Minute
	}
	var request string
	if req.Exclusive {
		// The request holds the node until its job exists, then hands the lease to the job.
		request = "request:" + rand.Text()[:12]
		if _, err := r.c.Leases.Acquire(ctx, node.ID, request, "exclusive job "+req.Word+" by "+who.Name, leaseTTL, r.c.Now()); err != nil {
			return api.Job{}, err
		}
	}
	job, err := r.c.Store.JobCreate(ctx, store.JobCreateParams{
		NodeID: node.ID, Word: req.Word, WordDigest: ref.Digest, Class: string(m.Class), Params: params,
		Budget: budget, CreatedBy: who.Name, Now: r.c.Now(), Backup: backup,
	})
	if err != nil {
		if request != "" {
			_ = r.c.Leases.Release(ctx, node.ID, request)
		}
		return api.Job{}, err
	}
	if request != "" {
		if _, err := r.c.Leases.Hand(ctx, node.ID, request, lease.JobHolder(job.ID), "exclusive job "+job.ID+" by "+job.CreatedBy, leaseTTL, r.c.Now()); err != nil {
			return api.Job{}, err
		}
	}
	r.log.Info("job queued", "job", job.ID, "node", node.ID, "word", job.Word, "by", job.CreatedBy)
	r.c.Metrics.JobQueued(job.Word)
	return apiconv.Job(job, node.Name), nil
}

// List lists jobs newest first, without output, transcript and audit, each with its node's name.
func (r *Room) List(ctx context.Context, who api.Token, q api.JobsListQuery) (api.JobList, error) {
	var nodeID string
	if q.Node != "" {
		n, err := r.c.Nodes.Get(ctx, q.Node)
		if err != nil {
			return api.JobList{}, err
		}
		nodeID = n.ID
	}
	res, err := r.c.Store.JobList(ctx, store.JobListParams{NodeID: nodeID, State: q.State, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return api.JobList{}, err
	}
	names, err := r.c.Nodes.Names(ctx, res.Jobs)
	if err != nil {
		return api.JobList{}, err
	}
	return api.JobList{Jobs: apiconv.Each(res.Jobs, func(j store.Job) api.Job { return apiconv.Job(j, names[j.NodeID]) }), NextCursor: res.NextCursor}, nil
}

// Show answers a job with its output, transcript and audit.
func (r *Room) Show(ctx context.Context, who api.Token, id string) (api.Job, error) {
	j, err := r.c.Store.JobGet(ctx, store.JobGetParams{ID: id})
	return r.answer(ctx, j, err)
}

// Cancel cancels a queued job.
func (r *Room) Cancel(ctx context.Context, who api.Token, id string) (api.Job, error) {
	j, err := r.c.Store.JobCancel(ctx, store.JobCancelParams{ID: id, By: who.Name, Now: r.c.Now()})
	if err == nil {
		r.c.Metrics.JobEnded(j.Word, string(j.State))
		r.advance(ctx, j)
	}
	return r.answer(ctx, j, err)
}

// MarkFailed fails a queued or running job on an operator's word; a result arriving later is refused.
func (r *Room) MarkFailed(ctx context.Context, who api.Token, id string, req api.MarkFailedRequest) (api.Job, error) {
	j, err := r.c.Store.JobMarkFailed(ctx, store.JobMarkFailedParams{ID: id, By: who.Name, Message: req.Message, Now: r.c.Now()})
	if err == nil {
		r.c.Metrics.JobEnded(j.Word, string(j.State))
		r.advance(ctx, j)
	}
	return r.answer(ctx, j, err)
}

// Ended takes in jobs another room ended (a pairing that ended cancels its node's queued jobs and
// loses its running one): they are counted, and their batches move on as if each had ended here.
func (r *Room) Ended(ctx context.Context, ended ...store.Job) {
	for _, j := range ended {
		r.c.Metrics.JobEnded(j.Word, string(j.State))
	}
	r.advance(ctx, ended...)
}

// advance moves on the batches of jobs that just ended.
func (r *Room) advance(ctx context.Context, ended ...store.Job) {
	r.batches.advance(ctx, r.c.Now(), ended...)
}

// answer is a job with its node's name.
func (r *Room) answer(ctx context.Context, j store.Job, err error) (api.Job, error) {
	if err != nil {
		return api.Job{}, err
	}
	names, err := r.c.Nodes.Names(ctx, []store.Job{j})
	if err != nil {
		return api.Job{}, err
	}
	return apiconv.Job(j, names[j.NodeID]), nil
}

// Claim records what the node reports (its cases included) and, when the node is idle, holds the claim
// until a job is queued for it or hold runs out. A node that claims while idle has no job running: one
// the plane thinks is running is lost. A busy claim reports and returns at once. The claim's context
// ending first (the node went away) returns its error.
func (r *Room) Claim(ctx context.Context, node nodes.Proven, req channel.ClaimRequest, hold time.Duration) (channel.ClaimResponse, error) {
	r.c.Metrics.ClaimStarted()
	defer r.c.Metrics.ClaimEnded()
	resp, err := r.c.Nodes.Report(ctx, node, &req)
	if err != nil || !req.Idle {
		return resp, err // a busy node reports; work waits until it is idle
	}
	r.c.Metrics.LongPollStarted()
	defer r.c.Metrics.LongPollEnded()
	wake, stop := r.c.Store.Notifier().Subscribe(node.ID())
	defer stop()
	timer := time.NewTimer(hold)
	defer timer.Stop()
	// The first look loses the job the plane thinks is running, in the claim's own transaction; the
	// looks after a wake-up only claim, so a job handed out meanwhile (by another replica) stays.
	first := true
	for {
		select {
		case <-r.draining: // before every look, a wake-up's too: a drain and a wake-up at once, the drain wins
			return resp, nil
		default:
		}
		var job *store.Job
		if first {
			var res store.JobClaimIdleResult
			res, err = r.c.Store.JobClaimIdle(ctx, store.JobClaimParams{NodeID: node.ID(), Now: r.c.Now()})
			for _, j := range res.Lost {
				r.log.Warn("job lost: its node claimed while idle", "job", j.ID, "node", node.ID(), "word", j.Word)
				r.c.Metrics.JobEnded(j.Word, string(j.State))
			}
			r.advance(ctx, res.Lost...)
			job, first = res.Job, false
		} else {
			job, err = r.c.Store.JobClaim(ctx, store.JobClaimParams{NodeID: node.ID(), Now: r.c.Now()})
		}
		if err != nil {
			return resp, err
		}
		if job != nil {
			resp.Job = r.handOut(ctx, node, job)
			return resp, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return resp, nil
		case <-r.draining:
			return resp, nil
		case <-ctx.Done():
			return resp, ctx.Err()
		}
	}
}

// handOut is a claimed job as the node is told it.
// A grant that cannot be made leaves the job without one: the word then fails with
// backup.grant_missing, which the plane judges as a failed run.
func (r *Room) handOut(ctx context.Context, node nodes.Proven, job *store.Job) *channel.Job {
	r.log.Info("job handed out", "job", job.ID, "node", node.ID(), "word", job.Word)
	r.c.Metrics.JobDispatched(job.CreatedAt, r.c.Now())
	out := &channel.Job{
		ID: job.ID, Word: job.Word, Version: job.WordVersion, Digest: job.WordDigest, Class: job.Class,
		Params: job.Params, Deadline: job.DeadlineAt,
	}
	if r.c.Grants != nil && r.c.Grants.Needs(job.Word) {
		g, err := r.c.Grants.Grant(ctx, *job)
		if err != nil {
			r.log.Warn("backup grant not made", "job", job.ID, "node", node.ID(), "err", err)
		}
		out.Grant = g
	}
	return out
}

// Result records how a job of the node ended, bounded on intake: an output over its cap (or not JSON)
// fails the job rather than being stored, a long transcript is cut, and the audit list is capped. A
// result that carries the node's next claim is taken with it: the claim's report first, then the result
// and the next job in one transaction, never held (with no job the node long-polls a claim of its own).
//
// nonce is the request's signature nonce, which the verifier left to Result to record (the server's
// result route): it is recorded before anything changes, or, when the result carries an idle claim
// that writes nothing but perhaps the node's last-seen time (nodes.Room.ReportQuiet, the steady state
// of a busy node), in the transaction of the result and the next claim, with that time
// (store.JobFinishParams.Seen), so that a round trip costs one durable commit. Either way a replay
// changes nothing and is refused as channel.replayed.
func (r *Room) Result(ctx context.Context, node nodes.Proven, req channel.ResultRequest, nonce Nonce) (channel.ResultResponse, error) {
	outcome := req.Outcome
	switch req.Outcome {
	case channel.OutcomeCompleted, channel.OutcomeFailed, channel.OutcomeRefused:
	default:
		return channel.ResultResponse{}, errcode.New(errcode.RequestMalformed, "outcome must be completed, failed or refused, not %q", req.Outcome).With(errcode.DetailField, "outcome")
	}
	// Text is cut on a character boundary and made valid UTF-8 without NUL, so that no database can
	// refuse it: a result the store refused would leave the job running, to be counted lost.
	code, _ := nodetext.Cap(req.Code, store.MaxRefLen)
	message, _ := nodetext.Cap(req.Message, store.MaxMessageLen)
	transcript, _ := nodetext.Cap(req.Transcript, channel.TranscriptCap)
	output := []byte(req.Output)
	if len(output) > channel.OutputCap || (len(output) > 0 && !json.Valid(output)) {
		outcome, code, output = channel.OutcomeFailed, errcode.RequestTooLarge, nil
		message = "the node's output was over the plane's cap or not JSON, and was dropped"
	}
	audit := req.Capabilities
	if len(audit) > channel.AuditCap {
		audit = audit[:channel.AuditCap]
	}
	var auditJSON json.RawMessage
	if len(audit) > 0 {
		auditJSON, _ = json.Marshal(audit)
	}
	output, auditJSON = nodetext.JSON(output), nodetext.JSON(auditJSON)
	finish := store.JobFinishParams{
		ID: req.JobID, NodeID: node.ID(), Outcome: outcome, Code: code, Message: message, Output: output,
		Transcript: transcript, Audit: auditJSON, Duration: time.Duration(req.DurationMS) * time.Millisecond, Now: r.c.Now(),
	}
	var claim channel.ClaimResponse
	quiet := false
	if req.Claim != nil && req.Claim.Idle {
		claim, quiet, finish.Seen = r.c.Nodes.ReportQuiet(ctx, node, req.Claim)
	}
	if quiet {
		finish.Nonce = &nonce
	} else if err := r.useNonce(ctx, nonce); err != nil {
		return channel.ResultResponse{}, err
	}
	if req.Claim == nil {
		job, err := r.c.Store.JobFinish(ctx, finish)
		if err != nil {
			return channel.ResultResponse{}, err
		}
		r.log.Info("job finished", "job", job.ID, "node", node.ID(), "word", job.Word, "state", job.State, "code", code)
		r.advance(ctx, job)
		return channel.ResultResponse{JobID: job.ID, State: job.State}, nil
	}
	var err error
	if !quiet {
		if claim, err = r.c.Nodes.Report(ctx, node, req.Claim); err != nil {
			return channel.ResultResponse{}, err
		}
	}
	var res store.JobFinishClaimResult
	if req.Claim.Idle {
		res, err = r.c.Store.JobFinishClaim(ctx, finish)
	} else {
		res.Job, err = r.c.Store.JobFinish(ctx, finish)
	}
	if err != nil {
		return channel.ResultResponse{}, err
	}
	if res.Replayed {
		return channel.ResultResponse{}, replayed(nonce)
	}
	r.log.Info("job finished", "job", res.Job.ID, "node", node.ID(), "word", res.Job.Word, "state", res.Job.State, "code", code)
	r.c.Metrics.JobEnded(res.Job.Word, string(res.Job.State))
	r.advance(ctx, res.Job)
	if res.Next != nil {
		claim.Job = r.handOut(ctx, node, res.Next)
	}
	return channel.ResultResponse{JobID: res.Job.ID, State: res.Job.State, Claim: &claim}, nil
}

// Nonce is a signed request's nonce, for Result to record: the key id, the nonce and when it may be
// forgotten, as httpsig.Verifier would record it.
type Nonce = store.NonceUseParams

// useNonce records a request's nonce on its own, refusing a replay.
func (r *Room) useNonce(ctx context.Context, nonce store.NonceUseParams) error {
	fresh, err := r.c.Nodes.NonceUse(ctx, nonce.KeyID, nonce.Nonce, nonce.ExpiresAt)
	if err != nil {
		return err
	}
	if !fresh {
		return replayed(nonce)
	}
	return nil
}

// replayed is httpsig.Verifier's refusal of a nonce already used.
func replayed(nonce store.NonceUseParams) error {
	return errcode.New(errcode.ChannelReplayed, "nonce already used: this request was replayed").With(errcode.DetailKeyID, nonce.KeyID)
}

// Status answers the node asking after one of its jobs; another node's job is not found.
func (r *Room) Status(ctx context.Context, node nodes.Proven, req channel.JobStatusRequest) (channel.JobStatusResponse, error) {
	job, err := r.c.Store.JobGet(ctx, store.JobGetParams{ID: req.JobID})
	if err == nil && job.NodeID != node.ID() {
		err = errcode.New(errcode.JobNotFound, "no job %s for this node", req.JobID)
	}
	if err != nil {
		return channel.JobStatusResponse{}, err
	}
	return channel.JobStatusResponse{JobID: job.ID, State: job.State}, nil
}
