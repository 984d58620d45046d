package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// roleFileMax is how much of a role file the CLI reads; the plane holds it to its own limit.
const roleFileMax = 16 << 20

func readRoleFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read role file %s", path)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, roleFileMax))
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read role file %s", path)
	}
	return string(data), nil
}

type roleOne struct{ api.RoleVersion }

func (r roleOne) Text(w io.Writer) {
	enforce := ""
	if r.Enforce {
		enforce = ", enforced"
	}
	fmt.Fprintf(w, "role %s version %d: %d items%s, by %s %s\n", r.Name, r.Version, r.Items, enforce, r.CreatedBy, short(r.CreatedAt))
	if r.Description != "" {
		fmt.Fprintf(w, "  %s\n", esc(r.Description))
	}
	for _, a := range r.Assignments {
		fmt.Fprintf(w, "assigned by %q (%s %s)\n", a.Selector, a.CreatedBy, short(a.CreatedAt))
	}
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "carried by: %s\n", strings.Join(r.Nodes, ", "))
	}
	var fp struct {
		Files []struct {
			Path, SHA256, Mode, Owner, Group string
			Size                             int64
		}
	}
	if json.Unmarshal(r.Footprint, &fp) == nil {
		for _, f := range fp.Files {
			fmt.Fprintf(w, "  file %s %s %s:%s %d bytes sha256 %s\n", esc(f.Path), f.Mode, f.Owner, f.Group, f.Size, f.SHA256[:min(12, len(f.SHA256))])
		}
	}
}

type roleList struct{ api.RoleList }

func (l roleList) Text(w io.Writer) {
	if len(l.Roles) == 0 {
		fmt.Fprintln(w, "no roles")
	}
	for _, r := range l.Roles {
		fmt.Fprintf(w, "%-24s v%-4d %4d items  by %s %s\n", r.Name, r.Version, r.Items, r.CreatedBy, short(r.CreatedAt))
	}
}

type roleHistory struct{ api.RoleHistory }

func (h roleHistory) Text(w io.Writer) {
	for _, r := range h.Versions {
		fmt.Fprintf(w, "v%-4d %4d items  by %s %s\n", r.Version, r.Items, r.CreatedBy, short(r.CreatedAt))
	}
}

type roleAssignment struct{ api.RoleAssignment }

func (a roleAssignment) Text(w io.Writer) {
	fmt.Fprintf(w, "role %s by %q", a.Role, a.Selector)
	if len(a.Nodes) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(a.Nodes, ", "))
	}
	fmt.Fprintln(w)
}

func rolesCreateCmd() *cli.Command {
	return simple("roles create", "FILE", "make a role from a role file, YAML or JSON (lexicon roles schema prints its JSON Schema) (admin)", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			file, err := readRoleFile(args[0])
			if err != nil {
				return nil, err
			}
			var r roleOne
			return r, c.call(ctx, api.RolesCreate, nil, nil, api.RoleFile{File: file}, &r)
		})
}

func rolesEditCmd() *cli.Command {
	var base int
	return simple("roles edit", "NAME FILE [--base VERSION]", "make a role's next version from a role file; refused if a node carrying it would carry a conflict (admin)", 2, 2,
		func(fs *flag.FlagSet) {
			fs.IntVar(&base, "base", 0, "the version the file was made from: refused (role.stale) if the role moved past it")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			file, err := readRoleFile(args[1])
			if err != nil {
				return nil, err
			}
			var r roleOne
			return r, c.call(ctx, api.RolesEdit, args[:1], nil, api.RoleFile{File: file, Base: base}, &r)
		})
}

func rolesShowCmd() *cli.Command {
	var version int
	return simple("roles show", "NAME [--version N]", "show a role, its files by digest, its assignments and the nodes that carry it", 1, 1,
		func(fs *flag.FlagSet) { fs.IntVar(&version, "version", 0, "this version rather than the newest") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var r roleOne
			return r, c.call(ctx, api.RolesShow, args, api.RoleShowQuery{Version: version}.Values(), nil, &r)
		})
}

func rolesListCmd() *cli.Command {
	return simple("roles list", "", "list roles at their newest versions", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l roleList
			return l, c.call(ctx, api.RolesList, nil, nil, nil, &l)
		})
}

