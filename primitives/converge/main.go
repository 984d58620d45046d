// Command converge is the word that brings a node to its footprint (sdk/footprint): the files, units,
// users and groups, firewall, sysctl values and packages it should carry. It checks every item against
// the node's bounds first and changes nothing when any is refused; it compares each item with the
// machine, fetches from the plane only the files whose digest differs, applies what differs, and
// reports each item: unchanged, changed, failed (with its code) or refused. In plan mode it changes
// nothing and reports what would change, with a unified diff for each file.
//
// Given items and no footprint, it is the enforce recipe's repair: it converges those items of the
// footprint the node last converged to. A converge owes a unit a restart (or reload) from the moment
// it is about to change one of the unit's files until it has done it, and keeps that debt on the node,
// so a converge killed in between restarts the unit the next time, though the file is then unchanged.
package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/footprint/drift"
	"github.com/lexicon-fleet/lexicon/sdk/word"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Modes.
const (
	modeApply = "apply"
	modePlan  = "plan"
)

// Item statuses.
const (
	statusUnchanged   = "unchanged"
	statusChanged     = "changed"
	statusWouldChange = "would_change"
	statusFailed      = "failed"
	statusRefused     = "refused"
	statusSkipped     = "skipped" // not looked at: another item was refused, so nothing was touched
)

// Results of the whole run.
const (
	resultConverged = "converged"
	resultPlanned   = "planned"
	resultFailed    = "failed"
	resultRefused   = "refused"
)

// maxDiffs caps the diffs of one plan's report, so the output stays under the host's cap.
const maxDiffs = 512 << 10

type params struct {
	Mode      string          `json:"mode"`
	Footprint json.RawMessage `json:"footprint,omitempty"`
	Items     []string        `json:"items,omitempty"`
}

type report struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Changes []string `json:"changes,omitempty"`
	Code    string   `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
	Diff    string   `json:"diff,omitempty"`
}

type counts struct {
	Unchanged int `json:"unchanged"`
	Changed   int `json:"changed"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
}

type output struct {
	Mode    string          `json:"mode"`
	Result  string          `json:"result"`
	Items   []report        `json:"items"`
	Counts  counts          `json:"counts"`
	Fetched int             `json:"fetched"`
	Pending []capv1.Pending `json:"pending"`
}

func main() {
	word.Run(converge)
}

// run is one converge: the footprint, the part of it to converge, what the machine holds, and the
// report being built.
type run struct {
	mode     string
	fp       *footprint.Footprint // the whole footprint
	sel      *footprint.Footprint // the items to converge
	repair   bool
	items    []footprint.Item
	reports  map[string]*report
	diffs    map[string][]string // item ID -> how it differs
	pending  []capv1.Pending
	fetched  int
	diffLeft int
}

