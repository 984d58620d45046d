package rollouts

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Abort stops a rollout (running, paused or halted) and leaves every node it did not reach untouched:
// its pending steps are skipped, and so is a running step whose job no node has taken yet, that job
// cancelled. A step whose node took its job, or whose node's target it moved, was reached and stays
// running: the engine judges it when its job ends (or its timeout runs out), starting nothing after.
// Refused: rollout.not_found, rollout.wrong_state.
func Abort(ctx context.Context, s Store, id, by string, now time.Time) (store.Rollout, error) {
	ro, err := s.RolloutSetState(ctx, store.RolloutSetStateParams{ID: id, By: by, Action: "abort", Now: now, To: store.RolloutAborted,
		From: []store.RolloutState{store.RolloutRunning, store.RolloutPaused, store.RolloutHalted}})
	if err != nil {
		return store.Rollout{}, err
	}
	changed := false
	for _, st := range ro.Steps {
		if st.State != store.StepRunning || (ro.Kind == store.RolloutRelease && st.Phase == store.PhaseChange) {
			continue
		}
		if st.JobID != "" {
			_, err := s.JobCancel(ctx, store.JobCancelParams{ID: st.JobID, By: by, Now: now})
			if errcode.Has(err, errcode.JobNotQueued) {
				continue // the node took it: reached
			}
			if err != nil {
				return store.Rollout{}, err
			}
		}
		// No job yet, or one no node took: the engine finds the step moved and cancels any job it
		// queues for it meanwhile.
		res, err := s.RolloutStepUpdate(ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: st.NodeID, FromState: store.StepRunning,
			FromPhase: st.Phase, State: store.StepSkipped, Phase: st.Phase, Reason: "aborted before the node took its " + st.Phase + " job", Now: now})
		if err != nil {
			return store.Rollout{}, err
		}
		changed = changed || res.Moved
	}
	if !changed {
		return ro, nil
	}
	return s.RolloutGet(ctx, store.RolloutGetParams{ID: ro.ID})
}
