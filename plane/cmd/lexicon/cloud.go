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

// The cloud commands read only: regions, instance types and instances, each call audited on the plane.

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
