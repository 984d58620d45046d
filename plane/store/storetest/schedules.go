package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func init() { rolloutTests = append(rolloutTests, scheduleTests...) }

func scheduleParams(f *fx, name string) store.ScheduleCreateParams {
	return store.ScheduleCreateParams{Name: name, Word: "noop", Params: json.RawMessage(`{}`), Selector: "role=web",
		Every: time.Hour, Role: store.RoleOperator, By: "alice", NextRunAt: f.at(time.Hour), Now: f.at(0)}
}

var scheduleTests = []test{
	// Schedule/Default: a fresh store holds the default schedule, packages_report hourly on every node,
	// due at once.
	{"Schedule/Default", func(f *fx) {
		sc, err := f.s.ScheduleGet(f.ctx, store.ScheduleGetParams{Name: "packages-report"})
		noErr(f, err, "ScheduleGet")
		if sc.Word != "packages_report" || sc.Every != time.Hour || sc.Selector != "all" || sc.Paused || !sc.NextRunAt.IsZero() || sc.Role != store.RoleOperator {
			f.Fatalf("default schedule %+v", sc)
		}
	}},
	// Schedule/Lifecycle: create, read by id and name, list, edit, delete; a taken name and a missing
	// schedule are their codes.
	{"Schedule/Lifecycle", func(f *fx) {
		sc, err := f.s.ScheduleCreate(f.ctx, scheduleParams(f, "web-check"))
		noErr(f, err, "ScheduleCreate")
		if sc.ID == "" || sc.Name != "web-check" || sc.CreatedBy != "alice" || sc.UpdatedBy != "alice" || !sc.NextRunAt.Equal(f.at(time.Hour)) ||
			!sc.CreatedAt.Equal(f.at(0)) || string(sc.Params) != `{}` || !sc.LastRunAt.IsZero() {
			f.Fatalf("created %+v", sc)
		}
		_, err = f.s.ScheduleCreate(f.ctx, scheduleParams(f, "web-check"))
		testkit.WantCode(f, err, errcode.ScheduleNameTaken)
		byName, err := f.s.ScheduleGet(f.ctx, store.ScheduleGetParams{Name: "web-check"})
		noErr(f, err, "ScheduleGet by name")
		byID, err := f.s.ScheduleGet(f.ctx, store.ScheduleGetParams{ID: sc.ID})
		noErr(f, err, "ScheduleGet by id")
		if byName.ID != sc.ID || byID.Name != sc.Name {
			f.Fatalf("by name %+v, by id %+v", byName, byID)
		}
		list, err := f.s.ScheduleList(f.ctx, store.ScheduleListParams{})
		noErr(f, err, "ScheduleList")
		if len(list) != 2 || list[1].Name != "web-check" {
			f.Fatalf("list %+v", list)
		}
		up, err := f.s.ScheduleUpdate(f.ctx, store.ScheduleUpdateParams{ID: sc.ID, Word: "noop", Params: json.RawMessage(`{"x":1}`), Selector: "all",
			Cron: "*/5 * * * *", Paused: true, Role: store.RoleAdmin, NextRunAt: f.at(5 * time.Minute), By: "bob", Now: f.at(time.Minute)})
		noErr(f, err, "ScheduleUpdate")
		if up.Every != 0 || up.Cron != "*/5 * * * *" || !up.Paused || up.Role != store.RoleAdmin || up.UpdatedBy != "bob" || up.CreatedBy != "alice" ||
			!up.UpdatedAt.Equal(f.at(time.Minute)) || string(up.Params) != `{"x":1}` || up.Selector != "all" {
			f.Fatalf("updated %+v", up)
		}
		noErr(f, f.s.ScheduleDelete(f.ctx, store.ScheduleDeleteParams{ID: sc.ID}), "ScheduleDelete")
		_, err = f.s.ScheduleGet(f.ctx, store.ScheduleGetParams{ID: sc.ID})
		testkit.WantCode(f, err, errcode.ScheduleNotFound)
		testkit.WantCode(f, f.s.ScheduleDelete(f.ctx, store.ScheduleDeleteParams{ID: sc.ID}), errcode.ScheduleNotFound)
		_, err = f.s.ScheduleUpdate(f.ctx, store.ScheduleUpdateParams{ID: sc.ID, Word: "noop", Params: json.RawMessage(`{}`), Selector: "all",
			Every: time.Hour, Role: store.RoleOperator, By: "bob"})
		testkit.WantCode(f, err, errcode.ScheduleNotFound)
	}},
	// Schedule/Refused: fields outside the store's bounds are refused and nothing is stored.
	{"Schedule/Refused", func(f *fx) {
		bad := []func(p *store.ScheduleCreateParams){
			func(p *store.ScheduleCreateParams) { p.Name = "Bad Name" },
			func(p *store.ScheduleCreateParams) { p.Cron = "@hourly" },              // both
			func(p *store.ScheduleCreateParams) { p.Every = 0 },                     // neither
			func(p *store.ScheduleCreateParams) { p.Params = json.RawMessage(`{`) }, // not JSON
			func(p *store.ScheduleCreateParams) { p.Role = "root" },
			func(p *store.ScheduleCreateParams) { p.Word = "" },
		}
		for i, change := range bad {
			p := scheduleParams(f, "refused")
			change(&p)
			_, err := f.s.ScheduleCreate(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("case %d: %v, want %s", i, err, errcode.StoreParamInvalid)
			}
		}
		list, err := f.s.ScheduleList(f.ctx, store.ScheduleListParams{})
		noErr(f, err, "ScheduleList")
		if len(list) != 1 {
			f.Fatalf("stored %+v", list)
		}
	}},
	// Schedule/Fire: a firing is claimed once from the next run the caller saw; a paused schedule is not
	// due and does not fire; the run's counts are recorded.
	{"Schedule/Fire", func(f *fx) {
		sc, err := f.s.ScheduleCreate(f.ctx, scheduleParams(f, "fire"))
		noErr(f, err, "ScheduleCreate")
		due, err := f.s.ScheduleList(f.ctx, store.ScheduleListParams{Due: true, Now: f.at(30 * time.Minute)})
		noErr(f, err, "ScheduleList due")
		if len(due) != 1 || due[0].Name != "packages-report" { // the default, due at once
			f.Fatalf("due at 30m: %+v", due)
		}
		due, err = f.s.ScheduleList(f.ctx, store.ScheduleListParams{Due: true, Now: f.at(time.Hour)})
		noErr(f, err, "ScheduleList due")
		if len(due) != 2 || due[0].Name != "packages-report" || due[1].ID != sc.ID {
			f.Fatalf("due at 1h: %+v", due)
		}
		p := store.ScheduleFireParams{ID: sc.ID, From: sc.NextRunAt, Next: f.at(2 * time.Hour), Now: f.at(time.Hour)}
		first, err := f.s.ScheduleFire(f.ctx, p)
		noErr(f, err, "ScheduleFire")
		second, err := f.s.ScheduleFire(f.ctx, p)
		noErr(f, err, "ScheduleFire again")
		if !first.Fired || second.Fired || !first.Schedule.NextRunAt.Equal(f.at(2*time.Hour)) || !first.Schedule.LastRunAt.Equal(f.at(time.Hour)) ||
			!second.Schedule.NextRunAt.Equal(f.at(2*time.Hour)) {
			f.Fatalf("first %+v, second %+v", first, second)
		}
		// The default's next run is NULL: it fires from the zero time.
		def, err := f.s.ScheduleFire(f.ctx, store.ScheduleFireParams{ID: due[0].ID, Next: f.at(time.Hour), Now: f.at(0)})
		noErr(f, err, "ScheduleFire default")
		if !def.Fired {
			f.Fatalf("default did not fire: %+v", def)
		}
		rec, err := f.s.ScheduleRunRecord(f.ctx, store.ScheduleRunRecordParams{ID: sc.ID, Queued: 3, Skipped: 2, Failed: 1, Message: "one refused"})
		noErr(f, err, "ScheduleRunRecord")
		if rec.LastQueued != 3 || rec.LastSkipped != 2 || rec.LastFailed != 1 || rec.LastMessage != "one refused" {
			f.Fatalf("recorded %+v", rec)
		}
		paused, err := f.s.ScheduleUpdate(f.ctx, store.ScheduleUpdateParams{ID: sc.ID, Word: sc.Word, Params: sc.Params, Selector: sc.Selector,
			Every: sc.Every, Paused: true, Role: sc.Role, NextRunAt: f.at(2 * time.Hour), By: "bob", Now: f.at(time.Hour)})
		noErr(f, err, "ScheduleUpdate pause")
		due, err = f.s.ScheduleList(f.ctx, store.ScheduleListParams{Due: true, Now: f.at(3 * time.Hour)})
		noErr(f, err, "ScheduleList due")
		if len(due) != 1 || due[0].ID == sc.ID {
			f.Fatalf("paused schedule due: %+v", due)
		}
		res, err := f.s.ScheduleFire(f.ctx, store.ScheduleFireParams{ID: sc.ID, From: paused.NextRunAt, Next: f.at(4 * time.Hour), Now: f.at(3 * time.Hour)})
		noErr(f, err, "ScheduleFire paused")
		if res.Fired {
			f.Fatalf("paused schedule fired: %+v", res)
		}
		_, err = f.s.ScheduleFire(f.ctx, store.ScheduleFireParams{ID: "sched_nope", Next: f.at(time.Hour)})
		testkit.WantCode(f, err, errcode.ScheduleNotFound)
	}},
}

