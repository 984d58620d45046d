package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// esc makes text safe to print on a terminal: what a node said is shown as text, never interpreted.
// Control characters (escape sequences start with one), format characters (bidirectional overrides,
// zero-width joiners) and bytes that are not UTF-8 are written as Go-style escapes; everything else,
// backslashes included, is printed as it is.
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// clip shortens escaped text for one line of a list.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// about is what an incident concerns: its node's name, or for the plane's own incidents "plane:" and
// the subject (a driver, a replica, a route).
func about(i api.Incident) string {
	if i.NodeID == "" {
		return "plane:" + i.Subject
	}
	return i.NodeName
}

type incidentList struct{ api.IncidentList }

func (l incidentList) Text(w io.Writer) {
	if len(l.Incidents) == 0 {
		fmt.Fprintln(w, "no incidents")
	}
	for _, i := range l.Incidents {
		mark := " "
		if i.NeedsYou {
			mark = "!"
		}
		fmt.Fprintf(w, "%s %s %-8s %-8s %-8s %-12s %-26s %s  %s\n", i.ID, mark, i.Severity, i.Condition, i.Triage,
			clip(esc(about(i)), 32), esc(i.Source), short(i.OpenedAt), clip(esc(i.Summary), 80))
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", l.NextCursor)
	}
}

func incidentsListCmd() *cli.Command {
	var node, condition, cursor string
	var needsYou bool
	var limit int
	return simple("incidents list", "[--needs-you] [--node NODE] [--condition open|cleared] [--limit N]",
		"list incidents, newest first; ! marks one that needs you (new, or snoozed and due)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&needsYou, "needs-you", false, "only incidents that need a person: new, or snoozed and due")
			fs.StringVar(&node, "node", "", "only this node's incidents (name or id)")
			fs.StringVar(&condition, "condition", "", "only open or only cleared incidents")
			fs.IntVar(&limit, "limit", 50, "at most this many")
			fs.StringVar(&cursor, "cursor", "", "continue after a previous page")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			q := api.IncidentsListQuery{NeedsYou: needsYou, Node: node, Condition: api.Condition(condition), Limit: limit, Cursor: cursor}
			var l incidentList
			return l, c.call(ctx, api.IncidentsList, nil, q.Values(), nil, &l)
		})
}

type incidentShow struct{ api.IncidentDetail }

