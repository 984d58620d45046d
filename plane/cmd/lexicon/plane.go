package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type planeStatus struct{ api.PlaneStatus }

func (p planeStatus) Text(w io.Writer) {
	if len(p.Replicas) == 0 {
		fmt.Fprintln(w, "no replica has heartbeat yet")
	}
	for _, r := range p.Replicas {
		state := "alive"
		if r.Missing {
			state = "MISSING"
		}
		me := ""
		if r.ID == p.Answered {
			me = " (answered)"
		}
		fmt.Fprintf(w, "replica %s%s  %s\n", esc(r.ID), me, state)
		fmt.Fprintf(w, "  version    %s\n", esc(r.Version))
		fmt.Fprintf(w, "  address    %s\n", esc(r.Address))
		fmt.Fprintf(w, "  started    %s\n", short(r.StartedAt))
		fmt.Fprintf(w, "  heartbeat  %s (lease %s)\n", short(r.HeartbeatAt), time.Duration(r.LeaseSeconds*float64(time.Second)))
		limit := "unknown limit"
		if r.MemoryLimitBytes > 0 {
			limit = "limit " + mibText(r.MemoryLimitBytes)
		}
		alert := "no alert"
		if r.MemoryAlert > 0 {
			alert = fmt.Sprintf("alert above %.0f%%", 100*r.MemoryAlert)
		}
		fmt.Fprintf(w, "  memory     rss %s, heap %s; %s, %s\n", mibText(r.RSSBytes), mibText(r.HeapBytes), limit, alert)
		peak := fmt.Sprintf("rss %s, heap %s", mibText(r.PeakRSSBytes), mibText(r.PeakHeapBytes))
		if !r.PeakAt.IsZero() {
			peak += " (rss at " + short(r.PeakAt) + ")"
		}
		fmt.Fprintf(w, "  peak       %s\n", peak)
		services := make([]string, len(r.Services))
		for i, s := range r.Services {
			services[i] = esc(s)
		}
		fmt.Fprintf(w, "  services   %s\n", strings.Join(services, ", "))
	}
}

func mibText(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func planeStatusCmd() *cli.Command {
	return simple("plane status", "", "list the plane's replicas: version, address, last heartbeat, memory and peak, the services each runs", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var p planeStatus
			err := c.call(ctx, api.PlaneShowStatus, nil, nil, nil, &p)
			return p, err
		})
}

type replicaForgotten struct{ api.Replica }

func (r replicaForgotten) Text(w io.Writer) {
	fmt.Fprintf(w, "replica %s forgotten (last heartbeat %s); its incidents clear at the next reconcile\n", esc(r.ID), short(r.HeartbeatAt))
}

func planeForgetReplicaCmd() *cli.Command {
	return simple("plane forget-replica", "ID", "forget a replica that stopped for good (it must be silent past its lease); clears plane:replica_missing", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var r replicaForgotten
			err := c.call(ctx, api.PlaneForgetReplica, args, nil, nil, &r)
			return r, err
		})
}
