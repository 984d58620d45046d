package rollouts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Revert moves every node a release rollout moved back to the content it ran before, and marks the
// rollout reverted. An agent refuses a statement older than one it accepted, and the plane cannot sign
// one, so "back" is the release the node had before when that is still above what the node holds, and
// otherwise the newest release the publisher re-issued with exactly its content (same version, floor,
// subjects and module table) under a sequence above the rollout's. When some previous release has no
// such re-issue, nothing moves: the error (rollout.revert_needs_reissue) says which release to re-sign
// and the commands that do it. A job rollout has nothing to move back.
func Revert(ctx context.Context, s Store, ro store.Rollout, by string, now time.Time) (store.Rollout, []string, error) {
	if ro.Kind != store.RolloutRelease {
		return store.Rollout{}, nil, errcode.New(errcode.RolloutWrongState, "rollout %s ran a job; there is no target to move back", ro.ID).
			With(errcode.DetailState, string(ro.State))
	}
	if !slices.Contains([]store.RolloutState{store.RolloutCompleted, store.RolloutHalted, store.RolloutAborted, store.RolloutPaused}, ro.State) {
		return store.Rollout{}, nil, errcode.New(errcode.RolloutWrongState, "rollout %s is %s; pause or abort it first", ro.ID, ro.State).
			With(errcode.DetailState, string(ro.State))
	}
	type move struct {
		step store.RolloutStep
		to   int64
	}
	var moves []move
	dest := map[int64]int64{} // previous target -> where its nodes go back to (0: nowhere yet)
	missing := map[int64][]string{}
	reissues := &reissueFinder{s: s}
	for _, st := range ro.Steps {
		if st.PreviousTarget == 0 || st.PreviousTarget == ro.ReleaseSequence {
			continue
		}
		n, err := s.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
		if err != nil {
			return store.Rollout{}, nil, err
		}
		if n.TargetSequence != ro.ReleaseSequence {
			continue // moved since by someone else: not ours to move back
		}
		// The node may hold the rollout's statement, or one above it from before (it then refused the
		// rollout's): whatever it goes back to must be above both.
		above := max(ro.ReleaseSequence, n.StatementSequence)
		to, err := reissues.find(ctx, st.PreviousTarget, above)
		if err != nil {
			return store.Rollout{}, nil, err
		}
		if to == 0 {
			missing[st.PreviousTarget] = append(missing[st.PreviousTarget], st.NodeName)
			continue
		}
		dest[st.PreviousTarget] = to
		moves = append(moves, move{st, to})
	}
	if len(missing) > 0 {
		return store.Rollout{}, nil, reissues.needed(ctx, ro, missing)
	}
	var moved []string
	var details []string
	for _, m := range moves {
		if _, err := s.NodeTargetSet(ctx, store.NodeTargetSetParams{ID: m.step.NodeID, Sequence: m.to, Now: now}); err != nil {
			return store.Rollout{}, nil, err
		}
		moved = append(moved, m.step.NodeName)
	}
	for prev, to := range dest {
		if prev == to {
			details = append(details, fmt.Sprintf("release %d", to))
		} else {
			details = append(details, fmt.Sprintf("release %d (release %d re-issued)", to, prev))
		}
	}
	slices.Sort(details)
	if ro.FleetWide {
		// A fleet-wide rollout that completed moved the fleet's target too; new nodes should not get
		// the release just reverted. With one release to go back to, the fleet goes back to it.
		if cur, err := s.FleetTarget(ctx); err == nil && cur == ro.ReleaseSequence && len(dest) == 1 {
			for _, to := range dest {
				if err := s.FleetTargetSet(ctx, store.FleetTargetSetParams{Sequence: to, By: by, Now: now}); err != nil {
					return store.Rollout{}, nil, err
				}
				details = append(details, fmt.Sprintf("fleet target %d", to))
			}
		}
	}
	detail := fmt.Sprintf("%d nodes moved back", len(moved))
	if len(details) > 0 {
		detail += " to " + strings.Join(details, ", ")
	}
	out, err := s.RolloutSetState(ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{ro.State}, To: store.RolloutReverted,
		By: by, Action: "revert", Detail: detail, Now: now})
	return out, moved, err
}

// reissueFinder finds the release that carries a previous release's content under a sequence an agent
// still accepts. Releases never change once stored, so each is decoded at most once.
type reissueFinder struct {
	s        Store
	contents map[int64]string
	newest   []store.Release // every stored release, newest first, read once
}