func (d incidentShow) Text(w io.Writer) {
	i := d.Incident
	needs := ""
	if i.NeedsYou {
		needs = " (needs you)"
	}
	fmt.Fprintf(w, "incident %s%s\n", i.ID, needs)
	if i.NodeID != "" {
		fmt.Fprintf(w, "  node       %s (%s)\n", esc(i.NodeName), i.NodeID)
	} else {
		fmt.Fprintf(w, "  plane      %s\n", esc(i.Subject))
	}
	fmt.Fprintf(w, "  source     %s\n", esc(i.Source))
	fmt.Fprintf(w, "  severity   %s\n", i.Severity)
	if i.Condition == api.ConditionOpen {
		fmt.Fprintf(w, "  condition  open since %s\n", short(i.ChangedAt))
	} else {
		fmt.Fprintf(w, "  condition  cleared at %s\n", short(i.ClearedAt))
	}
	triage := string(i.Triage)
	if i.Triage == api.TriageSnoozed {
		triage += " until " + short(i.SnoozedUntil)
	}
	if i.TriagedBy != "" {
		triage += " by " + esc(i.TriagedBy)
	}
	if i.Reason != "" {
		triage += ": " + esc(i.Reason)
	}
	fmt.Fprintf(w, "  triage     %s\n", triage)
	fmt.Fprintf(w, "  summary    %s\n", esc(i.Summary))
	fmt.Fprintf(w, "timeline:\n")
	for _, e := range d.Events {
		what := string(e.Kind)
		if e.Kind == api.EventTriage {
			what += " " + string(e.Triage)
			if !e.SnoozedUntil.IsZero() {
				what += " until " + short(e.SnoozedUntil)
			}
		}
		line := fmt.Sprintf("  %s  #%d %s by %s", short(e.At), e.Seq, what, esc(e.Actor))
		if e.Text != "" {
			line += ": " + esc(e.Text)
		}
		fmt.Fprintln(w, line)
	}
	if c := d.Case; c != nil {
		state := string(c.State)
		if c.State == api.CaseClosed {
			state += " at " + short(c.ClosedAt) + " by the " + c.ClosedBy
		}
		fmt.Fprintf(w, "case %d of recipe %s: %s (opened %s)\n", c.ID, esc(c.Recipe), state, short(c.OpenedAt))
		fmt.Fprintf(w, "  summary  %s\n", esc(c.Summary))
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  %s  %s #%d: %s\n", short(n.At), n.Author, n.Seq, esc(n.Text))
		}
		if len(c.Body) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, c.Body) == nil {
				fmt.Fprintf(w, "  body     %s\n", clip(esc(buf.String()), 2000))
			}
		}
	}
	if len(d.Notifications) > 0 {
		fmt.Fprintf(w, "notifications:\n")
		list := append([]api.Notification(nil), d.Notifications...)
		sort.SliceStable(list, func(a, b int) bool { return list[a].CreatedAt.Before(list[b].CreatedAt) })
		for _, n := range list {
			line := fmt.Sprintf("  %s  %-10s %-9s %-9s attempts %d", short(n.CreatedAt), esc(n.Webhook), n.Kind, n.State, n.Attempts)
			if n.LastError != "" {
				line += ": " + esc(n.LastError)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func incidentsShowCmd() *cli.Command {
	return simple("incidents show", "ID", "show an incident with its timeline, its case and its notifications", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var d incidentShow
			return d, c.call(ctx, api.IncidentsShow, args, nil, nil, &d)
		})
}

type triaged struct{ api.IncidentChange }

func (t triaged) Text(w io.Writer) {
	i := t.Incident
	if t.Event.Seq == 0 {
		fmt.Fprintf(w, "incident %s is already %s; nothing changed\n", i.ID, i.Triage)
		return
	}
	what := string(i.Triage)
	if i.Triage == api.TriageSnoozed {
		what += " until " + short(i.SnoozedUntil)
	}
	fmt.Fprintf(w, "incident %s: %s\n", i.ID, what)
}

func incidentsTriageCmd() *cli.Command {
	var reason string
	return simple("incidents triage", "ID new|resolved|ignored|snooze 4h|1d|3d|1w [--reason TEXT]",
		"say what is being done about an incident (the operator role)", 2, 3,
		func(fs *flag.FlagSet) { fs.StringVar(&reason, "reason", "", "why, for the timeline") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			req := api.TriageRequest{Triage: args[1], Reason: reason}
			switch args[1] {
			case "new", "resolved", "ignored":
				if len(args) > 2 {
					return nil, cli.UsageError("only snooze takes a length; %s takes none", args[1])
				}
			case "snooze", "snoozed":
				if len(args) < 3 {
					return nil, cli.UsageError("snooze for %s", api.SnoozeLengths)
				}
				if _, ok := api.Snooze(args[2]); !ok {
					return nil, cli.UsageError("snooze for %s, not %q", api.SnoozeLengths, args[2])
				}
				req.Triage, req.For = "snoozed", args[2]
			default:
				return nil, cli.UsageError("triage is new, resolved, ignored or snooze, not %q", args[1])
			}
			var t triaged
			return t, c.call(ctx, api.IncidentsTriage, args[:1], nil, req, &t)
		})
}

type noted struct{ api.IncidentEvent }

func (n noted) Text(w io.Writer) {
	fmt.Fprintf(w, "note #%d added to incident %s\n", n.Seq, n.IncidentID)
}

func incidentsNoteCmd() *cli.Command {
	return simple("incidents note", "ID TEXT...", "add a note to an incident's timeline (the operator role)", 2, -1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var n noted
			return n, c.call(ctx, api.IncidentsNote, args[:1], nil, api.NoteRequest{Text: strings.Join(args[1:], " ")}, &n)
		})
}
