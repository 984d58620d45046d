package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LeaseEngine is the lease, on a rollout's id, of the replica advancing that rollout.
const LeaseEngine = "engine"

// Engine advances running rollouts. Every replica runs one; on each pass a replica takes a rollout's
// engine lease before touching it, so one replica at a time advances a rollout, and a replica that
// died loses it to the others once its lease expires. Every step moves only from the state the
// engine saw (store.RolloutStepUpdate), so a pass that lost its lease mid-way still never starts a
// node twice.
type Engine struct {
	services.EngineBase
	Store EngineStore
	// Words tells the words a release pins; nil: a releases.Catalog over Store.
	Words WordSource
	// Leases grants the nodes' change leases; nil: a room over Store.
	Leases *lease.Room

	catalog WordSource
}

// EngineStore is what the engine reads and writes: the rollouts it advances, the nodes and jobs their
// steps move, and (for the lease and the words a release pins, when Leases and Words are nil) the
// leases and the stored releases.
type EngineStore interface {
	lease.Store
	releases.CatalogStore
	RolloutGet(ctx context.Context, p store.RolloutGetParams) (store.Rollout, error)
	RolloutList(ctx context.Context, p store.RolloutListParams) ([]store.Rollout, error)
	RolloutSetState(ctx context.Context, p store.RolloutSetStateParams) (store.Rollout, error)
	RolloutStepUpdate(ctx context.Context, p store.RolloutStepUpdateParams) (store.RolloutStepUpdateResult, error)
	RolloutMiss(ctx context.Context, p store.RolloutMissParams) (store.Rollout, error)
	NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error)
	NodeTargetSet(ctx context.Context, p store.NodeTargetSetParams) (store.NodeTargetSetResult, error)
	FleetTargetSet(ctx context.Context, p store.FleetTargetSetParams) error
	JobCreate(ctx context.Context, p store.JobCreateParams) (store.Job, error)
	RolloutParamsGet(ctx context.Context, p store.RolloutParamsGetParams) (json.RawMessage, error)
	JobList(ctx context.Context, p store.JobListParams) (store.JobListResult, error)
	JobCancel(ctx context.Context, p store.JobCancelParams) (store.Job, error)
	JobMarkFailed(ctx context.Context, p store.JobMarkFailedParams) (store.Job, error)
}

// WordSource tells the words a release pins, by name, and the release's statement digest, and the
// agent version it pins ("" for none).
type WordSource interface {
	Words(ctx context.Context, seq int64) (map[string]releases.Word, string, error)
	Agent(ctx context.Context, seq int64) (string, error)
}

// EngineLease is the engine lease this engine takes on a rollout, without the rollout: on each pass,
// and as the room starts one (store.RolloutCreateParams.Lease).
func (e *Engine) EngineLease() store.LeaseAcquireParams {
	return store.LeaseAcquireParams{Name: LeaseEngine, Holder: e.Holder, Purpose: "advance rollout", TTL: e.TTL()}
}

// Service runs the engine on every tick of every and on every Wake.
func (e *Engine) Service(every time.Duration) *services.Periodic {
	return e.EngineBase.Service("rollouts", every, e.Pass)
}

