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

func backupsCmds() []*cli.Command {
	return []*cli.Command{
		backupsListCmd(), backupsShowCmd(), backupsRestoreCmd(),
		backupTargetsListCmd(), backupTargetsAddCmd(), backupTargetsShowCmd(), backupTargetsRemoveCmd(), backupTargetsCheckCmd(),
		backupPolicyShowCmd(), backupPolicySetCmd(), backupPolicyClearCmd(),
	}
}

func when(t interface{ IsZero() bool }, s string) string {
	if t.IsZero() {
		return "never"
	}
	return s
}

type backupFleet struct{ api.BackupFleet }

func (f backupFleet) Text(w io.Writer) {
	if len(f.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
	}
	for _, h := range f.Nodes {
		fmt.Fprintf(w, "%-20s %-4s %-5s last run %s (%s), last full %s, verified %s, %d bytes\n", h.Node, h.Policy, color(h.Green),
			when(h.LastRun, short(h.LastRun)), h.LastRunState, when(h.LastFull, short(h.LastFull)), when(h.LastVerified, short(h.LastVerified)), h.Bytes)
		for _, r := range h.Reasons {
			fmt.Fprintf(w, "    red: %s\n", r)
		}
	}
}

func color(green bool) string {
	if green {
		return "green"
	}
	return "red"
}

func backupsListCmd() *cli.Command {
	return simple("backups list", "", "every node's backup health: last run, last full, last verified, size, reasons for red", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var f backupFleet
			return f, c.call(ctx, api.BackupsFleet, nil, nil, nil, &f)
		})
}

type backupNode struct{ api.BackupNode }

func (n backupNode) Text(w io.Writer) {
	backupFleet{api.BackupFleet{Nodes: []api.BackupHealth{n.Health}}}.Text(w)
	backupPolicy{n.Policy}.Text(w)
	for _, r := range n.Runs {
		fmt.Fprintf(w, "  %s %-7s %-13s job %s run %s %s %d bytes %s\n", short(r.StartedAt), r.Purpose, r.State, r.Job, r.Run, r.Kind, r.Bytes, r.Detail)
	}
}

func backupsShowCmd() *cli.Command {
	return simple("backups show", "NODE", "a node's backup health, the policy it follows and its recent backup jobs", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var n backupNode
			return n, c.call(ctx, api.BackupsNode, args, nil, nil, &n)
		})
}

func backupsRestoreCmd() *cli.Command {
	var req api.BackupRestoreRequest
	var wait bool
	return ending(simple("backups restore", "NODE [--run R] (--into DIR [--path P] | --database D [--into-database X]) [--wait]",
		"queue a restore (admin) of one of the node's witnessed runs, its chain in order, into an empty or new folder or a database that does not exist yet; the plane grants the node reading that chain", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Run, "run", "", "the run to restore (lexicon backups show NODE); default the newest witnessed one")
			fs.StringVar(&req.Into, "into", "", "restore files into this folder on the node, which must be empty or not exist")
			fs.StringVar(&req.Path, "path", "", "with --into: restore only this folder of the tree (its contents go into --into)")
			fs.StringVar(&req.Database, "database", "", "restore this database's dump")
			fs.StringVar(&req.IntoDatabase, "into-database", "", "with --database: restore into this database, which must not exist (default the same name)")
			fs.BoolVar(&wait, "wait", false, "wait for the restore to finish; the exit status says how it ended")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			switch {
			case (req.Into == "") == (req.Database == ""):
				return nil, cli.UsageError("give --into DIR (files) or --database D, one of them")
			case req.Path != "" && req.Into == "":
				return nil, cli.UsageError("--path goes with --into")
			case req.IntoDatabase != "" && req.Database == "":
				return nil, cli.UsageError("--into-database goes with --database")
			}
			var j jobOne
			if err := c.call(ctx, api.BackupsRestore, args, nil, req, &j); err != nil {
				return nil, err
			}
			env.Progressf("job %s queued: %s on %s", j.ID, j.Word, args[0])
			if !wait {
				return j, nil
			}
			return watch(ctx, env, c, j.ID)
		}), jobExits...)
}

type backupTarget struct{ api.BackupTarget }

func (t backupTarget) Text(w io.Writer) {
	fmt.Fprintf(w, "target %s: %s bucket %s prefix %q region %s, key id %s, recovery %s, added %s by %s\n", t.Name, t.Endpoint, t.Bucket,
		t.Prefix, t.Region, t.AccessKeyID, t.Recovery, short(t.CreatedAt), t.CreatedBy)
}

type backupTargetList struct{ api.BackupTargetList }

func (l backupTargetList) Text(w io.Writer) {
	if len(l.Targets) == 0 {
		fmt.Fprintln(w, "no backup targets")
	}
	for _, t := range l.Targets {
		backupTarget{t}.Text(w)
	}
}

func backupTargetsListCmd() *cli.Command {
	return simple("backups targets list", "", "list backup targets (never their secrets)", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l backupTargetList
			return l, c.call(ctx, api.BackupTargetsList, nil, nil, nil, &l)
		})
}

