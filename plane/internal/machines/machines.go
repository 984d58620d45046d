// Package machines is the machine inventory: every machine we pay for, from the managed nodes (their OS
// from their newest packages_report or host_report), the servers in the plane's cloud accounts that no
// node runs on (test accounts left out), and the machines written down by hand, each judged red, amber,
// grey or green with its reasons.
package machines

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/osrelease"
)

// Store is what the inventory reads and writes: the nodes, their newest reports, and the machines
// written down.
type Store interface {
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	JobNewestOutputs(ctx context.Context, p store.JobNewestOutputsParams) ([]store.JobOutput, error)
	MachinePut(ctx context.Context, p store.MachinePutParams) (store.Machine, error)
	MachineGet(ctx context.Context, p store.MachineGetParams) (store.Machine, error)
	MachineList(ctx context.Context) ([]store.Machine, error)
	MachineConfirm(ctx context.Context, p store.MachineConfirmParams) (store.Machine, error)
	MachineRemove(ctx context.Context, p store.MachineRemoveParams) error
}

// Clouds lists the plane's cloud accounts and their servers: the drivers room's own calls (so every
// listing is in the drivers' audit log).
type Clouds interface {
	Accounts(ctx context.Context, who api.Token, q api.AccountsListQuery) (api.AccountList, error)
	Instances(ctx context.Context, who api.Token, account string, q api.CloudInstancesQuery) (api.InstancePage, error)
}

// Config sets up the room.
type Config struct {
	Store  Store
	Clouds Clouds // nil: no cloud server is listed
	Log    *slog.Logger
	Now    func() time.Time // nil: time.Now
}

// Room is the inventory's Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// The words a node's OS is read from, newest report first.
const (
	packagesReport = "packages_report"
	hostReport     = "host_report"
)

// ConfirmEvery is how long a machine written down stays confirmed: after it, it is amber until somebody
// confirms or rewrites it.
const ConfirmEvery = 90 * 24 * time.Hour

// cloudDriverPrefix names the cloud drivers' accounts: drivers are <class>-<name>.
const cloudDriverPrefix = "cloud-"

// maxInstancePages bounds one account's listing: a runaway pager must not hold the page.
const maxInstancePages = 100

