package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type machineList struct{ api.MachineList }

func (l machineList) Text(w io.Writer) {
	for _, m := range l.Machines {
		fmt.Fprintf(w, "%-5s %-7s %-24s %-14s %s\n", m.Color, m.Source, esc(m.Name), esc(m.OSRelease), esc(strings.Join(m.Reasons, "; ")))
	}
	if len(l.Machines) == 0 {
		fmt.Fprintln(w, "no machine")
	}
	for _, x := range l.Warnings {
		fmt.Fprintf(w, "warning: %s\n", esc(x))
	}
}

type machineOne struct{ api.Machine }

func (m machineOne) Text(w io.Writer) {
	fmt.Fprintf(w, "machine %s (%s) %s: %s, owner %s, OS %s", esc(m.Name), m.ID, m.Color, esc(m.Purpose), esc(m.Owner), esc(m.OSRelease))
	if m.RetireBy != "" {
		fmt.Fprintf(w, ", retire by %s", m.RetireBy)
	}
	fmt.Fprintf(w, "; confirmed %s by %s\n", short(m.ConfirmedAt), esc(m.ConfirmedBy))
	for _, r := range m.Reasons {
		fmt.Fprintf(w, "  %s\n", esc(r))
	}
}

func machinesListCmd() *cli.Command {
	return simple("machines list", "", "every machine we pay for: managed nodes, cloud servers no node runs on, machines written down; red first", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l machineList
			return l, c.call(ctx, api.MachinesList, nil, nil, nil, &l)
		})
}

// machineFlags are the fields of a machine written down.
func machineFlags(req *api.MachineRequest) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.StringVar(&req.Name, "name", "", "the machine's name: a-z, 0-9, . _ - (required)")
		fs.StringVar(&req.Purpose, "purpose", "", "what it is for (required)")
		fs.StringVar(&req.Owner, "owner", "", "whose it is (required)")
		fs.StringVar(&req.OSRelease, "os", "", "its OS release as os-release spells it: debian 12, ubuntu 22.04, rhel 9.4 (required)")
		fs.StringVar(&req.RetireBy, "retire-by", "", "the day it should be gone, YYYY-MM-DD")
	}
}

func machinesAddCmd() *cli.Command {
	var req api.MachineRequest
	return simple("machines add", "--name NAME --purpose TEXT --owner WHO --os 'ID VERSION' [--retire-by YYYY-MM-DD]",
		"write a machine down (saving confirms it)", 0, 0, machineFlags(&req),
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var m machineOne
			return m, c.call(ctx, api.MachinesAdd, nil, nil, req, &m)
		})
}

func machinesEditCmd() *cli.Command {
	var req api.MachineRequest
	return simple("machines edit", "ID --name NAME --purpose TEXT --owner WHO --os 'ID VERSION' [--retire-by YYYY-MM-DD]",
		"rewrite a machine written down, every field (saving confirms it)", 1, 1, machineFlags(&req),
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var m machineOne
			return m, c.call(ctx, api.MachinesEdit, args, nil, req, &m)
		})
}

func machinesConfirmCmd() *cli.Command {
	return simple("machines confirm", "ID", "confirm a machine written down is still as written", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var m machineOne
			return m, c.call(ctx, api.MachinesConfirm, args, nil, nil, &m)
		})
}

func machinesRemoveCmd() *cli.Command {
	return simple("machines remove", "ID", "remove a machine written down", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var m machineOne
			return m, c.call(ctx, api.MachinesRemove, args, nil, nil, &m)
		})
}