func init() {
	rolloutTests = append(rolloutTests, test{"PackageReport/List", func(f *fx) {
		// PackageReport/List: every active node by name, whether it has the word, its newest completed
		// report, and what the newest reports at or before the two cutoffs said.
		vocab := []store.WordRef{{Name: "packages_report", Version: "1.0.0", Digest: digest([]byte("pr")), Class: "look"}}
		a := NodeWords(f, f.s, "a-node", "1.0.0", f.at(0), vocab)
		b := NodeWords(f, f.s, "b-node", "1.0.0", f.at(0), vocab)
		NodeWords(f, f.s, "c-node", "1.0.0", f.at(0), words("w"))
		Completed(f, f.s, a.ID, "packages_report", json.RawMessage(`{"reboot":{"owed":true},"security_upgrades":[{"name":"openssl"}]}`), f.at(time.Hour))
		Completed(f, f.s, a.ID, "packages_report", json.RawMessage(`{"reboot":{"owed":true},"security_upgrades":[]}`), f.at(30*time.Hour))
		last := Completed(f, f.s, a.ID, "packages_report", json.RawMessage(`{"reboot":{"owed":false},"n":3,"other_upgrades":[{"name":"vim"}],"security_upgrades":[{"name":"curl"}],"os":{"pretty_name":"Debian 12","id":"debian"}}`), f.at(40*time.Hour))
		list, err := f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "packages_report", RebootCutoff: f.at(31 * time.Hour), FixCutoff: f.at(2 * time.Hour)})
		noErr(f, err, "PackageReportList")
		if len(list) != 3 || list[0].NodeID != a.ID || list[1].NodeID != b.ID || list[2].NodeName != "c-node" {
			f.Fatalf("list %+v", list)
		}
		ra := list[0]
		if !ra.HasWord || ra.JobID != last.ID || !ra.FinishedAt.Equal(f.at(40*time.Hour)) || !ra.OwedBefore || string(ra.FixesBefore) == "" {
			f.Fatalf("a-node %+v", ra)
		}
		// Output is the report's summary, cut when it was taken in: what the view reads, nothing else.
		var out struct {
			N     *int
			Other []any                   `json:"other_upgrades"`
			Fixes []struct{ Name string } `json:"security_upgrades"`
			OS    map[string]any
			Boot  struct{ Owed *bool } `json:"reboot"`
		}
		var fixes []struct{ Name string }
		if json.Unmarshal(ra.Output, &out) != nil || out.N != nil || out.Other != nil || len(out.Fixes) != 1 || out.Fixes[0].Name != "curl" ||
			out.OS["pretty_name"] != "Debian 12" || out.OS["id"] != nil || out.Boot.Owed == nil || *out.Boot.Owed ||
			json.Unmarshal(ra.FixesBefore, &fixes) != nil || len(fixes) != 1 || fixes[0].Name != "openssl" {
			f.Fatalf("a-node output %s, fixes %s", ra.Output, ra.FixesBefore)
		}
		if rb := list[1]; !rb.HasWord || rb.JobID != "" || rb.Output != nil || rb.OwedBefore || rb.FixesBefore != nil {
			f.Fatalf("b-node %+v", rb)
		}
		if list[2].HasWord {
			f.Fatalf("c-node %+v", list[2])
		}
		// Without cutoffs the older reports are not looked up, nor labels and facts unless Selectable.
		list, err = f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "packages_report"})
		noErr(f, err, "PackageReportList")
		if list[0].OwedBefore || list[0].FixesBefore != nil || list[0].Labels != nil || list[0].Facts.OS != "" {
			f.Fatalf("without cutoffs %+v", list[0])
		}
		// Selectable reads what a role's selector matches: the labels and the facts.
		_, err = f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: a.ID, Set: map[string]string{"tier": "web"}, By: "test"})
		noErr(f, err, "NodeLabel")
		facts := store.NodeFacts{CollectedAt: f.at(41 * time.Hour), OS: "debian-12", Arch: "x86_64", Hostname: "b-node", CPUs: 2}
		_, err = f.s.NodeReport(f.ctx, store.NodeReportParams{ID: b.ID, Now: f.at(41 * time.Hour), AgentVersion: "1.0.0", Vocabulary: vocab,
			Idle: true, Facts: facts})
		noErr(f, err, "NodeReport")
		list, err = f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "packages_report", Selectable: true})
		noErr(f, err, "PackageReportList selectable")
		if len(list) != 3 || list[0].Labels["tier"] != "web" || list[0].JobID != last.ID || list[1].Facts.OS != "debian-12" ||
			list[1].Facts.CPUs != 2 || len(list[1].Labels) != 0 {
			f.Fatalf("selectable %+v", list)
		}
	}})
}

