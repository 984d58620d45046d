package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Exit statuses of jobs run --wait and jobs watch for a job that ended without completing (see the
// package doc), so that `lexicon jobs run --wait ... && next` goes on only after a success.
const (
	ExitJobFailed    = 4
	ExitJobRefused   = 5
	ExitJobLost      = 6
	ExitJobCancelled = 7
)

// jobExits are the statuses of jobs run --wait and jobs watch, as their help tells them. Params the
// plane refuses (word.param_invalid) fail jobs run before anything is queued, with status 1; a
// capability the node denies a running word fails the word, and so the job (4).
var jobExits = []cli.Exit{
	{Status: ExitJobFailed, Meaning: "the job failed: its word ran and failed (a capability denied included), or an operator failed it"},
	{Status: ExitJobRefused, Meaning: "the node did not run the job's word: its policy, or its own check of the word or params, refused it"},
	{Status: ExitJobLost, Meaning: "the job was lost: handed out and never reported"},
	{Status: ExitJobCancelled, Meaning: "the job was cancelled before it ran"},
}

type jobOne struct{ api.Job }

// node names the job's node for people: its name and id, or its id when the plane knows no name.
func node(name, id string) string {
	if name == "" {
		return id
	}
	return name + " (" + id + ")"
}

func (j jobOne) Text(w io.Writer) {
	fmt.Fprintf(w, "job %s: %s on node %s, %s\n", j.ID, j.Word, node(j.NodeName, j.NodeID), j.State)
	if j.OutcomeCode != "" || j.OutcomeMessage != "" {
		fmt.Fprintf(w, "%s: %s\n", j.OutcomeCode, j.OutcomeMessage)
	}
	if len(j.Output) > 0 {
		var pretty any
		if json.Unmarshal(j.Output, &pretty) == nil {
			b, _ := json.MarshalIndent(pretty, "", "  ")
			fmt.Fprintf(w, "%s\n", b)
		}
	}
	if j.Transcript != "" {
		fmt.Fprintf(w, "transcript:\n%s\n", j.Transcript)
	}
}

// params turns --param k=v (a string) and k:=JSON (any JSON value) into a params object.
func params(pairs []string, file string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if file != "" {
		if err := readJSONFile(file, &obj); err != nil {
			return nil, err
		}
	}
	for _, p := range pairs {
		if k, v, ok := strings.Cut(p, ":="); ok {
			if !json.Valid([]byte(v)) {
				return nil, cli.UsageError("--param %s:= needs JSON, got %q", k, v)
			}
			obj[k] = json.RawMessage(v)
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, cli.UsageError("--param takes key=string or key:=JSON, not %q", p)
		}
		b, _ := json.Marshal(v)
		obj[k] = b
	}
	return json.Marshal(obj)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func jobsRunCmd() *cli.Command {
	var pairs multi
	var file, selector string
	var wait, exclusive bool
	var maxParallel, errorBudget int
	return ending(simple("jobs run", "NODE WORD | WORD --selector SEL [--max-parallel N] [--error-budget K] [--param k=v | --param k:=JSON]... [--params-file F] [--exclusive] [--wait]",
		"queue a word on a node, or on every node a selector matches as one batch; the plane checks its params before queueing it, the node again before running it", 1, 2,
		func(fs *flag.FlagSet) {
			fs.Var(&pairs, "param", "a param: key=string, or key:=JSON for numbers, booleans and objects (repeatable)")
			fs.StringVar(&file, "params-file", "", "a JSON object of params")
			fs.StringVar(&selector, "selector", "", "run on every active node it matches, one job a node, as one batch: all, names (web-1,web-2) or labels (role=web,zone=a)")
			fs.IntVar(&maxParallel, "max-parallel", 0, "with --selector: at most this many of the batch's jobs at once (0: no bound)")
			fs.IntVar(&errorBudget, "error-budget", -1, "with --selector: stop the batch, cancelling its queued jobs, after more than this many failures (-1: never)")
			fs.BoolVar(&exclusive, "exclusive", false, "hold the node's change lease for the job: refused while a rollout or another exclusive job changes the node")
			fs.BoolVar(&wait, "wait", false, "wait for the job (or every job of the batch, each node printed as it ends; with -o json one JSON line a node) to finish; the exit status says how it ended")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			switch {
			case selector != "" && len(args) != 1:
				return nil, cli.UsageError("with --selector, give only the WORD: the selector names the nodes")
			case selector == "" && len(args) != 2:
				return nil, cli.UsageError("give NODE WORD, or WORD --selector SEL")
			case selector != "" && exclusive:
				return nil, cli.UsageError("--exclusive takes one node; a batch does not hold change leases (use a rollout)")
			case selector == "" && (maxParallel != 0 || errorBudget != -1):
				return nil, cli.UsageError("--max-parallel and --error-budget bound a batch: give --selector")
			}
			p, err := params(pairs, file)
			if err != nil {
				return nil, err
			}
			if selector != "" {
				return runBatch(ctx, env, c, args[0], selector, maxParallel, errorBudget, p, wait)
			}
			var j jobOne
			if err := c.call(ctx, api.JobsCreate, nil, nil, api.JobRequest{Node: args[0], Word: args[1], Params: p, Exclusive: exclusive}, &j); err != nil {
				return nil, err
			}
			env.Progressf("job %s queued: %s on %s", j.ID, j.Word, args[0])
			if !wait {
				return j, nil
			}
			return watch(ctx, env, c, j.ID)
		}), append(slices.Clone(jobExits), batchIncomplete)...)
}

// jobEnded is a job that reached a final state; the command's exit status says which, and with -o json
// so does "ok", which is true only for a completed job.
type jobEnded struct {
	jobOne
	OK bool `json:"ok"`
}

// ExitStatus is 0 only for a completed job.
func (j jobEnded) ExitStatus() int {
	switch j.State {
	case api.JobCompleted:
		return 0
	case api.JobFailed:
		return ExitJobFailed
	case api.JobRefused:
		return ExitJobRefused
	case api.JobLost:
		return ExitJobLost
	case api.JobCancelled:
		return ExitJobCancelled
	}
	return 1 // a final state this CLI does not know: not a success
}

// watch polls a job until it is final, printing each state it passes through to stderr.
func watch(ctx context.Context, env *cli.Env, c *client, id string) (any, error) {
	var last api.JobState
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		var j jobOne
		if err := c.call(ctx, api.JobsShow, []string{id}, nil, nil, &j); err != nil {
			return nil, err
		}
		if j.State != last {
			env.Progressf("job %s: %s", id, j.State)
			last = j.State
		}
		if j.State.Final() {
			return jobEnded{jobOne: j, OK: j.State == api.JobCompleted}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.UsageInterrupted, "stopped watching job %s; it goes on", id)
		case <-tick.C:
		}
	}
}

