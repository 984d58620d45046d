package errcode

// Codes of staged rollouts and node labels. Returned as errors, nothing changed: a refused rollout was
// never created, and a refused pause, resume, abort or revert left the rollout as it was.
const (
	// RolloutNotFound: no rollout has that id.
	RolloutNotFound = "rollout.not_found"
	// RolloutSelectorInvalid: a selector (or a stage's) is not name[,name...] or key=value[,key=value...]
	// (details.field names which).
	RolloutSelectorInvalid = "rollout.selector_invalid"
	// RolloutSelectorUnknownKey: a selector names a label key no node carries (details.name): a typo
	// would otherwise select nothing, or everything.
	RolloutSelectorUnknownKey = "rollout.selector_unknown_key"
	// RolloutEmptySelection: the selector matches no active node.
	RolloutEmptySelection = "rollout.empty_selection"
	// RolloutStagesIncomplete: the stages do not cover every selected node (details.node_id names one
	// left out), or the percentages do not end at 100%.
	RolloutStagesIncomplete = "rollout.stages_incomplete"
	// RolloutWordNotInRelease: a word the rollout runs (change, preflight or verify) is not in the
	// target release of a selected node (details.word, details.node_id).
	RolloutWordNotInRelease = "rollout.word_not_in_release"
	// RolloutWrongState: the rollout is not in a state that allows this (details.state): only a running
	// rollout pauses, only a paused or halted one resumes, a finished one cannot be aborted, and only a
	// finished, halted or aborted one is reverted.
	RolloutWrongState = "rollout.wrong_state"
	// RolloutNodeBusy: another holder has the node's change lease (details.node_id, details.reason names
	// the holder): two changes never run on one machine at once.
	RolloutNodeBusy = "rollout.node_busy"
	// RolloutRevertNeedsReissue: a revert would move nodes back to a release older than the one they
	// accepted, which agents refuse (statement.rollback), and the publisher has not re-issued that
	// release's content under a higher sequence yet (details.sequence names it; the message gives the
	// lexicon-release renew command). No node was moved.
	RolloutRevertNeedsReissue = "rollout.revert_needs_reissue"
)

var areaRollout = Area{Name: "rollout", Reserved: true, Codes: []Spec{
	{RolloutNotFound, statusNotFound, Unchanged},
	{RolloutSelectorInvalid, statusBadRequest, Unchanged},
	{RolloutSelectorUnknownKey, statusBadRequest, Unchanged},
	{RolloutEmptySelection, statusUnprocessable, Unchanged},
	{RolloutStagesIncomplete, statusBadRequest, Unchanged},
	{RolloutWordNotInRelease, statusUnprocessable, Unchanged},
	{RolloutWrongState, statusConflict, Unchanged},
	{RolloutNodeBusy, statusConflict, Unchanged},
	{RolloutRevertNeedsReissue, statusConflict, Unchanged},
}}