func init() {
	rolloutTests = append(rolloutTests, test{"PackageReport/Kept", func(f *fx) {
		// PackageReport/Kept: the newest report the store keeps per node follows the jobs: a newer
		// completed report takes the place, a failed one does not, a pruned newest gives its place to the
		// newest remaining (here one a batch keeps), and the last pruned leaves none. Narrow looks the
		// older reports up only where the newest owes a reboot or has fixes waiting. Any other word is
		// refused. HasWord follows the vocabulary the node reports.
		n := f.node("a-node", "packages_report")
		list := func(narrow bool) store.PackageReport {
			f.Helper()
			l, err := f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "packages_report", RebootCutoff: f.at(2 * time.Hour),
				FixCutoff: f.at(2 * time.Hour), Narrow: narrow})
			noErr(f, err, "PackageReportList")
			if len(l) != 1 || l[0].NodeID != n.ID || !l[0].HasWord {
				f.Fatalf("list %+v", l)
			}
			return l[0]
		}
		f.batch(f.batchParams("packages_report", n))
		old := f.finishAs(n, time.Hour, store.JobCompleted, `{"reboot":{"owed":true},"security_upgrades":[{"name":"openssl"}]}`)
		newer := Completed(f, f.s, n.ID, "packages_report", json.RawMessage(`{"reboot":{"owed":false},"security_upgrades":[]}`), f.at(3*time.Hour))
		j, err := f.s.JobCreate(f.ctx, f.jobParams(n, "packages_report"))
		noErr(f, err, "JobCreate")
		f.finishAs(n, 4*time.Hour, store.JobFailed, "")
		if r := list(false); r.JobID != newer.ID || !r.OwedBefore || r.FixesBefore == nil {
			f.Fatalf("newest %+v, want %s with the older report's reboot and fixes", r, newer.ID)
		}
		if r := list(true); r.JobID != newer.ID || r.OwedBefore || r.FixesBefore != nil {
			f.Fatalf("narrow %+v: the newest owes nothing, so nothing older is looked up", r)
		}
		pruned, err := f.s.JobPrune(f.ctx, store.PruneParams{Before: f.at(5 * time.Hour)})
		noErr(f, err, "JobPrune")
		if pruned != 2 {
			f.Fatalf("pruned %d, want the newer report and the failed job (%s)", pruned, j.ID)
		}
		if r := list(true); r.JobID != old.ID || !r.FinishedAt.Equal(f.at(time.Hour)) || !strings.Contains(string(r.Output), "openssl") {
			f.Fatalf("after pruning the newest: %+v, want %s", r, old.ID)
		}
		if _, err := f.s.BatchPrune(f.ctx, store.PruneParams{Before: f.at(5 * time.Hour)}); err != nil {
			f.Fatal(err)
		}
		if r := list(false); r.JobID != "" || r.Output != nil || r.OwedBefore || r.FixesBefore != nil {
			f.Fatalf("after pruning every report: %+v", r)
		}
		_, err = f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "host_report"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		// Whether the node has the word follows its vocabulary.
		for _, vocab := range [][]string{{"host_report"}, {"host_report", "packages_report"}} {
			_, err = f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(6 * time.Hour), AgentVersion: "1.0.0",
				StatementSequence: 1, StatementDigest: digest([]byte("statement")), Vocabulary: words(vocab...), Idle: true})
			noErr(f, err, "NodeReport")
			l, err := f.s.PackageReportList(f.ctx, store.PackageReportListParams{Word: "packages_report"})
			noErr(f, err, "PackageReportList")
			if len(l) != 1 || l[0].HasWord != (len(vocab) == 2) {
				f.Fatalf("vocabulary %v: %+v", vocab, l)
			}
		}
	}})
}

