package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type scheduleOne struct{ api.Schedule }

// when is a schedule's timing as people read it.
func scheduleWhen(s api.Schedule) string {
	if s.Cron != "" {
		return "cron " + s.Cron
	}
	return "every " + s.Every
}

func scheduleNext(s api.Schedule) string {
	if s.Paused {
		return "paused"
	}
	return short(s.NextRunAt)
}

func (s scheduleOne) Text(w io.Writer) {
	fmt.Fprintf(w, "schedule %s (%s): %s %s on %q, %s, jobs queued as %s\n", s.Name, s.ID, s.Word, string(s.Params), s.Selector, scheduleWhen(s.Schedule), s.Role)
	if r := s.LastRun; r != nil {
		fmt.Fprintf(w, "last run %s: %d queued, %d skipped, %d failed", short(r.At), r.Queued, r.Skipped, r.Failed)
		if r.Message != "" {
			fmt.Fprintf(w, " (%s)", clip(esc(r.Message), 200))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "last run: never")
	}
	fmt.Fprintf(w, "next run: %s\n", scheduleNext(s.Schedule))
	fmt.Fprintf(w, "made %s by %s, changed %s by %s\n", short(s.CreatedAt), s.CreatedBy, short(s.UpdatedAt), s.UpdatedBy)
}

type scheduleList struct{ api.ScheduleList }

func (l scheduleList) Text(w io.Writer) {
	if len(l.Schedules) == 0 {
		fmt.Fprintln(w, "no schedules")
	}
	for _, s := range l.Schedules {
		last := "never"
		if r := s.LastRun; r != nil {
			last = fmt.Sprintf("%s (%d queued, %d skipped, %d failed)", short(r.At), r.Queued, r.Skipped, r.Failed)
		}
		fmt.Fprintf(w, "%-24s %-20s %-18q %-20s last %s  next %s\n", s.Name, s.Word, s.Selector, scheduleWhen(s), last, scheduleNext(s))
	}
}

// scheduleFlags are the flags create and edit share.
type scheduleFlags struct {
	word, selector, every, cron string
	pairs                       stringList
}

func (f *scheduleFlags) setup(fs *flag.FlagSet, selectorDefault string) {
	fs.StringVar(&f.word, "word", "", "the word to run")
	fs.Var(&f.pairs, "param", "a param of the word: key=string or key:=JSON (repeatable)")
	fs.StringVar(&f.selector, "selector", selectorDefault, "nodes: all, names (web-1,web-2) or labels (role=web,zone=a)")
	fs.StringVar(&f.every, "every", "", "run on this interval (such as 15m or 1h; at least 1m)")
	fs.StringVar(&f.cron, "cron", "", "run at the times this cron expression names, in UTC (\"0 3 * * *\", @daily)")
}

// params is the --param pairs as JSON, nil when none were given.
func (f *scheduleFlags) params() (json.RawMessage, error) {
	if len(f.pairs) == 0 {
		return nil, nil
	}
	return params(f.pairs, "")
}

func schedulesCreateCmd() *cli.Command {
	var f scheduleFlags
	var paused bool
	return simple("schedules create", "NAME --word WORD [--param k=v]... [--selector SEL] (--every DURATION | --cron EXPR) [--paused]",
		"create a schedule: run a word on a selection of nodes on an interval or a cron expression (its jobs are queued with your token's role)", 1, 1,
		func(fs *flag.FlagSet) {
			f.setup(fs, "all")
			fs.BoolVar(&paused, "paused", false, "create it paused")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if f.word == "" {
				return nil, cli.UsageError("give --word WORD")
			}
			p, err := f.params()
			if err != nil {
				return nil, err
			}
			req := api.ScheduleRequest{Name: args[0], Word: f.word, Params: p, Selector: f.selector, Every: f.every, Cron: f.cron, Paused: paused}
			var s scheduleOne
			return s, c.call(ctx, api.SchedulesCreate, nil, nil, req, &s)
		})
}

func schedulesEditCmd() *cli.Command {
	var f scheduleFlags
	return simple("schedules edit", "NAME|ID [--word WORD] [--param k=v]... [--selector SEL] [--every DURATION | --cron EXPR]",
		"change a schedule: the flags given change, the others stay (your token's role queues its jobs from now on)", 1, 1,
		func(fs *flag.FlagSet) { f.setup(fs, "") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			p, err := f.params()
			if err != nil {
				return nil, err
			}
			e := api.ScheduleEdit{Word: f.word, Params: p, Selector: f.selector, Every: f.every, Cron: f.cron}
			var s scheduleOne
			return s, c.call(ctx, api.SchedulesEdit, args, nil, e, &s)
		})
}

func schedulesListCmd() *cli.Command {
	return simple("schedules list", "", "list schedules with their last and next run", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l scheduleList
			return l, c.call(ctx, api.SchedulesList, nil, nil, nil, &l)
		})
}

func scheduleOneCmd(verb string, rt api.Route, summary string) *cli.Command {
	return simple("schedules "+verb, "NAME|ID", summary, 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var s scheduleOne
			return s, c.call(ctx, rt, args, nil, nil, &s)
		})
}

func schedulesCmds() []*cli.Command {
	return []*cli.Command{
		schedulesListCmd(), schedulesCreateCmd(), schedulesEditCmd(),
		scheduleOneCmd("show", api.SchedulesShow, "show a schedule with its last and next run"),
		scheduleOneCmd("pause", api.SchedulesPause, "pause a schedule: it fires no more until resumed"),
		scheduleOneCmd("resume", api.SchedulesResume, "resume a paused schedule: an interval fires at once, a cron expression at its next match"),
		scheduleOneCmd("delete", api.SchedulesDelete, "delete a schedule (the jobs it queued stay)"),
	}
}
