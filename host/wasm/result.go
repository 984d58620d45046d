package wasm

import (
	"encoding/json"
	"strings"

	"github.com/lexicon-fleet/lexicon/host/wasm/internal/caps"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Outcome is how an invocation ended: one of the final states of a job that a node brings about
// itself, spelled as the agent channel spells a job's state (the node reports it as its job's outcome).
type Outcome = channel.JobState

const (
	// Completed: the word ran and its output satisfies its schema.
	Completed = channel.JobCompleted
	// Failed: the word ran, or started, and did not complete (Code says why).
	Failed = channel.JobFailed
	// Refused: the word did not run (params invalid; the agent's policy uses it too).
	Refused = channel.JobRefused
)

// Call is one capability call of an invocation, allowed or not, with its arguments.
type Call = caps.Call

// Result is the envelope of one invocation, the same for words and recipes:
//
//	{"outcome": "completed|failed|refused", "code", "message", "details", "output", "transcript",
//	 "capabilities": [{"cap", "args", "allowed"}], "duration_ms"}
type Result struct {
	Outcome      Outcome         `json:"outcome"`
	Code         string          `json:"code"`
	Message      string          `json:"message"`
	Details      map[string]any  `json:"details,omitempty"`
	Output       json.RawMessage `json:"output"`
	Transcript   string          `json:"transcript"`
	Capabilities []Call          `json:"capabilities"`
	// DurationMS is how long the word ran, from the start of its instance to its end (0 when it did not
	// run); starting a worker or compiling is the host's time, not the word's.
	DurationMS int64 `json:"duration_ms"`
}

// Err returns the result's failure as a coded error, or nil when it completed.
func (r *Result) Err() error {
	if r.Outcome == Completed {
		return nil
	}
	e := errcode.New(r.Code, "%s", r.Message)
	e.Details = r.Details
	return e
}

func (r *Result) fail(outcome Outcome, err error) *Result {
	e := errcode.From(err, errcode.WordHostFailed)
	r.Outcome, r.Code, r.Message, r.Details = outcome, e.Code, e.Message, e.Details
	r.Output = nil
	return r
}

// validCode reports whether code has an error code's shape, `^[a-z][a-z0-9_]{0,40}\.[a-z][a-z0-9_]{0,60}$`.
// A loop, not a package-level regexp: a bounded repeat compiles to one state per repetition, at every
// start of the binary, each wasm worker included (RATIONALE.md, "Footprint").
func validCode(code string) bool {
	area, name, ok := strings.Cut(code, ".")
	return ok && codePart(area, 41) && codePart(name, 61)
}

// codePart: `[a-z][a-z0-9_]{0,max-1}`.
func codePart(s string, max int) bool {
	if len(s) == 0 || len(s) > max || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// wordFailure reads the failure a word reported on stdout: {"error": {"code", "message", "details"}}.
func wordFailure(stdout []byte) (*errcode.Error, bool) {
	var env struct {
		Error *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(stdout, &env) != nil || env.Error == nil {
		return nil, false
	}
	code, msg := env.Error.Code, truncateRunes(env.Error.Message, 1000)
	if code == errcode.WordFailed {
		return errcode.New(errcode.WordFailed, "%s", msg), true
	}
	// A code in an area Lexicon reserves (errcode.ReservedArea) would pass the word off as the host, the
	// agent or the plane; the word may pass on capability.* and report its own areas.
	if !validCode(code) || errcode.Reserved(code) {
		return errcode.New(errcode.WordFailed, "%s", msg).With(errcode.DetailReason, truncateRunes(code, 100)), true
	}
	e := errcode.New(code, "%s", msg)
	if len(env.Error.Details) <= 32 {
		e.Details = env.Error.Details
	}
	return e, true
}

// failureOutput is the output a failing word reported beside its error (sdk/word's FailWithOutput),
// when it satisfies the manifest's output schema; nil otherwise.
func failureOutput(m *manifest.Manifest, stdout []byte) json.RawMessage {
	var env struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(stdout, &env) != nil || len(env.Output) == 0 || string(env.Output) == "null" {
		return nil
	}
	if m.CheckOutput(env.Output) != nil {
		return nil
	}
	return env.Output
}

func truncateRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utfStart(s[n]) {
		n--
	}
	return s[:n]
}

func utfStart(b byte) bool { return b&0xC0 != 0x80 }

// panicLine finds what a crashed Go word said on its way down ("panic: ..." or "fatal error: ...").
func panicLine(transcript string) string {
	for line := range strings.SplitSeq(transcript, "\n") {
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return truncateRunes(line, 300)
		}
	}
	return ""
}