func init() {
	incidentTests = append(incidentTests, test{"Incident/PackageDetectors", func(f *fx) {
		// Incident/PackageDetectors: a node whose newest packages_report names a service on replaced
		// code opens plane:old_code_serving; a critical fix waiting in a report a day old and in the
		// newest opens plane:critical_fix_waiting (a fix seen only now does not); a clean report clears
		// both.
		vocab := []store.WordRef{{Name: "packages_report", Version: "1.0.0", Digest: digest([]byte("pr")), Class: "look"}}
		a := NodeWords(f, f.s, "a-node", "1.0.0", f.at(0), vocab)
		b := NodeWords(f, f.s, "b-node", "1.0.0", f.at(0), vocab)
		dirty := json.RawMessage(`{"security_upgrades":[{"name":"openssl"},{"name":"curl"}],"stale_services":[{"unit":"lexd.service"}]}`)
		Completed(f, f.s, a.ID, "packages_report", dirty, f.at(time.Hour))
		Completed(f, f.s, a.ID, "packages_report", dirty, f.at(30*time.Hour))
		Completed(f, f.s, b.ID, "packages_report", json.RawMessage(`{"security_upgrades":[{"name":"openssl"}],"stale_services":[]}`), f.at(30*time.Hour))
		p := store.IncidentReconcileParams{Now: f.at(31 * time.Hour), Up: f.at(0), Packages: store.PackageThresholds{Critical: []string{"openssl", "linux-image-*"}, FixAge: 24 * time.Hour}}
		res, err := f.s.IncidentReconcile(f.ctx, p)
		noErr(f, err, "IncidentReconcile")
		opened := map[string]string{}
		for _, c := range res.Changes {
			if c.Incident.Source == store.DetectorOldCodeServing || c.Incident.Source == store.DetectorCriticalFixWaiting {
				opened[c.Incident.Source] = c.Incident.NodeID + " " + c.Incident.Summary
			}
		}
		if len(opened) != 2 || !strings.HasPrefix(opened[store.DetectorOldCodeServing], a.ID+" ") || !strings.Contains(opened[store.DetectorOldCodeServing], "lexd.service") ||
			!strings.HasPrefix(opened[store.DetectorCriticalFixWaiting], a.ID+" ") || !strings.Contains(opened[store.DetectorCriticalFixWaiting], "openssl") ||
			strings.Contains(opened[store.DetectorCriticalFixWaiting], "curl") {
			f.Fatalf("opened %v", opened)
		}
		Completed(f, f.s, a.ID, "packages_report", json.RawMessage(`{"security_upgrades":[],"stale_services":[]}`), f.at(32*time.Hour))
		p.Now = f.at(33 * time.Hour)
		res, err = f.s.IncidentReconcile(f.ctx, p)
		noErr(f, err, "IncidentReconcile")
		cleared := 0
		for _, c := range res.Changes {
			if (c.Incident.Source == store.DetectorOldCodeServing || c.Incident.Source == store.DetectorCriticalFixWaiting) && c.Event.Kind == store.EventCleared {
				cleared++
			}
		}
		if cleared != 2 {
			f.Fatalf("cleared %d: %+v", cleared, res.Changes)
		}
	}})
}

