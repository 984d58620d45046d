// Package runner runs one job on the node: it checks the job against the node's vocabulary and policy,
// runs the word through the word host under the job lock, and redacts what leaves the machine.
package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/agent/redact"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Runner runs jobs. It is safe for concurrent use; the job lock serialises the jobs themselves.
type Runner struct {
	Host       *wasm.Host
	Vocab      *vocab.Vocabulary
	PolicyFile string
	LockFile   string
	Log        *slog.Logger
	// Metrics counts the words run and their capability calls (nil: not counted).
	Metrics *metrics.Agent

	mu     sync.Mutex
	loaded map[string]*wasm.Module // by module and manifest digest
}

// Run runs job and returns the result to report. It never returns an error: every way a job can end
// is an outcome with a code.
func (r *Runner) Run(ctx context.Context, job channel.Job) channel.ResultRequest {
	start := time.Now()
	res := r.run(ctx, job)
	res.JobID = job.ID
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(start).Milliseconds()
	}
	return res
}

func refused(err error) channel.ResultRequest {
	e := errcode.From(err, errcode.InternalError)
	return channel.ResultRequest{Outcome: channel.OutcomeRefused, Code: e.Code, Message: e.Message}
}

// run runs job; a job refused before its word ran is counted here, one that ran by Prepared.Run.
func (r *Runner) run(ctx context.Context, job channel.Job) channel.ResultRequest {
	refused := func(err error) channel.ResultRequest {
		name := job.Word
		if _, ok := r.Vocab.Word(name); !ok {
			name = metrics.OtherWord // the plane's word, not one this node pins: no label of its own
		}
		r.Metrics.WordRun(name, string(channel.OutcomeRefused), 0)
		return refused(err)
	}
	w, ok := r.Vocab.Word(job.Word)
	if !ok {
		return refused(errcode.New(errcode.JobWordUnavailable, "this node's vocabulary has no word %q", job.Word))
	}
	if job.Digest != "" && job.Digest != w.Module {
		return refused(errcode.New(errcode.WordVersionMismatch, "the job is for %s %s, this node runs %s", job.Word, job.Digest, w.Module))
	}
	if err := agree(job, w); err != nil {
		return refused(err)
	}
	p, err := r.prepare(ctx, w)
	if err != nil {
		return refused(err)
	}
	lock, err := r.acquire(ctx, job.Deadline)
	if err != nil {
		return refused(err)
	}
	defer lock.Release()
	return p.RunWith(ctx, job.Params, wasm.RunOptions{Grant: job.Grant})
}

// agree refuses a job unless its word, the manifest the node holds for that word and the module it
// would run all agree, and the job's class (what the plane authorised it as) is the manifest's. Two
// words may share one module, so a job built against one of them must never run as the other.
func agree(job channel.Job, w vocab.Word) error {
	mismatch := func(field, format string, args ...any) error {
		return errcode.New(errcode.JobWordMismatch, format, args...).With(errcode.DetailField, field).With(errcode.DetailWord, job.Word)
	}
	switch {
	case w.Manifest.Name != job.Word:
		return mismatch("word", "the job is for %s, the manifest this node holds for it describes %s", job.Word, w.Manifest.Name)
	case w.Manifest.Module.SHA256 != w.Module:
		return mismatch("module", "the manifest of %s pins module %s, this node would run %s", job.Word, w.Manifest.Module.SHA256, w.Module)
	case job.Class != "" && job.Class != string(w.Manifest.Class):
		return mismatch("class", "the job was authorised as a %s word, %s is %s by its signed manifest", job.Class, job.Word, w.Manifest.Class)
	}
	return nil
}

// Prepared is a word checked against the node's vocabulary and policy and loaded into the host, ready
// to run under the job lock.
type Prepared struct {
	r    *Runner
	Word vocab.Word
	mod  *wasm.Module
}

// Prepare readies the word name as Run would for a job: it must be in the vocabulary
// (job.word_unavailable) and its class, from its signed manifest, accepted by the node's policy
// (policy.refused, policy.untrusted). Repairs go through here, so a recipe can run nothing a job could
// not.
func (r *Runner) Prepare(ctx context.Context, name string) (*Prepared, error) {
	w, ok := r.Vocab.Word(name)
	if !ok {
		return nil, errcode.New(errcode.JobWordUnavailable, "this node's vocabulary has no word %q", name)
	}
	return r.prepare(ctx, w)
}

func (r *Runner) prepare(ctx context.Context, w vocab.Word) (*Prepared, error) {
	// An expired statement freezes the node: nothing it pins runs until a renewed one arrives, jobs and
	// repairs alike (checks still run; they change nothing).
	if err := r.Vocab.Frozen(); err != nil {
		return nil, err
	}
	// The class that counts is the one in the word's signed manifest, not the one the job names.
	if err := policy.Load(r.PolicyFile).Check(w.Manifest); err != nil {
		return nil, err
	}
	mod, err := r.Load(ctx, w)
	if err != nil {
		return nil, err
	}
	return &Prepared{r: r, Word: w, mod: mod}, nil
}

