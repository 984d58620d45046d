package backups

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// nodeHealth is a node's health and the findings (the incident-worthy part of its reasons) it keeps.
type nodeHealth struct {
	api.BackupHealth
	findings []store.BackupFinding
}

// health judges a node's backups from its policy and its recent jobs, newest first. Red when the
// newest judged run did not land or is incomplete, when the newest verify failed or none succeeded
// within twice the verify interval, when the newest run failed, or when no run was witnessed within
// twice the backup interval. A recorded off is not red: it is shown as off.
func (r *Room) health(n store.Node, b store.BackupPolicy, jobs []store.BackupJob) nodeHealth {
	now := r.now()
	h := nodeHealth{BackupHealth: api.BackupHealth{NodeID: n.ID, Node: n.Name, Policy: "on", Reasons: []string{}}}
	switch {
	case !b.Enabled:
		h.Policy = "off"
	case b.Target == "":
		h.Policy = "none"
	}
	var lastRun, lastJudged, lastVerify, firstWitnessed *store.BackupJob
	for i := range jobs {
		j := &jobs[i]
		if j.Purpose == store.BackupPurposeRun {
			if lastRun == nil {
				lastRun = j
			}
			if lastJudged == nil && j.State != store.BackupDispatched {
				lastJudged = j
			}
			if j.State == store.BackupWitnessed {
				if h.LastFull.IsZero() && j.Kind == "full" {
					h.LastFull = j.StartedAt
				}
				if h.Bytes == 0 {
					h.Bytes = j.Bytes
				}
				firstWitnessed = j
			}
			continue
		}
		if j.Purpose != store.BackupPurposeVerify { // a restore says nothing of the backups' health
			continue
		}
		if lastVerify == nil && j.State != store.BackupDispatched {
			lastVerify = j
		}
		if h.LastVerified.IsZero() && j.State == store.BackupVerified {
			h.LastVerified = j.JudgedAt
		}
	}
	if lastRun != nil {
		h.LastRun, h.LastRunState = lastRun.StartedAt, string(lastRun.State)
	}
	add := func(source, reason string) {
		h.Reasons = append(h.Reasons, reason)
		if source != "" {
			h.findings = append(h.findings, store.BackupFinding{Source: source, Summary: reason})
		}
	}
	if lastJudged != nil {
		switch lastJudged.State {
		case store.BackupNotLanding:
			add(store.DetectorBackupsNotLanding, lastJudged.Detail)
		case store.BackupIncomplete:
			add(store.DetectorBackupIncomplete, lastJudged.Detail)
		case store.BackupFailed:
			add("", "the newest run failed: "+lastJudged.Detail)
		}
	}
	if lastVerify != nil && lastVerify.State == store.BackupVerifyFailed {
		add(store.DetectorBackupVerify, fmt.Sprintf("the verification of run %s failed: %s", lastVerify.Run, lastVerify.Detail))
	} else if b.Enabled && firstWitnessed != nil && now.Sub(firstWitnessed.StartedAt) > 2*b.VerifyEvery &&
		(h.LastVerified.IsZero() || now.Sub(h.LastVerified) > 2*b.VerifyEvery) {
		add(store.DetectorBackupVerify, fmt.Sprintf("no run was verified restorable in the last %s", 2*b.VerifyEvery))
	}
	if b.Enabled && b.Target != "" && (lastRun == nil || now.Sub(lastRun.StartedAt) > 2*b.Every) {
		add("", fmt.Sprintf("no run started in the last %s", 2*b.Every))
	}
	// The store keeps findings in source order.
	slices.SortFunc(h.findings, func(a, b store.BackupFinding) int { return strings.Compare(a.Source, b.Source) })
	h.Green = len(h.Reasons) == 0 && h.Policy != "none"
	return h
}

// Fleet answers every active node's backup health.
func (r *Room) Fleet(ctx context.Context, _ api.Token) (api.BackupFleet, error) {
	pol, err := r.policies(ctx)
	if err != nil {
		return api.BackupFleet{}, err
	}
	nodes, recent, err := r.activeNodes(ctx)
	if err != nil {
		return api.BackupFleet{}, err
	}
	out := api.BackupFleet{Nodes: []api.BackupHealth{}}
	for _, n := range nodes {
		b, _ := pol.For(n.ID)
		out.Nodes = append(out.Nodes, r.health(n, b, recent[n.ID]).BackupHealth)
	}
	return out, nil
}

// Node answers one node's backups (by id or name): health, the policy it follows, its recent jobs.
func (r *Room) Node(ctx context.Context, _ api.Token, ref string) (api.BackupNode, error) {
	if r.c.Nodes == nil {
		return api.BackupNode{}, errcode.New(errcode.InternalError, "the backups room cannot find nodes")
	}
	n, err := r.c.Nodes.Get(ctx, ref)
	if err != nil {
		return api.BackupNode{}, err
	}
	pol, err := r.policies(ctx)
	if err != nil {
		return api.BackupNode{}, err
	}
	b, src := pol.For(n.ID)
	jobs, err := r.c.Store.BackupJobList(ctx, store.BackupJobListParams{NodeID: n.ID, Limit: recentJobs})
	if err != nil {
		return api.BackupNode{}, err
	}
	out := api.BackupNode{Health: r.health(n, b, jobs).BackupHealth, Policy: policyAPI(b, src), Runs: []api.BackupRun{}}
	out.Policy.Node = n.ID
	for _, j := range jobs {
		out.Runs = append(out.Runs, api.BackupRun{Job: j.JobID, Purpose: string(j.Purpose), Target: j.Target, Run: j.Run, Kind: j.Kind,
			State: string(j.State), Bytes: j.Bytes, Detail: j.Detail, StartedAt: j.StartedAt, JudgedAt: j.JudgedAt})
	}
	return out, nil
}