// Pass advances every running rollout this replica can lease, once, and judges the steps still under
// way in stopped (paused, halted, aborted) ones.
func (e *Engine) Pass(ctx context.Context) error {
	e.catalogFor()
	list, err := e.Store.RolloutList(ctx, store.RolloutListParams{State: store.RolloutRunning, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	stopped, err := e.Store.RolloutList(ctx, store.RolloutListParams{Judging: true, Limit: store.MaxListLimit})
	if err != nil {
		return err
	}
	for _, ro := range append(list, stopped...) {
		l := e.EngineLease()
		l.Subject, l.Now = ro.ID, e.Time()
		_, err := e.Store.LeaseAcquire(ctx, l)
		if errcode.Has(err, errcode.LeaseHeld) {
			continue // another replica advances it
		}
		if err != nil {
			return err
		}
		if err := e.advance(ctx, ro.ID); err != nil {
			e.Logger().Warn("rollout not advanced", "rollout", ro.ID, "err", err)
		}
	}
	return nil
}

// advance judges a rollout's running steps and, when it is running, starts the next ones. A stopped
// rollout (paused, halted, aborted) only has its steps under way judged: their nodes took a job, whose
// end is their verdict, and nothing new starts.
func (e *Engine) advance(ctx context.Context, id string) error {
	ro, err := e.Store.RolloutGet(ctx, store.RolloutGetParams{ID: id})
	if err != nil || !judged(ro.State) {
		return err
	}
	running := 0
	for _, st := range ro.Steps {
		if st.State != store.StepRunning {
			continue
		}
		running++
		if !e.holdNode(ctx, ro, st) {
			continue // another holder has the node until its lease runs out
		}
		miss, err := e.check(ctx, ro, st, false)
		if err != nil {
			return err
		}
		if miss == "" {
			continue
		}
		running--
		res, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID,
			FromState: store.StepRunning, FromPhase: st.Phase, State: store.StepFailed, Phase: st.Phase, Reason: miss, Now: e.Time()})
		if err != nil || !res.Moved {
			return err
		}
		e.releaseNode(ctx, ro, st)
		after, err := e.Store.RolloutMiss(ctx, store.RolloutMissParams{ID: ro.ID, NodeID: st.NodeID, NodeName: st.NodeName, Reason: miss, Now: e.Time()})
		if err != nil {
			return err
		}
		e.Logger().Warn("rollout step missed", "rollout", ro.ID, "node", st.NodeName, "reason", miss, "state", after.State)
		if after.State == store.RolloutHalted && ro.State != store.RolloutHalted {
			e.Logger().Warn("rollout halted", "rollout", ro.ID, "node", st.NodeName, "reason", miss)
		}
		// A rollout that halted judges its other steps under way on its next pass, as a stopped one.
		if ro.State == store.RolloutRunning && after.State != store.RolloutRunning {
			return nil
		}
	}
	if ro.State != store.RolloutRunning {
		return nil
	}
	// Look again: the checks above moved steps.
	if ro, err = e.Store.RolloutGet(ctx, store.RolloutGetParams{ID: id}); err != nil || ro.State != store.RolloutRunning {
		return err
	}
	stage, done := currentStage(ro.Steps)
	if done {
		return e.complete(ctx, ro)
	}
	running = 0
	busy := map[string]bool{} // machines with a step under way: one step of a machine at a time
	for _, st := range ro.Steps {
		if st.State == store.StepRunning {
			running++
			busy[st.Machine] = st.Machine != ""
		}
	}
	for _, st := range ro.Steps {
		if running >= ro.MaxParallel {
			break
		}
		if st.Stage != stage || st.State != store.StepPending || busy[st.Machine] {
			continue
		}
		started, err := e.start(ctx, ro, st)
		if err != nil {
			return err
		}
		if started {
			running++
			busy[st.Machine] = st.Machine != ""
		}
	}
	return nil
}

// judged says whether the engine looks at a rollout in state s: a running one, or a stopped one that
// may still have steps under way.
func judged(s store.RolloutState) bool {
	switch s {
	case store.RolloutRunning, store.RolloutPaused, store.RolloutHalted, store.RolloutAborted:
		return true
	}
	return false
}

// currentStage is the first stage with a step that has not ended; done when there is none. A stage
// starts only once every step before it ended (passed, or failed within the error budget).
func currentStage(steps []store.RolloutStep) (int, bool) {
	stage := -1
	for _, st := range steps {
		if st.State == store.StepPending || st.State == store.StepRunning {
			if stage < 0 || st.Stage < stage {
				stage = st.Stage
			}
		}
	}
	return stage, stage < 0
}

