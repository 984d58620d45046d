// Package apiconv turns the store's rows into the admin API's answers: the one place a row becomes an
// answer, for every room that answers the API. A row may gain a column the API does not show (a sealed
// credential, a lease), and the API may show what no one row holds (a job's node name).
package apiconv

import (
	"slices"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
)

// Each converts a list, never answering nil, so that JSON shows [] rather than null.
func Each[S, T any](in []S, f func(S) T) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}

func Token(t store.Token) api.Token {
	return api.Token{ID: t.ID, Name: t.Name, Role: api.Role(t.Role), CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
}

func Join(j store.Join) api.Join {
	return api.Join{ID: j.ID, Name: j.Name, Key: j.Key, Fingerprint: j.Fingerprint, Addresses: j.Addresses,
		SourceAddress: j.SourceAddress, Status: api.JoinStatus(j.Status), CreatedAt: j.CreatedAt, ExpiresAt: j.ExpiresAt,
		DecidedAt: j.DecidedAt, DecidedBy: j.DecidedBy, NodeID: j.NodeID, ProvisioningID: j.ProvisioningID, HoldReason: j.HoldReason}
}

func Node(n store.Node) api.Node {
	var facts *api.NodeFacts
	if !n.Facts.CollectedAt.IsZero() {
		f := n.Facts
		facts = &f
	}
	return api.Node{Facts: facts, ID: n.ID, Name: n.Name, Key: n.Key, Fingerprint: n.Fingerprint, Addresses: n.Addresses,
		State: api.NodeState(n.State), CreatedAt: n.CreatedAt, LastSeenAt: n.LastSeenAt, EndedAt: n.EndedAt,
		AgentVersion: n.AgentVersion, StatementSequence: n.StatementSequence, StatementDigest: n.StatementDigest,
		Vocabulary: Each(n.Vocabulary, func(w store.WordRef) api.WordRef {
			return api.WordRef{Name: w.Name, Version: w.Version, Digest: w.Digest, Class: w.Class}
		}),
		Recipes: n.Recipes, Idle: n.Idle, ClaimSizeCap: n.ClaimSizeCap, Untrusted: n.Untrusted, Refusals: n.Refusals,
		Labels: n.Labels, TargetSequence: n.TargetSequence,
		Update: api.NodeUpdate{State: n.Update.State, Offered: n.Update.Offered, Reason: n.Update.Reason,
			NeedsNewerAgent: n.Update.NeedsNewerAgent, History: Each(n.Update.History, func(e store.NodeUpdateEvent) api.NodeUpdateEvent {
				return api.NodeUpdateEvent{At: e.At, Event: e.Event, From: e.From, To: e.To, Detail: e.Detail}
			})},
		BelowFloor: n.Update.NeedsNewerAgent != ""}
}

// Job converts a job; nodeName is its node's name, "" when it is not known.
func Job(j store.Job, nodeName string) api.Job {
	return api.Job{ID: j.ID, NodeID: j.NodeID, NodeName: nodeName, Word: j.Word, WordVersion: j.WordVersion,
		WordDigest: j.WordDigest, Class: j.Class, Params: j.Params, State: j.State, Budget: j.Budget,
		CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt, ClaimedAt: j.ClaimedAt, DeadlineAt: j.DeadlineAt,
		FinishedAt: j.FinishedAt, OutcomeCode: j.OutcomeCode, OutcomeMessage: j.OutcomeMessage, Output: j.Output,
		Transcript: j.Transcript, Audit: j.Audit, DurationMS: j.DurationMS, FinishedBy: j.FinishedBy, BatchID: j.BatchID}
}

func Incident(i store.Incident) api.Incident {
	return api.Incident{ID: i.ID, NodeID: i.NodeID, NodeName: i.NodeName, Source: i.Source, Subject: i.Subject,
		Severity: api.Severity(i.Severity), Condition: api.Condition(i.Condition), Triage: api.Triage(i.Triage),
		SnoozedUntil: i.SnoozedUntil, Summary: i.Summary, CaseID: i.CaseID, OpenedAt: i.OpenedAt, ChangedAt: i.ChangedAt,
		ClearedAt: i.ClearedAt, TriagedAt: i.TriagedAt, TriagedBy: i.TriagedBy, Reason: i.Reason, Events: i.Events,
		NeedsYou: i.NeedsYou}
}

func Event(e store.IncidentEvent) api.IncidentEvent {
	return api.IncidentEvent{IncidentID: e.IncidentID, Seq: e.Seq, At: e.At, Kind: api.EventKind(e.Kind), Actor: e.Actor,
		Triage: api.Triage(e.Triage), SnoozedUntil: e.SnoozedUntil, Text: e.Text}
}

func Change(c store.IncidentChange) api.IncidentChange {
	return api.IncidentChange{Incident: Incident(c.Incident), Event: Event(c.Event), Notifications: c.Notifications}
}

func Case(c store.Case) api.Case {
	out := api.Case{NodeID: c.NodeID, ID: c.ID, Recipe: c.Recipe, State: api.CaseState(c.State), OpenedAt: c.OpenedAt,
		ClosedAt: c.ClosedAt, ClosedBy: c.ClosedBy, Summary: c.Summary, Body: c.Body, ReceivedAt: c.ReceivedAt,
		UpdatedAt: c.UpdatedAt}
	for _, n := range c.Notes {
		out.Notes = append(out.Notes, api.CaseNote{Author: n.Author, Seq: n.Seq, At: n.At, Text: n.Text, ReceivedAt: n.ReceivedAt})
	}
	return out
}

func Notification(n store.Notification) api.Notification {
	out := api.Notification{ID: n.ID, IncidentID: n.IncidentID, EventSeq: n.EventSeq, Webhook: n.Webhook,
		Kind: api.EventKind(n.Kind), State: api.NotificationState(n.State), Attempts: n.Attempts, NextAt: n.NextAt,
		LastError: n.LastError, CreatedAt: n.CreatedAt, FinishedAt: n.FinishedAt}
	for _, a := range n.History {
		out.History = append(out.History, api.NotificationAttempt{Attempt: a.Attempt, At: a.At, Status: a.Status,
			Error: a.Error, Duration: a.Duration})
	}
	return out
}

func Release(r store.Release) api.Release {
	return api.Release{Sequence: r.Sequence, Version: r.Version, StatementDigest: r.StatementDigest,
		PublishedAt: r.PublishedAt, PublishedBy: r.PublishedBy,
		Artifacts: Each(r.Artifacts, func(a store.ArtifactRef) api.ArtifactRef {
			return api.ArtifactRef{Name: a.Name, Digest: a.Digest, Size: a.Size}
		})}
}

func Account(a store.Account) api.Account {
	return api.Account{ID: a.ID, Name: a.Name, Driver: a.Driver, Settings: a.Settings, KeyID: a.KeyID,
		CreatedAt: a.CreatedAt, CreatedBy: a.CreatedBy, Test: a.Test}
}

func DriverCall(c store.DriverCall) api.DriverCall {
	return api.DriverCall{ID: c.ID, At: c.At, Actor: c.Actor, Account: c.Account, Driver: c.Driver,
		Operation: c.Operation, Target: c.Target, Code: c.Code, DurationMS: c.DurationMS}
}

func Replica(r store.Replica) api.Replica {
	services := r.Services
	if services == nil {
		services = []string{}
	}
	return api.Replica{ID: r.ID, Version: r.Version, Address: r.Address, StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt,
		LeaseSeconds: r.Lease.Seconds(), Missing: r.Missing, Services: services, HeapBytes: r.HeapBytes, RSSBytes: r.RSSBytes,
		PeakHeapBytes: r.PeakHeapBytes, PeakRSSBytes: r.PeakRSSBytes, PeakAt: r.PeakAt, MemoryLimitBytes: r.MemoryLimitBytes,
		MemoryAlert: r.MemoryAlert}
}

func Rollout(r store.Rollout) api.Rollout {
	out := api.Rollout{ID: r.ID, Kind: string(r.Kind), Release: r.ReleaseSequence, Word: r.Word, Params: r.Params,
		Preflight: r.PreflightWord, Verify: r.VerifyWord, Selector: r.Selector, Stages: r.Stages, MaxParallel: r.MaxParallel,
		ErrorBudget: r.ErrorBudget, StepTimeoutMS: r.StepTimeout.Milliseconds(), State: string(r.State), Misses: r.Misses,
		HaltNode: r.HaltNode, HaltReason: r.HaltReason, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		FinishedAt: r.FinishedAt, Purpose: string(r.Purpose)}
	if out.Stages == nil {
		out.Stages = []string{}
	}
	for _, st := range r.Steps {
		a := api.RolloutStep{NodeID: st.NodeID, NodeName: st.NodeName, Stage: st.Stage, State: string(st.State), Phase: st.Phase,
			JobID: st.JobID, PreviousTarget: st.PreviousTarget, Reason: st.Reason, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt,
			Machine: st.Machine}
		if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() {
			a.DurationMS = st.FinishedAt.Sub(st.StartedAt).Milliseconds()
		}
		out.Steps = append(out.Steps, a)
	}
	for _, e := range r.Events {
		out.Events = append(out.Events, api.RolloutEvent{At: e.At, Actor: e.Actor, Action: e.Action, Detail: e.Detail})
	}
	return out
}

func Leases(ls []store.Lease) []api.Lease {
	out := []api.Lease{}
	for _, l := range ls {
		out = append(out, api.Lease{Name: l.Name, Holder: l.Holder, Purpose: l.Purpose, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt})
	}
	return slices.Clip(out)
}

func Checkpoints(cps []store.NodeCheckpoint) []api.Checkpoint {
	out := make([]api.Checkpoint, 0, len(cps))
	for _, c := range cps {
		out = append(out, api.Checkpoint{Origin: c.Origin, Size: c.Size, RootHash: c.RootHash, ReportedAt: c.ReportedAt})
	}
	return out
}

func Provisioning(p store.Provisioning) api.Provisioning {
	return api.Provisioning{ID: p.ID, Name: p.Name, Account: p.Account, Region: p.Region, Type: p.Type, Image: p.Image,
		Platform: p.Platform, Labels: p.Labels, DNSAccount: p.DNSAccount, Zone: p.DNSZone, Tag: p.Tag, State: string(p.State),
		StateAt: p.StateAt, InstanceID: p.InstanceID, Addresses: p.Addresses, TokenExpiresAt: p.TokenExpiresAt,
		TokenUsedAt: p.TokenUsedAt, JoinID: p.JoinID, NodeID: p.NodeID, Reason: p.Reason, Cleanup: p.Cleanup,
		CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt, FinishedAt: p.FinishedAt,
		Events: Each(p.Events, func(e store.ProvisioningEvent) api.ProvisioningEvent {
			return api.ProvisioningEvent{At: e.At, Actor: e.Actor, State: string(e.State), Detail: e.Detail}
		})}
}

// Checks converts the verifier's verdicts on a release.
func Checks(cs []registry.CheckResult) []api.Check {
	return Each(cs, func(c registry.CheckResult) api.Check {
		return api.Check{Check: c.Check, OK: c.OK, Skipped: c.Skipped, Code: c.Code, Message: c.Message}
	})
}

func AuditEvent(e store.AuditEvent) api.AuditEvent {
	return api.AuditEvent{ID: e.ID, At: e.At, Via: e.Via, ActorID: e.ActorID, Actor: e.Actor, Address: e.Address,
		Operation: e.Operation, Target: e.Target, Status: e.Status, Code: e.Code, DurationMS: e.DurationMS}
}
