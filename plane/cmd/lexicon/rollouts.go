package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ExitRolloutStopped is the exit status of rollouts start --wait and rollouts show --wait for a
// rollout that stopped without completing.
const ExitRolloutStopped = 8

var rolloutStopped = cli.Exit{Status: ExitRolloutStopped, Meaning: "the rollout halted, was aborted or was reverted"}

type rolloutOne struct{ api.Rollout }

func (r rolloutOne) Text(w io.Writer) {
	what := fmt.Sprintf("release %d", r.Release)
	if r.Kind == "job" {
		what = "word " + r.Word
	}
	if r.Purpose != "" {
		what += " (" + r.Purpose + ")"
	}
	fmt.Fprintf(w, "rollout %s: %s on %q, %s (stages %s, max parallel %d, error budget %d), by %s\n",
		r.ID, what, r.Selector, r.State, strings.Join(r.Stages, ", "), r.MaxParallel, r.ErrorBudget, r.CreatedBy)
	if r.HaltNode != "" {
		fmt.Fprintf(w, "halted at %s: %s\n", r.HaltNode, esc(r.HaltReason))
	}
	stage := -1
	for _, st := range r.Steps {
		if st.Stage != stage {
			stage = st.Stage
			fmt.Fprintf(w, "stage %d\n", stage+1)
		}
		line := fmt.Sprintf("  %-20s %-8s %-9s", st.NodeName, st.State, st.Phase)
		if st.DurationMS > 0 {
			line += fmt.Sprintf(" %6.1fs", float64(st.DurationMS)/1000)
		}
		if st.Reason != "" {
			line += "  " + clip(esc(st.Reason), 160)
		}
		// A release step under way includes the agent's update and trial: say where the node stands,
		// so a node on trial is not read as one that never answered.
		if st.UpdatePhase != "" {
			line += "  update: " + clip(esc(st.UpdatePhase), 160)
		}
		fmt.Fprintln(w, line)
	}
	for _, e := range r.Events {
		fmt.Fprintf(w, "  %s %-8s by %s %s\n", short(e.At), e.Action, e.Actor, esc(e.Detail))
	}
	if len(r.Moved) > 0 {
		fmt.Fprintf(w, "moved back: %s\n", strings.Join(r.Moved, ", "))
	}
}

// rolloutEnded is a rollout that stopped; ok is true only when it completed.
type rolloutEnded struct {
	rolloutOne
	OK bool `json:"ok"`
}

