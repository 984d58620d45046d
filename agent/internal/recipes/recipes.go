// Package recipes is the agent's self-healing loop. It runs every recipe of the verified vocabulary on
// the recipe's own interval, repairs what the recipe's repair word can, under the job lock and a fixed
// budget, and opens a case for a person when the budget is spent. It runs on every agent, paired with a
// plane or not, and nothing on the wire can start, stop or arm a recipe: they come only from the signed
// statement, and an operator holds one with a marker file.
//
// The rules, for one recipe (see agent/RATIONALE.md for why):
//
//   - A check answers pass, fail or unknown. Unknown never repairs and never counts.
//   - A repair runs only after two consecutive failing ticks. A failing run gets at most three attempts,
//     waiting 0, 10 and 30 minutes (each from the attempt before), each due on the first tick at or
//     after its wait.
//   - The first failing tick after the third attempt escalates: it opens one case for the recipe, and
//     further failing ticks are notes on it. A recipe without a repair escalates on its second failing
//     tick. The case closes only when the check passes.
//   - Repairs take the job lock without waiting; a tick that cannot is ledgered as busy and the attempt
//     waits for the next tick.
//   - hold/<recipe> in the config folder holds a recipe, if hold/ is root's and writable by root alone.
//   - In report-only mode (a compiled constant) an attempt is ledgered and runs nothing, and every rule
//     counts exactly as if it had run.
//   - Everything is ledgered in <state>/recipes/ledger/<recipe>.jsonl, an attempt before it starts, and
//     the state is a fold of the ledger, so a repair that kills the agent is a counted, interrupted
//     attempt when it starts again.
package recipes

import (
	"log/slog"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// ReportOnly is compiled in, so changing it takes a release: in report-only mode an attempt is ledgered
// and runs nothing, and every rule counts exactly as if it had run.
const ReportOnly = false

// Modes a case body names.
const (
	ModeRepair     = "repair"
	ModeReportOnly = "report-only"
	ModeCheckOnly  = "check-only" // the recipe has no repair
)

// failingTicks is how many consecutive failing ticks a repair waits for.
const failingTicks = 2

// attemptWaits are the waits before each attempt of a failing run, the first from the tick that met
// the two-tick rule, each later one from the attempt before. Their number is the budget.
var attemptWaits = [...]time.Duration{0, 10 * time.Minute, 30 * time.Minute}

// maxWait bounds the loop's sleep, so the recipes of a new statement start within a minute even when
// nothing wakes the loop (the daemon does, when it loads one).
const maxWait = time.Minute

// HostReportWord is the word whose output a case body carries, when the vocabulary has it.
const HostReportWord = "host_report"

// Config is what the loop works with.
type Config struct {
	Vocab *vocab.Vocabulary
	// Runner loads checks and prepares and runs repair words, exactly as for jobs (vocabulary, policy,
	// redaction). Its LockFile is the job lock.
	Runner *runner.Runner
	// Policy is the node's policy as the agent loaded it at start, the one whose names the word host
	// resolves @self to: scope site and a check's declaration read their names from it, so a recipe
	// never sees names the host does not.
	Policy *policy.Policy
	// Dir is the loop's state folder (<state>/recipes): ledger/, cases/ and case_seq.
	Dir string
	// ConfigDir is the agent's config folder, where hold/<recipe> markers live; "" means no holds.
	ConfigDir string
	// AgentDigest is the sha256 of the running agent binary, for scope release; "" fits no release.
	AgentDigest string
	// Platform is this machine's "<os>-<arch>"; "" is the running one's.
	Platform string
	Clock    Clock
	Log      *slog.Logger
	// Metrics counts verdicts and the checks' capability calls (nil: not counted).
	Metrics *metrics.Agent
	// AfterChecks is called after a step that checked at least one recipe (nil: nothing). The agent
	// gives the step's garbage back to the OS there (debug.FreeOSMemory): a check reads its module
	// (megabytes) to send it to a worker, and the agent then idles for minutes holding that memory,
	// which the background scavenger returns only slowly (host/RATIONALE.md, "Footprint").
	AfterChecks func()
}

// Loop runs the recipes. Report and Delivered are safe to call from any goroutine; Run (or Step) from
// one at a time.
type Loop struct {
	cfg        Config
	clock      Clock
	log        *slog.Logger
	reportOnly bool
	holdOwner  uint32 // who must own hold/: root; tests on a machine where they are not root change it
	ledgers    string
	cases      caseStore
	onStep     func() // tests: called after every step of Run
	wake       chan struct{}

	// Owned by the goroutine that steps.
	recipes map[string]*recipe
	ref     channel.StatementRef
	synced  bool

	mu      sync.Mutex
	reports map[string]channel.RecipeReport
	files   map[string]*caseFile
}

// recipe is one recipe as the loop runs it.
type recipe struct {
	name   string
	def    vocab.Recipe
	ledger ledger
	st     runState
	state  string // channel.RecipeActive, RecipeNotApplicable or RecipeHeld
	reason string // why it is not applicable, or held
	next   time.Time

	verdict, detail string // what the last tick saw, ledgered or not
	checkedAt       time.Time
}
