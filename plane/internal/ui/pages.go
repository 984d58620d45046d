package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// pageSize is how many rows a list page shows.
const pageSize = 50

var funcs = template.FuncMap{
	"reasons": reasons,
	"pretty": func(raw json.RawMessage) string {
		if len(raw) == 0 {
			return ""
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return string(raw)
		}
		return b.String()
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"path": func(r api.Route, values ...string) string {
		p, err := r.Path(values...)
		if err != nil {
			return "#"
		}
		return Prefix + p
	},
	"final": func(s api.JobState) bool { return s.Final() },
	// short is a digest's first 12 hex digits, enough to tell two apart on a page.
	"short": func(d string) string {
		if d == "" {
			return "—"
		}
		if len(d) > 12 {
			return d[:12]
		}
		return d
	},
	"seq":   func(n int64) string { return strconv.FormatInt(n, 10) },
	"bytes": bytesText,
	"share": share,
	"ago":   ago,
	// cloud says a driver (by its <class>-<name>) is a cloud driver, whose accounts have instances.
	"cloud": func(driver string) bool { return strings.HasPrefix(driver, "cloud-") },
	// stage is a rollout stage's number as people count it: the API's are 0-based, the page's from 1.
	"stage":    func(n int) int { return n + 1 },
	"creator":  creatorOf,
	"raisedBy": raisedBy,
	"ask":      ask,
	"static":   staticURL,
}

// confirmation is what the "confirm" template draws: a destructive action behind a second step.
type confirmation struct{ Action, CSRF, Class, Label, Confirm, Warning string }

func ask(action, csrf, class, label, confirm, warning string) confirmation {
	return confirmation{Action: action, CSRF: csrf, Class: class, Label: label, Confirm: confirm, Warning: warning}
}

// rolloutTag is how the rollouts engine names the creator of a job it queued (rollouts.jobTag):
// who asked, the rollout, the phase and an attempt stamp that is an identity key, not a fact for people.
var rolloutTag = regexp.MustCompile(`^(.*) via rollout (\S+) \(([a-z_]+), attempt \d+\)$`)

// creator is a job's creator as a page shows it: a rollout's job names its rollout (linked) and phase,
// without the engine's attempt stamp.
type creator struct{ Who, Rollout, Phase string }

func creatorOf(by string) creator {
	if m := rolloutTag.FindStringSubmatch(by); m != nil {
		return creator{Who: m[1], Rollout: m[2], Phase: m[3]}
	}
	return creator{Who: by}
}

// raisedBy is the page of what raised a plane incident (its Subject), or "" when it has none.
func raisedBy(source, subject string) string {
	if subject == "" {
		return ""
	}
	switch source {
	case store.DetectorRolloutHalted:
		return Prefix + "/rollouts/" + url.PathEscape(subject)
	case store.DetectorDriverFailing:
		return Prefix + "/drivers#driver-" + url.PathEscape(subject)
	case store.DetectorReplicaMissing, store.DetectorMemory:
		return Prefix + "/plane"
	}
	return ""
}

// fleet is the nodes room's fleet count as a page calls a room.
func fleet(n *nodes.Room) func(context.Context, api.Token, struct{}) (api.Fleet, error) {
	return func(ctx context.Context, who api.Token, _ struct{}) (api.Fleet, error) { return n.Fleet(ctx, who) }
}

// planeStatus is the health room's status as a page calls a room.
func planeStatus(h *health.Room) func(context.Context, api.Token, struct{}) (api.PlaneStatus, error) {
	return func(ctx context.Context, who api.Token, _ struct{}) (api.PlaneStatus, error) {
		return h.Status(ctx, who)
	}
}

type overviewData struct {
	Fleet                     api.Fleet
	Incidents                 []api.Incident
	Running                   []api.Job
	Rollouts                  []api.Rollout      // running, paused or halted: the ones still open
	Provisionings             []api.Provisioning // under way, or failed with an instance to delete
	Release                   *api.Release
	TargetSequence            int64 // the fleet's target, shown by number when its release cannot be read
	SilentAfter               time.Duration
	Replicas, MissingReplicas int
}

// overview reads the fleet's counts from GET /fleet, which counts in the store: the page costs the same
// at ten nodes and at ten thousand.
func (u *UI) overview(w http.ResponseWriter, r *http.Request) {
	var d overviewData
	var err error
	if d.Fleet, err = run(u, r, api.FleetShow, fleet(u.cfg.Nodes), struct{}{}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.SilentAfter = time.Duration(d.Fleet.SilentAfterSeconds) * time.Second
	inc, err := run(u, r, api.IncidentsList, u.cfg.Incidents.List, api.IncidentsListQuery{NeedsYou: true, Limit: 20})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Incidents = inc.Incidents
	jobs, err := run(u, r, api.JobsList, u.cfg.Jobs.List, api.JobsListQuery{State: api.JobRunning, Limit: 20})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Running = jobs.Jobs
	for _, state := range []string{api.RolloutRunning, api.RolloutHalted, api.RolloutPaused} {
		ros, err := run(u, r, api.RolloutsList, u.cfg.Rollouts.List, api.RolloutsListQuery{State: state, Limit: 20})
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Rollouts = append(d.Rollouts, ros.Rollouts...)
	}
	provs, err := run(u, r, api.ProvisioningsList, u.cfg.Provision.List, api.ProvisioningsListQuery{Open: true, Limit: 20})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Provisionings = provs.Provisionings
	// The fleet's target, which a newer release published without a rollout does not move.
	if seq := d.Fleet.TargetSequence; seq > 0 {
		// The overview still shows the rest when the target cannot be read; the release's own page
		// says why.
		d.TargetSequence = seq
		if rel, err := run(u, r, api.ReleasesShow, u.cfg.Releases.Show, seq); err == nil {
			d.Release = &rel.Release
		} else {
			u.cfg.Log.Warn("ui overview: the fleet's target release cannot be read", "sequence", seq, "err", err)
		}
	}
	ps, err := run(u, r, api.PlaneShowStatus, planeStatus(u.cfg.Health), struct{}{})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Replicas = len(ps.Replicas)
	for _, rep := range ps.Replicas {
		if rep.Missing {
			d.MissingReplicas++
		}
	}
	u.page(w, r, "overview", d)
}

type joinsData struct {
	Joins []api.Join
	// Errors and Typed are per join: the refusal and what was typed, shown again next to its form.
	Error, ErrorJoin, Typed string
	Approved                string
}

func (u *UI) joins(w http.ResponseWriter, r *http.Request) {
	u.joinsPage(w, r, http.StatusOK, joinsData{Approved: r.URL.Query().Get("approved")})
}

func (u *UI) joinsPage(w http.ResponseWriter, r *http.Request, status int, d joinsData) {
	list, err := run(u, r, api.JoinsList, u.cfg.Joins.List, api.JoinsListQuery{Status: api.JoinPending, Limit: 200})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Joins = list.Joins
	v := from(r)
	u.render(w, r, status, "joins", &v, d)
}

// joinApprove approves with the fingerprint the admin typed; the API compares it exactly, as for the
// CLI, and a mismatch is shown next to the join's form.
func (u *UI) joinApprove(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	req := api.ApproveRequest{Fingerprint: r.PostFormValue("fingerprint"), Name: r.PostFormValue("name")}
	res, err := run(u, r, api.JoinsApprove, func(ctx context.Context, who api.Token, req api.ApproveRequest) (api.Approved, error) {
		return u.cfg.Joins.Approve(ctx, who, id, req)
	}, req)
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.joinsPage(w, r, errcode.Status(errcode.Code(err)), joinsData{Error: errMessage(r, err), ErrorJoin: id, Typed: req.Fingerprint})
		return
	}
	http.Redirect(w, r, Prefix+"/joins?approved="+url.QueryEscape(res.Node.ID), http.StatusSeeOther)
}

func (u *UI) joinReject(w http.ResponseWriter, r *http.Request) {
	if _, err := run(u, r, api.JoinsReject, u.cfg.Joins.Reject, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/joins", http.StatusSeeOther)
}

// errMessage is an error as a form shows it, code first; the code is the outcome of the request's
// audit event.
func errMessage(r *http.Request, err error) string {
	if e := errcode.From(err, errcode.InternalError); e != nil {
		audit.NoteCode(r.Context(), e.Code)
		return e.Code + ": " + e.Message
	}
	return err.Error()
}

type nodesData struct {
	Nodes []api.Node
	Query api.NodesListQuery
	// First and Next are the query strings of the first and the next page, filters kept.
	First, Next template.URL
	// Sorts are the query strings of the list sorted by each column, filters kept: ascending, or
	// descending when the list is sorted ascending by it already.
	Sorts map[string]template.URL
}

func (u *UI) nodes(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseNodesListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	list, err := run(u, r, api.NodesList, u.cfg.Nodes.List, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d := nodesData{Nodes: list.Nodes, Query: q}
	first := q
	first.Cursor, first.Limit = "", 0
	// Encoded by url.Values, so safe to put in an href as it is.
	d.First = template.URL(first.Values().Encode())
	if list.NextCursor != "" {
		next := first
		next.Cursor = list.NextCursor
		d.Next = template.URL(next.Values().Encode())
	}
	d.Sorts = map[string]template.URL{}
	for _, key := range api.NodeSorts {
		by := first
		by.Sort = key
		if q.Sort == key {
			by.Sort = "-" + key
		}
		d.Sorts[key] = template.URL(by.Values().Encode())
	}
	u.page(w, r, "nodes", d)
}

type nodeData struct {
	Node      api.Node
	Jobs      []api.Job
	Incidents []api.Incident
	// Backup is the node's backup health; nil on a plane without the backups room.
	Backup *api.BackupHealth
	// Recipes is the node's last recipe report read as a table; RecipesRaw is set instead when the
	// report does not read as one (it is the node's text, shown as it came).
	Recipes    []channel.RecipeReport
	RecipesRaw json.RawMessage
	// Uptime is how long the node's machine has been up, from the boot time its facts name.
	Uptime string
}

func (u *UI) node(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var d nodeData
	var err error
	if d.Node, err = run(u, r, api.NodesShow, u.cfg.Nodes.Show, id); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	jobs, err := run(u, r, api.JobsList, u.cfg.Jobs.List, api.JobsListQuery{Node: d.Node.ID, Limit: 20})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Jobs = jobs.Jobs
	inc, err := run(u, r, api.IncidentsList, u.cfg.Incidents.List, api.IncidentsListQuery{Node: d.Node.ID, Limit: 20})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Incidents = inc.Incidents
	if u.cfg.Backups != nil {
		bk, err := run(u, r, api.BackupsNode, u.cfg.Backups.Node, d.Node.ID)
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Backup = &bk.Health
	}
	if len(d.Node.Recipes) > 0 && json.Unmarshal(d.Node.Recipes, &d.Recipes) != nil {
		d.RecipesRaw = d.Node.Recipes
	}
	if f := d.Node.Facts; f != nil && !f.BootedAt.IsZero() {
		d.Uptime = uptime(time.Since(f.BootedAt))
	}
	u.page(w, r, "node", d)
}

// uptime says a duration as people read an uptime: days and hours, or hours and minutes.
func uptime(d time.Duration) string {
	d = max(d, 0).Truncate(time.Minute)
	days := int(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	if days > 0 {
		return fmt.Sprintf("%dd %dh", days, int(d/time.Hour))
	}
	return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

type jobsData struct {
	Jobs       []api.Job
	State      string
	NextCursor string
}

func (u *UI) jobs(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseJobsListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	list, err := run(u, r, api.JobsList, u.cfg.Jobs.List, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "jobs", jobsData{Jobs: list.Jobs, State: string(q.State), NextCursor: list.NextCursor})
}

func (u *UI) job(w http.ResponseWriter, r *http.Request) {
	j, err := run(u, r, api.JobsShow, u.cfg.Jobs.Show, chi.URLParam(r, "id"))
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "job", j)
}

// jobEvents streams a job's state and transcript as Server-Sent Events while it runs, reading it
// through the API once a second, and ends when the job is final. The page's script applies them; a
// browser without script has the refresh link. The session is read again from the store on every tick,
// as a new request would read it, so the stream ends (with an "ended" event) within a tick of a
// sign-out on any replica, the token's revocation, or the session's expiry.
func (u *UI) jobEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		u.fail(w, r, nil, fmt.Errorf("the response cannot stream"))
		return
	}
	id := chi.URLParam(r, "id")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	var last []byte
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		j, err := run(u, r, api.JobsShow, u.cfg.Jobs.Show, id)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", strings.ReplaceAll(errMessage(r, err), "\n", " "))
			fl.Flush()
			return
		}
		snap, _ := json.Marshal(struct {
			State      api.JobState `json:"state"`
			Transcript string       `json:"transcript"`
		}{j.State, j.Transcript})
		if !bytes.Equal(snap, last) {
			fmt.Fprintf(w, "event: job\ndata: %s\n\n", snap)
			fl.Flush()
			last = snap
		}
		if j.State.Final() {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		if err := u.recheck(r); err != nil {
			fmt.Fprintf(w, "event: ended\ndata: %s\n\n", strings.ReplaceAll(errMessage(r, err), "\n", " "))
			fl.Flush()
			return
		}
	}
}

func (u *UI) jobCancel(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, err := run(u, r, api.JobsCancel, u.cfg.Jobs.Cancel, id); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/jobs/"+url.PathEscape(id), http.StatusSeeOther)
}

func (u *UI) jobMarkFailed(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	req := api.MarkFailedRequest{Message: strings.TrimSpace(r.PostFormValue("message"))}
	if req.Message == "" {
		req.Message = "marked failed in the web UI"
	}
	if _, err := run(u, r, api.JobsMarkFailed, func(ctx context.Context, who api.Token, req api.MarkFailedRequest) (api.Job, error) {
		return u.cfg.Jobs.MarkFailed(ctx, who, id, req)
	}, req); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/jobs/"+url.PathEscape(id), http.StatusSeeOther)
}

type incidentsData struct {
	NeedsYou, Rest []api.Incident
}

func (u *UI) incidents(w http.ResponseWriter, r *http.Request) {
	var d incidentsData
	needs, err := run(u, r, api.IncidentsList, u.cfg.Incidents.List, api.IncidentsListQuery{NeedsYou: true, Limit: 100})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	all, err := run(u, r, api.IncidentsList, u.cfg.Incidents.List, api.IncidentsListQuery{Limit: 100})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.NeedsYou = needs.Incidents
	seen := map[string]bool{}
	for _, i := range needs.Incidents {
		seen[i.ID] = true
	}
	for _, i := range all.Incidents {
		if !seen[i.ID] {
			d.Rest = append(d.Rest, i)
		}
	}
	u.page(w, r, "incidents", d)
}

type incidentData struct {
	api.IncidentDetail
	Error string
}

func (u *UI) incident(w http.ResponseWriter, r *http.Request) {
	u.incidentPage(w, r, http.StatusOK, "")
}

func (u *UI) incidentPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d := incidentData{Error: msg}
	var err error
	if d.IncidentDetail, err = run(u, r, api.IncidentsShow, u.cfg.Incidents.Show, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, status, "incident", &v, d)
}