func converge(p params) (output, error) {
	if p.Mode == "" {
		p.Mode = modeApply
	}
	if p.Mode != modeApply && p.Mode != modePlan {
		return output{}, word.Fail(errcode.FootprintInvalid, "mode is apply or plan, not %q", p.Mode).With(errcode.DetailField, "/mode")
	}
	raw := p.Footprint
	rec, err := word.Footprint().Read()
	if err != nil {
		return output{}, err
	}
	if len(raw) == 0 {
		if len(p.Items) == 0 {
			return output{}, word.Fail(errcode.FootprintInvalid, "give a footprint, or items of the one this node converged to").With(errcode.DetailField, "/footprint")
		}
		if len(rec.Footprint) == 0 {
			return output{}, word.Fail(errcode.FootprintNoRecord, "this node has converged to no footprint yet, so there are no items to repair")
		}
		raw = rec.Footprint
	}
	fp, err := footprint.Decode(raw)
	if err != nil {
		return output{}, footprintField(err)
	}
	r := &run{mode: p.Mode, fp: fp, sel: fp, repair: len(p.Footprint) == 0, reports: map[string]*report{}, diffs: map[string][]string{},
		pending: rec.Pending, diffLeft: maxDiffs}
	if len(p.Items) > 0 {
		all := map[string]bool{}
		for _, it := range footprint.Items(fp) {
			all[it.ID] = true
		}
		want := map[string]bool{}
		for i, id := range p.Items {
			if !all[id] {
				return output{}, word.Fail(errcode.FootprintInvalid, "/items/%d: %s is not an item of the footprint", i, id).With(errcode.DetailField, "/items/"+strconv.Itoa(i))
			}
			want[id] = true
		}
		r.sel = footprint.Select(fp, want)
	}
	r.items = footprint.Items(r.sel)
	for _, it := range r.items {
		r.reports[it.ID] = &report{ID: it.ID}
	}

	// The whole selection is checked against the bounds before anything is looked at or touched.
	selRaw, _ := json.Marshal(r.sel)
	refusals, err := word.Footprint().Check(selRaw)
	if err != nil {
		return output{}, err
	}
	if len(refusals) > 0 {
		for _, it := range r.items {
			r.reports[it.ID].Status = statusSkipped
		}
		for _, f := range refusals {
			rep := r.reports[f.Item]
			rep.Status, rep.Code, rep.Message = statusRefused, f.Code, f.Reason
		}
		out := r.output(resultRefused)
		first := refusals[0]
		return out, word.FailWithOutput(word.Fail(first.Code, "%d item(s) lie outside this node's bounds, so nothing was changed; the first: %s: %s",
			len(refusals), first.Item, first.Reason).With(errcode.DetailItem, first.Item).With(errcode.DetailReason, first.Reason), out)
	}

	r.observe()
	if r.mode == modePlan {
		r.plan()
		return r.output(resultPlanned), nil
	}
	r.apply()
	if !r.repair {
		if err := word.Footprint().Record(raw, r.pending); err != nil {
			return r.finish(fmt.Errorf("the footprint was converged but could not be recorded: %w", err))
		}
	} else if err := word.Footprint().Record(nil, r.pending); err != nil {
		return r.finish(fmt.Errorf("owed unit actions could not be recorded: %w", err))
	}
	return r.finish(nil)
}

// footprintField passes a footprint's decoding fault on, its field under /footprint.
func footprintField(err error) error {
	e := errcode.From(err, errcode.FootprintInvalid)
	if f, ok := e.Details[errcode.DetailField].(string); ok {
		e.Details[errcode.DetailField] = "/footprint" + f
	}
	return e
}

func (r *run) finish(recordErr error) (output, error) {
	result := resultConverged
	for _, rep := range r.reports {
		if rep.Status == statusFailed {
			result = resultFailed
		}
	}
	if recordErr != nil {
		result = resultFailed
	}
	out := r.output(result)
	switch {
	case recordErr != nil:
		return out, word.FailWithOutput(word.Fail(errcode.FootprintItemsFailed, "%v", recordErr).With(errcode.DetailFailed, out.Counts.Failed), out)
	case result == resultFailed:
		var first *report
		for i := range out.Items {
			if out.Items[i].Status == statusFailed {
				first = &out.Items[i]
				break
			}
		}
		return out, word.FailWithOutput(word.Fail(errcode.FootprintItemsFailed, "%d item(s) failed; the first: %s: %s: %s",
			out.Counts.Failed, first.ID, first.Code, first.Message).With(errcode.DetailFailed, out.Counts.Failed).With(errcode.DetailItem, first.ID), out)
	}
	return out, nil
}

func (r *run) output(result string) output {
	out := output{Mode: r.mode, Result: result, Items: []report{}, Fetched: r.fetched, Pending: r.pending}
	if out.Pending == nil {
		out.Pending = []capv1.Pending{}
	}
	for _, it := range r.items {
		rep := *r.reports[it.ID]
		switch rep.Status {
		case statusUnchanged:
			out.Counts.Unchanged++
		case statusChanged, statusWouldChange:
			out.Counts.Changed++
		case statusFailed:
			out.Counts.Failed++
		case statusRefused:
			out.Counts.Refused++
		}
		out.Items = append(out.Items, rep)
	}
	return out
}

func (r *run) fail(id string, err error) {
	e := errcode.From(err, errcode.CapabilityFailed)
	rep := r.reports[id]
	rep.Status, rep.Code, rep.Message = statusFailed, e.Code, e.Message
}

// observe compares every selected item with the machine. An item that cannot be looked at fails.
func (r *run) observe() {
	for _, f := range drift.Observe(r.sel) {
		if f.Err != nil {
			r.fail(f.Item.ID, f.Err)
			continue
		}
		r.diffs[f.Item.ID] = f.Diffs
		if len(f.Diffs) == 0 {
			r.reports[f.Item.ID].Status = statusUnchanged
		}
	}
}

