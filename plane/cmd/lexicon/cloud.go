package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The cloud commands: regions, instance types and instances to read, and every operation of the cloud
// contract on one instance, each call audited on the plane with the token's name.

type regionList struct{ api.RegionList }

func (l regionList) Text(w io.Writer) {
	for _, r := range l.Regions {
		fmt.Fprintf(w, "%-16s %-4s %s\n", r.ID, r.Country, r.Label)
	}
}

func cloudRegionsCmd() *cli.Command {
	var account string
	return simple("cloud regions", "--account A", "list the regions of a cloud account", 0, 0,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var l regionList
			return l, c.call(ctx, api.CloudRegions, []string{account}, nil, nil, &l)
		})
}

type typeList struct{ api.TypeList }

func (l typeList) Text(w io.Writer) {
	for _, t := range l.Types {
		fmt.Fprintf(w, "%-20s %3d vCPU %7d MiB %5d GiB  %s\n", t.ID, t.VCPUs, t.MemoryMiB, t.DiskGiB, t.Label)
	}
}

func cloudTypesCmd() *cli.Command {
	var account, region string
	return simple("cloud types", "--account A --region R", "list the instance types of a region", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the cloud account")
			fs.StringVar(&region, "region", "", "the region (lexicon cloud regions)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			if region == "" {
				return nil, cli.UsageError("name the region with --region")
			}
			var l typeList
			return l, c.call(ctx, api.CloudTypes, []string{account, region}, nil, nil, &l)
		})
}

type instancePage struct{ api.InstancePage }

func (p instancePage) Text(w io.Writer) {
	if len(p.Instances) == 0 {
		fmt.Fprintln(w, "no instances")
	}
	for _, i := range p.Instances {
		fmt.Fprintf(w, "%-16s %-24s %-10s %-12s %-14s %s\n", i.ID, i.Label, i.Region, i.Type, i.Status, strings.Join(i.IPv4, ","))
	}
	if p.NextPageToken != "" {
		fmt.Fprintf(w, "more: --page-token %s\n", p.NextPageToken)
	}
}

func cloudInstancesCmd() *cli.Command {
	var account, token string
	var size int
	return simple("cloud instances", "--account A [--page-size N] [--page-token T]", "list a cloud account's instances, a page at a time", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the cloud account")
			fs.IntVar(&size, "page-size", 0, "instances per page (1..500; default the driver's)")
			fs.StringVar(&token, "page-token", "", "the next page, as a previous page named it")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			q := api.CloudInstancesQuery{PageSize: size, PageToken: token}
			var p instancePage
			return p, c.call(ctx, api.CloudInstances, []string{account}, q.Values(), nil, &p)
		})
}

type instanceOne struct{ api.Instance }

func (i instanceOne) Text(w io.Writer) {
	fmt.Fprintf(w, "instance %s  label %s  %s\n", i.ID, i.Label, i.Status)
	fmt.Fprintf(w, "  region %s, type %s, image %s, created %s\n", i.Region, i.Type, i.Image, short(i.Created))
	if len(i.IPv4)+len(i.IPv6) > 0 {
		fmt.Fprintf(w, "  addresses %s\n", strings.Join(append(append([]string{}, i.IPv4...), i.IPv6...), " "))
	}
	if len(i.Tags) > 0 {
		fmt.Fprintf(w, "  tags %s\n", strings.Join(i.Tags, ", "))
	}
}

// readSmallFile reads a file the user names for a request (user data, an SSH public key).
func readSmallFile(what, path string, limit int) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot read %s file %s", what, path)
	}
	if len(data) > limit {
		return "", cli.UsageError("%s file %s is over %d bytes", what, path, limit)
	}
	return string(data), nil
}

func cloudCreateCmd() *cli.Command {
	var account, region, typ, image, label, userData, disk string
	var tags, keys multi
	return simple("cloud create", "--account A --region R --type T --image I --label L [--tag T]... [--ssh-key-file F]... [--user-data-file F]",
		"create an instance; it answers as the provider first reports it (usually provisioning)", 0, 0,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the cloud account")
			fs.StringVar(&region, "region", "", "the region (lexicon cloud regions)")
			fs.StringVar(&typ, "type", "", "the instance type (lexicon cloud types)")
			fs.StringVar(&image, "image", "", "the provider's image id")
			fs.StringVar(&label, "label", "", "the instance's label: lowercase letters, digits and inner hyphens (typed back to delete it)")
			fs.Var(&tags, "tag", "a tag for the instance (repeat for more)")
			fs.Var(&keys, "ssh-key-file", "a file holding an OpenSSH public key to install (repeat for more)")
			fs.StringVar(&userData, "user-data-file", "", "a file of cloud-init user data")
			fs.StringVar(&disk, "disk-encryption", "", "enabled or disabled (default: the provider's)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			if region == "" || typ == "" || image == "" || label == "" {
				return nil, cli.UsageError("cloud create needs --region, --type, --image and --label")
			}
			req := api.CloudCreateRequest{Region: region, Type: typ, Image: image, Label: label, Tags: tags, DiskEncryption: disk}
			for _, k := range keys {
				key, err := readSmallFile("SSH key", k, 16<<10)
				if err != nil {
					return nil, err
				}
				req.SSHKeys = append(req.SSHKeys, strings.TrimSpace(key))
			}
			if userData != "" {
				ud, err := readSmallFile("user data", userData, api.MaxUserData)
				if err != nil {
					return nil, err
				}
				req.UserData = ud
			}
			var i instanceOne
			return i, c.call(ctx, api.CloudCreate, []string{account}, nil, req, &i)
		})
}

