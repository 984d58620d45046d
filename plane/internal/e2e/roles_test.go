package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// stageConverge stages the converge word with its file capabilities narrowed to dir, as a site's
// derived release would narrow them: the agent here runs on this machine, not in an instance of its
// own, so nothing it writes may land outside the test's folder whatever the role says.
func stageConverge(t *testing.T, modules, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "primitives", "converge", "manifest.json"))
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	for _, c := range m["capabilities"].([]any) {
		c := c.(map[string]any)
		switch c["cap"] {
		case "fs.digest", "fs.diff", "fs.install":
			c["paths"] = []string{dir}
		}
	}
	raw, err = json.Marshal(m)
	must(t, err)
	stage(t, modules, "converge", raw, filepath.Join(root, "build", "wasm", "converge.wasm"), "converge.wasm")
}

// convergeOut is the part of the converge word's output the test reads.
type convergeOut struct {
	Mode    string `json:"mode"`
	Result  string `json:"result"`
	Fetched int    `json:"fetched"`
	Items   []struct {
		ID, Status, Code, Diff string
	} `json:"items"`
	Counts struct{ Unchanged, Changed, Failed, Refused int } `json:"counts"`
}

// runWatch follows a job with jobs watch until it finishes.
func (f *fleet) runWatch(id string) map[string]any {
	f.t.Helper()
	job, status := f.lexiconStatus("jobs", "watch", id)
	f.wantJobStatus(job, status)
	return job
}

// rolloutJobs are the converge jobs of a finished rollout's steps, by node.
func (f *fleet) rolloutJobs(ro map[string]any) map[string]map[string]any {
	f.t.Helper()
	out := map[string]map[string]any{}
	steps, _ := ro["steps"].([]any)
	for _, s := range steps {
		s := s.(map[string]any)
		id, _ := s["job_id"].(string)
		if id == "" {
			continue
		}
		out[fmt.Sprint(s["node_id"])] = f.job(id)
	}
	return out
}

func outputOf(t *testing.T, job map[string]any) convergeOut {
	t.Helper()
	var o convergeOut
	raw, err := json.Marshal(job["output"])
	must(t, err)
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("job %v: output %s: %v", job["id"], raw, err)
	}
	return o
}

