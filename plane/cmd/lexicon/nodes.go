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
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// simple builds a command that takes conn flags, optional extra flags, and a request.
func simple(path, args, summary string, minArgs, maxArgs int, extra func(fs *flag.FlagSet), run func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error)) *cli.Command {
	var cn conn
	return &cli.Command{
		Path: path, Args: args, Summary: summary, MinArgs: minArgs, MaxArgs: maxArgs,
		Setup: func(fs *flag.FlagSet) {
			cn.setup(fs)
			if extra != nil {
				extra(fs)
			}
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			c, err := cn.client()
			if err != nil {
				return nil, err
			}
			return run(ctx, env, c, args)
		},
	}
}

// ending declares the statuses besides 0, 1 and 2 that cmd may end with (cli.Command.Exits).
func ending(cmd *cli.Command, exits ...cli.Exit) *cli.Command {
	cmd.Exits = exits
	return cmd
}

type whoami struct{ api.Token }

func (t whoami) Text(w io.Writer) { fmt.Fprintf(w, "token %s (%s), role %s\n", t.Name, t.ID, t.Role) }

func whoamiCmd() *cli.Command {
	return simple("whoami", "", "show the token's name and role", 0, 0, nil, func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
		var t whoami
		return t, c.call(ctx, api.Whoami, nil, nil, nil, &t)
	})
}

type joinList struct{ api.JoinList }

func (l joinList) Text(w io.Writer) {
	if len(l.Joins) == 0 {
		fmt.Fprintln(w, "no joins")
	}
	for _, j := range l.Joins {
		fmt.Fprintf(w, "%s  %-9s %-20s %s  from %s  expires %s\n", j.ID, j.Status, j.Name, j.Fingerprint, j.SourceAddress, short(j.ExpiresAt))
		if j.ProvisioningID != "" {
			line := "  provisioning " + j.ProvisioningID
			if j.HoldReason != "" {
				line += ", waits for a person: " + clip(esc(j.HoldReason), 300)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func joinsListCmd() *cli.Command {
	var status string
	return simple("joins list", "[--status pending|approved|rejected|expired]", "list join requests and the fingerprints to compare", 0, 0,
		func(fs *flag.FlagSet) { fs.StringVar(&status, "status", "pending", "status to list (empty for all)") },
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l joinList
			q := api.JoinsListQuery{Status: api.JoinStatus(status)}
			return l, c.call(ctx, api.JoinsList, nil, q.Values(), nil, &l)
		})
}

type approved struct{ api.Approved }

func (a approved) Text(w io.Writer) {
	fmt.Fprintf(w, "approved: node %s (%s), key %s\n", a.Node.Name, a.Node.ID, a.Node.Fingerprint)
}

func joinsApproveCmd() *cli.Command {
	var fp, name string
	return simple("joins approve", "ID --fingerprint SHA256:... [--name NAME]",
		"approve a join after comparing the fingerprint the machine shows; it must match exactly", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&fp, "fingerprint", "", "the fingerprint the machine prints, SHA256:... (required)")
			fs.StringVar(&name, "name", "", "name the node differently from the name it claimed")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if fp == "" {
				return nil, cli.UsageError("approve needs --fingerprint: read it on the machine (lexicon-agent status) and compare")
			}
			var a approved
			return a, c.call(ctx, api.JoinsApprove, args, nil, api.ApproveRequest{Fingerprint: fp, Name: name}, &a)
		})
}

type joinOne struct{ api.Join }

func (j joinOne) Text(w io.Writer) { fmt.Fprintf(w, "join %s is %s\n", j.ID, j.Status) }

func joinsRejectCmd() *cli.Command {
	return simple("joins reject", "ID", "reject a join; its key is retired for good", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var j joinOne
			return j, c.call(ctx, api.JoinsReject, args, nil, nil, &j)
		})
}

type nodeList struct{ api.NodeList }

func (l nodeList) Text(w io.Writer) {
	if len(l.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
		return
	}
	fmt.Fprintf(w, "%-30s %-20s %-12s %-6s %-16s %-28s %-5s %-8s %-16s %s\n", "ID", "NAME", "STATE", "TARGET", "AGENT", "UPDATE", "WORDS",
		"REFUSALS", "SEEN", "LABELS")
	for _, n := range l.Nodes {
		fmt.Fprintf(w, "%-30s %-20s %-12s %-6d %-16s %-28s %-5d %-8d %-16s %s\n", n.ID, n.Name, n.State, n.TargetSequence,
			clip(esc(n.AgentVersion), 16), updateLine(n), len(n.Vocabulary), n.Refusals, short(n.LastSeenAt), labelText(n.Labels))
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", l.NextCursor)
	}
}