// plan reports what apply would change, with a diff for each file whose content differs (its bytes
// fetched and staged for it), and the unit actions still owed.
func (r *run) plan() {
	for _, it := range r.items {
		rep := r.reports[it.ID]
		if rep.Status != "" {
			continue
		}
		rep.Status, rep.Changes = statusWouldChange, r.diffs[it.ID]
		if it.Kind != footprint.KindFile || !footprint.ContentDiffers(rep.Changes) {
			continue
		}
		f := r.sel.Files[it.Index]
		if err := r.fetch(f); err != nil {
			r.fail(it.ID, err)
			continue
		}
		d, err := word.FS().Diff(f.Path, f.SHA256)
		switch {
		case err != nil:
			r.fail(it.ID, err)
		case d.Binary:
			rep.Diff = "(binary content differs)"
		case d.TooLarge:
			rep.Diff = "(too large to show)"
		case len(d.Diff) > r.diffLeft:
			rep.Diff = "(diff omitted: the report's diffs are over their cap)"
		default:
			rep.Diff = d.Diff
			r.diffLeft -= len(d.Diff)
		}
	}
	for _, p := range r.pending {
		if rep, ok := r.reports[footprint.ID(footprint.KindUnit, p.Unit)]; ok && rep.Status == statusUnchanged {
			rep.Status, rep.Changes = statusWouldChange, []string{"owes a " + p.Action}
		}
	}
}

func (r *run) fetch(f footprint.File) error {
	got, err := word.FetchArtifact(f.SHA256, f.Size)
	if err != nil {
		return err
	}
	if got.Fetched {
		r.fetched++
	}
	return nil
}

// unitDirs are the folders whose files are systemd's: a change beneath one needs a daemon-reload.
var unitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}

// owe adds an owed action, once.
func (r *run) owe(p capv1.Pending) {
	if !slices.Contains(r.pending, p) {
		r.pending = append(r.pending, p)
	}
}

func (r *run) paid(p capv1.Pending) {
	r.pending = slices.DeleteFunc(r.pending, func(q capv1.Pending) bool { return q == p })
}

func (r *run) apply() {
	// Every file whose content differs is fetched before anything is changed.
	for _, it := range r.items {
		if it.Kind != footprint.KindFile || r.reports[it.ID].Status != "" || !footprint.ContentDiffers(r.diffs[it.ID]) {
			continue
		}
		if err := r.fetch(r.sel.Files[it.Index]); err != nil {
			r.fail(it.ID, err)
		}
	}
	// Owe each running unit of a file about to change its restart (or reload), and systemd a reload of
	// its unit files when one of them is about to change, before the first file is written.
	owedBefore := len(r.pending)
	for _, it := range r.items {
		if it.Kind != footprint.KindFile || r.reports[it.ID].Status != "" {
			continue
		}
		path := it.Key
		for _, d := range unitDirs {
			if strings.HasPrefix(path, d+"/") {
				r.owe(capv1.Pending{Action: "daemon-reload"})
			}
		}
		for _, u := range r.fp.Units {
			if u.Started && slices.Contains(u.Files, path) {
				action := footprint.OnChangeRestart
				if u.OnChange == footprint.OnChangeReload {
					action = footprint.OnChangeReload
				}
				r.owe(capv1.Pending{Unit: u.Name, Action: action})
			}
		}
	}
	if len(r.pending) != owedBefore {
		if err := word.Footprint().Record(nil, r.pending); err != nil {
			// Without the debt on record a kill could lose a restart: change no file.
			for _, it := range r.items {
				if it.Kind == footprint.KindFile && r.reports[it.ID].Status == "" {
					r.fail(it.ID, err)
				}
			}
		}
	}
	sysctlDone, packagesDone := false, false
	for _, it := range r.items {
		rep := r.reports[it.ID]
		if it.Kind == footprint.KindUnit || rep.Status != "" {
			continue
		}
		var changed []string
		var err error
		switch it.Kind {
		case footprint.KindGroup:
			var c word.AccountChange
			c, err = word.Account().EnsureGroup(r.sel.Groups[it.Index])
			changed = c.Changed
		case footprint.KindUser:
			var c word.AccountChange
			c, err = word.Account().EnsureUser(r.sel.Users[it.Index])
			changed = c.Changed
		case footprint.KindPackage:
			if !packagesDone {
				r.applyPackages()
				packagesDone = true
			}
			continue
		case footprint.KindFile:
			f := r.sel.Files[it.Index]
			mode, _ := footprint.ParseMode(f.Mode)
			var c word.Installed
			c, err = word.FS().Install(f.Path, f.SHA256, mode, f.Owner, f.Group)
			changed = c.Changed
		case footprint.KindSysctl:
			if !sysctlDone {
				r.applySysctl()
				sysctlDone = true
			}
			continue
		case footprint.KindFirewall:
			_, err = word.ApplyFirewall(*r.sel.Firewall)
			changed = r.diffs[it.ID]
		}
		if err != nil {
			r.fail(it.ID, err)
			continue
		}
		rep.Status, rep.Changes = statusChanged, changed
	}
	r.applyUnits()
}

