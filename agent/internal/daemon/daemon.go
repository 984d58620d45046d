// Package daemon is the agent's main loop: keep the vocabulary current, long-poll the plane for a job,
// run it, report it, and never run a job twice.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/client"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/update"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Daemon is one running agent.
type Daemon struct {
	Client  *client.Client
	Vocab   *vocab.Vocabulary
	Runner  *runner.Runner
	Version string
	Log     *slog.Logger
	// Recipes reports the node's recipes and cases on every claim; nil reports none.
	Recipes Reporter
	// Update keeps the agent's own binary the one the statement pins; nil never updates (and reports
	// no update state).
	Update *update.Updater
	// Facts answers the host facts each claim reports, kept between refreshes; nil reports none.
	Facts func() *channel.HostFacts
	// Reach answers each word's capabilities as the node's policy narrows them, for each claim's
	// report; nil reports none.
	Reach func() []channel.WordReach
	// UpdateOff, when it answers true, turns updates off with the reason given (the node's policy).
	UpdateOff func() (bool, string)

	accepted int           // the claim size the plane accepted with the last claim
	held     string        // the digest of the report the plane says it holds: claims may then be brief
	retry    time.Duration // the first wait before a failed claim or report is sent again; 0 is a second
	watch    time.Duration // how often a running job's state is asked; 0 is watchEvery
}

// watchEvery is how often the agent asks the plane whether a running job is still wanted.
const watchEvery = 15 * time.Second

// Waker is a Reporter that wants to know when the vocabulary changed, to load new recipes at once.
type Waker interface{ Wake() }

// Reporter is what a claim says about the node's recipes and cases: the recipe loop.
type Reporter interface {
	Report() ([]channel.RecipeReport, []channel.CaseReport)
	// Delivered is given the cases a claim carried once the plane accepted it, so bodies and notes
	// stop riding.
	Delivered(cases []channel.CaseReport)
}

// Run works until ctx ends, until the plane says this node's pairing is over, or until a new agent
// binary is in place (update.ErrRestart: the caller exits for its supervisor to start it).
func (d *Daemon) Run(ctx context.Context) error {
	d.sync(ctx, channel.StatementRef{})
	if err := d.checkUpdate(ctx); err != nil {
		return err
	}
	first := d.retryBase()
	backoff := first
	// next is the plane's answer to the claim the last result carried (finish-and-claim), nil when
	// there was none: the loop then claims on its own.
	var next *channel.ClaimResponse
	for ctx.Err() == nil {
		var resp channel.ClaimResponse
		if next != nil {
			resp, next = *next, nil
		} else {
			full, req := d.claim()
			var err error
			resp, err = d.Client.Claim(ctx, req)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				if ended(err) {
					return errcode.Wrap(err, errcode.AgentNotJoined, "the plane no longer serves this node; join again with lexicon-agent join")
				}
				wait := backoff + time.Duration(rand.Int64N(int64(backoff)))
				d.Log.Warn("claim failed; retrying", "err", err, "in", wait.Round(time.Millisecond))
				if !sleep(ctx, wait) {
					break
				}
				backoff = min(backoff*2, 30*first)
				continue
			}
			backoff = first
			d.answered(full, resp)
		}
		if d.Update != nil {
			d.Update.Claimed() // a claim round trip with the plane: one of the two things a trial waits for
		}
		if resp.Statement.Digest != "" && resp.Statement.Digest != d.Vocab.Ref().Digest {
			d.sync(ctx, resp.Statement)
		}
		if resp.Job != nil {
			next = d.runJob(ctx, *resp.Job)
		}
		// Between jobs: the job just handed out has been run and reported, and no claim is out, so
		// the plane cannot hand a job to a process about to swap. A result whose claim was answered
		// with the next job is not between jobs: that job runs first.
		if next != nil && next.Job != nil {
			continue
		}
		if err := d.checkUpdate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// answered takes in the plane's answer to a claim whose full form was full: the size it accepted,
// the cases it took, and whether it holds the report (so the next claims may be brief).
func (d *Daemon) answered(full channel.ClaimRequest, resp channel.ClaimResponse) {
	d.accepted = max(full.ClaimSize, channel.DefaultBodyCap)
	if d.Recipes != nil && len(full.Cases) > 0 {
		d.Recipes.Delivered(full.Cases)
	}
	d.held = resp.ReportDigest
	if resp.SendReport {
		d.held = ""
	}
}

// checkUpdate compares the running binary with the pin of the newest verified statement and swaps
// when they differ; update.ErrRestart once a new binary is in place.
func (d *Daemon) checkUpdate(ctx context.Context) error {
	if d.Update == nil {
		return nil
	}
	off, why := false, ""
	if d.UpdateOff != nil {
		off, why = d.UpdateOff()
	}
	err := d.Update.Check(ctx, teller{d}, d.Vocab.Offer(), off, why)
	if err != nil && !errors.Is(err, update.ErrRestart) {
		if ctx.Err() != nil {
			return nil
		}
		d.Log.Warn("agent update failed; trying again later", "err", err)
		return nil
	}
	return err
}

// tellWithin bounds the claim that tells the plane an update is probing: a plane that does not answer
// must not hold up the swap, which holds the job lock.
const tellWithin = 10 * time.Second

// teller is the client as the updater uses it: it fetches the agent, and tells the plane mid-swap
// where the update stands (update.Teller).
type teller struct{ d *Daemon }

func (t teller) Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error) {
	return t.d.Client.Artifact(ctx, query, limit)
}