// List builds the inventory. A cloud account that does not answer is a warning, not a failure: the
// rest of the inventory is still worth seeing.
func (r *Room) List(ctx context.Context, who api.Token) (api.MachineList, error) {
	now := r.c.Now()
	out := api.MachineList{Machines: []api.Machine{}, Warnings: []string{}}
	nodes, err := r.nodes(ctx)
	if err != nil {
		return out, err
	}
	reports, err := r.c.Store.JobNewestOutputs(ctx, store.JobNewestOutputsParams{Words: []string{packagesReport, hostReport}})
	if err != nil {
		return out, err
	}
	newest := map[string]store.JobOutput{}
	for _, o := range reports {
		if cur, ok := newest[o.NodeID]; !ok || o.FinishedAt.After(cur.FinishedAt) {
			newest[o.NodeID] = o
		}
	}
	known := map[string]bool{} // addresses nodes run on
	for _, n := range nodes {
		for _, a := range n.Addresses {
			known[a] = true
		}
		m := api.Machine{Source: api.MachineFromNode, ID: n.ID, Name: n.Name, Addresses: n.Addresses}
		unknown := "no packages_report or host_report has come back from it yet"
		if rep, ok := newest[n.ID]; ok {
			m.OSRelease, m.ReportedAt = osFromReport(rep), rep.FinishedAt
			unknown = "its newest " + rep.Word + " does not say its OS release"
		}
		judgeOS(&m, now, unknown)
		out.Machines = append(out.Machines, m)
	}
	written, err := r.c.Store.MachineList(ctx)
	if err != nil {
		return out, err
	}
	explained := map[string]string{} // a written machine's name: it explains a server of that label or id
	for _, w := range written {
		explained[w.Name] = w.Name
		out.Machines = append(out.Machines, judgeWritten(w, now))
	}
	servers, warnings := r.servers(ctx, who)
	out.Warnings = append(out.Warnings, warnings...)
	for _, s := range servers {
		if slices.ContainsFunc(s.Addresses, func(a string) bool { return known[a] }) {
			continue // a node runs on it
		}
		if name, ok := explained[s.Name]; ok {
			s.Color, s.Reasons = api.MachineGreen, []string{"no node runs on it; written down as " + name}
		} else if name, ok := explained[s.ID]; ok {
			s.Color, s.Reasons = api.MachineGreen, []string{"no node runs on it; written down as " + name}
		} else {
			s.Color, s.Reasons = api.MachineAmber, []string{"no node runs on it and nothing written down explains it"}
		}
		out.Machines = append(out.Machines, s)
	}
	slices.SortStableFunc(out.Machines, func(a, b api.Machine) int {
		if d := rank(a.Color) - rank(b.Color); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func rank(color string) int {
	return slices.Index([]string{api.MachineRed, api.MachineAmber, api.MachineGrey, api.MachineGreen}, color)
}

// nodes reads every active node, page by page.
func (r *Room) nodes(ctx context.Context) ([]store.Node, error) {
	var all []store.Node
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, res.Nodes...)
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
	}
}

// servers lists the servers of every cloud account not marked test, as inventory rows without their
// judgement; an account that fails is a warning.
func (r *Room) servers(ctx context.Context, who api.Token) ([]api.Machine, []string) {
	if r.c.Clouds == nil {
		return nil, nil
	}
	accounts, err := r.c.Clouds.Accounts(ctx, who, api.AccountsListQuery{})
	if errcode.Has(err, errcode.DriverUnavailable) {
		return nil, nil // a plane without drivers holds no cloud account
	}
	if err != nil {
		return nil, []string{"cloud accounts not listed: " + err.Error()}
	}
	var out []api.Machine
	var warnings []string
	for _, a := range accounts.Accounts {
		if a.Test || !strings.HasPrefix(a.Driver, cloudDriverPrefix) {
			continue
		}
		token := ""
		for range maxInstancePages {
			page, err := r.c.Clouds.Instances(ctx, who, a.Name, api.CloudInstancesQuery{PageToken: token})
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("cloud account %s not listed: %v", a.Name, err))
				break
			}
			for _, in := range page.Instances {
				name := in.Label
				if name == "" {
					name = in.ID
				}
				out = append(out, api.Machine{Source: api.MachineFromCloud, ID: a.Name + "/" + in.ID, Name: name, Account: a.Name,
					Addresses: append(slices.Clone(in.IPv4), in.IPv6...)})
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
	}
	return out, warnings
}

// osFromReport reads "ID VERSION_ID" from a packages_report (os.id, os.version_id) or a host_report
// (os_id, os_version); "" when the report does not say.
func osFromReport(o store.JobOutput) string {
	var rep struct {
		OS struct {
			ID        string `json:"id"`
			VersionID string `json:"version_id"`
		} `json:"os"`
		OSID      string `json:"os_id"`
		OSVersion string `json:"os_version"`
	}
	if json.Unmarshal(o.Output, &rep) != nil {
		return ""
	}
	id, ver := rep.OS.ID, rep.OS.VersionID
	if o.Word == hostReport {
		id, ver = rep.OSID, rep.OSVersion
	}
	if _, err := parseRelease(id + " " + ver); err != nil {
		return ""
	}
	return id + " " + ver
}

// judgeOS colours a row by its OS release: red past standard support, grey when the release (or its
// support) is not known, green otherwise.
func judgeOS(m *api.Machine, now time.Time, unknown string) {
	m.Color, m.Reasons = api.MachineGreen, []string{}
	if m.OSRelease == "" {
		m.Color, m.Reasons = api.MachineGrey, append(m.Reasons, unknown)
		return
	}
	rel, _ := parseRelease(m.OSRelease)
	s, ok := osrelease.SupportEnd(rel)
	if !ok {
		m.Color, m.Reasons = api.MachineGrey, append(m.Reasons, "when "+m.OSRelease+"'s support ends is not known")
		return
	}
	m.SupportEnd, m.SupportSource = s.Standard.Format(time.DateOnly), s.Source
	if !now.Before(s.Standard) {
		m.Color = api.MachineRed
		m.Reasons = append(m.Reasons, fmt.Sprintf("%s's standard support ended %s", m.OSRelease, m.SupportEnd))
	}
}

// judgeWritten colours a machine written down: red past its OS's support or its retire-by day, amber
// when not confirmed for ConfirmEvery.
func judgeWritten(w store.Machine, now time.Time) api.Machine {
	m := api.Machine{Source: api.MachineFromWritten, ID: w.ID, Name: w.Name, OSRelease: w.OSRelease, Purpose: w.Purpose, Owner: w.Owner,
		ConfirmedAt: w.ConfirmedAt, ConfirmedBy: w.ConfirmedBy}
	judgeOS(&m, now, "no OS release written down")
	if !w.RetireBy.IsZero() {
		m.RetireBy = w.RetireBy.Format(time.DateOnly)
		if !now.Before(w.RetireBy) {
			m.Color, m.Reasons = api.MachineRed, append(m.Reasons, "its retire-by day "+m.RetireBy+" has passed")
		}
	}
	if now.Sub(w.ConfirmedAt) > ConfirmEvery {
		if m.Color != api.MachineRed {
			m.Color = api.MachineAmber
		}
		m.Reasons = append(m.Reasons, fmt.Sprintf("not confirmed since %s (every %d days)", w.ConfirmedAt.Format(time.DateOnly), int(ConfirmEvery.Hours()/24)))
	}
	return m
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	releaseRE = regexp.MustCompile(`^([a-z0-9][a-z0-9._-]{0,31}) ([0-9][0-9a-z.]{0,15})$`)
)

// parseRelease reads "ID VERSION_ID" as os-release(5) spells them. Refused:
// machine.os_release_invalid.
func parseRelease(s string) (osrelease.Release, error) {
	m := releaseRE.FindStringSubmatch(s)
	if m == nil {
		return osrelease.Release{}, errcode.New(errcode.MachineOSReleaseInvalid,
			"the OS release %q is not ID VERSION as os-release spells them, like \"debian 12\", \"ubuntu 22.04\" or \"rhel 9.4\"", s).
			With(errcode.DetailField, "os_release").With(errcode.DetailReason, "format")
	}
	return osrelease.Release{ID: m[1], VersionID: m[2]}, nil
}

// request checks a machine to write down. Refused: machine.field_invalid, machine.os_release_invalid,
// machine.retire_by_invalid.
func request(req api.MachineRequest) (store.MachinePutParams, error) {
	p := store.MachinePutParams{Name: strings.TrimSpace(req.Name), Purpose: strings.TrimSpace(req.Purpose), Owner: strings.TrimSpace(req.Owner),
		OSRelease: strings.ToLower(strings.TrimSpace(req.OSRelease))}
	if !nameRE.MatchString(p.Name) {
		return p, errcode.New(errcode.MachineFieldInvalid, "a machine's name is 1 to 63 of a-z, 0-9, . _ - starting with a letter or digit; %q is not", p.Name).
			With(errcode.DetailField, "name")
	}
	for _, f := range []struct{ name, v string }{{"purpose", p.Purpose}, {"owner", p.Owner}} {
		if f.v == "" || len(f.v) > 200 || !store.ValidText(f.v) {
			return p, errcode.New(errcode.MachineFieldInvalid, "%s is 1 to 200 characters of text", f.name).With(errcode.DetailField, f.name)
		}
	}
	rel, err := parseRelease(p.OSRelease)
	if err != nil {
		return p, err
	}
	if _, ok := osrelease.SupportEnd(rel); !ok {
		return p, errcode.New(errcode.MachineOSReleaseInvalid, "the plane does not know when %s's support ends, so it could never turn red", p.OSRelease).
			With(errcode.DetailField, "os_release").With(errcode.DetailReason, "unknown release")
	}
	if s := strings.TrimSpace(req.RetireBy); s != "" {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil || t.Year() < 2000 || t.Year() > 2100 {
			return p, errcode.New(errcode.MachineRetireByInvalid, "retire-by is a day YYYY-MM-DD between 2000 and 2100; %q is not", s).
				With(errcode.DetailField, "retire_by")
		}
		p.RetireBy = t
	}
	return p, nil
}

// Add writes a machine down, confirmed now. Refused: as request, machine.name_taken.
func (r *Room) Add(ctx context.Context, who api.Token, req api.MachineRequest) (api.Machine, error) {
	return r.put(ctx, who, "", req)
}

// Edit rewrites a machine written down, confirmed now. Refused: as Add, machine.not_found.
func (r *Room) Edit(ctx context.Context, who api.Token, id string, req api.MachineRequest) (api.Machine, error) {
	return r.put(ctx, who, id, req)
}

func (r *Room) put(ctx context.Context, who api.Token, id string, req api.MachineRequest) (api.Machine, error) {
	p, err := request(req)
	if err != nil {
		return api.Machine{}, err
	}
	p.ID, p.By, p.Now = id, who.Name, r.c.Now()
	m, err := r.c.Store.MachinePut(ctx, p)
	if err != nil {
		return api.Machine{}, err
	}
	r.log.Info("machine written down", "machine", m.ID, "name", m.Name, "by", who.Name)
	return judgeWritten(m, r.c.Now()), nil
}

// Confirm records that the machine is still as written. Refused: machine.not_found.
func (r *Room) Confirm(ctx context.Context, who api.Token, id string) (api.Machine, error) {
	m, err := r.c.Store.MachineConfirm(ctx, store.MachineConfirmParams{ID: id, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Machine{}, err
	}
	r.log.Info("machine confirmed", "machine", m.ID, "name", m.Name, "by", who.Name)
	return judgeWritten(m, r.c.Now()), nil
}

// Remove deletes a machine written down, answering it as it was. Refused: machine.not_found.
func (r *Room) Remove(ctx context.Context, who api.Token, id string) (api.Machine, error) {
	m, err := r.c.Store.MachineGet(ctx, store.MachineGetParams{ID: id})
	if err != nil {
		return api.Machine{}, err
	}
	if err := r.c.Store.MachineRemove(ctx, store.MachineRemoveParams{ID: id}); err != nil {
		return api.Machine{}, err
	}
	r.log.Info("machine removed", "machine", m.ID, "name", m.Name, "by", who.Name)
	return judgeWritten(m, r.c.Now()), nil
}
