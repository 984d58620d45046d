package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ExitProvisionFailed is the exit status of nodes provision --wait and provisionings show --wait for
// a provisioning that failed.
const ExitProvisionFailed = 9

var provisionFailed = cli.Exit{Status: ExitProvisionFailed, Meaning: "the provisioning failed: the machine did not join"}

type provisioningOne struct{ api.Provisioning }

func (p provisioningOne) Text(w io.Writer) {
	fmt.Fprintf(w, "provisioning %s: %s on %s (%s, %s, %s, %s)\n", p.ID, esc(p.Name), esc(p.Account), esc(p.Region), esc(p.Type), esc(p.Image), p.Platform)
	fmt.Fprintf(w, "state %s since %s", p.State, short(p.StateAt))
	if p.InstanceID != "" {
		fmt.Fprintf(w, ", instance %s %s", esc(p.InstanceID), strings.Join(p.Addresses, " "))
	}
	if p.NodeID != "" {
		fmt.Fprintf(w, ", node %s", p.NodeID)
	}
	fmt.Fprintln(w)
	if p.Reason != "" {
		fmt.Fprintf(w, "reason: %s\n", clip(esc(p.Reason), 400))
	}
	if p.Cleanup != "" {
		fmt.Fprintf(w, "cleanup: %s\n", p.Cleanup)
	}
	for _, e := range p.Events {
		fmt.Fprintf(w, "  %s  %-10s %-14s %s\n", short(e.At), e.State, clip(esc(e.Actor), 14), clip(esc(e.Detail), 200))
	}
}

// provisioningEnded is a provisioning that stopped moving; its exit status says whether it joined.
type provisioningEnded struct {
	provisioningOne
	OK bool `json:"ok"`
}

func (p provisioningEnded) ExitStatus() int {
	if p.OK {
		return 0
	}
	return ExitProvisionFailed
}

type provisioningList struct{ api.ProvisioningList }

func (l provisioningList) Text(w io.Writer) {
	if len(l.Provisionings) == 0 {
		fmt.Fprintln(w, "no provisionings")
	}
	for _, p := range l.Provisionings {
		fmt.Fprintf(w, "%s  %-20s %-11s %-12s %-14s %s\n", p.ID, esc(p.Name), p.State, clip(esc(p.Account), 12), clip(esc(p.InstanceID), 14),
			clip(esc(p.Reason), 100))
	}
}

func nodesProvisionCmd() *cli.Command {
	var req api.ProvisionRequest
	var labels stringList
	var wait bool
	return ending(simple("nodes provision", "--account A --region R --type T --image I --name N [--label k=v]... [--dns-account D --zone Z] [--platform os-arch] [--wait]",
		"make a machine through a cloud account, install its agent with cloud-init and join it (approved when the provider vouches for its address)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Account, "account", "", "the cloud account (lexicon accounts list)")
			fs.StringVar(&req.Region, "region", "", "the region (lexicon cloud regions --account A)")
			fs.StringVar(&req.Type, "type", "", "the instance type (lexicon cloud types --account A --region R)")
			fs.StringVar(&req.Image, "image", "", "the provider's image id")
			fs.StringVar(&req.Name, "name", "", "the node's name")
			fs.StringVar(&req.Platform, "platform", "", "the agent's platform, os-arch (default linux-amd64)")
			fs.Var(&labels, "label", "a label of the node, key=value (repeatable; --labels takes a comma list)")
			fs.Func("labels", "labels of the node, k=v[,k=v...]", func(v string) error {
				labels = append(labels, strings.Split(v, ",")...)
				return nil
			})
			fs.StringVar(&req.DNSAccount, "dns-account", "", "a DNS account to add the node's A/AAAA records with")
			fs.StringVar(&req.Zone, "zone", "", "the zone of those records")
			fs.BoolVar(&wait, "wait", false, "follow it until it joined or failed; the exit status says which")
		},
		func(ctx context.Context, env *cli.Env, c *client, _ []string) (any, error) {
			for name, v := range map[string]string{"--account": req.Account, "--region": req.Region, "--type": req.Type, "--image": req.Image, "--name": req.Name} {
				if v == "" {
					return nil, cli.UsageError("nodes provision needs %s", name)
				}
			}
			var err error
			if req.Labels, err = labelMap(labels); err != nil {
				return nil, err
			}
			var p provisioningOne
			if err := c.call(ctx, api.NodesProvision, nil, nil, req, &p); err != nil {
				return nil, err
			}
			env.Progressf("provisioning %s started: %s", p.ID, p.Name)
			if !wait {
				return p, nil
			}
			return watchProvisioning(ctx, env, c, p.ID)
		}), provisionFailed)
}

// watchProvisioning polls a provisioning until it stops moving, printing each new timeline entry.
func watchProvisioning(ctx context.Context, env *cli.Env, c *client, id string) (any, error) {
	seen := 0
	for polls := 0; ; polls++ {
		var p provisioningOne
		if err := c.call(ctx, api.ProvisioningsShow, []string{id}, nil, nil, &p); err != nil {
			return nil, err
		}
		for _, e := range p.Events[min(seen, len(p.Events)):] {
			env.Progressf("%s  %-10s %s", short(e.At), e.State, clip(esc(e.Detail), 200))
		}
		seen = len(p.Events)
		if p.Final() {
			return provisioningEnded{provisioningOne: p, OK: p.State == api.ProvJoined}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(ctx.Err(), errcode.UsageInterrupted, "stopped watching provisioning %s; it goes on", id)
		case <-time.After(watchEvery(polls)):
		}
	}
}