func (e *Engine) complete(ctx context.Context, ro store.Rollout) error {
	done, err := e.Store.RolloutSetState(ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{store.RolloutRunning},
		To: store.RolloutCompleted, By: "plane", Action: "complete", Now: e.Time()})
	if errcode.Has(err, errcode.RolloutWrongState) {
		return nil
	}
	if err != nil {
		return err
	}
	if ro.Kind == store.RolloutRelease && ro.FleetWide && done.Misses == 0 {
		// Every node now runs it: new nodes should too.
		if err := e.Store.FleetTargetSet(ctx, store.FleetTargetSetParams{Sequence: ro.ReleaseSequence, By: ro.CreatedBy, Now: e.Time()}); err != nil {
			return err
		}
	}
	_ = e.Store.LeaseRelease(ctx, store.LeaseReleaseParams{Subject: ro.ID, Name: LeaseEngine, Holder: e.Holder})
	e.Logger().Info("rollout completed", "rollout", ro.ID, "misses", done.Misses)
	return nil
}

// start takes the node's change lease and moves its step to its first phase. A node another holder is
// changing waits for a later pass.
func (e *Engine) start(ctx context.Context, ro store.Rollout, st store.RolloutStep) (bool, error) {
	_, err := e.changes().Acquire(ctx, st.NodeID, e.nodeHolder(ro), "rollout "+ro.ID, e.TTL(), e.Time())
	if errcode.Has(err, errcode.LeaseHeld) {
		return false, nil // another change holds the node: it waits for a later pass
	}
	if err != nil {
		return false, err
	}
	phase := store.PhaseChange
	if ro.PreflightWord != "" {
		phase = store.PhasePreflight
	}
	res, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID,
		FromState: store.StepPending, State: store.StepRunning, Phase: phase, Now: e.Time()})
	if err != nil || !res.Moved {
		return false, err
	}
	e.Logger().Info("rollout step started", "rollout", ro.ID, "node", st.NodeName, "node_id", st.NodeID, "stage", st.Stage, "phase", phase)
	_, err = e.check(ctx, ro, res.Step, true) // a miss found here is found again, and counted, next pass
	return true, err
}

// holdNode renews (or takes over, once expired) the node's change lease for a running step, and
// says whether this replica holds it: a replica that took the rollout over acts on a node only once
// the dead replica's lease on it ran out.
func (e *Engine) holdNode(ctx context.Context, ro store.Rollout, st store.RolloutStep) bool {
	if _, err := e.changes().Acquire(ctx, st.NodeID, e.nodeHolder(ro), "rollout "+ro.ID, e.TTL(), e.Time()); err != nil {
		e.Logger().Debug("node lease not held", "rollout", ro.ID, "node", st.NodeName, "err", err)
		return false
	}
	return true
}

func (e *Engine) releaseNode(ctx context.Context, ro store.Rollout, st store.RolloutStep) {
	_ = e.changes().Release(ctx, st.NodeID, e.nodeHolder(ro))
}

func (e *Engine) changes() *lease.Room {
	if e.Leases != nil {
		return e.Leases
	}
	return lease.New(e.Store)
}

// nodeHolder is who holds a node's change lease for a rollout: this replica, for that rollout. Two
// rollouts reaching one node never share a holder, so they never change it at once, even when one
// replica advances both.
func (e *Engine) nodeHolder(ro store.Rollout) string { return e.Holder + "/" + ro.ID }