func backupTargetsAddCmd() *cli.Command {
	var req api.BackupTargetRequest
	var secretFile string
	return simple("backups targets add", "--name N --endpoint URL --region R --bucket B [--prefix P] --access-key-id ID --secret-file F --recovery age1...",
		"probe an S3-compatible bucket (list, put, get, delete) and save it, its secret sealed; a failure names its step", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Name, "name", "", "the target's name")
			fs.StringVar(&req.Endpoint, "endpoint", "", "the service's URL (https://s3.eu-central-1.amazonaws.com)")
			fs.StringVar(&req.Region, "region", "", "the region requests are signed for")
			fs.StringVar(&req.Bucket, "bucket", "", "the bucket")
			fs.StringVar(&req.Prefix, "prefix", "", "the folder of the fleet's runs in the bucket")
			fs.StringVar(&req.AccessKeyID, "access-key-id", "", "the access key id")
			fs.StringVar(&secretFile, "secret-file", "", "file holding the secret access key; never give it as an argument")
			fs.BoolVar(&req.VirtualHosted, "virtual-hosted", false, "address the bucket as a host name rather than a path")
			fs.StringVar(&req.Recovery, "recovery", "", "the fleet's recovery recipient (age1..., from lexicon-release backup-keygen)")
		},
		func(ctx context.Context, env *cli.Env, c *client, _ []string) (any, error) {
			if req.Name == "" || req.Endpoint == "" || req.Bucket == "" || req.AccessKeyID == "" || secretFile == "" || req.Recovery == "" {
				return nil, cli.UsageError("backups targets add needs --name, --endpoint, --bucket, --access-key-id, --secret-file and --recovery")
			}
			secret, err := readCredential(env, secretFile)
			if err != nil {
				return nil, err
			}
			req.SecretAccessKey = secret
			var t backupTarget
			return t, c.call(ctx, api.BackupTargetsAdd, nil, nil, req, &t)
		})
}

func backupTargetsShowCmd() *cli.Command {
	return simple("backups targets show", "NAME", "show a backup target", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var t backupTarget
			return t, c.call(ctx, api.BackupTargetsShow, args, nil, nil, &t)
		})
}

func backupTargetsRemoveCmd() *cli.Command {
	return simple("backups targets remove", "NAME", "forget a backup target and its sealed secret; its runs stay in the bucket", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var t backupTarget
			return t, c.call(ctx, api.BackupTargetsRemove, args, nil, nil, &t)
		})
}

type backupCheck struct{ api.BackupCheck }

func (k backupCheck) Text(w io.Writer) {
	for _, s := range k.Steps {
		if s.OK {
			fmt.Fprintf(w, "%-6s ok\n", s.Step)
		} else {
			fmt.Fprintf(w, "%-6s FAILED %s: %s\n", s.Step, s.Code, s.Message)
		}
	}
}

// ExitStatus makes a check that did not pass end the command with status 1, its steps printed.
func (k backupCheck) ExitStatus() int {
	if k.OK {
		return cli.StatusOK
	}
	return cli.StatusFailed
}

func backupTargetsCheckCmd() *cli.Command {
	return simple("backups targets check", "NAME", "probe a saved backup target again: list, put, get and delete, each step's outcome", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var k backupCheck
			return k, c.call(ctx, api.BackupTargetsCheck, args, nil, nil, &k)
		})
}

type backupPolicy struct{ api.BackupPolicy }

func (p backupPolicy) Text(w io.Writer) {
	who := "fleet"
	if p.Node != "" {
		who = "node " + p.Node
	}
	state := "on"
	if !p.Enabled {
		state = "OFF (recorded)"
	}
	fmt.Fprintf(w, "policy of %s (%s): %s, target %q, every %s, keep %d days, verify every %s, paths [%s], databases [%s]\n", who, p.Source,
		state, p.Target, p.Every, p.KeepDays, p.VerifyEvery, strings.Join(p.Paths, " "), strings.Join(p.Databases, " "))
}

type backupPolicyList struct{ api.BackupPolicyList }

func (l backupPolicyList) Text(w io.Writer) {
	backupPolicy{l.Fleet}.Text(w)
	for _, p := range l.Nodes {
		backupPolicy{p}.Text(w)
	}
}

func backupPolicyShowCmd() *cli.Command {
	return simple("backups policy show", "[NODE]", "the fleet's backup policy and every node's own, or the policy one node follows", 0, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if len(args) == 0 {
				var l backupPolicyList
				return l, c.call(ctx, api.BackupPoliciesList, nil, nil, nil, &l)
			}
			var p backupPolicy
			return p, c.call(ctx, api.BackupPolicyShow, args, nil, nil, &p)
		})
}

func backupPolicySetCmd() *cli.Command {
	var req api.BackupPolicy
	var node string
	var off bool
	var paths, dbs multi
	return simple("backups policy set", "[--node NODE] (--off | --target T [--path P]... [--database D]... [--every 24h] [--keep-days 14] [--verify-every 168h])",
		"set the fleet's backup policy, or a node's own (--off records that the node is not backed up)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&node, "node", "", "the node (by id or name); none sets the fleet's policy")
			fs.BoolVar(&off, "off", false, "record that the node is not backed up")
			fs.StringVar(&req.Target, "target", "", "the backup target")
			fs.Var(&paths, "path", "a folder to back up (repeatable)")
			fs.Var(&dbs, "database", "a PostgreSQL database to dump (repeatable)")
			fs.StringVar(&req.Every, "every", "", "how often a run starts (default 24h)")
			fs.IntVar(&req.KeepDays, "keep-days", 0, "how many days of runs to keep (default 14; never below the fleet's floor)")
			fs.StringVar(&req.VerifyEvery, "verify-every", "", "how often the newest run is verified restorable (default 168h)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			req.Enabled, req.Paths, req.Databases = !off, paths, dbs
			var p backupPolicy
			if node == "" {
				if off {
					return nil, cli.UsageError("--off is a node's decision: give --node")
				}
				return p, c.call(ctx, api.BackupPolicyFleet, nil, nil, req, &p)
			}
			return p, c.call(ctx, api.BackupPolicySet, []string{node}, nil, req, &p)
		})
}

func backupPolicyClearCmd() *cli.Command {
	return simple("backups policy clear", "NODE", "remove a node's own backup policy: it follows the fleet's again", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var p backupPolicy
			return p, c.call(ctx, api.BackupPolicyClear, args, nil, nil, &p)
		})
}