// updateLine is the update columns: releases behind, the update state, and the below-floor mark.
func updateLine(n api.Node) string {
	state := n.Update.State
	switch {
	case n.Updating == api.UpdatingSilent:
		state = "silent since update to " + n.UpdatingTo
	case n.Updating == api.UpdatingInProgress:
		state = "updating to " + n.UpdatingTo
	case state == "":
		state = "-"
	}
	line := fmt.Sprintf("%d behind, %s", n.ReleasesBehind, clip(esc(state), 40))
	if n.BelowFloor {
		line += " below floor"
	}
	return line
}

func nodesListCmd() *cli.Command {
	var q api.NodesListQuery
	var state string
	return simple("nodes list", "[--state S] [--where SELECTOR] [--search WORDS] [--sort KEY] [--limit N] [--cursor C] [--label K=V] [--word NAME] [--version V]",
		"list nodes; --where takes the selector grammar rollouts use: role=web,fact.os=debian-12 (terms all hold; fact."+
			strings.Join(channel.FactKeys, ", fact.")+"), or node names alone (web-1,web-2)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&state, "state", "", "state to list: active, disconnected or left (empty for all)")
			fs.StringVar(&q.Where, "where", "", "only nodes this selector picks: labels (role=web) and host facts (fact.os=debian-12), comma-separated")
			fs.StringVar(&q.Search, "search", "", "words each found in a node's name, id, addresses, labels or facts (os=debian-12 matches a fact exactly)")
			fs.StringVar(&q.Sort, "sort", "", "order by "+strings.Join(api.NodeSorts, ", ")+"; a leading - sorts descending")
			fs.IntVar(&q.Limit, "limit", 0, "nodes per page (the plane's default when 0)")
			fs.StringVar(&q.Cursor, "cursor", "", "the page after the one that printed this cursor")
			fs.StringVar(&q.Label, "label", "", "only nodes carrying this label (key=value)")
			fs.StringVar(&q.Word, "word", "", "only nodes whose vocabulary holds this word")
			fs.StringVar(&q.Version, "version", "", "only nodes running this agent version")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l nodeList
			q.State = api.NodeState(state)
			return l, c.call(ctx, api.NodesList, nil, q.Values(), nil, &l)
		})
}

type fleetOne struct{ api.Fleet }

func (f fleetOne) Text(w io.Writer) {
	fmt.Fprintf(w, "%d nodes: %d active (%d online, %d silent over %ds, %d untrusted, %d below floor), %d disconnected, %d left\n",
		f.Total, f.Active, f.Online, f.Silent, f.SilentAfterSeconds, f.Untrusted, f.BelowFloor, f.Disconnected, f.Left)
	for _, v := range f.Versions {
		name := v.Version
		if name == "" {
			name = "(not reported)"
		}
		fmt.Fprintf(w, "agent %-16s %d\n", esc(name), v.Nodes)
	}
	if f.TargetSequence > 0 {
		fmt.Fprintf(w, "target release: sequence %d\n", f.TargetSequence)
	}
}

func fleetCmd() *cli.Command {
	return simple("nodes count", "", "count the nodes by state, liveness, trust, update floor and agent version", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var f fleetOne
			return f, c.call(ctx, api.FleetShow, nil, nil, nil, &f)
		})
}

type nodeOne struct{ api.Node }