// TestRolesOnAgent takes a role from its file to a real agent through the plane: plan reports what
// the node would change, a diff for the file, and changes nothing; apply, a rollout of the converge
// word, writes the file, and the node's footprint shows each item's state from the node's own report;
// a second apply fetches nothing and changes nothing; a file edited by hand shows in the next plan as
// a diff and the next apply repairs it; a path outside the node's policy is refused on the node
// (footprint.refused) with nothing written, and the rollout halts. Then the role pages in Chromium:
// the list, a role, its plan, and an apply that asks for confirmation before it starts.
func TestRolesOnAgent(t *testing.T) {
	// A folder no one but root can swap (testkit.SafeDir): the manifest is narrowed to it, the node's
	// policy to www beneath it, so other/ is the manifest's and not the node's.
	dir := filepath.Join(testkit.SafeDir(t), "machine")
	www, other := filepath.Join(dir, "www"), filepath.Join(dir, "other")
	// The declared root exists, as /etc does on a machine; what lies beneath it converge makes.
	must(t, os.Mkdir(dir, 0o755))
	f := newFleet(t, "sqlite", fleetOptions{stage: func(modules string) { stageConverge(t, modules, dir) }})
	policy := fmt.Sprintf(`{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "converge": {"paths": [%q]}}`, www)
	a := f.enrol("web-1", policy)
	index := filepath.Join(www, "index.html")

	roleFile := func(name string, files map[string]string) string {
		var fs []map[string]any
		for path, content := range files {
			fs = append(fs, map[string]any{"path": path, "content": content, "mode": "0644"})
		}
		b, err := json.Marshal(map[string]any{"name": name, "description": "the e2e web role", "files": fs})
		must(t, err)
		p := filepath.Join(f.dir, name+"-role.json")
		must(t, os.WriteFile(p, b, 0o600))
		return p
	}
	v1 := f.lexicon(false, "roles", "create", roleFile("web", map[string]string{index: "<h1>one</h1>\n"}))
	if v1["version"] != float64(1) || v1["items"] != float64(1) {
		t.Fatalf("roles create: %v", v1)
	}
	if as := f.lexicon(false, "roles", "assign", "web", "web-1"); !strings.Contains(fmt.Sprint(as["nodes"]), "web-1") {
		t.Fatalf("roles assign: %v", as)
	}

	plan := func() convergeOut {
		t.Helper()
		p := f.lexicon(false, "roles", "plan", "web", "--wait")
		res, _ := p["results"].(map[string]any)
		rep, _ := res["web-1"].(map[string]any)
		if rep == nil || rep["state"] != "completed" {
			t.Fatalf("roles plan --wait: %v", p)
		}
		raw, _ := json.Marshal(rep)
		var o convergeOut
		must(t, json.Unmarshal(raw, &o))
		return o
	}
	apply := func(wantStatus int) (map[string]any, convergeOut) {
		t.Helper()
		ro, status := f.lexiconStatus("roles", "apply", "web", "--wait")
		if status != wantStatus {
			t.Fatalf("roles apply --wait: exit %d, want %d: %v", status, wantStatus, ro)
		}
		jobs := f.rolloutJobs(ro)
		j, ok := jobs[a.nodeID]
		if !ok {
			t.Fatalf("the rollout ran no converge on web-1: %v", ro)
		}
		return ro, outputOf(t, j)
	}
	footprintStates := func() map[string]string {
		t.Helper()
		fp := f.lexicon(false, "nodes", "footprint", "web-1")
		out := map[string]string{}
		for _, it := range fp["items"].([]any) {
			it := it.(map[string]any)
			out[it["id"].(string)] = fmt.Sprint(it["state"])
		}
		return out
	}
	fileID := "file:" + index

	// Bad input, through the CLI: a role file that fails its schema is refused naming the field, an
	// assignment whose selector picks no node is refused, and a role no node carries has nothing to
	// plan.
	bad := filepath.Join(f.dir, "bad-role.yaml")
	must(t, os.WriteFile(bad, []byte("name: bad\nfiles:\n  - {path: /etc/x, content: x, mode: banana}\n"), 0o600))
	if got := f.lexicon(true, "roles", "create", bad); got["code"] != "role.invalid" || !strings.Contains(fmt.Sprint(got), "/files/0/mode") {
		t.Errorf("a role file failing its schema: %v", got)
	}
	f.lexicon(false, "roles", "create", roleFile("lonely", map[string]string{filepath.Join(www, "lonely"): "x\n"}))
	if got := f.lexicon(true, "roles", "assign", "lonely", "tier=nowhere"); got["code"] != "role.no_match" {
		t.Errorf("an assignment whose selector picks no node: %v", got)
	}
	if got := f.lexicon(true, "roles", "plan", "lonely"); got["code"] != "role.no_nodes" {
		t.Errorf("a plan of a role no node carries: %v", got)
	}

	// Plan changes nothing.
	{
		o := plan()
		if o.Result != "planned" || len(o.Items) != 1 || o.Items[0].ID != fileID || o.Items[0].Status != "would_change" ||
			!strings.Contains(o.Items[0].Diff, "+<h1>one</h1>") {
			t.Fatalf("plan: %+v", o)
		}
		if _, err := os.Stat(index); !os.IsNotExist(err) {
			t.Fatalf("a plan wrote the file: %v", err)
		}
		if st := footprintStates(); st[fileID] != "would_change" {
			t.Errorf("footprint after the plan: %v", st)
		}
	}

	// Apply converges, the footprint shows it. (The plan already fetched the file's content to diff
	// it, and the node keeps what it fetched by digest, so this apply may fetch nothing either.)
	{
		ro, o := apply(0)
		if ro["state"] != "completed" || o.Result != "converged" || o.Counts.Changed != 1 {
			t.Fatalf("apply: %v %+v", ro["state"], o)
		}
		if b, err := os.ReadFile(index); err != nil || string(b) != "<h1>one</h1>\n" {
			t.Fatalf("the file on the node: %q %v", b, err)
		}
		if st := footprintStates(); st[fileID] != "changed" {
			t.Errorf("footprint after apply: %v", st)
		}
	}

	// Second apply fetches nothing and changes nothing.
	{
		_, o := apply(0)
		if o.Result != "converged" || o.Counts.Unchanged != 1 || o.Counts.Changed != 0 || o.Fetched != 0 {
			t.Fatalf("second apply: %+v", o)
		}
		if st := footprintStates(); st[fileID] != "unchanged" {
			t.Errorf("footprint after the second apply: %v", st)
		}
	}

	// A hand edit shows in the plan and apply repairs it.
	{
		must(t, os.WriteFile(index, []byte("<h1>by hand</h1>\n"), 0o644))
		o := plan()
		if len(o.Items) != 1 || o.Items[0].Status != "would_change" || !strings.Contains(o.Items[0].Diff, "-<h1>by hand</h1>") {
			t.Fatalf("plan after a hand edit: %+v", o)
		}
		_, o = apply(0)
		if o.Counts.Changed != 1 {
			t.Fatalf("apply after a hand edit: %+v", o)
		}
		if b, _ := os.ReadFile(index); string(b) != "<h1>one</h1>\n" {
			t.Fatalf("not repaired: %q", b)
		}
	}

	// A path outside the node's policy is refused.
	{
		outside := filepath.Join(other, "x.conf")
		v2 := f.lexicon(false, "roles", "edit", "web", roleFile("web", map[string]string{index: "<h1>two</h1>\n", outside: "x\n"}), "--base", "1")
		if v2["version"] != float64(2) {
			t.Fatalf("roles edit: %v", v2)
		}
		ro, o := apply(8) // ExitRolloutStopped
		if ro["state"] != "halted" || o.Result != "refused" {
			t.Fatalf("apply of a path outside the policy: %v %+v", ro["state"], o)
		}
		jobs := f.rolloutJobs(ro)
		if code := jobs[a.nodeID]["outcome_code"]; code != "footprint.refused" {
			t.Errorf("the converge's code: %v", code)
		}
		if _, err := os.Stat(outside); !os.IsNotExist(err) {
			t.Errorf("written outside the policy: %v", err)
		}
		// Nothing was touched, the allowed file included.
		if b, _ := os.ReadFile(index); string(b) != "<h1>one</h1>\n" {
			t.Errorf("a refused converge changed another item: %q", b)
		}
		if st := footprintStates(); st["file:"+outside] != "refused" {
			t.Errorf("footprint after the refusal: %v", st)
		}
		// Back to a role the node accepts, for the pages.
		f.lexicon(false, "roles", "edit", "web", roleFile("web", map[string]string{index: "<h1>three</h1>\n"}), "--base", "2")
	}

	// Pages in chromium.
	{
		ctx := chromium(t)
		adminTok, err := os.ReadFile(f.tokenFile)
		must(t, err)
		ui := f.url + "/ui"
		browse(t, ctx, chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(adminTok))),
			chromedp.Click(chromedp.CSS("#signin")),
			chromedp.WaitVisible(chromedp.CSS("#node-states")))
		browse(t, ctx, chromedp.Navigate(ui+"/roles"), chromedp.WaitVisible(chromedp.CSS(`#roles a[href="/ui/roles/web"]`)))
		if row := textOf(t, ctx, "#roles tbody"); !strings.Contains(row, "web") || !strings.Contains(row, "3") {
			t.Fatalf("the roles list: %q", row)
		}
		browse(t, ctx, chromedp.Click(chromedp.CSS(`#roles a[href="/ui/roles/web"]`)), chromedp.WaitVisible(chromedp.CSS("#role-items")))
		if items := textOf(t, ctx, "#role-items"); !strings.Contains(items, fileID) {
			t.Fatalf("the role's items: %q", items)
		}
		// Plan: the page comes back at once; the node's plan job is followed with jobs watch, and the
		// page, loaded again, shows the item's planned state.
		// The form posts and the plane answers with the same page, so the wait is for the new document,
		// not for an element the old one has too: a reload sent while the navigation commits fails.
		browse(t, ctx, chromedp.Evaluate[chromedp.Void](`window.beforePlan = true; null`), chromedp.Click(chromedp.CSS("#role-plan")),
			until(`!window.beforePlan && document.readyState === "complete" && !!document.querySelector("#role-items")`))
		jobs := f.lexicon(false, "jobs", "list", "--node", "web-1", "--limit", "1")["jobs"].([]any)
		planJob := jobs[0].(map[string]any)
		if planJob["word"] != "converge" {
			t.Fatalf("the newest job on web-1 is not the page's plan: %v", planJob)
		}
		f.runWatch(planJob["id"].(string))
		browse(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#role-items")))
		if page := textOf(t, ctx, "main"); !strings.Contains(page, "would_change") {
			t.Fatalf("the role page after its plan: %s", page)
		}
		if b, _ := os.ReadFile(index); string(b) != "<h1>one</h1>\n" {
			t.Fatalf("the plan from the page changed the node: %q", b)
		}
		// Apply asks first: the button behind the summary is hidden until it is opened.
		if value(t, ctx, chromedp.Evaluate[bool](`(() => { const b = document.querySelector("button.role-apply-confirm"); return !!b && !b.closest("details").open && !b.checkVisibility(); })()`)) != true {
			t.Fatal("the apply button shows before the operator asked for it")
		}
		browse(t, ctx, chromedp.Click(chromedp.CSS("summary.role-apply")),
			chromedp.WaitVisible(chromedp.CSS("button.role-apply-confirm")),
			chromedp.Click(chromedp.CSS("button.role-apply-confirm")),
			chromedp.WaitVisible(chromedp.CSS("#rollout-state")))
		loc := value(t, ctx, chromedp.Location())
		id := loc[strings.LastIndex(loc, "/")+1:]
		if ro, status := f.lexiconStatus("rollouts", "show", id, "--wait"); status != 0 || ro["state"] != "completed" {
			t.Fatalf("the rollout the page started: exit %d %v", status, ro)
		}
		browse(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#rollout-state")))
		if st := textOf(t, ctx, "#rollout-state"); st != "completed" {
			t.Errorf("the rollout page: %q", st)
		}
		if b, _ := os.ReadFile(index); string(b) != "<h1>three</h1>\n" {
			t.Fatalf("the apply from the page: %q", b)
		}
	}
}

