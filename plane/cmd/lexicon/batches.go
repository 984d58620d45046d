package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ExitBatchIncomplete is the exit status of jobs run --selector --wait and jobs batch show --wait for
// a batch that did not complete on every node it matched.
const ExitBatchIncomplete = 10

var batchIncomplete = cli.Exit{Status: ExitBatchIncomplete,
	Meaning: "the batch did not complete on every node: a job failed, was refused, lost or cancelled, a node lacked the word, or the batch stopped"}

// batchPage is how many jobs one request of the batch's pages carries.
const batchPage = 1000

// batchOne prints a batch for people: its counts, its outputs grouped, the nodes it skipped, and a page
// of its nodes side by side.
type batchOne struct {
	api.Batch
	Page *api.BatchJobList `json:"page,omitempty"`
}

func (b batchOne) Text(w io.Writer) {
	fmt.Fprintf(w, "batch %s: %s on %q (%d nodes), %s, by %s %s\n", b.ID, esc(b.Word), esc(b.Selector), b.Jobs, b.State, esc(b.CreatedBy), short(b.CreatedAt))
	bounds := "no bound"
	if b.MaxParallel > 0 {
		bounds = fmt.Sprintf("at most %d at once", b.MaxParallel)
	}
	budget := "no error budget"
	if b.ErrorBudget >= 0 {
		budget = fmt.Sprintf("error budget %d", b.ErrorBudget)
	}
	fmt.Fprintf(w, "  %s, %s\n", bounds, budget)
	c := b.Counts
	fmt.Fprintf(w, "  completed %d, failed %d, refused %d, lost %d, cancelled %d; running %d, queued %d, waiting %d\n",
		c.Completed, c.Failed, c.Refused, c.Lost, c.Cancelled, c.Running, c.Queued, c.Waiting)
	if b.StopReason != "" {
		fmt.Fprintf(w, "  stopped: %s\n", esc(b.StopReason))
	}
	for _, g := range b.Groups {
		what := "answered the same"
		if g.State != api.JobCompleted {
			what = fmt.Sprintf("ended %s %s", g.State, esc(g.Code))
		}
		fmt.Fprintf(w, "  %d nodes %s: %s  (--like %s)\n", g.Count, what, clip(esc(string(g.Output)), 200), g.Like)
	}
	if b.Skipped > 0 {
		fmt.Fprintf(w, "  %d nodes matched but were given no job:\n", b.Skipped)
		for _, k := range b.Skips {
			fmt.Fprintf(w, "    %-20s %s\n", esc(k.NodeName), esc(k.Reason))
		}
		if len(b.Skips) < b.Skipped {
			fmt.Fprintf(w, "    and %d more\n", b.Skipped-len(b.Skips))
		}
	}
	if b.Page != nil {
		for _, j := range b.Page.Jobs {
			nodeLine(w, j)
		}
		if b.Page.NextCursor != "" {
			fmt.Fprintf(w, "more: --cursor %s\n", b.Page.NextCursor)
		}
	}
}

// nodeLine is one node of a batch, side by side with the others: name, state, code and output.
func nodeLine(w io.Writer, j api.Job) {
	state := string(j.State)
	if j.Waiting {
		state = "waiting"
	}
	out := string(j.Output)
	if j.OutcomeCode != "" {
		out = j.OutcomeCode + ": " + j.OutcomeMessage
	}
	fmt.Fprintf(w, "%-24s %-10s %s\n", esc(node(j.NodeName, "")), state, clip(esc(out), 200))
}

// batchEnded is a batch whose every job ended; its exit status says whether it completed everywhere.
type batchEnded struct {
	batchOne
	OK bool `json:"ok"`
}

func (b batchEnded) ExitStatus() int {
	if b.OK {
		return 0
	}
	return ExitBatchIncomplete
}