func (u *UI) incidentTriage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	req := api.TriageRequest{Triage: r.PostFormValue("triage"), For: r.PostFormValue("for"), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	if req.Triage != string(api.TriageSnoozed) {
		req.For = ""
	}
	_, err := run(u, r, api.IncidentsTriage, func(ctx context.Context, who api.Token, req api.TriageRequest) (api.IncidentChange, error) {
		return u.cfg.Incidents.Triage(ctx, who, id, req)
	}, req)
	u.incidentChange(w, r, id, err)
}

func (u *UI) incidentNote(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	req := api.NoteRequest{Text: r.PostFormValue("text")}
	_, err := run(u, r, api.IncidentsNote, func(ctx context.Context, who api.Token, req api.NoteRequest) (api.IncidentEvent, error) {
		return u.cfg.Incidents.Note(ctx, who, id, req)
	}, req)
	u.incidentChange(w, r, id, err)
}

// incidentChange shows a refused change on the incident's page, and a made one by going back to it.
func (u *UI) incidentChange(w http.ResponseWriter, r *http.Request, id string, err error) {
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.incidentPage(w, r, errcode.Status(errcode.Code(err)), errMessage(r, err))
		return
	}
	http.Redirect(w, r, Prefix+"/incidents/"+url.PathEscape(id), http.StatusSeeOther)
}