func (f *reissueFinder) content(ctx context.Context, seq int64) (string, error) {
	if c, ok := f.contents[seq]; ok {
		return c, nil
	}
	rel, err := f.s.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return "", err
	}
	st, err := statement.DecodeBundle(rel.Bundle)
	if err != nil {
		return "", err
	}
	c := ReleaseContent(st)
	if f.contents == nil {
		f.contents = map[int64]string{}
	}
	f.contents[seq] = c
	return c, nil
}

func (f *reissueFinder) releases(ctx context.Context) ([]store.Release, error) {
	if f.newest != nil {
		return f.newest, nil
	}
	var all []store.Release
	var before int64
	for {
		page, err := f.s.ReleaseList(ctx, store.ReleaseListParams{Limit: 100, BeforeSequence: before})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < 100 {
			f.newest = all
			return all, nil
		}
		before = page[len(page)-1].Sequence
	}
}

// find returns prev itself when it is above above, else the newest release above above with prev's
// content, else 0.
func (f *reissueFinder) find(ctx context.Context, prev, above int64) (int64, error) {
	if prev > above {
		return prev, nil
	}
	want, err := f.content(ctx, prev)
	if err != nil {
		return 0, err
	}
	list, err := f.releases(ctx)
	if err != nil {
		return 0, err
	}
	for _, r := range list {
		if r.Sequence <= above {
			break
		}
		c, err := f.content(ctx, r.Sequence)
		if err != nil {
			return 0, err
		}
		if c == want {
			return r.Sequence, nil
		}
	}
	return 0, nil
}

// needed is the refusal of a revert that needs the publisher: it names each release to sign again, the
// nodes waiting for it, and the commands that do it.
func (f *reissueFinder) needed(ctx context.Context, ro store.Rollout, missing map[int64][]string) error {
	prevs := make([]int64, 0, len(missing))
	for p := range missing {
		prevs = append(prevs, p)
	}
	slices.Sort(prevs)
	next := ro.ReleaseSequence + 1
	if list, err := f.releases(ctx); err == nil && len(list) > 0 {
		next = max(next, list[0].Sequence+1)
	}
	var parts []string
	for i, p := range prevs {
		version := ""
		if rel, err := f.s.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: p}); err == nil {
			version = " (" + rel.Version + ")"
		}
		parts = append(parts, fmt.Sprintf("release %d%s, which %s ran before; the publisher signs it again from the folder they published it from: "+
			"lexicon-release renew --key KEY --previous RELEASE_%d_DIR --sequence %d --out NEW_DIR && lexicon releases publish NEW_DIR",
			p, version, strings.Join(missing[p], ", "), p, next+int64(i)))
	}
	return errcode.New(errcode.RolloutRevertNeedsReissue,
		"agents refuse a statement older than one they accepted (%s) and the plane cannot sign one, so the content nodes ran before must be re-issued "+
			"under a sequence above %d first: %s; then run lexicon rollouts revert %s again. Nothing was moved",
		errcode.StatementRollback, ro.ReleaseSequence, strings.Join(parts, "; "), ro.ID).
		With(errcode.DetailSequence, prevs[0]).With(errcode.DetailCurrent, ro.ReleaseSequence)
}

// ReleaseContent is what a release makes a node run, as one comparable string: its version (an agent
// it pins is stamped with it), its floor, every subject and the module table. Two releases with the
// same content differ only in sequence, dates, publisher key and key chain: one is the other re-issued.
func ReleaseContent(st *statement.Statement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "release %s\nfloor %s\n", st.Predicate.Release, st.Predicate.Floor)
	subjects := make([]string, 0, len(st.Subject))
	for _, s := range st.Subject {
		subjects = append(subjects, fmt.Sprintf("subject %q %s\n", s.Name, s.SHA256()))
	}
	slices.Sort(subjects)
	modules := make([]string, 0, len(st.Predicate.Modules))
	for _, m := range st.Predicate.Modules {
		modules = append(modules, fmt.Sprintf("module %q %q %q %q %s %s\n", m.Name, m.Kind, m.Version, m.Class, m.Manifest, m.Module))
	}
	slices.Sort(modules)
	b.WriteString(strings.Join(subjects, ""))
	b.WriteString(strings.Join(modules, ""))
	return b.String()
}