// Tell sends the node's claim with r as its update, as a busy claim: the plane records the report and
// answers at once, with no job, and loses none (only an idle claim counts the plane's running job
// lost). A swap is between jobs, so no job is running, and none may be handed to a process about to
// exit. A failed tell is only logged: the next claim reports the update as it then stands.
func (t teller) Tell(ctx context.Context, r *channel.UpdateReport) {
	d := t.d
	r.NeedsNewerAgent = d.Vocab.BelowFloor()
	full, req := d.claimWith(r)
	full.Idle, req.Idle = false, false
	ctx, cancel := context.WithTimeout(ctx, tellWithin)
	defer cancel()
	resp, err := d.Client.Claim(ctx, req)
	if err != nil {
		d.Log.Warn("could not tell the plane the update is probing", "err", err)
		return
	}
	d.answered(full, resp)
	if resp.Job != nil {
		// A plane answers a busy claim with no job; one that did anyway is not run here (the node is
		// about to swap), and the plane counts it lost at the next idle claim: never run twice.
		d.Log.Warn("the plane handed a job to a busy claim; not run", "job", resp.Job.ID)
	}
}

// sync brings the vocabulary up to the plane's statement and says what it refused.
func (d *Daemon) sync(ctx context.Context, want channel.StatementRef) {
	if err := d.Vocab.Sync(ctx, d.Client, want); err != nil {
		if errcode.Has(err, errcode.AgentNeedsNewerAgent) {
			d.Log.Warn("statement held back until this agent updates", "sequence", want.Sequence, "floor", d.Vocab.BelowFloor(), "version", d.Version)
			return
		}
		d.Log.Warn("the plane's statement was refused; keeping the vocabulary this node had", "sequence", want.Sequence, "err", err)
		return
	}
	d.Log.Info("vocabulary loaded", "sequence", d.Vocab.Ref().Sequence, "words", len(d.Vocab.Report()))
	if d.Runner != nil {
		// Compiled in the background now, so the first job for a word loads it from the cache.
		go d.Runner.Warm(ctx)
	}
	if w, ok := d.Recipes.(Waker); ok {
		w.Wake()
	}
	if why := d.Vocab.Untrusted(); why != "" {
		d.Log.Warn("words left out of the vocabulary", "reason", why)
	}
}

// claim builds the next claim: full, with its report, and the form to send, which leaves the report
// out (Brief) while the plane holds one of the same digest.
func (d *Daemon) claim() (full, send channel.ClaimRequest) {
	var u *channel.UpdateReport
	if d.Update != nil {
		u = d.Update.Report(d.Vocab.BelowFloor())
	}
	return d.claimWith(u)
}