func init() {
	incidentTests = append(incidentTests, test{"Incident/PackageDetectorsServed", func(f *fx) {
		// Incident/PackageDetectorsServed: a package a node serves by its roles (Served, by node ID) is
		// critical on that node alone, with no pattern naming it: its fix waiting in a report a day old
		// and in the newest opens plane:critical_fix_waiting there, saying it is served, and not on a
		// node waiting for the same fix that does not serve it, nor on a serving node that sees the fix
		// only now. With no pattern and nothing served, the detector is not judged.
		vocab := []store.WordRef{{Name: "packages_report", Version: "1.0.0", Digest: digest([]byte("pr")), Class: "look"}}
		web := NodeWords(f, f.s, "web-node", "1.0.0", f.at(0), vocab)
		plain := NodeWords(f, f.s, "plain-node", "1.0.0", f.at(0), vocab)
		fresh := NodeWords(f, f.s, "fresh-node", "1.0.0", f.at(0), vocab)
		waiting := json.RawMessage(`{"security_upgrades":[{"name":"nginx"},{"name":"curl"}],"stale_services":[]}`)
		for _, n := range []store.Node{web, plain} {
			Completed(f, f.s, n.ID, "packages_report", waiting, f.at(time.Hour))
			Completed(f, f.s, n.ID, "packages_report", waiting, f.at(30*time.Hour))
		}
		Completed(f, f.s, fresh.ID, "packages_report", json.RawMessage(`{"security_upgrades":[],"stale_services":[]}`), f.at(time.Hour))
		Completed(f, f.s, fresh.ID, "packages_report", waiting, f.at(30*time.Hour))
		opened := func(p store.IncidentReconcileParams) map[string]string {
			f.Helper()
			res, err := f.s.IncidentReconcile(f.ctx, p)
			noErr(f, err, "IncidentReconcile")
			out := map[string]string{}
			for _, c := range res.Changes {
				if c.Incident.Source == store.DetectorCriticalFixWaiting && c.Event.Kind != store.EventCleared {
					out[c.Incident.NodeID] = c.Incident.Summary
				}
			}
			return out
		}
		p := store.IncidentReconcileParams{Now: f.at(31 * time.Hour), Up: f.at(0), Packages: store.PackageThresholds{FixAge: 24 * time.Hour}}
		if got := opened(p); len(got) != 0 {
			f.Fatalf("nothing critical, nothing served: opened %v", got)
		}
		p.Now = f.at(31*time.Hour + time.Minute)
		p.Packages.Served = map[string][]string{web.ID: {"nginx"}, fresh.ID: {"nginx"}}
		got := opened(p)
		if len(got) != 1 || !strings.Contains(got[web.ID], "nginx (served by the node's roles)") || strings.Contains(got[web.ID], "curl") {
			f.Fatalf("opened %v, want the serving node %s alone, for nginx", got, web.ID)
		}
	}})
}

