package roles

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// ConvergeWord is the word plan and apply run: primitives/converge.
const ConvergeWord = "converge"

// Store is what the roles room reads and writes: roles, their assignments, the nodes they reach, the
// content they name, and the converge jobs that report on them.
type Store interface {
	RoleCreate(ctx context.Context, p store.RolePutParams) (store.RoleVersion, error)
	RoleEdit(ctx context.Context, p store.RolePutParams) (store.RoleVersion, error)
	RoleGet(ctx context.Context, p store.RoleGetParams) (store.RoleVersion, error)
	RoleList(ctx context.Context, p store.RoleListParams) ([]store.RoleVersion, error)
	RoleHistory(ctx context.Context, p store.RoleHistoryParams) ([]store.RoleVersion, error)
	RoleAssign(ctx context.Context, p store.RoleAssignParams) (store.RoleAssignment, error)
	RoleUnassign(ctx context.Context, p store.RoleUnassignParams) error
	RoleAssignmentList(ctx context.Context, p store.RoleAssignmentListParams) ([]store.RoleAssignment, error)
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error)
	ArtifactGet(ctx context.Context, p store.ArtifactGetParams) (store.Artifact, error)
	ArtifactReleased(ctx context.Context, p store.ArtifactGetParams) (bool, error)
	JobList(ctx context.Context, p store.JobListParams) (store.JobListResult, error)
	JobGet(ctx context.Context, p store.JobGetParams) (store.Job, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	// Nodes finds a node by id or name; Jobs queues the plan jobs; Rollouts runs apply.
	Nodes    *nodes.Room
	Jobs     *jobs.Room
	Rollouts *rollouts.Room
	Log      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Room is the roles' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   RoomConfig
	log *slog.Logger
}

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// decodeSpec reads a stored version's spec.
func decodeSpec(v store.RoleVersion) (Spec, error) {
	var s Spec
	if err := json.Unmarshal(v.Spec, &s); err != nil || s.Footprint == nil {
		return Spec{}, errcode.Wrap(err, errcode.InternalError, "role %s version %d has an unreadable spec", v.Name, v.Version)
	}
	return s, nil
}