// Run runs the prepared word with params; the caller holds the job lock. The result is redacted and
// never nil.
func (p *Prepared) Run(ctx context.Context, params json.RawMessage) channel.ResultRequest {
	return p.RunWith(ctx, params, wasm.RunOptions{})
}

// RunWith is Run with what the host holds for the run and the word never sees: a job's backup grant.
func (p *Prepared) RunWith(ctx context.Context, params json.RawMessage, opts wasm.RunOptions) channel.ResultRequest {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	res := p.r.report(p.mod.RunWith(ctx, params, opts))
	p.r.Metrics.WordRun(p.Word.Manifest.Name, string(res.Outcome), time.Duration(res.DurationMS)*time.Millisecond)
	for _, c := range res.Capabilities {
		p.r.Metrics.CapabilityCall(c.Cap, c.Allowed)
	}
	return res
}

// acquire waits for the job lock (a repair may hold it) until the job's deadline.
func (r *Runner) acquire(ctx context.Context, deadline time.Time) (*joblock.Lock, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		lock, err := joblock.TryAcquire(r.LockFile)
		if !errcode.Has(err, errcode.AgentBusy) {
			return lock, err
		}
		if !deadline.IsZero() && time.Until(deadline) < time.Minute {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.AgentBusy, "stopped waiting for the job lock")
		case <-tick.C:
		}
	}
}

// Load loads a verified module, word or recipe, into the host once per module and manifest: a new
// statement may pin the same bytes under a changed manifest (other capability bounds), and the loaded
// module must enforce the manifest pinned now. Its bytes are re-hashed from the cache first.
func (r *Runner) Load(ctx context.Context, w vocab.Word) (*wasm.Module, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded == nil {
		r.loaded = map[string]*wasm.Module{}
	}
	key := w.Module + "/" + w.ManifestDigest
	if m, ok := r.loaded[key]; ok {
		return m, nil
	}
	// The bytes are read from the store whenever a worker needs them, not held: workers exit when
	// idle, and every loaded word's bytes would otherwise stay in the agent's memory for good.
	m, err := r.Host.LoadFrom(ctx, w.Manifest, w.Module, func() ([]byte, error) { return r.Vocab.HostModule(w) })
	if err != nil {
		return nil, err
	}
	r.loaded[key] = m
	return m, nil
}

// Warm puts every word and recipe of the vocabulary in the host's compile cache, one after another,
// so that the first job after a new statement loads its word from the cache instead of compiling it.
// A module that cannot be warmed is logged and left for its first run to report.
func (r *Runner) Warm(ctx context.Context) {
	if r.Host == nil {
		return
	}
	var mods []vocab.Word
	for _, w := range r.Vocab.Report() {
		if vw, ok := r.Vocab.Word(w.Name); ok {
			mods = append(mods, vw)
		}
	}
	mods = append(mods, r.Vocab.Recipes()...)
	seen := map[string]bool{}
	failed := 0
	for _, w := range mods {
		if ctx.Err() != nil {
			return
		}
		if seen[w.Module] {
			continue
		}
		seen[w.Module] = true
		err := r.Host.Warm(ctx, w.Manifest, w.Module, func() ([]byte, error) { return r.Vocab.HostModule(w) })
		if err != nil && ctx.Err() == nil {
			failed++
			if r.Log != nil {
				r.Log.Warn("cannot put a module in the compile cache", "module", w.Manifest.Name, "sha256", w.Module, "err", err)
			}
		}
	}
	// Every module was read and hashed to be sent: give that garbage back now, not whenever the
	// scavenger gets to it, since the agent then idles for hours.
	debug.FreeOSMemory()
	if r.Log != nil {
		r.Log.Info("vocabulary in the compile cache", "modules", len(seen), "failed", failed)
	}
}

// FreeMemory gives what loading and running modules left behind back to the OS now, not whenever the
// background scavenger gets to it: a module is read (megabytes) each time a worker needs it, and the
// agent then idles for minutes. It costs one collection of the agent's small heap.
func (r *Runner) FreeMemory() { debug.FreeOSMemory() }

// report turns the host's result into the channel's, redacting output, transcript and audit arguments
// on the node, before anything leaves it.
func (r *Runner) report(res *wasm.Result) channel.ResultRequest {
	out := channel.ResultRequest{
		Outcome: res.Outcome, Code: res.Code, Message: res.Message, DurationMS: res.DurationMS,
	}
	out.Message, _ = redact.Text(out.Message)
	out.Transcript, _ = redact.Text(res.Transcript)
	if len(res.Output) > 0 {
		red, counts, err := redact.JSON(res.Output)
		if err != nil {
			return channel.ResultRequest{Outcome: channel.OutcomeFailed, Code: errcode.WordOutputInvalid, Message: "output could not be redacted, so it was dropped"}
		}
		out.Output = red
		if len(counts) > 0 && r.Log != nil {
			r.Log.Info("output redacted", "counts", counts)
		}
	}
	for _, c := range res.Capabilities {
		args := c.Args
		if len(args) > 0 {
			if red, _, err := redact.JSON(args); err == nil {
				args = red
			} else {
				args = nil
			}
		}
		out.Capabilities = append(out.Capabilities, channel.Capability{Cap: c.Cap, Args: args, Allowed: c.Allowed})
	}
	return out
}