func rolesHistoryCmd() *cli.Command {
	return simple("roles history", "NAME", "list every version of a role, newest first", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var h roleHistory
			return h, c.call(ctx, api.RolesHistory, args, nil, nil, &h)
		})
}

func rolesAssignCmd(verb string, rt api.Route, summary string) *cli.Command {
	return simple("roles "+verb, "NAME SELECTOR", summary, 2, 2, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var a roleAssignment
			return a, c.call(ctx, rt, args[:1], nil, api.RoleAssignRequest{Selector: args[1]}, &a)
		})
}

func rolesSchemaCmd() *cli.Command {
	return simple("roles schema", "", "print the JSON Schema of a role file", 0, 0, nil,
		func(context.Context, *cli.Env, *client, []string) (any, error) {
			return json.RawMessage(api.RoleSchema()), nil
		})
}

// rolePlan is a plan's answer and, with --wait, what each node's plan job reported.
type rolePlan struct {
	api.RolePlan
	Results map[string]convergeReport `json:"results,omitempty"` // by node name
}

type convergeReport struct {
	State  string `json:"state"`
	Code   string `json:"code,omitempty"`
	Result string `json:"result,omitempty"`
	Items  []struct {
		ID      string   `json:"id"`
		Status  string   `json:"status"`
		Changes []string `json:"changes,omitempty"`
		Code    string   `json:"code,omitempty"`
		Message string   `json:"message,omitempty"`
		Diff    string   `json:"diff,omitempty"`
	} `json:"items,omitempty"`
}

func (p rolePlan) Text(w io.Writer) {
	for _, n := range p.Nodes {
		switch {
		case n.Code != "":
			fmt.Fprintf(w, "%s: not planned: %s %s\n", n.NodeName, n.Code, esc(n.Message))
			continue
		case p.Results == nil:
			fmt.Fprintf(w, "%s: %d items, plan job %s\n", n.NodeName, n.Items, n.JobID)
			continue
		}
		rep := p.Results[n.NodeName]
		fmt.Fprintf(w, "%s: %s %s%s\n", n.NodeName, rep.State, rep.Result, map[bool]string{true: " " + rep.Code, false: ""}[rep.Code != ""])
		for _, it := range rep.Items {
			if it.Status == "unchanged" {
				continue
			}
			line := fmt.Sprintf("  %-12s %s", it.Status, esc(it.ID))
			if len(it.Changes) > 0 {
				line += "  (" + esc(strings.Join(it.Changes, ", ")) + ")"
			}
			if it.Code != "" {
				line += "  " + it.Code + " " + esc(it.Message)
			}
			fmt.Fprintln(w, line)
			if it.Diff != "" {
				for _, l := range strings.Split(strings.TrimRight(it.Diff, "\n"), "\n") {
					fmt.Fprintf(w, "    %s\n", esc(l))
				}
			}
		}
	}
}

func rolesPlanCmd() *cli.Command {
	var selector string
	var wait bool
	return simple("roles plan", "NAME [--selector SEL] [--wait]", "ask every node carrying a role what converging its footprint would change (diffs for files), changing nothing (operator)", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&selector, "selector", "", "only the nodes carrying the role that this selects")
			fs.BoolVar(&wait, "wait", false, "wait for each node's plan and print what would change")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			var p rolePlan
			if err := c.call(ctx, api.RolesPlan, args, nil, api.RolesPlanRequest{Selector: selector}, &p.RolePlan); err != nil {
				return nil, err
			}
			if !wait {
				return p, nil
			}
			p.Results = map[string]convergeReport{}
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for _, n := range p.Nodes {
				for n.JobID != "" {
					var j api.Job
					if err := c.call(ctx, api.JobsShow, []string{n.JobID}, nil, nil, &j); err != nil {
						return nil, err
					}
					if j.State != "queued" && j.State != "running" {
						rep := convergeReport{Code: j.OutcomeCode}
						_ = json.Unmarshal(j.Output, &rep)
						rep.State = string(j.State)
						p.Results[n.NodeName] = rep
						env.Progressf("%s: %s", n.NodeName, j.State)
						break
					}
					select {
					case <-ctx.Done():
						return nil, errcode.Wrap(ctx.Err(), errcode.UsageInterrupted, "stopped waiting for the plan; its jobs go on")
					case <-tick.C:
					}
				}
			}
			return p, nil
		})
}

