package rollouts

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The words a fleet patch runs: the change, and the look that verifies it.
const (
	PatchWord  = "install_security_updates"
	ReportWord = "packages_report"
	// RestartWord restarts, between the change and the verify, the units the machine names as running
	// code the upgrade replaced (within its manifest's allow-list).
	RestartWord = "restart_services"
	// MachineLabel is the node label an operator sets on nodes that share a machine the plane cannot
	// tell apart otherwise (see machineOf).
	MachineLabel = "machine"
	// patchStepTimeout bounds each phase of a patch step by default: install_security_updates may
	// take 15 minutes (its manifest's wall time).
	patchStepTimeout = 20 * time.Minute
)

// Patch starts a fleet patch: a job rollout of install_security_updates over the selected nodes that
// can run it, a canary node first and then the rest, each node's step followed by restart_services
// (restartSkipped) and verified by a fresh packages_report showing no security fix waiting (held ones
// aside). A selected node that lacks either
// word, or whose target release does not pin it, is left out by name (the start event's detail, and
// the answer's LeftOut). Refused: as Start, and rollout.empty_selection when no selected node can be
// patched.
func (r *Room) Patch(ctx context.Context, who api.Token, req api.FleetPatchRequest) (api.Rollout, error) {
	if req.MaxParallel < 0 || req.StepTimeoutMS < 0 {
		return api.Rollout{}, errcode.New(errcode.RequestMalformed, "max_parallel and step_timeout_ms must not be negative").With(errcode.DetailField, "max_parallel")
	}
	nodes, err := r.activeNodes(ctx)
	if err != nil {
		return api.Rollout{}, err
	}
	selected, _, err := Plan(nodes, req.Selector, Staging{})
	if err != nil {
		return api.Rollout{}, err
	}
	byID := map[string]store.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	var eligible []store.Node
	var left []api.LeftOut
	for _, st := range selected {
		n := byID[st.NodeID]
		if why, err := r.patchable(ctx, n); err != nil {
			return api.Rollout{}, err
		} else if why != "" {
			left = append(left, api.LeftOut{Node: n.Name, Reason: why})
			continue
		}
		eligible = append(eligible, n)
	}
	if len(eligible) == 0 {
		return api.Rollout{}, errcode.New(errcode.RolloutEmptySelection, "no selected node can be patched: %s", leftOutText(left))
	}
	steps, stages, err := Plan(eligible, "all", Staging{Canary: 1, Percentages: []string{"100%"}})
	if err != nil {
		return api.Rollout{}, err
	}
	for i := range steps {
		steps[i].Machine = machineOf(byID[steps[i].NodeID])
	}
	timeout := req.StepTimeoutMS
	if timeout == 0 {
		timeout = patchStepTimeout.Milliseconds()
	}
	detail := ""
	if len(left) > 0 {
		detail = "left out: " + leftOutText(left)
	}
	ro, err := r.create(ctx, who, api.RolloutRequest{Word: PatchWord, Verify: ReportWord, Selector: req.Selector,
		MaxParallel: req.MaxParallel, StepTimeoutMS: timeout}, nodes, steps, stages, false, store.PurposePatch, detail, nil)
	if err != nil {
		return api.Rollout{}, err
	}
	out := apiconv.Rollout(ro)
	out.LeftOut = left
	return out, nil
}

// restartSkipped says a patch step's restart phase has nothing to run: the node lacks restart_services,
// or its target release does not pin the one it reports. Such a node is patched all the same (the
// fixes matter more than the restart); what still runs replaced code shows on the security view.
func (e *Engine) restartSkipped(ctx context.Context, ro store.Rollout, st store.RolloutStep) (bool, error) {
	node, err := e.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
	if err != nil {
		return false, err
	}
	_, _, why, err := e.pinnedWord(ctx, node, RestartWord)
	if err != nil {
		return false, err
	}
	if why != "" {
		e.Logger().Info("patch restart skipped", "rollout", ro.ID, "node", st.NodeName, "why", why)
	}
	return why != "", nil
}

// patchable says why a node cannot be patched ("" when it can): it must report both words, at the
// modules its target release pins.
func (r *Room) patchable(ctx context.Context, n store.Node) (string, error) {
	var words map[string]releases.Word
	if n.TargetSequence > 0 {
		w, _, err := r.c.Words.Words(ctx, n.TargetSequence)
		if err != nil {
			return "", err
		}
		words = w
	}
	for _, name := range []string{PatchWord, ReportWord} {
		if _, _, why := pinned(n, words, name); why != "" {
			return why, nil
		}
	}
	return "", nil
}