func (r rolloutEnded) ExitStatus() int {
	if r.OK {
		return 0
	}
	return ExitRolloutStopped
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func rolloutsStartCmd() *cli.Command {
	var (
		release                        int64
		word, preflight, verify        string
		pairs, prePairs, verPairs      stringList
		selector, pcts                 string
		stages                         stringList
		canary, maxParallel, errBudget int
		timeout                        time.Duration
		wait                           bool
	)
	return ending(simple("rollouts start", "(--release SEQ | --word WORD [--param k=v]...) [--selector SEL] [--stage SEL]... | [--canary N --stages 10%,50%,100%] [--preflight WORD] [--verify WORD] [--max-parallel N] [--error-budget N] [--wait]",
		"start a staged rollout of a release (admin) or a word (the role its class needs) over a selection of nodes", 0, 0,
		func(fs *flag.FlagSet) {
			fs.Int64Var(&release, "release", 0, "move the selected nodes' target to this release sequence")
			fs.StringVar(&word, "word", "", "run this word on each selected node")
			fs.Var(&pairs, "param", "a param of the word: key=string or key:=JSON (repeatable)")
			fs.StringVar(&preflight, "preflight", "", "a word that must pass on each node before its change")
			fs.Var(&prePairs, "preflight-param", "a param of the preflight word (repeatable)")
			fs.StringVar(&verify, "verify", "", "a word that must pass on each node after its change")
			fs.Var(&verPairs, "verify-param", "a param of the verify word (repeatable)")
			fs.StringVar(&selector, "selector", "all", "nodes: all, names (web-1,web-2) or labels (role=web,zone=a)")
			fs.Var(&stages, "stage", "a stage's selector, in order (repeatable); each node is in the first stage that matches it")
			fs.IntVar(&canary, "canary", 0, "the first stage's size, before --stages")
			fs.StringVar(&pcts, "stages", "", "cumulative percentages of the selection, e.g. 10%,50%,100%")
			fs.IntVar(&maxParallel, "max-parallel", 1, "at most this many nodes change at once within a stage")
			fs.IntVar(&errBudget, "error-budget", 0, "misses allowed before the rollout halts")
			fs.DurationVar(&timeout, "step-timeout", 0, "how long each phase of a node's step may take; a release step's change lasts until the node runs the release, its agent's update and trial included; 0 leaves it to the plane, which allows 10m")
			fs.BoolVar(&wait, "wait", false, "follow the rollout by stage and node until it stops; the exit status says whether it completed")
		},
		func(ctx context.Context, env *cli.Env, c *client, _ []string) (any, error) {
			if (release == 0) == (word == "") {
				return nil, cli.UsageError("give --release SEQ or --word WORD")
			}
			req := api.RolloutRequest{Release: release, Word: word, Preflight: preflight, Verify: verify, Selector: selector,
				Stages: stages, Canary: canary, MaxParallel: maxParallel, ErrorBudget: errBudget, StepTimeoutMS: timeout.Milliseconds()}
			if pcts != "" {
				req.Percentages = strings.Split(pcts, ",")
			}
			var err error
			for _, p := range []struct {
				pairs stringList
				into  *json.RawMessage
				set   bool
			}{{pairs, &req.Params, word != ""}, {prePairs, &req.PreflightParams, preflight != ""}, {verPairs, &req.VerifyParams, verify != ""}} {
				if !p.set {
					if len(p.pairs) > 0 {
						return nil, cli.UsageError("params given for a word that is not set")
					}
					continue
				}
				if *p.into, err = params(p.pairs, ""); err != nil {
					return nil, err
				}
			}
			var r rolloutOne
			if err := c.call(ctx, api.RolloutsStart, nil, nil, req, &r); err != nil {
				return nil, err
			}
			env.Progressf("rollout %s started over %d nodes in %d stages", r.ID, len(r.Steps), len(r.Stages))
			if !wait {
				return r, nil
			}
			return watchRollout(ctx, env, c, r.ID)
		}), rolloutStopped)
}

func fleetPatchCmd() *cli.Command {
	var (
		selector    string
		maxParallel int
		timeout     time.Duration
		wait        bool
	)
	return ending(simple("fleet patch", "[--selector SEL] [--max-parallel N] [--step-timeout D] [--wait]",
		"install the security fixes waiting on the selected nodes: a staged rollout of install_security_updates, a canary node first, "+
			"each node's services on replaced code restarted by restart_services and the node verified by a fresh packages_report, halting on the first failure; nodes without the words are left out by name", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&selector, "selector", "all", "nodes: all, names (web-1,web-2) or labels (role=web,zone=a)")
			fs.IntVar(&maxParallel, "max-parallel", 1, "at most this many machines are patched at once (never two nodes of one machine)")
			fs.DurationVar(&timeout, "step-timeout", 0, "how long each phase of a node's step may take; 0 leaves it to the plane, which allows 20m")
			fs.BoolVar(&wait, "wait", false, "follow the patch by stage and node until it stops; the exit status says whether it completed")
		},
		func(ctx context.Context, env *cli.Env, c *client, _ []string) (any, error) {
			var r rolloutOne
			req := api.FleetPatchRequest{Selector: selector, MaxParallel: maxParallel, StepTimeoutMS: timeout.Milliseconds()}
			if err := c.call(ctx, api.FleetPatch, nil, nil, req, &r); err != nil {
				return nil, err
			}
			env.Progressf("patch %s started over %d nodes in %d stages", r.ID, len(r.Steps), len(r.Stages))
			for _, l := range r.LeftOut {
				env.Progressf("left out %s: %s", l.Node, esc(l.Reason))
			}
			if !wait {
				return r, nil
			}
			return watchRollout(ctx, env, c, r.ID)
		}), rolloutStopped)
}