// claimWith is claim with u as the update's report: the updater, mid-swap, gives its own (its lock is
// held, so Report would wait on it).
func (d *Daemon) claimWith(u *channel.UpdateReport) (full, send channel.ClaimRequest) {
	req := channel.ClaimRequest{
		Idle: true, Version: d.Version, Statement: d.Vocab.Ref(), Vocabulary: d.Vocab.Report(),
		Untrusted: d.Vocab.Untrusted(), Recipes: []channel.RecipeReport{}, Checkpoints: d.Vocab.Checkpoints(),
		Update: u,
	}
	if d.Recipes != nil {
		req.Recipes, req.Cases = d.Recipes.Report()
	}
	if d.Facts != nil {
		req.Facts = d.Facts()
	}
	if d.Reach != nil {
		req.Reach = d.Reach()
	}
	if n := size(req); n > channel.DefaultBodyCap/2 {
		req.ClaimSize = min(2*n, channel.MaxClaimCap)
	}
	// The plane accepts a claim up to the size the last one announced. A case body that would not fit
	// rides on a later claim, after this one has announced the room it needs.
	limit := max(d.accepted, channel.DefaultBodyCap)
	for i := len(req.Cases) - 1; i >= 0 && size(req) > limit; i-- {
		req.Cases[i].Body = nil
	}
	req.ReportDigest = req.Digest()
	if d.held == req.ReportDigest {
		return req, req.Brief()
	}
	return req, req
}

func size(req channel.ClaimRequest) int {
	b, _ := json.Marshal(req)
	return len(b)
}

// runJob runs a job and reports it, with the node's next claim in the same request (finish-and-claim);
// it returns the plane's answer to that claim, or nil if there is none (the report failed, or the
// plane does not answer claims on results). The report is retried while the plane is unreachable or
// says it cannot take it yet; a job is never run again, whatever happens to its report.
func (d *Daemon) runJob(ctx context.Context, job channel.Job) *channel.ClaimResponse {
	d.Log.Info("job started", "job", job.ID, "word", job.Word)
	jobCtx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		d.watchJob(jobCtx, job.ID, stop)
	}()
	res := d.Runner.Run(jobCtx, job)
	stop()
	<-watched
	d.Log.Info("job ended", "job", job.ID, "word", job.Word, "outcome", res.Outcome, "code", res.Code, "duration_ms", res.DurationMS)
	for attempt := 0; attempt < 6; attempt++ {
		full, claim := d.claim()
		res.Claim = &claim
		out, err := d.Client.Result(ctx, res)
		if err == nil || !transient(err) {
			if err != nil {
				d.Log.Warn("the plane refused the result", "job", job.ID, "err", err)
				return nil
			}
			if out.Claim != nil {
				d.answered(full, *out.Claim)
			}
			return out.Claim
		}
		if !sleep(ctx, time.Duration(1<<attempt)*d.retryBase()) {
			return nil
		}
	}
	d.Log.Error("could not report a result; the plane will count the job lost", "job", job.ID)
	return nil
}

// watchJob asks the plane, while a job runs, whether it still wants it, and calls stop once the plane
// has ended it (an operator marked it failed, or it was counted lost): the word is stopped rather than
// left to run out its time for a result nobody will take. The plane can only end work this way, never
// start any. An unanswered question changes nothing.
func (d *Daemon) watchJob(ctx context.Context, id string, stop context.CancelFunc) {
	every := d.watch
	if every == 0 {
		every = watchEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := d.Client.JobStatus(ctx, id)
		if errcode.Has(err, errcode.JobNotFound) || err == nil && st.State != channel.JobRunning {
			d.Log.Warn("the plane ended the job; stopping it", "job", id, "state", st.State, "err", err)
			stop()
			return
		}
	}
}

func (d *Daemon) retryBase() time.Duration {
	if d.retry == 0 {
		return time.Second
	}
	return d.retry
}

// transient reports whether a report that failed with err may be taken if sent again: the plane was
// out of reach, its database failed or was busy, or it asked this node to slow down. Anything else
// is the plane's considered answer.
func transient(err error) bool {
	for _, code := range []string{errcode.PlaneUnreachable, errcode.StoreUnavailable, errcode.StoreBusy, errcode.RequestRateLimited} {
		if errcode.Has(err, code) {
			return true
		}
	}
	return false
}

// ended reports whether err means the plane ended this node's pairing.
func ended(err error) bool {
	return errcode.Has(err, errcode.NodeNotActive) || errcode.Has(err, errcode.ChannelSignatureInvalid)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