// check looks at a running step once: it starts what its phase needs (a job, a target move), moves it
// on when its phase passed, and returns why it missed, if it did. fresh says the step entered its
// phase in this very pass, so no job of it can exist yet. In a stopped rollout it only judges what is
// under way: it starts nothing, and a phase that passed with more to go waits for the resume (paused,
// halted) or ends the step skipped (aborted). The timeout holds a stopped rollout's steps only once it
// was aborted.
func (e *Engine) check(ctx context.Context, ro store.Rollout, st store.RolloutStep, fresh bool) (string, error) {
	live := ro.State == store.RolloutRunning
	since := phaseClock(ro, st)
	timedOut := !since.IsZero() && e.Time().Sub(since) > ro.StepTimeout
	if timedOut && live {
		return e.timeout(ctx, ro, st), nil
	}
	if !live && st.JobID == "" && (ro.Kind == store.RolloutJob || st.Phase != store.PhaseChange) {
		return "", nil // no job under way: nothing to judge until the rollout resumes
	}
	var passed bool
	var miss, note string
	var err error
	switch {
	case st.Phase == store.PhaseChange && ro.Kind == store.RolloutRelease:
		passed, miss, err = e.releaseStep(ctx, ro, st)
	default:
		word, params := ro.Word, ro.Params
		switch st.Phase {
		case store.PhasePreflight:
			word, params = ro.PreflightWord, ro.PreflightParams
		case store.PhaseRestart:
			word, params = RestartWord, json.RawMessage(`{}`)
		case store.PhaseVerify:
			word, params = ro.VerifyWord, ro.VerifyParams
		}
		var job *store.Job
		skip := false
		if st.Phase == store.PhaseRestart && st.JobID == "" {
			skip, err = e.restartSkipped(ctx, ro, st)
		}
		switch {
		case err != nil:
		case skip:
			passed = true // nothing to restart with: the verify follows
		default:
			job, passed, miss, err = e.jobStep(ctx, ro, st, word, params, fresh)
		}
		if err == nil && job != nil && ro.Purpose == store.PurposePatch {
			switch v := judgePatch(st.NodeName, st.Phase, *job); {
			case v.miss != "":
				passed, miss = false, v.miss
			case v.done != "":
				passed, miss, note = true, "", v.done
			}
		}
	}
	if err != nil || miss != "" {
		return miss, err
	}
	if !passed {
		// Time paused or halted is not the node's (phaseClock); an aborted rollout never resumes, so
		// its steps under way are held to the timeout from when their phase began.
		if timedOut && ro.State == store.RolloutAborted {
			return e.timeout(ctx, ro, st), nil
		}
		return "", nil
	}
	next, state := nextPhase(ro, st.Phase)
	if note != "" {
		next, state = st.Phase, store.StepPassed // the step ends here, passed with its note
	}
	if !live && state != store.StepPassed {
		if ro.State != store.RolloutAborted {
			return "", nil // the next phase starts on resume; its job, found completed, moves it on
		}
		res, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID, FromState: store.StepRunning,
			FromPhase: st.Phase, State: store.StepSkipped, Phase: st.Phase, Reason: "aborted after its " + st.Phase + " passed; " + next + " never ran", Now: e.Time()})
		if err == nil && res.Moved {
			e.releaseNode(ctx, ro, st)
		}
		return "", err
	}
	res, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID,
		FromState: store.StepRunning, FromPhase: st.Phase, State: state, Phase: next, Reason: note, Now: e.Time()})
	if err != nil || !res.Moved {
		return "", err
	}
	if state == store.StepPassed {
		e.releaseNode(ctx, ro, st)
		e.Logger().Info("rollout step passed", "rollout", ro.ID, "node", st.NodeName, "node_id", st.NodeID, "stage", st.Stage)
		return "", nil
	}
	// Clear the job id of the phase that passed, so the next phase queues its own.
	res.Step.JobID = ""
	return e.checkFresh(ctx, ro, res.Step)
}

// timeout fails the step's job, so a late answer cannot pass a step already judged, and says why.
func (e *Engine) timeout(ctx context.Context, ro store.Rollout, st store.RolloutStep) string {
	if st.JobID != "" {
		_, _ = e.Store.JobMarkFailed(ctx, store.JobMarkFailedParams{ID: st.JobID, By: "rollout " + ro.ID, Message: "the rollout's step timed out", Now: e.Time()})
	}
	reason := fmt.Sprintf("%s did not report back within %s", st.Phase, ro.StepTimeout)
	if ro.Kind != store.RolloutRelease || st.Phase != store.PhaseChange {
		return reason
	}
	// A release step includes the agent's update and its trial: say where the node last stood, so a
	// node on trial is not mistaken for one that never answered. A failed read only loses the detail.
	node, err := e.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
	if err != nil {
		return reason
	}
	agent, err := e.catalogFor().Agent(ctx, ro.ReleaseSequence)
	if err != nil {
		return reason
	}
	if phase := UpdatePhase(node, agent); phase != "" {
		reason += "; the node was " + phase
	}
	return reason
}