func init() {
	rolloutTests = append(rolloutTests, test{"SecuritySettings/SetResetRefuse", func(f *fx) {
		// SecuritySettings/SetResetRefuse: nothing is set on a fresh store; a list set is read back with
		// who set it and when (an empty list too: no package is critical); a reset forgets it; a bad list
		// is refused with security.critical_invalid naming the pattern, and the list in force is kept.
		got, err := f.s.SecuritySettingsGet(f.ctx)
		noErr(f, err, "SecuritySettingsGet")
		if got.Set || got.Critical != nil {
			f.Fatalf("fresh store %+v", got)
		}
		set, err := f.s.SecuritySettingsSet(f.ctx, store.SecuritySettingsSetParams{Critical: []string{"openssl", "lib*fix[0-9]"}, By: "token:alice", Now: f.at(time.Hour)})
		noErr(f, err, "SecuritySettingsSet")
		got, err = f.s.SecuritySettingsGet(f.ctx)
		noErr(f, err, "SecuritySettingsGet")
		if !got.Set || !slices.Equal(got.Critical, []string{"openssl", "lib*fix[0-9]"}) || got.UpdatedBy != "token:alice" ||
			!got.UpdatedAt.Equal(f.at(time.Hour)) || !got.UpdatedAt.Equal(set.UpdatedAt) {
			f.Fatalf("after set %+v", got)
		}
		for i, bad := range [][]string{{"openssl", ""}, {"Openssl"}, {"a b"}, {"lib[ssl"}, {"sudo", "sudo"}, slices.Repeat([]string{"x"}, store.MaxCriticalPatterns+1)} {
			_, err := f.s.SecuritySettingsSet(f.ctx, store.SecuritySettingsSetParams{Critical: bad, By: "token:mallory"})
			testkit.WantCode(f, err, errcode.SecurityCriticalInvalid)
			var e *errcode.Error
			if i < 3 && (!errors.As(err, &e) || e.Details[errcode.DetailIndex] == nil) {
				f.Fatalf("%q: no index in %v", bad, err)
			}
		}
		got, err = f.s.SecuritySettingsGet(f.ctx)
		noErr(f, err, "SecuritySettingsGet")
		if got.UpdatedBy != "token:alice" || len(got.Critical) != 2 {
			f.Fatalf("a refused set changed the list: %+v", got)
		}
		_, err = f.s.SecuritySettingsSet(f.ctx, store.SecuritySettingsSetParams{Critical: []string{}, By: "token:bob", Now: f.at(2 * time.Hour)})
		noErr(f, err, "SecuritySettingsSet empty")
		got, err = f.s.SecuritySettingsGet(f.ctx)
		noErr(f, err, "SecuritySettingsGet")
		if !got.Set || got.Critical == nil || len(got.Critical) != 0 || got.UpdatedBy != "token:bob" {
			f.Fatalf("after an empty set %+v", got)
		}
		_, err = f.s.SecuritySettingsSet(f.ctx, store.SecuritySettingsSetParams{Reset: true, By: "token:bob"})
		noErr(f, err, "SecuritySettingsSet reset")
		got, err = f.s.SecuritySettingsGet(f.ctx)
		noErr(f, err, "SecuritySettingsGet")
		if got.Set {
			f.Fatalf("after a reset %+v", got)
		}
	}})
}
