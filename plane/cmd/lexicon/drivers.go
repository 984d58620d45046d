package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type driverList struct{ api.DriverList }

func (l driverList) Text(w io.Writer) {
	if l.Sequence == 0 {
		fmt.Fprintln(w, "no release is published: no driver is pinned")
	} else {
		fmt.Fprintf(w, "drivers pinned by release %s (sequence %d):\n", l.Release, l.Sequence)
	}
	for _, d := range l.Drivers {
		state := "disabled"
		if d.Enabled {
			state = "enabled"
		}
		pin := "sha256:" + short12(d.Digest)
		if !d.Pinned {
			pin = "not pinned by the current release"
		}
		fmt.Fprintf(w, "  %-22s %-5s %-8s %-8s %s\n", d.Name, d.Kind, d.Version, state, pin)
	}
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func driversListCmd() *cli.Command {
	return simple("drivers list", "", "list the drivers the current release pins and whether each is enabled", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l driverList
			return l, c.call(ctx, api.DriversList, nil, nil, nil, &l)
		})
}

type driverOne struct{ api.Driver }

func (d driverOne) Text(w io.Writer) {
	state := "disabled"
	if d.Enabled {
		state = "enabled"
	}
	if d.Unconfined {
		state += " unconfined"
	}
	fmt.Fprintf(w, "driver %s %s by %s\n", d.Name, state, d.ChangedBy)
	if d.Digest != "" {
		fmt.Fprintf(w, "  runs %s %s, sha256 %s\n", d.Kind, d.Version, d.Digest)
	}
}

func driversEnableCmd() *cli.Command {
	var req api.DriverEnable
	return simple("drivers enable", "NAME", "enable a driver the current release pins; the plane verifies and starts it", 1, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&req.Unconfined, "unconfined", false,
				"accept running the driver where the plane can apply none of its protections (own user, Landlock), so that it could read the plane's files; recorded in the audit log")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var d driverOne
			return d, c.call(ctx, api.DriversEnable, args, nil, req, &d)
		})
}

func driversDisableCmd() *cli.Command {
	return simple("drivers disable", "NAME", "disable a driver: its processes stop on every replica and calls are refused", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var d driverOne
			return d, c.call(ctx, api.DriversDisable, args, nil, nil, &d)
		})
}

type statusList struct{ api.StatusList }

func (l statusList) Text(w io.Writer) {
	if len(l.Drivers) == 0 {
		fmt.Fprintf(w, "no driver is enabled or running on replica %s\n", l.Replica)
	}
	for _, d := range l.Drivers {
		fmt.Fprintf(w, "%-22s %-10s", d.Name, d.State)
		if d.PID != 0 {
			fmt.Fprintf(w, " pid %d", d.PID)
		}
		if d.Digest != "" {
			fmt.Fprintf(w, " %s sha256:%s", d.Version, short12(d.Digest))
		}
		if d.Restarts > 0 {
			fmt.Fprintf(w, " restarts %d", d.Restarts)
		}
		if d.Enabled && !d.Pinned {
			fmt.Fprint(w, " (enabled, not pinned by the current release)")
		}
		fmt.Fprintln(w)
		if len(d.Protections) > 0 {
			fmt.Fprintf(w, "  confined by: %s\n", strings.Join(d.Protections, ", "))
		}
		if d.LastError != "" {
			fmt.Fprintf(w, "  last error: %s\n", d.LastError)
		}
		for _, a := range d.Accounts {
			fmt.Fprintf(w, "  account %-18s %-10s pid %d restarts %d\n", a.Account, a.State, a.PID, a.Restarts)
		}
	}
}

func driversStatusCmd() *cli.Command {
	return simple("drivers status", "", "show the driver processes of the replica that answers", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l statusList
			return l, c.call(ctx, api.DriversStatus, nil, nil, nil, &l)
		})
}

type auditList struct{ api.DriverCallList }

func (l auditList) Text(w io.Writer) {
	if len(l.Calls) == 0 {
		fmt.Fprintln(w, "no driver calls recorded")
	}
	for _, c := range l.Calls {
		account := c.Account
		if account == "" {
			account = "-"
		}
		took := fmt.Sprintf("%5dms", c.DurationMS)
		if c.Code == api.DriverCallPending { // asked, and no outcome recorded: in progress, or the plane stopped mid-call
			took = "      -"
		}
		fmt.Fprintf(w, "%s  %-14s %-16s %-18s %-22s %-20s %s %s\n", short(c.At), c.Actor, account, c.Driver, c.Operation, c.Code, took, c.Target)
	}
	if l.NextCursor != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", l.NextCursor)
	}
}

func driversAuditCmd() *cli.Command {
	var drv, account, cursor string
	var limit int
	return simple("drivers audit", "[--driver NAME] [--account NAME] [--limit N] [--cursor C]",
		"show the audit log of driver calls, newest first: who asked, account, operation, outcome", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&drv, "driver", "", "only calls to this driver")
			fs.StringVar(&account, "account", "", "only calls for this account")
			fs.IntVar(&limit, "limit", 0, "at most this many records (default 100)")
			fs.StringVar(&cursor, "cursor", "", "continue from a previous page")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			q := api.DriversAuditQuery{Driver: drv, Account: account, Limit: limit, Cursor: cursor}
			var l auditList
			return l, c.call(ctx, api.DriversAudit, nil, q.Values(), nil, &l)
		})
}

type driverSchema struct{ api.DriverSchema }

func (s driverSchema) Text(w io.Writer) {
	fmt.Fprintf(w, "settings of a %s account (%s driver %s, executable %s):\n", s.Name, s.Kind, s.Version, s.Digest)
	var b bytes.Buffer
	if json.Indent(&b, s.Schema, "", "  ") != nil {
		b.Reset()
		b.Write(s.Schema)
	}
	fmt.Fprintln(w, b.String())
}

func driversSchemaCmd() *cli.Command {
	return simple("drivers schema", "NAME", "show the JSON Schema of an enabled driver's account settings (what accounts add --settings takes)", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var s driverSchema
			return s, c.call(ctx, api.DriversSchema, args, nil, nil, &s)
		})
}
