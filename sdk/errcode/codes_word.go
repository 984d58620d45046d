package errcode

// Codes of running a word. Unless a code says otherwise the word did not run, or ran in a fresh
// instance that is gone; a change word's own effects are described by its outcome, not by these codes.
const (
	// WordParamInvalid: params do not satisfy the word's schema (details.field). The word did not run.
	WordParamInvalid = "word.param_invalid"
	// WordOutputInvalid: the word's output does not satisfy its output schema. It ran; its output was
	// dropped.
	WordOutputInvalid = "word.output_invalid"
)