func rolesApplyCmd() *cli.Command {
	var (
		selector, pcts                 string
		stages                         stringList
		canary, maxParallel, errBudget int
		timeout                        time.Duration
		wait                           bool
	)
	return ending(simple("roles apply", "NAME [--selector SEL] [--stage SEL]... | [--canary N --stages 10%,50%,100%] [--max-parallel N] [--error-budget N] [--wait]",
		"converge every node carrying a role to its footprint, as a staged rollout of the converge word (admin)", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&selector, "selector", "", "only the nodes carrying the role that this selects")
			fs.Var(&stages, "stage", "a stage's selector, in order (repeatable)")
			fs.IntVar(&canary, "canary", 0, "the first stage's size, before --stages")
			fs.StringVar(&pcts, "stages", "", "cumulative percentages of the nodes, e.g. 10%,50%,100%")
			fs.IntVar(&maxParallel, "max-parallel", 1, "at most this many nodes converge at once within a stage")
			fs.IntVar(&errBudget, "error-budget", 0, "misses allowed before the rollout halts")
			fs.DurationVar(&timeout, "step-timeout", 0, "how long each node's converge may take; 0 leaves it to the plane")
			fs.BoolVar(&wait, "wait", false, "follow the rollout until it stops; the exit status says whether it completed")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			req := api.RolesApplyRequest{Selector: selector, Stages: stages, Canary: canary, MaxParallel: maxParallel,
				ErrorBudget: errBudget, StepTimeoutMS: timeout.Milliseconds()}
			if pcts != "" {
				req.Percentages = strings.Split(pcts, ",")
			}
			var r rolloutOne
			if err := c.call(ctx, api.RolesApply, args, nil, req, &r); err != nil {
				return nil, err
			}
			env.Progressf("rollout %s started over %d nodes in %d stages", r.ID, len(r.Steps), len(r.Stages))
			if !wait {
				return r, nil
			}
			return watchRollout(ctx, env, c, r.ID)
		}), rolloutStopped)
}

type nodeFootprint struct{ api.NodeFootprint }

func (f nodeFootprint) Text(w io.Writer) {
	fmt.Fprintf(w, "node %s carries %s\n", f.NodeName, strings.Join(f.Roles, ", "))
	if f.Code != "" {
		fmt.Fprintf(w, "no footprint: %s %s\n", f.Code, esc(f.Message))
		return
	}
	if f.Converge != nil {
		fmt.Fprintf(w, "states from converge job %s (%s, %s) %s\n", f.Converge.JobID, f.Converge.Mode, f.Converge.Result, short(f.Converge.FinishedAt))
	}
	for _, it := range f.Items {
		enforce := ""
		if it.Enforce {
			enforce = " enforced"
		}
		line := fmt.Sprintf("  %-12s %s  (%s%s)", it.State, esc(it.ID), it.Role, enforce)
		if it.Code != "" {
			line += "  " + it.Code + " " + esc(it.Message)
		}
		fmt.Fprintln(w, line)
	}
}

func nodesFootprintCmd() *cli.Command {
	return simple("nodes footprint", "NODE", "show a node's roles, its footprint and each item's state in its newest converge", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var f nodeFootprint
			return f, c.call(ctx, api.NodesFootprint, args, nil, nil, &f)
		})
}

func rolesCmds() []*cli.Command {
	return []*cli.Command{
		{Path: "roles", Summary: "declare what machines carry (packages, files, units, users, firewall, sysctl), assign it by selector, plan and apply it"},
		rolesCreateCmd(), rolesShowCmd(), rolesEditCmd(), rolesListCmd(), rolesHistoryCmd(),
		rolesAssignCmd("assign", api.RolesAssign, "carry a role to the nodes a selector picks (all, names, or labels); refused if none is picked or a node would carry a conflict (admin)"),
		rolesAssignCmd("unassign", api.RolesUnassign, "remove an assignment of a role (admin)"),
		rolesPlanCmd(), rolesApplyCmd(), rolesSchemaCmd(), nodesFootprintCmd(),
	}
}