// answer is a stored version as the API shows it.
func answer(v store.RoleVersion, withFootprint bool) (api.RoleVersion, error) {
	s, err := decodeSpec(v)
	if err != nil {
		return api.RoleVersion{}, err
	}
	out := api.RoleVersion{Name: v.Name, Version: v.Version, Description: s.Description, Enforce: s.Enforce,
		Items: len(footprint.Items(s.Footprint)), CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
	if withFootprint {
		out.Footprint, _ = json.Marshal(s.Footprint)
	}
	return out, nil
}

func contents(p *Parsed) []store.RoleContent {
	out := make([]store.RoleContent, 0, len(p.Contents))
	for d, b := range p.Contents {
		out = append(out, store.RoleContent{Digest: d, Data: b})
	}
	slices.SortFunc(out, func(a, b store.RoleContent) int { return strings.Compare(a.Digest, b.Digest) })
	return out
}

func (r *Room) put(ctx context.Context, who api.Token, p *Parsed, base int, create bool) (api.RoleVersion, error) {
	spec, err := json.Marshal(p.Role)
	if err != nil {
		return api.RoleVersion{}, errcode.Wrap(err, errcode.InternalError, "encode role %s", p.Role.Name)
	}
	put := store.RolePutParams{Name: p.Role.Name, Spec: spec, Contents: contents(p), Base: base, By: who.Name, Now: r.c.Now()}
	var v store.RoleVersion
	if create {
		v, err = r.c.Store.RoleCreate(ctx, put)
	} else {
		v, err = r.c.Store.RoleEdit(ctx, put)
	}
	if err != nil {
		return api.RoleVersion{}, err
	}
	r.log.Info("role saved", "role", v.Name, "version", v.Version, "by", who.Name)
	return answer(v, true)
}

// Create makes a role from a role file. Refused: role.invalid, role.too_large, role.exists.
func (r *Room) Create(ctx context.Context, who api.Token, req api.RoleFile) (api.RoleVersion, error) {
	p, err := Parse([]byte(req.File))
	if err != nil {
		return api.RoleVersion{}, err
	}
	return r.put(ctx, who, p, 0, true)
}

// Edit makes a role's next version from a role file, refused (role.conflict) when a node that carries
// the role would then carry two roles that disagree, and role.stale when req.Base is not the newest.
func (r *Room) Edit(ctx context.Context, who api.Token, name string, req api.RoleFile) (api.RoleVersion, error) {
	p, err := Parse([]byte(req.File))
	if err != nil {
		return api.RoleVersion{}, err
	}
	if p.Role.Name != name {
		return api.RoleVersion{}, invalid("/name", "the file is role %s, not %s: a role keeps its name", p.Role.Name, name)
	}
	if _, err := r.c.Store.RoleGet(ctx, store.RoleGetParams{Name: name}); err != nil {
		return api.RoleVersion{}, err
	}
	f, err := r.load(ctx)
	if err != nil {
		return api.RoleVersion{}, err
	}
	f.specs[name] = p.Role
	if err := f.check(f.carrying(name)); err != nil {
		return api.RoleVersion{}, err
	}
	return r.put(ctx, who, p, req.Base, false)
}

// Show answers a role (a version of it, or the newest), its assignments, and the active nodes that
// carry it now.
func (r *Room) Show(ctx context.Context, who api.Token, name string, q api.RoleShowQuery) (api.RoleVersion, error) {
	v, err := r.c.Store.RoleGet(ctx, store.RoleGetParams{Name: name, Version: q.Version})
	if err != nil {
		return api.RoleVersion{}, err
	}
	out, err := answer(v, true)
	if err != nil {
		return api.RoleVersion{}, err
	}
	as, err := r.c.Store.RoleAssignmentList(ctx, store.RoleAssignmentListParams{Role: name})
	if err != nil {
		return api.RoleVersion{}, err
	}
	for _, a := range as {
		out.Assignments = append(out.Assignments, api.RoleAssignment{Role: a.Role, Selector: a.Selector, CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt})
	}
	f, err := r.load(ctx)
	if err != nil {
		return api.RoleVersion{}, err
	}
	for _, n := range f.carrying(name) {
		out.Nodes = append(out.Nodes, n.Name)
	}
	return out, nil
}

// List lists every role at its newest version.
func (r *Room) List(ctx context.Context, who api.Token) (api.RoleList, error) {
	vs, err := r.c.Store.RoleList(ctx, store.RoleListParams{})
	if err != nil {
		return api.RoleList{}, err
	}
	out := api.RoleList{Roles: []api.RoleVersion{}}
	for _, v := range vs {
		a, err := answer(v, false)
		if err != nil {
			return api.RoleList{}, err
		}
		out.Roles = append(out.Roles, a)
	}
	return out, nil
}

// History lists every version of a role, newest first.
func (r *Room) History(ctx context.Context, who api.Token, name string) (api.RoleHistory, error) {
	vs, err := r.c.Store.RoleHistory(ctx, store.RoleHistoryParams{Name: name})
	if err != nil {
		return api.RoleHistory{}, err
	}
	out := api.RoleHistory{Versions: []api.RoleVersion{}}
	for _, v := range vs {
		a, err := answer(v, false)
		if err != nil {
			return api.RoleHistory{}, err
		}
		out.Versions = append(out.Versions, a)
	}
	return out, nil
}

// Assign carries a role to the nodes a selector picks. Refused: rollout.selector_invalid, role.no_match
// (no active node is picked now), role.conflict (a picked node would carry two roles that disagree,
// both named), role.not_found.
func (r *Room) Assign(ctx context.Context, who api.Token, name string, req api.RoleAssignRequest) (api.RoleAssignment, error) {
	sel, err := rollouts.ParseSelector("selector", req.Selector)
	if err != nil {
		return api.RoleAssignment{}, err
	}
	if _, err := r.c.Store.RoleGet(ctx, store.RoleGetParams{Name: name}); err != nil {
		return api.RoleAssignment{}, err
	}
	f, err := r.load(ctx)
	if err != nil {
		return api.RoleAssignment{}, err
	}
	var picked []store.Node
	for _, n := range f.nodes {
		if sel.Match(n) {
			picked = append(picked, n)
		}
	}
	if len(picked) == 0 {
		return api.RoleAssignment{}, errcode.New(errcode.RoleNoMatch, "selector %q picks no active node; label nodes first (lexicon nodes label NODE key=value)", req.Selector).
			With(errcode.DetailField, "selector")
	}
	f.assigns = append(f.assigns, assignment{role: name, sel: sel})
	if err := f.check(picked); err != nil {
		return api.RoleAssignment{}, err
	}
	a, err := r.c.Store.RoleAssign(ctx, store.RoleAssignParams{Role: name, Selector: req.Selector, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.RoleAssignment{}, err
	}
	r.log.Info("role assigned", "role", name, "selector", req.Selector, "nodes", len(picked), "by", who.Name)
	out := api.RoleAssignment{Role: a.Role, Selector: a.Selector, CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt}
	for _, n := range picked {
		out.Nodes = append(out.Nodes, n.Name)
	}
	return out, nil
}

// Unassign removes an assignment. Refused: role.not_found.
func (r *Room) Unassign(ctx context.Context, who api.Token, name string, req api.RoleAssignRequest) (api.RoleAssignment, error) {
	if err := r.c.Store.RoleUnassign(ctx, store.RoleUnassignParams{Role: name, Selector: req.Selector}); err != nil {
		return api.RoleAssignment{}, err
	}
	r.log.Info("role unassigned", "role", name, "selector", req.Selector, "by", who.Name)
	return api.RoleAssignment{Role: name, Selector: req.Selector}, nil
}

// target is a node a plan or apply reaches, with its footprint or why none renders.
type target struct {
	node store.Node
	fp   *footprint.Footprint
	err  error
}

// targets are the active nodes that carry role name, narrowed by selector, each with its footprint.
func (r *Room) targets(ctx context.Context, name, selector string) ([]target, error) {
	if _, err := r.c.Store.RoleGet(ctx, store.RoleGetParams{Name: name}); err != nil {
		return nil, err
	}
	sel, err := rollouts.ParseSelector("selector", selector)
	if err != nil {
		return nil, err
	}
	f, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, n := range f.carrying(name) {
		if !sel.Match(n) {
			continue
		}
		fp, err := f.render(f.rolesOf(n))
		out = append(out, target{node: n, fp: fp, err: err})
	}
	if len(out) == 0 {
		return nil, errcode.New(errcode.RoleNoNodes, "no active node carries role %s (narrowed by %q); assign it first (lexicon roles assign %s SELECTOR)", name, selector, name).
			With(errcode.DetailName, name)
	}
	return out, nil
}

func convergeParams(mode string, fp *footprint.Footprint) (json.RawMessage, error) {
	return json.Marshal(struct {
		Mode      string               `json:"mode"`
		Footprint *footprint.Footprint `json:"footprint"`
	}{mode, fp})
}

// Plan queues the converge word in plan mode on every node that carries the role (narrowed by
// req.Selector), with the node's whole footprint: each job reports what would change, a diff for each
// file, and changes nothing. A node that cannot be asked is answered with its code instead of a job.
func (r *Room) Plan(ctx context.Context, who api.Token, name string, req api.RolesPlanRequest) (api.RolePlan, error) {
	ts, err := r.targets(ctx, name, req.Selector)
	if err != nil {
		return api.RolePlan{}, err
	}
	out := api.RolePlan{Role: name, Nodes: []api.RolePlanNode{}}
	for _, t := range ts {
		pn := api.RolePlanNode{NodeID: t.node.ID, NodeName: t.node.Name}
		err := t.err
		if err == nil {
			pn.Items = len(footprint.Items(t.fp))
			var params json.RawMessage
			if params, err = convergeParams("plan", t.fp); err == nil {
				var j api.Job
				if j, err = r.c.Jobs.Create(ctx, who, api.JobRequest{Node: t.node.ID, Word: ConvergeWord, Params: params}); err == nil {
					pn.JobID = j.ID
				}
			}
		}
		if err != nil {
			if errcode.Has(err, errcode.AuthForbidden) {
				return api.RolePlan{}, err
			}
			e := errcode.From(err, errcode.InternalError)
			pn.Code, pn.Message = e.Code, e.Message
		}
		out.Nodes = append(out.Nodes, pn)
	}
	r.log.Info("roles plan queued", "role", name, "nodes", len(out.Nodes), "by", who.Name)
	return out, nil
}

// Apply converges every node that carries the role (narrowed by req.Selector) to its whole footprint,
// as a staged rollout of the converge word in which each node is sent its own footprint. Refused whole
// when any node's roles conflict (role.conflict), and as a rollout's start is.
func (r *Room) Apply(ctx context.Context, who api.Token, name string, req api.RolesApplyRequest) (api.Rollout, error) {
	ts, err := r.targets(ctx, name, req.Selector)
	if err != nil {
		return api.Rollout{}, err
	}
	each := make(map[string]json.RawMessage, len(ts))
	for _, t := range ts {
		if t.err != nil {
			return api.Rollout{}, errcode.From(t.err, errcode.RoleConflict).With(errcode.DetailNodeID, t.node.ID)
		}
		if each[t.node.ID], err = convergeParams("apply", t.fp); err != nil {
			return api.Rollout{}, err
		}
	}
	ro, err := r.c.Rollouts.StartEach(ctx, who, api.RolloutRequest{Word: ConvergeWord, Params: json.RawMessage(`{"mode":"apply"}`),
		Selector: req.Selector, Stages: req.Stages, Canary: req.Canary, Percentages: req.Percentages, MaxParallel: req.MaxParallel,
		ErrorBudget: req.ErrorBudget, StepTimeoutMS: req.StepTimeoutMS}, each)
	if err != nil {
		return api.Rollout{}, err
	}
	r.log.Info("roles apply started", "role", name, "rollout", ro.ID, "nodes", len(each), "by", who.Name)
	return ro, nil
}

// NodeRoles are the roles a node carries now, by name, at their newest versions, and the footprint
// they render (nil with the error when they conflict).
func (r *Room) nodeRoles(ctx context.Context, n store.Node) ([]Spec, []store.RoleVersion, error) {
	as, err := r.c.Store.RoleAssignmentList(ctx, store.RoleAssignmentListParams{})
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, a := range as {
		sel, err := rollouts.ParseSelector("selector", a.Selector)
		if err == nil && sel.Match(n) && !slices.Contains(names, a.Role) {
			names = append(names, a.Role)
		}
	}
	var specs []Spec
	var vs []store.RoleVersion
	for _, name := range names {
		v, err := r.c.Store.RoleGet(ctx, store.RoleGetParams{Name: name})
		if err != nil {
			return nil, nil, err
		}
		s, err := decodeSpec(v)
		if err != nil {
			return nil, nil, err
		}
		specs, vs = append(specs, s), append(vs, v)
	}
	return specs, vs, nil
}

// Footprint answers a node's roles, the footprint they render, and each item's state as the node's
// newest finished converge reported it.
func (r *Room) Footprint(ctx context.Context, who api.Token, ref string) (api.NodeFootprint, error) {
	n, err := r.c.Nodes.Get(ctx, ref)
	if err != nil {
		return api.NodeFootprint{}, err
	}
	specs, vs, err := r.nodeRoles(ctx, n)
	if err != nil {
		return api.NodeFootprint{}, err
	}
	out := api.NodeFootprint{NodeID: n.ID, NodeName: n.Name, Roles: []string{}, Items: []api.FootprintItem{}}
	for _, v := range vs {
		out.Roles = append(out.Roles, v.Name+"@"+strconv.Itoa(v.Version))
	}
	slices.Sort(out.Roles)
	fp, err := Render(specs)
	if err != nil {
		e := errcode.From(err, errcode.RoleConflict)
		out.Code, out.Message = e.Code, e.Message
		return out, nil
	}
	out.Footprint, _ = json.Marshal(fp)
	reports, conv, err := r.newestConverge(ctx, n.ID)
	if err != nil {
		return api.NodeFootprint{}, err
	}
	out.Converge = conv
	owner := owners(specs)
	for _, it := range footprint.Items(fp) {
		fi := api.FootprintItem{ID: it.ID, Kind: it.Kind, Role: owner[it.ID], Enforce: it.Enforce, State: "unknown"}
		if rep, ok := reports[it.ID]; ok {
			fi.State, fi.Changes, fi.Code, fi.Message, fi.Diff = rep.Status, rep.Changes, rep.Code, rep.Message, rep.Diff
		}
		out.Items = append(out.Items, fi)
	}
	return out, nil
}

// owners names, for each item ID, the first role (by name) that declares it.
func owners(specs []Spec) map[string]string {
	specs = slices.Clone(specs)
	slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	out := map[string]string{}
	for _, s := range specs {
		for _, it := range footprint.Items(s.Footprint) {
			if _, ok := out[it.ID]; !ok {
				out[it.ID] = s.Name
			}
		}
	}
	return out
}

// itemReport is one item of the converge word's output.
type itemReport struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Changes []string `json:"changes"`
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Diff    string   `json:"diff"`
}

type convergeOutput struct {
	Mode   string       `json:"mode"`
	Result string       `json:"result"`
	Items  []itemReport `json:"items"`
}

// convergeScan bounds how far back the node's jobs are read for its newest converge.
const convergeScan = 500

// newestConverge reads the node's newest finished converge job that reported items: its items by ID.
func (r *Room) newestConverge(ctx context.Context, nodeID string) (map[string]itemReport, *api.FootprintConverge, error) {
	cursor := ""
	for seen := 0; seen < convergeScan; {
		res, err := r.c.Store.JobList(ctx, store.JobListParams{NodeID: nodeID, Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		for _, j := range res.Jobs {
			if j.Word != ConvergeWord || (j.State != store.JobCompleted && j.State != store.JobFailed) {
				continue
			}
			full, err := r.c.Store.JobGet(ctx, store.JobGetParams{ID: j.ID})
			if err != nil {
				return nil, nil, err
			}
			var o convergeOutput
			if json.Unmarshal(full.Output, &o) != nil || len(o.Items) == 0 {
				continue
			}
			out := make(map[string]itemReport, len(o.Items))
			for _, it := range o.Items {
				out[it.ID] = it
			}
			return out, &api.FootprintConverge{JobID: j.ID, Mode: o.Mode, Result: o.Result, FinishedAt: full.FinishedAt}, nil
		}
		seen += len(res.Jobs)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return nil, nil, nil
}

// Artifact is what the agent channel's artifact route serves a node for sha256=<hex>: an artifact a
// release pins (modules, manifests, agents, public to every node), or the content of a file in the
// footprint the node's roles render now. Anything else is module.not_found, as content that is not
// stored at all, so that a node learns nothing of what other nodes' roles hold.
func (r *Room) Artifact(ctx context.Context, nodeID, digest string) ([]byte, error) {
	if !cas.ValidDigest(digest) {
		return nil, errcode.New(errcode.RequestMalformed, "sha256 must be 64 lowercase hex digits")
	}
	released, err := r.c.Store.ArtifactReleased(ctx, store.ArtifactGetParams{Digest: digest})
	if err != nil {
		return nil, err
	}
	if !released {
		n, err := r.c.Store.NodeGet(ctx, store.NodeGetParams{ID: nodeID})
		if err != nil {
			return nil, err
		}
		specs, _, err := r.nodeRoles(ctx, n)
		if err != nil {
			return nil, err
		}
		fp, err := Render(specs)
		if err != nil || !slices.ContainsFunc(fp.Files, func(f footprint.File) bool { return f.SHA256 == digest }) {
			return nil, errcode.New(errcode.ModuleNotFound, "no artifact %s is served to this node", digest).With(errcode.DetailSHA256, digest)
		}
	}
	a, err := r.c.Store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: digest})
	if err != nil {
		return nil, err
	}
	return a.Data, nil
}