type tokensData struct {
	Tokens []api.Token
	// New is the token just made, with its secret: on the answer to the create form only.
	New   *api.NewToken
	Error string
	// MaxName is the form's bound on a name, the tokens room's own.
	MaxName int
}

func (u *UI) tokens(w http.ResponseWriter, r *http.Request) {
	u.tokensPage(w, r, http.StatusOK, tokensData{})
}

func (u *UI) tokensPage(w http.ResponseWriter, r *http.Request, status int, d tokensData) {
	who, err := u.may(r, api.TokensList)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	list, err := u.cfg.Tokens.List(r.Context(), who)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Tokens = list.Tokens
	d.MaxName = tokens.MaxName
	v := from(r)
	u.render(w, r, status, "tokens", &v, d)
}

// tokenCreate shows the new token's secret on its answer, once; the page is not stored by any cache
// and reloading it does not show the secret again (the form was a POST; the list shows no secrets).
func (u *UI) tokenCreate(w http.ResponseWriter, r *http.Request) {
	req := api.TokenRequest{Name: strings.TrimSpace(r.PostFormValue("name")), Role: api.Role(r.PostFormValue("role"))}
	who, err := u.may(r, api.TokensCreate)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	n, err := u.cfg.Tokens.Create(r.Context(), who, req)
	if err != nil {
		if errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.tokensPage(w, r, errcode.Status(errcode.Code(err)), tokensData{Error: errMessage(r, err)})
		return
	}
	audit.NoteTarget(r.Context(), n.Token.ID)
	u.tokensPage(w, r, http.StatusCreated, tokensData{New: &n})
}

func (u *UI) tokenRevoke(w http.ResponseWriter, r *http.Request) {
	who, err := u.may(r, api.TokensRevoke)
	if err == nil {
		_, err = u.cfg.Tokens.Revoke(r.Context(), who, chi.URLParam(r, "id"))
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/tokens", http.StatusSeeOther)
}