// UpdatePhase names where the node's update to agent stood in its last report: fetching the new
// agent, probing it (the agent tells the plane before it runs the probe), restarting into it
// (installed, the old agent's last word), on trial, or back on the old one after a refusal; "" when
// agent is not being updated to (no agent pinned, updates off, or current). An agent older than the
// probing state reports pending through its probe too, which then reads as fetching.
func UpdatePhase(n store.Node, agent string) string {
	u := n.Update
	if agent == "" || u.State == "" || u.State == channel.UpdateNone {
		return ""
	}
	switch {
	case u.State == channel.UpdateTrial && n.AgentVersion == agent:
		return "on trial with agent " + agent
	case u.State == channel.UpdateTrial:
		return "restarting into agent " + u.Offered
	case u.State == channel.UpdatePending && u.Reason != "":
		return "waiting to fetch agent " + u.Offered + ": " + u.Reason
	case u.State == channel.UpdatePending:
		return "fetching agent " + u.Offered
	case u.State == channel.UpdateProbing:
		return "probing agent " + u.Offered
	case u.State == channel.UpdateFetchFailed:
		return "failing to fetch agent " + u.Offered + ": " + u.Reason
	case channel.UpdateRefused(u.State):
		// verify_failed and probe_failed end fetching and probing; rejected ends a trial.
		return "refusing agent " + u.Offered + " (" + u.State + "): " + u.Reason
	case u.State == channel.UpdateCurrent && n.AgentVersion != agent:
		return "still on agent " + n.AgentVersion + " (the update to " + agent + " not begun, or its restart not reported)"
	}
	return ""
}

// phaseClock is when a step's phase timeout started counting: when the phase began, or when the
// rollout was last resumed if that is later. Time spent paused or halted is the operator's, not the
// node's: a step under way when the rollout was paused is not a miss the moment it resumes.
func phaseClock(ro store.Rollout, st store.RolloutStep) time.Time {
	since := st.PhaseAt
	for _, ev := range ro.Events {
		if ev.Action == "resume" && ev.At.After(since) {
			since = ev.At
		}
	}
	return since
}

// checkFresh looks at a step that just entered a phase.
func (e *Engine) checkFresh(ctx context.Context, ro store.Rollout, st store.RolloutStep) (string, error) {
	return e.check(ctx, ro, st, true)
}

func nextPhase(ro store.Rollout, phase string) (string, store.StepState) {
	switch phase {
	case store.PhasePreflight:
		return store.PhaseChange, store.StepRunning
	case store.PhaseChange:
		if ro.Purpose == store.PurposePatch {
			return store.PhaseRestart, store.StepRunning
		}
		fallthrough
	case store.PhaseRestart:
		if ro.VerifyWord != "" {
			return store.PhaseVerify, store.StepRunning
		}
	}
	return phase, store.StepPassed
}

// jobTag is the creator recorded on a rollout's job: who asked, through which rollout, phase and
// attempt (a step tried again after a resume starts anew). A replica that took a rollout over finds a
// job queued before the record named it by this tag, rather than queueing a second one.
func jobTag(ro store.Rollout, st store.RolloutStep) string {
	return fmt.Sprintf("%s via rollout %s (%s, attempt %d)", ro.CreatedBy, ro.ID, st.Phase, st.StartedAt.UnixMicro())
}

// pinnedWord finds the word on the node, at the module its target release pins; else it says why not.
func (e *Engine) pinnedWord(ctx context.Context, node store.Node, word string) (store.WordRef, releases.Word, string, error) {
	if _, ok := node.Word(word); !ok {
		return store.WordRef{}, releases.Word{}, notReported(word), nil
	}
	words, _, err := e.catalogFor().Words(ctx, node.TargetSequence)
	if err != nil {
		return store.WordRef{}, releases.Word{}, "", err
	}
	ref, w, why := pinned(node, words, word)
	return ref, w, why, nil
}

