package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type auditEvents struct{ api.AuditEventList }

func (l auditEvents) Text(w io.Writer) {
	if len(l.Events) == 0 {
		fmt.Fprintln(w, "no audit events")
	}
	for _, e := range l.Events {
		who := e.Actor
		if who == "" {
			who = "-"
		}
		status := fmt.Sprint(e.Status)
		if e.Status == 0 { // the intent, with no outcome recorded: in progress, or the plane stopped mid-change
			status = "-"
		}
		fmt.Fprintf(w, "%s  %-3s %-16s %-15s %-20s %-3s %-24s %s\n", short(e.At), e.Via, who, e.Address, e.Operation, status, e.Code, e.Target)
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", l.NextCursor)
	}
}

// auditTime reads --since or --until: an RFC 3339 time, or a duration back from now ("24h").
func auditTime(flagName, v string, now time.Time) (string, error) {
	if v == "" {
		return "", nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return api.AuditTime(now.Add(-d)), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return api.AuditTime(t), nil
	}
	return "", errcode.New(errcode.UsageInvalid, "--%s %q is neither an RFC 3339 time nor a duration back from now (24h)", flagName, v)
}

func auditListCmd() *cli.Command {
	var q api.AuditListQuery
	var since, until string
	return simple("audit list", "[--actor TOKEN] [--operation OP] [--target ID] [--outcome ok|failed|pending|CODE] [--since T] [--until T] [--limit N] [--cursor C]",
		"show the audit trail of changes, newest first: when, how (api or ui), who, from where, the operation, its status and code, its target", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&q.Actor, "actor", "", "only changes by this token (its name or id)")
			fs.StringVar(&q.Operation, "operation", "", "only this operation (the API's operation id, such as JobsCreate)")
			fs.StringVar(&q.Target, "target", "", "only changes to this target (an id or a name)")
			fs.StringVar(&q.Outcome, "outcome", "", "only this outcome: ok, failed, pending, or one error code")
			fs.StringVar(&since, "since", "", "only changes at or after this time (RFC 3339) or this long ago (24h)")
			fs.StringVar(&until, "until", "", "only changes before this time (RFC 3339) or this long ago")
			fs.IntVar(&q.Limit, "limit", 0, "at most this many events (default 100)")
			fs.StringVar(&q.Cursor, "cursor", "", "continue from a previous page")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			now := time.Now()
			var err error
			if q.Since, err = auditTime("since", since, now); err != nil {
				return nil, err
			}
			if q.Until, err = auditTime("until", until, now); err != nil {
				return nil, err
			}
			var l auditEvents
			return l, c.call(ctx, api.AuditList, nil, q.Values(), nil, &l)
		})
}
