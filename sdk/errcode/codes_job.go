package errcode

// Codes of jobs. Returned as errors, nothing changed. JobLost, JobCancelled and JobMarkedFailed are
// also written as a finished job's outcome code, to say why it ended without a result from its node.
const (
	// JobNotFound: no job has that id, or (for a node reporting a result) it is not that node's job.
	JobNotFound = "job.not_found"
	// JobWordUnavailable: the node has not reported the word, or reports it with another digest than
	// the one the job was built for (details.word). Publish a release that contains the word and wait
	// for the node to load it, or pick a node that reports it.
	JobWordUnavailable = "job.word_unavailable"
	// JobNeedsNewerAgent: the node does not yet hold the word because its agent is below the current
	// release's floor; it is updating itself and takes the vocabulary once it runs a new enough
	// agent. Queue the job again then.
	JobNeedsNewerAgent = "job.needs_newer_agent"
	// JobWordMismatch: the node refused a job whose word, class and module do not agree with the
	// signed manifest the node holds for that word (details.field names what differs): the plane
	// authorised it as something else than what would run. Nothing ran.
	JobWordMismatch = "job.word_mismatch"
	// JobNotRunning: a result arrived for a job that is not running (details.state): it already finished,
	// was lost or was cancelled, and its result is dropped.
	JobNotRunning = "job.not_running"
	// JobNotQueued: only a queued job can be cancelled (details.state); a running one can be marked
	// failed.
	JobNotQueued = "job.not_queued"
	// JobFinished: the job already reached a final state (details.state), so it cannot be marked failed.
	JobFinished = "job.finished"
	// JobLost: outcome of a job whose node claimed idle while it ran, or that passed its claim budget.
	// A lost job is never run again.
	JobLost = "job.lost"
	// JobCancelled: outcome of a queued job cancelled by an operator, or by its node ending the pairing.
	JobCancelled = "job.cancelled"
	// JobMarkedFailed: outcome of a job an operator marked failed.
	JobMarkedFailed = "job.marked_failed"
	// JobBatchStopped: outcome of a batch's queued job cancelled because the batch stopped (its
	// failures passed its error budget; the batch's stop_reason says which).
	JobBatchStopped = "job.batch_stopped"
	// JobBatchNotFound: no batch has that id.
	JobBatchNotFound = "job.batch_not_found"
	// JobSelectorInvalid: a batch's selector is not one of its forms (all, name[,name...],
	// key=value[,key=value...]); details.field names it.
	JobSelectorInvalid = "job.selector_invalid"
	// JobSelectorEmpty: a batch's selector matched no active node; nothing was created.
	JobSelectorEmpty = "job.selector_empty"
	// JobBoundsInvalid: a batch's max-parallel or error budget is outside its range (details.field).
	JobBoundsInvalid = "job.bounds_invalid"
)

var areaJob = Area{Name: "job", Reserved: true, Codes: []Spec{
	{JobNotFound, statusNotFound, Unchanged},
	{JobWordUnavailable, statusUnprocessable, Unchanged},
	{JobNeedsNewerAgent, statusConflict, Unchanged},
	{JobWordMismatch, statusUnprocessable, Unchanged},
	{JobNotRunning, statusConflict, Unchanged},
	{JobNotQueued, statusConflict, Unchanged},
	{JobFinished, statusConflict, Unchanged},
	{JobLost, statusBadRequest, MaybeChanged},
	{JobCancelled, statusBadRequest, Unchanged},
	{JobMarkedFailed, statusBadRequest, MaybeChanged},
	{JobBatchStopped, statusBadRequest, Unchanged},
	{JobBatchNotFound, statusNotFound, Unchanged},
	{JobSelectorInvalid, statusBadRequest, Unchanged},
	{JobSelectorEmpty, statusUnprocessable, Unchanged},
	{JobBoundsInvalid, statusBadRequest, Unchanged},
}}