// Text shows what the node reported as text (esc): the plane does not vouch for any of it.
func (n nodeOne) Text(w io.Writer) {
	fmt.Fprintf(w, "node %s (%s) %s\nkey %s\naddresses %v\nagent %s, statement %d, seen %s, refusals %d\n",
		n.Name, n.ID, n.State, n.Fingerprint, n.Addresses, esc(n.AgentVersion), n.StatementSequence, short(n.LastSeenAt), n.Refusals)
	fmt.Fprintf(w, "target release %d, labels %s\n", n.TargetSequence, labelText(n.Labels))
	factsText(w, n.Facts)
	for _, l := range n.Leases {
		fmt.Fprintf(w, "lease %s held by %s for %s until %s\n", l.Name, l.Holder, esc(l.Purpose), short(l.ExpiresAt))
	}
	if n.Untrusted != "" {
		fmt.Fprintf(w, "cannot verify the plane's statement: %s\n", esc(n.Untrusted))
	}
	for _, c := range n.Checkpoints {
		fmt.Fprintf(w, "log %s: checkpoint at size %d, root %s (reported %s)\n", esc(c.Origin), c.Size, esc(c.RootHash), short(c.ReportedAt))
	}
	fmt.Fprintf(w, "%s", updateLine(n.Node))
	if n.Update.Offered != "" {
		fmt.Fprintf(w, " offered %s", esc(n.Update.Offered))
	}
	if n.BelowFloor {
		fmt.Fprintf(w, " (needs agent %s or newer)", esc(n.Update.NeedsNewerAgent))
	}
	fmt.Fprintln(w)
	if n.Update.Reason != "" {
		fmt.Fprintf(w, "  update: %s\n", clip(esc(n.Update.Reason), 200))
	}
	for _, e := range n.Update.History {
		fmt.Fprintf(w, "  update %s %-15s %s -> %s %s\n", short(e.At), esc(e.Event), esc(e.From), esc(e.To), clip(esc(e.Detail), 120))
	}
	for _, word := range n.Vocabulary {
		fmt.Fprintf(w, "  word %-20s %-8s %-11s %s\n", esc(word.Name), esc(word.Version), esc(word.Class), esc(word.Digest))
	}
	var recipes []channel.RecipeReport
	if json.Unmarshal(n.Recipes, &recipes) == nil {
		for _, r := range recipes {
			line := fmt.Sprintf("  recipe %-18s %-8s %-14s %-7s", esc(r.Name), esc(r.Version), esc(r.State), esc(r.LastVerdict))
			if r.Detail != "" {
				line += " " + clip(esc(r.Detail), 120)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// factsText prints the host facts the node's agent read, as its own text.
func factsText(w io.Writer, f *api.NodeFacts) {
	if f == nil {
		fmt.Fprintln(w, "facts: none reported")
		return
	}
	up := "-"
	if !f.BootedAt.IsZero() {
		up = time.Since(f.BootedAt).Truncate(time.Minute).String()
	}
	fmt.Fprintf(w, "os %s (%s), kernel %s %s, %d cpu %s\n", esc(f.OS), esc(f.OSName), esc(f.Kernel), esc(f.Arch), f.CPUs, esc(f.CPUModel))
	fmt.Fprintf(w, "memory %d MiB (%d available), disk %d GiB (%d free), up %s, addresses %s\n", f.MemoryBytes>>20, f.MemoryFreeBytes>>20,
		f.DiskBytes>>30, f.DiskFreeBytes>>30, up, esc(strings.Join(f.Addresses, " ")))
	fmt.Fprintf(w, "facts read %s\n", short(f.CollectedAt))
}

func nodesShowCmd() *cli.Command {
	return simple("nodes show", "NODE", "show a node (by id or name): its vocabulary and what it last reported", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var n nodeOne
			return n, c.call(ctx, api.NodesShow, args, nil, nil, &n)
		})
}

type wordOne struct{ api.Word }

func (w wordOne) Text(out io.Writer) {
	fmt.Fprintf(out, "%s %s (%s) %s\n  %s\n", esc(w.Name), esc(w.Version), esc(w.Class), w.Digest, esc(w.Summary))
	if len(w.Reach) == 0 {
		fmt.Fprintln(out, "reach: nothing on the machine (no capability declared)")
	}
	for _, r := range w.Reach {
		fmt.Fprintf(out, "reach %-16s%s\n", esc(r.Cap), reachText(r))
	}
	// What this node's policy leaves of it, as the node reported: so a refusal is no surprise.
	switch nr := w.NodeReach; {
	case nr == nil:
		fmt.Fprintln(out, "on this node: not reported (the agent reports no reach for this module yet)")
	default:
		if nr.Refused != "" {
			fmt.Fprintf(out, "on this node: refused: %s\n", clip(esc(nr.Refused), 200))
		}
		for _, r := range nr.Caps {
			line := fmt.Sprintf("on node %-14s", esc(r.Cap))
			switch {
			case r.Denied != "":
				line += " denied: " + clip(esc(r.Denied), 200)
			case r.Narrowed:
				line += reachText(r) + " (narrowed by the node's policy)"
			default:
				line += reachText(r)
			}
			if r.Note != "" {
				line += "; " + clip(esc(r.Note), 200)
			}
			fmt.Fprintln(out, line)
		}
	}
	fmt.Fprintf(out, "params schema:\n%s\n", esc(string(w.Params)))
}

// reachText is a capability's bounds on one line, as the signed manifest declares them.
func reachText(r api.WordReach) string {
	var b strings.Builder
	for _, part := range []struct {
		name string
		list []string
	}{{"roots", r.Roots}, {"units", r.Units}, {"hosts", r.Hosts}, {"names", r.Names}, {"packages", r.Packages}, {"origins", r.Origins}, {"programs", r.Programs}} {
		if len(part.list) > 0 {
			fmt.Fprintf(&b, " %s %s", part.name, esc(strings.Join(part.list, " ")))
		}
	}
	return b.String()
}

func nodesWordCmd() *cli.Command {
	return simple("nodes word", "NODE WORD", "show a word a node reports: its params schema and capabilities from the signed manifest, and each capability as the node's policy narrows it", 2, 2, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var w wordOne
			return w, c.call(ctx, api.NodesWord, args, nil, nil, &w)
		})
}

type ended struct{ api.Disconnected }

func (e ended) Text(w io.Writer) {
	fmt.Fprintf(w, "node %s is %s; %d queued jobs cancelled, %d running jobs lost\n", e.Node.Name, e.Node.State, len(e.Cancelled), len(e.Lost))
}

func nodesDisconnectCmd() *cli.Command {
	return simple("nodes disconnect", "NODE", "end a node's pairing; it must join again with a new key", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var e ended
			return e, c.call(ctx, api.NodesDisconnect, args, nil, nil, &e)
		})
}

// labelText shows labels as a selector would name them, in key order.
func labelText(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}
