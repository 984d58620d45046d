package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// ExitConflicts is the exit status of a reconcile that left conflicts: it ran, and the zone does not
// hold every record the file asks for.
const ExitConflicts = 3

type zoneList struct{ api.ZoneList }

func (l zoneList) Text(w io.Writer) {
	for _, z := range l.Zones {
		fmt.Fprintln(w, z.Name)
	}
}

func needAccount(account string) error {
	if account == "" {
		return cli.UsageError("name the account with --account (lexicon accounts list)")
	}
	return nil
}

func dnsZonesCmd() *cli.Command {
	var account string
	return simple("dns zones", "--account A", "list the zones a DNS account serves", 0, 0,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the DNS account") },
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var l zoneList
			return l, c.call(ctx, api.DNSZones, []string{account}, nil, nil, &l)
		})
}

type recordList struct{ api.RecordList }

func (l recordList) Text(w io.Writer) {
	if len(l.Records) == 0 {
		fmt.Fprintln(w, "no records")
	}
	for _, r := range l.Records {
		fmt.Fprintln(w, recordLine(r))
	}
}

func recordLine(r api.Record) string {
	prio := ""
	if r.Priority != 0 {
		prio = fmt.Sprintf("%d ", r.Priority)
	}
	return fmt.Sprintf("%-24s %6d %-5s %s%s", r.Name, r.TTL, r.Type, prio, r.Value)
}

func dnsRecordsCmd() *cli.Command {
	var account, zone string
	return simple("dns records", "--account A --zone Z", "list a zone's records", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the DNS account")
			fs.StringVar(&zone, "zone", "", "the zone")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			if zone == "" {
				return nil, cli.UsageError("name the zone with --zone")
			}
			var l recordList
			return l, c.call(ctx, api.DNSRecords, []string{account, zone}, nil, nil, &l)
		})
}

type reconcileReport struct{ api.ReconcileReport }

func (r reconcileReport) Text(w io.Writer) {
	verb := "created"
	if r.DryRun {
		verb = "would create"
	}
	fmt.Fprintf(w, "zone %s (account %s): %d %s, %d already present, %d conflicts\n", r.Zone, r.Account, len(r.Created), verb, len(r.Present), len(r.Conflicts))
	for _, rec := range r.Created {
		fmt.Fprintf(w, "  + %s\n", recordLine(rec))
	}
	for _, rec := range r.Present {
		fmt.Fprintf(w, "  = %s\n", recordLine(rec))
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(w, "  ! %s\n      %s; left alone:\n", recordLine(c.Record), c.Reason)
		for _, e := range c.Existing {
			fmt.Fprintf(w, "      %s\n", recordLine(e))
		}
	}
}

// ExitStatus is ExitConflicts when conflicts remain: the report is printed in full either way.
func (r reconcileReport) ExitStatus() int {
	if len(r.Conflicts) > 0 {
		return ExitConflicts
	}
	return 0
}

func dnsReconcileCmd() *cli.Command {
	var account, zone, file string
	var dry bool
	return ending(simple("dns reconcile", "--account A --zone Z --records-file F [--dry-run]",
		"add the records a zone lacks; never change or delete one, and name each conflict", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the DNS account")
			fs.StringVar(&zone, "zone", "", "the zone")
			fs.StringVar(&file, "records-file", "", `JSON file: {"records": [{"type": "A", "name": "www", "value": "192.0.2.1", "ttl": 300}, ...]}`)
			fs.BoolVar(&dry, "dry-run", false, "read the zone and report, change nothing")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			if zone == "" || file == "" {
				return nil, cli.UsageError("dns reconcile needs --zone and --records-file")
			}
			var rf api.RecordsFile
			if err := readJSONFile(file, &rf); err != nil {
				return nil, err
			}
			var r reconcileReport
			return r, c.call(ctx, api.DNSReconcile, []string{account, zone}, nil, api.Reconcile{Records: rf.Records, DryRun: dry}, &r)
		}), cli.Exit{Status: ExitConflicts, Meaning: "conflicts remain; the report names each"})
}