func leftOutText(left []api.LeftOut) string {
	parts := make([]string, len(left))
	for i, l := range left {
		parts[i] = l.Node + " (" + l.Reason + ")"
	}
	return strings.Join(parts, "; ")
}

// machineOf names the machine a node runs on. The plane knows it from, in order: the operator's
// machine label; the set of addresses the agent gave when it joined (agents on one host give the same
// set); else the node is its own machine. See plane/RATIONALE.md, "Patching the fleet".
func machineOf(n store.Node) string {
	if m := n.Labels[MachineLabel]; m != "" {
		return "label:" + m
	}
	if len(n.Addresses) > 0 {
		addrs := slices.Clone(n.Addresses)
		slices.Sort(addrs)
		return "addresses:" + strings.Join(slices.Compact(addrs), ",")
	}
	return "node:" + n.ID
}

// patchVerdict is how a patch judges a step's job beyond its outcome.
type patchVerdict struct {
	miss string // the step failed, naming the node and the package
	done string // the step passed at this phase with this note: later phases are not run
}

// judgePatch judges a patch step's job once it ended. The change: pkg.locked (another package run held
// the lock) is recorded and passed, the node unpatched; any other failure is a miss naming the
// package. The verify: a packages_report still showing a security fix waiting (not held) is a miss
// naming the packages.
func judgePatch(node, phase string, j store.Job) patchVerdict {
	switch {
	case phase == store.PhaseChange && j.State == store.JobFailed && j.OutcomeCode == errcode.PkgLocked:
		return patchVerdict{done: "not patched: " + errcode.PkgLocked + ": " + j.OutcomeMessage}
	case phase == store.PhaseChange && (j.State == store.JobFailed || j.State == store.JobRefused):
		msg := fmt.Sprintf("%s failed on %s", PatchWord, node)
		if pkgs := failedPackages(j); len(pkgs) > 0 {
			msg += ", package " + strings.Join(pkgs, ", ")
		}
		if j.OutcomeCode != "" {
			msg += ": " + j.OutcomeCode
		}
		if j.OutcomeMessage != "" {
			msg += ": " + j.OutcomeMessage
		}
		return patchVerdict{miss: msg}
	case phase == store.PhaseVerify && j.State == store.JobCompleted:
		var rep struct {
			Known            bool `json:"known"`
			SecurityUpgrades []struct {
				Name      string `json:"name"`
				Installed string `json:"installed"`
				Candidate string `json:"candidate"`
				Held      bool   `json:"held"`
			} `json:"security_upgrades"`
		}
		if err := json.Unmarshal(j.Output, &rep); err != nil || !rep.Known {
			return patchVerdict{miss: fmt.Sprintf("verify %s on %s: the report does not know the node's packages", ReportWord, node)}
		}
		var waiting []string
		for _, u := range rep.SecurityUpgrades {
			if !u.Held {
				waiting = append(waiting, fmt.Sprintf("%s %s -> %s", u.Name, u.Installed, u.Candidate))
			}
		}
		if len(waiting) > 0 {
			return patchVerdict{miss: fmt.Sprintf("verify %s on %s: security fixes still waiting: package %s", ReportWord, node, strings.Join(waiting, ", "))}
		}
	}
	return patchVerdict{}
}

// halfDone finds the packages pkg.failed's message names ("leaving a, b half done").
var halfDone = regexp.MustCompile(`leaving (.+?) half done`)

// failedPackages names the packages a failed install_security_updates job was about: those its
// failure left half done, else those its upgrade asked for (the audit's pkg.upgrade call).
func failedPackages(j store.Job) []string {
	if m := halfDone.FindStringSubmatch(j.OutcomeMessage); m != nil {
		return strings.Split(m[1], ", ")
	}
	var calls []struct {
		Cap  string          `json:"cap"`
		Args json.RawMessage `json:"args"`
	}
	if json.Unmarshal(j.Audit, &calls) != nil {
		return nil
	}
	for _, c := range calls {
		if c.Cap != "pkg.upgrade" {
			continue
		}
		var args struct {
			Packages []string `json:"packages"`
		}
		if json.Unmarshal(c.Args, &args) == nil && len(args.Packages) > 0 {
			return args.Packages
		}
	}
	return nil
}