// applySysctl sets every sysctl item of the footprint in one call: the persisted file holds the whole
// set, so it is given the whole set, and writes only the values that differ.
func (r *run) applySysctl() {
	values := map[string]string{}
	for _, s := range r.fp.Sysctl {
		values[s.Key] = s.Value
	}
	c, err := word.ApplySysctl(values)
	for _, it := range r.items {
		rep := r.reports[it.ID]
		if it.Kind != footprint.KindSysctl || rep.Status != "" {
			continue
		}
		switch {
		case err != nil:
			r.fail(it.ID, err)
		case slices.Contains(c.Missing, it.Key):
			r.fail(it.ID, word.Fail(errcode.CapabilityNotFound, "this kernel has no sysctl %s", it.Key))
		default:
			rep.Status, rep.Changes = statusChanged, r.diffs[it.ID]
		}
	}
}

// applyUnits brings each selected unit to its item, and pays the actions owed: a unit of a changed file
// that is not selected (a repair of the file alone) is still restarted, as its item says.
func (r *run) applyUnits() {
	owes := func(unit, action string) bool {
		return slices.Contains(r.pending, capv1.Pending{Unit: unit, Action: action})
	}
	reload := slices.Contains(r.pending, capv1.Pending{Action: "daemon-reload"})
	units := slices.Clone(r.sel.Units)
	for _, u := range r.fp.Units {
		if (owes(u.Name, footprint.OnChangeRestart) || owes(u.Name, footprint.OnChangeReload)) && !slices.ContainsFunc(units, func(v footprint.Unit) bool { return v.Name == u.Name }) {
			units = append(units, u)
		}
	}
	if len(units) == 0 && reload {
		// A unit file changed that no unit of the footprint names: nothing here will use it.
		r.paid(capv1.Pending{Action: "daemon-reload"})
	}
	for _, u := range units {
		id := footprint.ID(footprint.KindUnit, u.Name)
		rep, selected := r.reports[id]
		if selected && rep.Status == statusFailed {
			continue
		}
		restart, reloadUnit := owes(u.Name, footprint.OnChangeRestart), owes(u.Name, footprint.OnChangeReload)
		if selected && rep.Status == statusUnchanged && !restart && !reloadUnit && !reload {
			continue
		}
		c, err := word.Systemd().Ensure(capv1.SystemdEnsure{Unit: u.Name, Enabled: u.Enabled, Started: u.Started,
			DaemonReload: reload, Restart: restart, Reload: reloadUnit && !restart})
		if !selected {
			// Reported as the unit's own line, so the restart shows.
			r.items = append(r.items, footprint.Item{ID: id, Kind: footprint.KindUnit, Key: u.Name})
			rep = &report{ID: id}
			r.reports[id] = rep
		}
		if err != nil {
			r.fail(id, err)
			continue
		}
		if reload {
			r.paid(capv1.Pending{Action: "daemon-reload"})
			reload = false
		}
		r.paid(capv1.Pending{Unit: u.Name, Action: footprint.OnChangeRestart})
		r.paid(capv1.Pending{Unit: u.Name, Action: footprint.OnChangeReload})
		if len(c.Actions) == 0 {
			rep.Status = statusUnchanged
		} else {
			rep.Status, rep.Changes = statusChanged, c.Actions
		}
	}
}