// watchEvery is the pause after the polls'th look at a provisioning: a quarter second for the first
// five seconds, when a machine on a fast cloud has already joined and the operator waits on the
// command, then a second.
func watchEvery(polls int) time.Duration {
	if polls < 20 {
		return 250 * time.Millisecond
	}
	return time.Second
}

func provisioningsListCmd() *cli.Command {
	var q api.ProvisioningsListQuery
	return simple("provisionings list", "[--open] [--state S] [--limit N]", "list provisionings, newest first", 0, 0,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&q.Open, "open", false, "only those still under way (or failed with an instance not yet deleted)")
			fs.StringVar(&q.State, "state", "", "only this state: creating, booting, installing, joining, joined, failed, cleaned_up")
			fs.IntVar(&q.Limit, "limit", 0, "at most this many (default 100)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l provisioningList
			return l, c.call(ctx, api.ProvisioningsList, nil, q.Values(), nil, &l)
		})
}

func provisioningsShowCmd() *cli.Command {
	var wait bool
	return ending(simple("provisionings show", "ID [--wait]", "show a provisioning and its timeline", 1, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&wait, "wait", false, "follow it until it joined or failed; the exit status says which")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			if wait {
				return watchProvisioning(ctx, env, c, args[0])
			}
			var p provisioningOne
			return p, c.call(ctx, api.ProvisioningsShow, args, nil, nil, &p)
		}), provisionFailed)
}

func nodesAdoptCmd() *cli.Command {
	var req api.AdoptRequest
	return simple("nodes adopt", "NODE --account A --instance ID",
		"link an existing instance to an existing node when the provider reports an address the node reported", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Account, "account", "", "the cloud account holding the instance")
			fs.StringVar(&req.InstanceID, "instance", "", "the provider's instance id")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if req.Account == "" || req.InstanceID == "" {
				return nil, cli.UsageError("nodes adopt needs --account and --instance")
			}
			var p provisioningOne
			return p, c.call(ctx, api.NodesAdopt, args, nil, req, &p)
		})
}

type decommissioned struct{ api.Decommissioned }

func (d decommissioned) Text(w io.Writer) {
	fmt.Fprintf(w, "node %s (%s) decommissioned: %s\n", esc(d.Node.Name), d.Node.ID, d.Node.State)
	provisioningOne{d.Provisioning}.Text(w)
	if len(d.Cancelled)+len(d.Lost) > 0 {
		fmt.Fprintf(w, "%d queued jobs cancelled, %d running jobs lost\n", len(d.Cancelled), len(d.Lost))
	}
}

func nodesDecommissionCmd() *cli.Command {
	var req api.DecommissionRequest
	return simple("nodes decommission", "NODE --confirm NAME",
		"remove a provisioned node's DNS records, delete its instance and disconnect it (the node's name typed back)", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&req.Confirm, "confirm", "", "the node's name, typed back")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if req.Confirm == "" {
				return nil, cli.UsageError("type the node's name back with --confirm NAME (lexicon nodes show %s)", args[0])
			}
			var d decommissioned
			return d, c.call(ctx, api.NodesDecommission, args, nil, req, &d)
		})
}

// labelMap reads --label and --labels values (key=value each); none is nil.
func labelMap(labels []string) (map[string]string, error) {
	var out map[string]string
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, cli.UsageError("a label is key=value, not %q", l)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

type installCommand struct{ api.InstallCommand }

// Text is the command alone on stdout, so that it can be piped or copied; what it does goes to the
// lines before it, as comments a paste ignores.
func (c installCommand) Text(w io.Writer) {
	decision := "its join is approved at once"
	if !c.Approve {
		decision = "its join waits for an admin's approval (lexicon joins list)"
	}
	fmt.Fprintf(w, "# Paste on the machine as root before %s; it installs the agent %s and joins the fleet; %s.\n",
		c.ExpiresAt.Local().Format("2006-01-02 15:04:05"), short12(c.AgentDigest), decision)
	fmt.Fprintln(w, "# It holds a one-time token, shown once.")
	fmt.Fprintln(w, c.Command)
}

func nodesInstallCommandCmd() *cli.Command {
	var req api.InstallCommandRequest
	var labels stringList
	approve := true
	return simple("nodes install-command", "[--label k=v]... [--expires 1h] [--approve=false] [--platform os-arch]",
		"print one command that installs the agent on an existing machine and joins it with a one-time token (approved at once unless --approve=false)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.Var(&labels, "label", "a label of the node, key=value (repeatable; --labels takes a comma list)")
			fs.Func("labels", "labels of the node, k=v[,k=v...]", func(v string) error {
				labels = append(labels, strings.Split(v, ",")...)
				return nil
			})
			fs.StringVar(&req.ExpiresIn, "expires", "", "how long the command's token may be used (default 1h, at most 168h)")
			fs.BoolVar(&approve, "approve", true, "approve the machine's join at once; false leaves it for an admin")
			fs.StringVar(&req.Platform, "platform", "", "the machine's platform, os-arch (default linux-amd64)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var err error
			if req.Labels, err = labelMap(labels); err != nil {
				return nil, err
			}
			req.Approve = &approve
			var out installCommand
			return out, c.call(ctx, api.NodesInstallCommand, nil, nil, req, &out)
		})
}