func jobsShowCmd() *cli.Command {
	return simple("jobs show", "ID", "show a job with its output, transcript and audit", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var j jobOne
			return j, c.call(ctx, api.JobsShow, args, nil, nil, &j)
		})
}

func jobsWatchCmd() *cli.Command {
	return ending(simple("jobs watch", "ID", "follow a job until it finishes; the exit status says how it ended", 1, 1, nil,
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			return watch(ctx, env, c, args[0])
		}), jobExits...)
}

type jobList struct{ api.JobList }

func (l jobList) Text(w io.Writer) {
	if len(l.Jobs) == 0 {
		fmt.Fprintln(w, "no jobs")
	}
	for _, j := range l.Jobs {
		name := j.NodeName
		if name == "" {
			name = j.NodeID
		}
		fmt.Fprintf(w, "%s  %-10s %-18s %-20s %s %s\n", j.ID, j.State, j.Word, name, short(j.CreatedAt), j.OutcomeCode)
	}
}

func jobsListCmd() *cli.Command {
	var nodeRef, state string
	var limit int
	return simple("jobs list", "[--node NODE] [--state STATE] [--limit N]", "list jobs, newest first", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&nodeRef, "node", "", "only this node's jobs (name or id)")
			fs.StringVar(&state, "state", "", "only jobs in this state")
			fs.IntVar(&limit, "limit", 50, "at most this many")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l jobList
			q := api.JobsListQuery{Node: nodeRef, State: api.JobState(state), Limit: limit}
			return l, c.call(ctx, api.JobsList, nil, q.Values(), nil, &l)
		})
}

func jobsCancelCmd() *cli.Command {
	return simple("jobs cancel", "ID", "cancel a queued job", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var j jobOne
			return j, c.call(ctx, api.JobsCancel, args, nil, nil, &j)
		})
}

func jobsMarkFailedCmd() *cli.Command {
	var msg string
	return simple("jobs mark-failed", "ID [--message TEXT]", "fail a queued or running job; a late result is refused", 1, 1,
		func(fs *flag.FlagSet) { fs.StringVar(&msg, "message", "marked failed by an operator", "why") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var j jobOne
			return j, c.call(ctx, api.JobsMarkFailed, args, nil, api.MarkFailedRequest{Message: msg}, &j)
		})
}