// watchRollout polls a rollout until it stops, printing each step's change of verdict, by stage.
func watchRollout(ctx context.Context, env *cli.Env, c *client, id string) (any, error) {
	seen := map[string]string{}
	state := ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		var r rolloutOne
		if err := c.call(ctx, api.RolloutsShow, []string{id}, nil, nil, &r); err != nil {
			return nil, err
		}
		for _, st := range r.Steps {
			now := st.State + "/" + st.Phase
			if seen[st.NodeID] != now {
				seen[st.NodeID] = now
				msg := fmt.Sprintf("stage %d  %-20s %-8s %s", st.Stage+1, st.NodeName, st.State, st.Phase)
				if st.Reason != "" {
					msg += "  " + clip(esc(st.Reason), 160)
				}
				env.Progressf("%s", msg)
			}
		}
		if r.State != state {
			env.Progressf("rollout %s: %s", id, r.State)
			state = r.State
		}
		switch r.State {
		case api.RolloutCompleted, api.RolloutHalted, api.RolloutAborted, api.RolloutReverted:
			return rolloutEnded{rolloutOne: r, OK: r.State == api.RolloutCompleted}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.UsageInterrupted, "stopped watching rollout %s; it goes on", id)
		case <-tick.C:
		}
	}
}

type rolloutList struct{ api.RolloutList }

func (l rolloutList) Text(w io.Writer) {
	if len(l.Rollouts) == 0 {
		fmt.Fprintln(w, "no rollouts")
	}
	for _, r := range l.Rollouts {
		what := fmt.Sprintf("release %d", r.Release)
		if r.Kind == "job" {
			what = "word " + r.Word
		}
		fmt.Fprintf(w, "%s  %-10s %-22s %-20q by %s %s\n", r.ID, r.State, what, r.Selector, r.CreatedBy, short(r.CreatedAt))
	}
}

func rolloutsListCmd() *cli.Command {
	var state string
	var limit int
	return simple("rollouts list", "[--state STATE] [--limit N]", "list rollouts, newest first", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&state, "state", "", "only rollouts in this state (running, paused, halted, completed, aborted, reverted)")
			fs.IntVar(&limit, "limit", 50, "at most this many")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l rolloutList
			return l, c.call(ctx, api.RolloutsList, nil, api.RolloutsListQuery{State: state, Limit: limit}.Values(), nil, &l)
		})
}

func rolloutsShowCmd() *cli.Command {
	var wait bool
	return ending(simple("rollouts show", "ID [--wait]", "show a rollout: each node's verdict and timings by stage, and its audit", 1, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&wait, "wait", false, "follow it until it stops; the exit status says whether it completed")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			if wait {
				return watchRollout(ctx, env, c, args[0])
			}
			var r rolloutOne
			return r, c.call(ctx, api.RolloutsShow, args, nil, nil, &r)
		}), rolloutStopped)
}

func rolloutMoveCmd(verb string, rt api.Route, summary string) *cli.Command {
	return simple("rollouts "+verb, "ID", summary, 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var r rolloutOne
			return r, c.call(ctx, rt, args, nil, nil, &r)
		})
}

func rolloutsCmds() []*cli.Command {
	return []*cli.Command{
		rolloutsStartCmd(), rolloutsListCmd(), rolloutsShowCmd(), fleetPatchCmd(),
		rolloutMoveCmd("pause", api.RolloutsPause, "pause a running rollout: no node starts; steps under way run on and are judged as their jobs end"),
		rolloutMoveCmd("resume", api.RolloutsResume, "resume a paused or halted rollout (the role its start took); a halted one tries its failed nodes again"),
		rolloutMoveCmd("abort", api.RolloutsAbort, "abort a rollout: nodes it did not reach are left untouched; steps under way are judged as their jobs end"),
		rolloutMoveCmd("revert", api.RolloutsRevert, "move the nodes a release rollout reached back to the release they ran before, re-issued by the publisher if agents would refuse it as older (admin)"),
	}
}

// nodesLabelCmd sets labels (key=value) and removes them (key-).
func nodesLabelCmd() *cli.Command {
	return simple("nodes label", "NODE key=value... [key-]...", "set a node's labels (key=value) or remove them (key-); rollouts select nodes by them", 2, -1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			req := api.LabelRequest{Set: map[string]string{}}
			for _, a := range args[1:] {
				if k, v, ok := strings.Cut(a, "="); ok {
					req.Set[k] = v
				} else if k, ok := strings.CutSuffix(a, "-"); ok {
					req.Remove = append(req.Remove, k)
				} else {
					return nil, cli.UsageError("a label is key=value, or key- to remove it; not %q", a)
				}
			}
			var n nodeOne
			return n, c.call(ctx, api.NodesLabel, args[:1], nil, req, &n)
		})
}