// nodeEnded is the JSON line --wait -o json prints for each node as its job ends.
type nodeEnded struct {
	Batch    string          `json:"batch"`
	Node     string          `json:"node"`
	NodeID   string          `json:"node_id"`
	Job      string          `json:"job"`
	State    api.JobState    `json:"state"`
	Code     string          `json:"code,omitempty"`
	Message  string          `json:"message,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Duration int64           `json:"duration_ms,omitempty"`
}

// runBatch starts a batch of word on the nodes selector matches.
func runBatch(ctx context.Context, env *cli.Env, c *client, word, selector string, maxParallel, errorBudget int, p json.RawMessage, wait bool) (any, error) {
	if maxParallel < 0 {
		return nil, cli.UsageError("--max-parallel is 0 (no bound) or more, not %d", maxParallel)
	}
	if errorBudget < -1 {
		return nil, cli.UsageError("--error-budget is 0 or more (-1, the default: no budget), not %d", errorBudget)
	}
	req := api.BatchRequest{Word: word, Selector: selector, Params: p, MaxParallel: maxParallel}
	if errorBudget >= 0 {
		req.ErrorBudget = &errorBudget
	}
	var b batchOne
	if err := c.call(ctx, api.BatchesCreate, nil, nil, req, &b.Batch); err != nil {
		return nil, err
	}
	env.Progressf("batch %s queued: %s on %d nodes (%s)", b.ID, b.Word, b.Jobs, b.Selector)
	for _, k := range b.Skips {
		env.Progressf("  skipped %s: %s", esc(k.NodeName), esc(k.Reason))
	}
	if !wait {
		return b, nil
	}
	return followBatch(ctx, env, c, b.ID)
}

// followBatch polls a batch until every job ended, printing each node's ending as it comes: a line of
// text, or with -o json one JSON object a line. Pages are read only when the count of ended jobs
// moved, so a quiet batch of any size costs one request a poll.
func followBatch(ctx context.Context, env *cli.Env, c *client, id string) (any, error) {
	seen := map[string]bool{}
	lastEnded := -1
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	enc := json.NewEncoder(env.Stdout)
	for {
		var b batchOne
		if err := c.call(ctx, api.BatchesShow, []string{id}, nil, nil, &b.Batch); err != nil {
			return nil, err
		}
		ended := b.Jobs - b.Counts.Open()
		if ended != lastEnded {
			lastEnded = ended
			if err := eachBatchJob(ctx, c, id, func(j api.Job) {
				if !j.State.Final() || seen[j.ID] {
					return
				}
				seen[j.ID] = true
				if env.JSON {
					_ = enc.Encode(nodeEnded{Batch: id, Node: j.NodeName, NodeID: j.NodeID, Job: j.ID, State: j.State, Code: j.OutcomeCode,
						Message: j.OutcomeMessage, Output: j.Output, Duration: j.DurationMS})
					return
				}
				nodeLine(env.Stdout, j)
			}); err != nil {
				return nil, err
			}
		}
		if b.Counts.Open() == 0 {
			c := b.Counts
			return batchEnded{batchOne: b, OK: c.Completed == b.Jobs && b.Skipped == 0 && b.StopReason == ""}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.UsageInterrupted, "stopped following batch %s; it goes on", id)
		case <-tick.C:
		}
	}
}

// eachBatchJob calls fn for every job of a batch, a page at a time.
func eachBatchJob(ctx context.Context, c *client, id string, fn func(api.Job)) error {
	cursor := ""
	for {
		var page api.BatchJobList
		q := api.BatchJobsQuery{Limit: batchPage, Cursor: cursor}
		if err := c.call(ctx, api.BatchesJobs, []string{id}, q.Values(), nil, &page); err != nil {
			return err
		}
		for _, j := range page.Jobs {
			fn(j)
		}
		if cursor = page.NextCursor; cursor == "" {
			return nil
		}
	}
}

func jobsBatchShowCmd() *cli.Command {
	var state, like, cursor string
	var limit int
	var wait bool
	return ending(simple("jobs batch show", "ID [--state STATE] [--like JOB] [--limit N] [--cursor C] [--wait]",
		"show a batch: its nodes' states and outputs side by side, identical outputs grouped", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&state, "state", "", "only nodes whose job is in this state (queued, waiting, running, completed, failed, refused, lost, cancelled)")
			fs.StringVar(&like, "like", "", "only nodes that ended as this job did (a group's --like)")
			fs.IntVar(&limit, "limit", 100, "at most this many nodes")
			fs.StringVar(&cursor, "cursor", "", "the page after this cursor")
			fs.BoolVar(&wait, "wait", false, "follow the batch until every job ended, printing each node as it ends (with -o json one JSON line a node); the exit status says whether it completed everywhere")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			if wait {
				return followBatch(ctx, env, c, args[0])
			}
			var b batchOne
			if err := c.call(ctx, api.BatchesShow, args, nil, nil, &b.Batch); err != nil {
				return nil, err
			}
			var page api.BatchJobList
			q := api.BatchJobsQuery{State: state, Like: like, Limit: limit, Cursor: cursor}
			if err := c.call(ctx, api.BatchesJobs, args, q.Values(), nil, &page); err != nil {
				return nil, err
			}
			b.Page = &page
			return b, nil
		}), batchIncomplete)
}

type batchList struct{ api.BatchList }

func (l batchList) Text(w io.Writer) {
	if len(l.Batches) == 0 {
		fmt.Fprintln(w, "no batches")
	}
	for _, b := range l.Batches {
		stop := ""
		if b.StopReason != "" {
			stop = "  stopped"
		}
		fmt.Fprintf(w, "%s  %-18s %-24s %5d nodes  %s %s%s\n", b.ID, esc(b.Word), clip(esc(b.Selector), 24), b.Jobs, short(b.CreatedAt), esc(b.CreatedBy), stop)
	}
}

func jobsBatchListCmd() *cli.Command {
	var limit int
	var cursor string
	return simple("jobs batch list", "[--limit N] [--cursor C]", "list batches, newest first", 0, 0,
		func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "limit", 50, "at most this many")
			fs.StringVar(&cursor, "cursor", "", "the page after this cursor")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l batchList
			q := api.BatchesListQuery{Limit: limit, Cursor: cursor}
			return l, c.call(ctx, api.BatchesList, nil, q.Values(), nil, &l)
		})
}