func cloudShowCmd() *cli.Command {
	var account string
	return simple("cloud show", "--account A ID", "show one instance as the provider reports it", 1, 1,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var i instanceOne
			return i, c.call(ctx, api.CloudGet, []string{account, args[0]}, nil, nil, &i)
		})
}

type instanceDeleted struct{ api.Instance }

func (i instanceDeleted) Text(w io.Writer) {
	fmt.Fprintf(w, "deleted instance %s (%s) in %s\n", i.ID, i.Label, i.Region)
}

func cloudDeleteCmd() *cli.Command {
	var account, confirm string
	return simple("cloud delete", "--account A ID --confirm LABEL",
		"delete an instance (admin); type its label back with --confirm, or nothing is deleted", 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&account, "account", "", "the cloud account")
			fs.StringVar(&confirm, "confirm", "", "the instance's label, typed back (lexicon cloud show)")
		},
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			if confirm == "" {
				return nil, cli.UsageError("type the instance's label back with --confirm LABEL (lexicon cloud show --account %s %s)", account, args[0])
			}
			var i instanceDeleted
			return i, c.call(ctx, api.CloudDelete, []string{account, args[0]}, nil, api.CloudDeleteRequest{Confirm: confirm}, &i)
		})
}

type accepted struct{ api.CloudAccepted }

func (a accepted) Text(w io.Writer) {
	fmt.Fprintf(w, "%s of %s accepted by the provider of %s\n", a.Operation, strings.Join(a.Instances, " and "), a.Account)
}

// cloudActionCmd is a command that asks the provider to do one thing to one instance.
func cloudActionCmd(path, summary string, rt api.Route) *cli.Command {
	var account string
	return simple(path, "--account A ID", summary, 1, 1,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var a accepted
			return a, c.call(ctx, rt, []string{account, args[0]}, nil, nil, &a)
		})
}

func cloudPowerOnCmd() *cli.Command {
	return cloudActionCmd("cloud power-on", "start an instance (returns once the provider accepted)", api.CloudPowerOn)
}

func cloudPowerOffCmd() *cli.Command {
	return cloudActionCmd("cloud power-off", "stop an instance (returns once the provider accepted)", api.CloudPowerOff)
}

func cloudRebootCmd() *cli.Command {
	return cloudActionCmd("cloud reboot", "reboot an instance (returns once the provider accepted)", api.CloudReboot)
}

func cloudSwapIPv4Cmd() *cli.Command {
	var account string
	return simple("cloud swap-ipv4", "--account A ID_A ID_B",
		"exchange two instances' public IPv4 addresses (some providers need both stopped)", 2, 2,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var a accepted
			return a, c.call(ctx, api.CloudSwapIPv4, []string{account}, nil, api.SwapIPv4Request{A: args[0], B: args[1]}, &a)
		})
}

func cloudReverseDNSCmd() *cli.Command {
	var account string
	return simple("cloud reverse-dns", "--account A ID IP HOSTNAME", "set the PTR record of one of an instance's addresses", 3, 3,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var a accepted
			return a, c.call(ctx, api.CloudReverseDNS, []string{account, args[0]}, nil, api.ReverseDNSRequest{IP: args[1], Hostname: args[2]}, &a)
		})
}

type transferOne struct{ api.Transfer }

func (t transferOne) Text(w io.Writer) {
	if t.AllowanceBytes == 0 {
		fmt.Fprintf(w, "instance %s: %d bytes this month, no allowance\n", t.Instance, t.UsedBytes)
		return
	}
	fmt.Fprintf(w, "instance %s: %d of %d bytes this month (%.1f%%)\n", t.Instance, t.UsedBytes, t.AllowanceBytes,
		100*float64(t.UsedBytes)/float64(t.AllowanceBytes))
}

func cloudTransferCmd() *cli.Command {
	var account string
	return simple("cloud transfer", "--account A ID", "show an instance's network transfer this billing month", 1, 1,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var t transferOne
			return t, c.call(ctx, api.CloudTransfer, []string{account, args[0]}, nil, nil, &t)
		})
}

type cloudAccountOne struct{ api.CloudAccountInfo }

func (a cloudAccountOne) Text(w io.Writer) {
	test := ""
	if a.Test {
		test = " (test account)"
	}
	fmt.Fprintf(w, "account %s%s on driver %s: %s", a.Account, test, a.Driver, a.Name)
	if a.Company != "" {
		fmt.Fprintf(w, ", %s", a.Company)
	}
	if a.Email != "" {
		fmt.Fprintf(w, " <%s>", a.Email)
	}
	fmt.Fprintln(w)
	var have []string
	if a.Features.IPv4Swap {
		f := "swap-ipv4"
		if a.Features.IPv4SwapRequiresStopped {
			f += " (both stopped)"
		}
		have = append(have, f)
	}
	if a.Features.ReverseDNS {
		have = append(have, "reverse-dns")
	}
	if a.Features.MonthlyTransfer {
		have = append(have, "transfer")
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	fmt.Fprintf(w, "  optional features: %s\n", strings.Join(have, ", "))
}

func cloudAccountCmd() *cli.Command {
	var account string
	return simple("cloud account", "--account A", "show whose credential a cloud account holds, and its driver's optional features", 0, 0,
		func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "the cloud account") },
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			if err := needAccount(account); err != nil {
				return nil, err
			}
			var a cloudAccountOne
			return a, c.call(ctx, api.CloudAccount, []string{account}, nil, nil, &a)
		})
}
