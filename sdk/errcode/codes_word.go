package errcode

// Codes of running a word. Unless a code says otherwise the word did not run, or ran in a fresh
// instance that is gone; a change word's own effects are described by its outcome, not by these codes.
// A word that was stopped part way (deadline, memory, output caps) may have used capabilities before it
// stopped: the result's capability list says which, and a change word's changes up to then stand.
const (
	// WordParamInvalid: params do not satisfy the word's schema (details.field). The word did not run.
	WordParamInvalid = "word.param_invalid"
	// WordOutputInvalid: the word's output does not satisfy its output schema. It ran; its output was
	// dropped.
	WordOutputInvalid = "word.output_invalid"
	// WordModuleInvalid: the bytes are not a word the host can run: not WebAssembly, not a WASI command,
	// or importing something other than wasi_snapshot_preview1 and lexicon_v1. Nothing ran.
	WordModuleInvalid = "word.module_invalid"
	// WordMemoryExceeded: the word tried to grow its memory past its limit (details.limit_mib) and was
	// stopped. Capabilities it used before that are in the result.
	WordMemoryExceeded = "word.memory_exceeded"
	// WordDeadlineExceeded: the word ran past its wall-time limit (details.limit_ms) and was stopped.
	// Capabilities it used before that are in the result.
	WordDeadlineExceeded = "word.deadline_exceeded"
	// WordOutputTooLarge: the word wrote more than its output cap to stdout (details.limit_bytes) and was
	// stopped; the output was dropped.
	WordOutputTooLarge = "word.output_too_large"
	// WordTranscriptTooLarge: the word wrote more than its transcript cap to stderr (details.limit_bytes)
	// and was stopped; the transcript kept is the first limit_bytes.
	WordTranscriptTooLarge = "word.transcript_too_large"
	// WordCrashed: the word trapped, panicked or exited non-zero without reporting a reason
	// (details.exit_code when it exited). Capabilities it used before that are in the result.
	WordCrashed = "word.crashed"
	// WordFailed: the word ran and reported that it failed without a code of its own, or with one in an
	// area the host reserves (details.reason then holds what it said). A word reporting its own code
	// ("disk_usage.root_missing") fails with that code instead.
	WordFailed = "word.failed"
	// WordCancelled: the caller cancelled the invocation and the word was stopped.
	WordCancelled = "word.cancelled"
	// WordSiblingStopped: the word was stopped part way, and did not complete, because another run of the
	// same word sharing its worker process ran past its deadline or was cancelled, and the host killed
	// that worker. The host does not retry it; capabilities it used before that are in the result.
	WordSiblingStopped = "word.sibling_stopped"
	// WordHostFailed: the host could not run the word (a worker process died or could not start); the
	// word may have used capabilities before that, as the result lists.
	WordHostFailed = "word.host_failed"
	// WordVersionMismatch: the job names a version or digest of the word this node does not run.
	WordVersionMismatch = "word.version_mismatch"
)

var areaWord = Area{Name: "word", Reserved: true, Codes: []Spec{
	{WordParamInvalid, statusUnprocessable, Unchanged},
	{WordOutputInvalid, statusBadRequest, MaybeChanged},
	{WordModuleInvalid, statusBadRequest, Unchanged},
	{WordMemoryExceeded, statusBadRequest, MaybeChanged},
	{WordDeadlineExceeded, statusBadRequest, MaybeChanged},
	{WordOutputTooLarge, statusBadRequest, MaybeChanged},
	{WordTranscriptTooLarge, statusBadRequest, MaybeChanged},
	{WordCrashed, statusBadRequest, MaybeChanged},
	{WordFailed, statusBadRequest, MaybeChanged},
	{WordCancelled, statusBadRequest, MaybeChanged},
	{WordSiblingStopped, statusBadRequest, MaybeChanged},
	{WordHostFailed, statusBadRequest, MaybeChanged},
	{WordVersionMismatch, statusBadRequest, Unchanged},
}}