// TestRolesApplyPlaneKilled kills the plane (SIGKILL, as a crash) at each of its steps of a role
// apply, on a real agent: once the apply's rollout is stored, once the node's converge job is queued
// (its step started), and once the node's result is stored but before the step is judged. Each time
// the plane starts again on the same store, and the apply finishes (the rollout completes, the node
// ran its converge once) or, when the plane died between handing the job out and the node hearing of
// it, is reported: the job lost, the rollout halted naming the node, and a new apply completes. Either
// way the file is on the node, whole, and the node's footprint shows it changed. Each
// kill point has a role of its own (each adds one file to the node's footprint), so the plane's log
// lines of one apply are told from another's.
func TestRolesApplyPlaneKilled(t *testing.T) {
	dir := filepath.Join(testkit.SafeDir(t), "machine")
	must(t, os.Mkdir(dir, 0o755))
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: rolloutServe, claimWait: "2s",
		stage: func(modules string) { stageConverge(t, modules, dir) }})
	a := f.enrol("web-1", fmt.Sprintf(`{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "converge": {"paths": [%q]}}`, dir))
	rolloutRE := regexp.MustCompile(`"msg":"roles apply started","role":"([a-z0-9-]+)","rollout":"(ro_[0-9a-z]+)"`)
	queuedRE := regexp.MustCompile(`"msg":"rollout job queued","rollout":"(ro_[0-9a-z]+)","node":"web-1","phase":"change","job":"(job_[0-9a-z]+)"`)
	find := func(re *regexp.Regexp, key string) []string {
		t.Helper()
		for _, m := range re.FindAllStringSubmatch(f.planeLog.String(), -1) {
			if m[1] == key {
				return m
			}
		}
		t.Fatalf("no %s line for %s in the plane's log", re, key)
		return nil
	}
	for i, point := range []string{"rollout stored", "job queued", "result stored"} {
		role := fmt.Sprintf("kill-%d", i)
		path := filepath.Join(dir, role+".conf")
		content := fmt.Sprintf("# %s: killed at %s\n", role, point)
		b, err := json.Marshal(map[string]any{"name": role, "files": []map[string]any{{"path": path, "content": content}}})
		must(t, err)
		file := filepath.Join(f.dir, role+".json")
		must(t, os.WriteFile(file, b, 0o600))
		f.lexicon(false, "roles", "create", file)
		f.lexicon(false, "roles", "assign", role, "web-1")

		// The apply's CLI runs on its own; the plane may die under it.
		start(t, "lexicon", "roles", "apply", role, "--plane", f.url, "--ca", f.ca, "--token-file", f.tokenFile, "-o", "json")
		f.planeLog.WaitFor(t, `"msg":"roles apply started","role":"`+role+`"`)
		id := find(rolloutRE, role)[2]
		switch point {
		case "job queued":
			f.planeLog.WaitFor(t, `"msg":"rollout job queued","rollout":"`+id+`"`)
		case "result stored":
			f.planeLog.WaitFor(t, `"msg":"rollout job queued","rollout":"`+id+`"`)
			f.planeLog.WaitFor(t, jobLogged("job finished", find(queuedRE, id)[2]))
		}
		f.plane.kill()
		f.listen = strings.TrimPrefix(f.url, "https://") // the agent knows this address
		f.startPlane("2s")

		ro, status := f.waitRollout(id)
		if status != 0 && ro["state"] == "halted" && ro["halt_node"] == "web-1" && strings.Contains(fmt.Sprint(ro["halt_reason"]), "job.lost") {
			// The plane died after handing the job out and before the node had the answer: a job is
			// handed out at most once, so the node, claiming idle, has it counted lost, and the
			// rollout halts naming the node and why. Nothing ran; the apply is run again.
			t.Logf("killed at %s: the apply was reported halted: %v", point, ro["halt_reason"])
			f.oneJobEach(ro, id)
			ro, status = f.lexiconStatus("roles", "apply", role, "--wait")
			id, _ = ro["id"].(string)
		}
		if status != 0 || ro["state"] != "completed" {
			t.Fatalf("killed at %s: the apply after the restart: exit status %d, %v", point, status, ro)
		}
		f.oneJobEach(ro, id)
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("killed at %s: the file on the node: %q %v", point, got, err)
		}
		fp := f.lexicon(false, "nodes", "footprint", a.nodeID)
		for _, it := range fp["items"].([]any) {
			it := it.(map[string]any)
			if it["id"] == "file:"+path && it["state"] != "changed" {
				t.Errorf("killed at %s: the footprint shows %v", point, it)
			}
		}
		if jobs := f.rolloutJobs(ro); outputOf(t, jobs[a.nodeID]).Result != "converged" {
			t.Errorf("killed at %s: the converge: %v", point, jobs[a.nodeID])
		}
	}
}