// pinned finds the word on the node, at the module words (its target release's) pins; else it says
// why not.
func pinned(node store.Node, words map[string]releases.Word, word string) (store.WordRef, releases.Word, string) {
	ref, ok := node.Word(word)
	if !ok {
		return ref, releases.Word{}, notReported(word)
	}
	w, ok := words[word]
	if !ok || w.Module != ref.Digest {
		return ref, w, fmt.Sprintf("the node's %s is not the one its target release %d pins", word, node.TargetSequence)
	}
	return ref, w, ""
}

func notReported(word string) string { return "the node does not report the word " + word }

// jobStep runs word on the node and judges its job, which it returns once there is one.
func (e *Engine) jobStep(ctx context.Context, ro store.Rollout, st store.RolloutStep, word string, params json.RawMessage, fresh bool) (*store.Job, bool, string, error) {
	tag := jobTag(ro, st)
	var job *store.Job
	if !fresh {
		var err error
		if job, err = e.phaseJob(ctx, st, tag); err != nil {
			return nil, false, "", err
		}
	}
	if job == nil && ro.State != store.RolloutRunning {
		return nil, false, "", nil // a stopped rollout queues nothing
	}
	if job == nil {
		node, err := e.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
		if err != nil {
			return nil, false, "", err
		}
		if node.State != store.NodeActive {
			return nil, false, fmt.Sprintf("node is %s", node.State), nil
		}
		ref, w, why, err := e.pinnedWord(ctx, node, word)
		if err != nil {
			return nil, false, "", err
		}
		if why != "" {
			return nil, false, st.Phase + ": " + why, nil
		}
		if st.Phase == store.PhaseChange {
			// A node given its own params at the start (a roles apply: its footprint) runs with them.
			own, err := e.Store.RolloutParamsGet(ctx, store.RolloutParamsGetParams{RolloutID: ro.ID, NodeID: st.NodeID})
			if err != nil {
				return nil, false, "", err
			}
			if own != nil {
				params = own
			}
		}
		j, err := e.Store.JobCreate(ctx, store.JobCreateParams{NodeID: st.NodeID, Word: word, WordDigest: ref.Digest,
			Class: string(w.Manifest.Class), Params: params, Budget: jobs.Budget(w.Manifest), CreatedBy: tag, Now: e.Time()})
		if errcode.Has(err, errcode.NodeNotActive) || errcode.Has(err, errcode.JobWordUnavailable) {
			return nil, false, fmt.Sprintf("%s: %s", st.Phase, errcode.From(err, errcode.InternalError).Message), nil
		}
		if err != nil {
			return nil, false, "", err
		}
		job = &j
		res, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID,
			FromState: store.StepRunning, FromPhase: st.Phase, State: store.StepRunning, Phase: st.Phase, JobID: j.ID, Now: st.PhaseAt})
		if err != nil {
			return nil, false, "", err
		}
		if !res.Moved {
			// The step moved while the job was queued (the rollout was aborted): the node must not
			// get a job nobody will judge.
			_, _ = e.Store.JobCancel(ctx, store.JobCancelParams{ID: j.ID, By: "rollout " + ro.ID, Now: e.Time()})
			return nil, false, "", nil
		}
		e.Logger().Info("rollout job queued", "rollout", ro.ID, "node", st.NodeName, "phase", st.Phase, "job", j.ID, "word", word)
	}
	switch job.State {
	case store.JobCompleted:
		return job, true, "", nil
	case store.JobQueued, store.JobRunning:
		return nil, false, "", nil
	}
	why := fmt.Sprintf("%s %s %s", st.Phase, word, job.State)
	if job.OutcomeCode != "" {
		why += ": " + job.OutcomeCode
	}
	if job.OutcomeMessage != "" {
		why += ": " + job.OutcomeMessage
	}
	return job, false, why, nil
}

// phaseJob finds the step's job for its phase: by the id the step holds, or by its tag among the
// node's newest jobs when a replica died between queueing it and recording it.
func (e *Engine) phaseJob(ctx context.Context, st store.RolloutStep, tag string) (*store.Job, error) {
	if st.JobID != "" {
		j, err := e.Store.JobGet(ctx, store.JobGetParams{ID: st.JobID})
		if err != nil {
			return nil, err
		}
		if j.CreatedBy == tag {
			return &j, nil
		}
	}
	list, err := e.Store.JobList(ctx, store.JobListParams{NodeID: st.NodeID, Limit: 10})
	if err != nil {
		return nil, err
	}
	for _, j := range list.Jobs {
		if j.CreatedBy == tag {
			// The list holds summaries; a patch judges the job's output and audit.
			full, err := e.Store.JobGet(ctx, store.JobGetParams{ID: j.ID})
			return &full, err
		}
	}
	return nil, nil
}

func (e *Engine) catalogFor() WordSource {
	if e.catalog == nil {
		e.catalog = e.Words
		if e.catalog == nil {
			e.catalog = releases.NewCatalog(e.Store)
		}
	}
	return e.catalog
}

// releaseStep moves the node's target to the rollout's release and judges whether the node took it.
func (e *Engine) releaseStep(ctx context.Context, ro store.Rollout, st store.RolloutStep) (bool, string, error) {
	node, err := e.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
	if err != nil {
		return false, "", err
	}
	if node.State != store.NodeActive {
		return false, fmt.Sprintf("node is %s", node.State), nil
	}
	if node.TargetSequence != ro.ReleaseSequence && ro.State != store.RolloutRunning {
		return false, "", nil // a stopped rollout moves no target
	}
	if node.TargetSequence != ro.ReleaseSequence {
		// The previous target is recorded before the move, so a revert knows where to go back to
		// even if this replica dies between the two.
		if st.PreviousTarget == 0 {
			if _, err := e.Store.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID,
				FromState: store.StepRunning, FromPhase: st.Phase, State: store.StepRunning, Phase: st.Phase,
				PreviousTarget: node.TargetSequence, Now: st.PhaseAt}); err != nil {
				return false, "", err
			}
		}
		if _, err := e.Store.NodeTargetSet(ctx, store.NodeTargetSetParams{ID: st.NodeID, Sequence: ro.ReleaseSequence, Now: e.Time()}); err != nil {
			return false, "", err
		}
		e.Logger().Info("node target moved", "rollout", ro.ID, "node", st.NodeName, "node_id", st.NodeID, "sequence", ro.ReleaseSequence)
		return false, "", nil
	}
	words, digest, err := e.catalogFor().Words(ctx, ro.ReleaseSequence)
	if err != nil {
		return false, "", err
	}
	agent, err := e.catalogFor().Agent(ctx, ro.ReleaseSequence)
	if err != nil {
		return false, "", err
	}
	ok, why := ReleaseReached(node, ro.ReleaseSequence, digest, words, agent)
	return ok, why, nil
}

// ReleaseReached is the pass check of a release step: the node reports the release's statement and
// every word the release pins, with the pinned module, and, when the release pins an agent (version
// agent), runs that version in update state current. It returns a miss reason when the node said it
// cannot take the release: it refused the statement, or it refused the agent (verify_failed,
// probe_failed, rejected). A node whose updates are off (state none, by its own policy) or whose
// agent does not update itself passes on its vocabulary alone: its owner keeps its agent.
func ReleaseReached(n store.Node, seq int64, digest string, words map[string]releases.Word, agent string) (bool, string) {
	if agent != "" && n.Update.Offered == agent && channel.UpdateRefused(n.Update.State) {
		return false, fmt.Sprintf("the node refused agent %s (%s): %s", agent, n.Update.State, n.Update.Reason)
	}
	if n.StatementSequence != seq || n.StatementDigest != digest {
		if n.Untrusted != "" {
			return false, "the node refused the release: " + n.Untrusted
		}
		return false, ""
	}
	for name, w := range words {
		ref, ok := n.Word(name)
		if !ok || ref.Digest != w.Module {
			if n.Untrusted != "" {
				return false, "the node did not load " + name + ": " + n.Untrusted
			}
			return false, ""
		}
	}
	if agent != "" && n.Update.State != "" && n.Update.State != channel.UpdateNone &&
		(n.AgentVersion != agent || n.Update.State != channel.UpdateCurrent) {
		return false, ""
	}
	return true, ""
}
