package ui_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// destructive are the form actions that cannot be taken back; each sits behind a confirmation.
var destructive = regexp.MustCompile(`action="[^"]*/(revoke|remove|disable|abort|revert|reject|delete|unassign)(\?[^"]*)?"`)

// TestDestructiveActionsAskFirst: every form of a destructive action is either inside the "confirm"
// second step (a panel opened by a first button, saying what will happen) or, as cloud delete, makes
// the admin type the instance's label back. Checked over every template, so a new one cannot skip it.
func TestDestructiveActionsAskFirst(t *testing.T) {
	files, err := filepath.Glob("templates/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v %v", files, err)
	}
	// Inside an open confirm panel: its <details> comes after the last one closed.
	confirmed := func(before string) bool {
		return strings.LastIndex(before, `<details class="confirm">`) > strings.LastIndex(before, "</details>")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if filepath.Base(f) == "partials.html" {
			continue // the confirm template itself
		}
		for _, loc := range destructive.FindAllStringIndex(s, -1) {
			before, form := s[:loc[0]], s[loc[0]:]
			if end := strings.Index(form, "</form>"); end > 0 {
				form = form[:end]
			}
			if !confirmed(before) && !strings.Contains(form, `name="confirm" required`) {
				t.Errorf("%s: %s is not behind a confirmation", f, s[loc[0]:loc[1]])
			}
		}
		if strings.Contains(s, `{{template "confirm"`) && !strings.Contains(s, "(ask ") {
			t.Errorf("%s: the confirm template without ask", f)
		}
	}
	// Rendered: revoking one's own token says it signs you out; another's does not.
	p := newPlane(t)
	admin, me := p.token(store.RoleAdmin)
	_, other := p.token(store.RoleOperator)
	p.pending("box-1")
	b := p.browser()
	b.signIn(admin)
	page := b.get("/ui/tokens", http.StatusOK)
	for _, tok := range []store.Token{me, other} {
		re := regexp.MustCompile(`<details class="confirm"><summary class="danger revoke">Revoke…</summary><form method="post" action="/ui/tokens/` +
			regexp.QuoteMeta(tok.ID) + `/revoke">.*?<p>([^<]*)</p><button type="submit" class="danger revoke-confirm">Revoke ` + regexp.QuoteMeta(tok.Name) + `</button>`)
		m := re.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s's revoke is not behind a confirmation:\n%s", tok.Name, page)
		}
		if own := strings.Contains(m[1], "signs you out"); own != (tok.ID == me.ID) {
			t.Errorf("%s's warning %q", tok.Name, m[1])
		}
	}
	if joins := b.get("/ui/joins", http.StatusOK); !strings.Contains(joins, `<summary class="danger reject">Reject…</summary>`) {
		t.Fatalf("reject is not behind a confirmation:\n%s", joins)
	}
}

// TestPlaneIncidentPage: an incident the plane raised (a halted rollout) has no node; its page names
// what it is about instead of "on" and nothing, hides the node row, links the rollout that raised it,
// and the triage menu makes the operator choose rather than defaulting to resolved.
func TestPlaneIncidentPage(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	now := time.Now()
	n := storetest.Node(t, p.store, "web-1", "0.1.0", now)
	ro, err := p.store.RolloutCreate(t.Context(), store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Selector: "all",
		Stages: []string{"all"}, Steps: []store.RolloutStepNew{{NodeID: n.ID, NodeName: n.Name}}, By: "ui-admin", Now: now})
	must(t, err)
	_, err = p.store.RolloutMiss(t.Context(), store.RolloutMissParams{ID: ro.ID, NodeID: n.ID, NodeName: n.Name, Reason: "preflight failed", Now: now})
	must(t, err)
	res, err := p.store.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: now.Add(time.Second)})
	must(t, err)
	var id string
	for _, c := range res.Changes {
		if c.Incident.Source == store.DetectorRolloutHalted {
			id = c.Incident.ID
		}
	}
	if id == "" {
		t.Fatalf("no rollout_halted incident: %+v", res.Changes)
	}
	b := p.browser()
	b.signIn(admin)
	page := b.get("/ui/incidents/"+id, http.StatusOK)
	if !strings.Contains(page, "<h1>Incident plane:rollout_halted: "+ro.ID+"</h1>") {
		t.Errorf("the title:\n%s", page)
	}
	if strings.Contains(page, "<th>Node</th>") {
		t.Errorf("an empty node row:\n%s", page)
	}
	if !strings.Contains(page, `<td id="raised-by"><a href="/ui/rollouts/`+ro.ID+`">`+ro.ID+`</a>`) {
		t.Errorf("no link to the rollout that raised it:\n%s", page)
	}
	if !regexp.MustCompile(`(?s)<select name="triage" id="triage-select" required>\s*<option value="" selected disabled>`).MatchString(page) ||
		regexp.MustCompile(`<option value="resolved"[^>]*selected`).MatchString(page) {
		t.Errorf("the triage menu chooses for the operator:\n%s", page)
	}
	if list := b.get("/ui/incidents", http.StatusOK); !strings.Contains(list, "<td>the plane</td>") {
		t.Errorf("the list's node cell of a plane incident:\n%s", list)
	}
	// Nothing chosen is refused by the plane, not taken as a triage.
	body := b.post("/ui/incidents/"+id+"/triage", nil, http.StatusBadRequest)
	if !strings.Contains(body, `id="change-error"`) {
		t.Errorf("a triage of nothing:\n%s", body)
	}
}

// TestRolloutJobsPages: the steps table counts stages from 1, as the stages list does; a rollout's
// job names its rollout (linked) and phase, not the engine's attempt stamp; a claimed job offers
// Mark failed but not Cancel, which only a queued job takes.
func TestRolloutJobsPages(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	now := time.Now()
	n := storetest.Node(t, p.store, "web-1", "0.1.0", now)
	ro, err := p.store.RolloutCreate(t.Context(), store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Selector: "all",
		Stages: []string{"all"}, Steps: []store.RolloutStepNew{{NodeID: n.ID, NodeName: n.Name}}, By: "ui-admin", Now: now})
	must(t, err)
	tag := "ui-admin via rollout " + ro.ID + " (change, attempt 1796308486594755)"
	job, err := p.store.JobCreate(t.Context(), store.JobCreateParams{NodeID: n.ID, Word: "w", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: tag, Now: now})
	must(t, err)
	queued, err := p.store.JobCreate(t.Context(), store.JobCreateParams{NodeID: n.ID, Word: "w", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "ui-admin", Now: now.Add(time.Second)})
	must(t, err)
	claimed, err := p.store.JobClaim(t.Context(), store.JobClaimParams{NodeID: n.ID, Now: now.Add(2 * time.Second)})
	must(t, err)
	if claimed == nil || claimed.ID != job.ID {
		t.Fatalf("claimed %+v, want %s", claimed, job.ID)
	}
	b := p.browser()
	b.signIn(admin)
	for _, path := range []string{"/ui/jobs", "/ui/jobs/" + job.ID, "/ui/nodes/" + n.ID} {
		page := b.get(path, http.StatusOK)
		if strings.Contains(page, "attempt") || !strings.Contains(page, `ui-admin via rollout <a href="/ui/rollouts/`+ro.ID+`">`+ro.ID+`</a> (change)`) {
			t.Errorf("%s names the rollout's job's creator as:\n%s", path, page)
		}
	}
	running := b.get("/ui/jobs/"+job.ID, http.StatusOK)
	if strings.Contains(running, `id="cancel"`) || !strings.Contains(running, `id="mark-failed"`) {
		t.Errorf("a running job's moves:\n%s", running)
	}
	if q := b.get("/ui/jobs/"+queued.ID, http.StatusOK); !strings.Contains(q, `id="cancel"`) {
		t.Errorf("a queued job offers no Cancel:\n%s", q)
	}
	steps := b.get("/ui/rollouts/"+ro.ID, http.StatusOK)
	if !regexp.MustCompile(`<tbody>\s*<tr><td>1</td><td><a href="/ui/nodes/` + regexp.QuoteMeta(n.ID) + `">`).MatchString(steps) {
		t.Errorf("the steps table's first stage is not 1:\n%s", steps)
	}
}

// TestRunPageRefusesViewer: the run form is refused to a viewer, as its menu entry is hidden; an
// operator gets it.
func TestRunPageRefusesViewer(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	operator, _ := p.token(store.RoleOperator)
	v := p.browser()
	v.signIn(viewer)
	if body := v.get("/ui/run", http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer's run page:\n%s", body)
	}
	o := p.browser()
	o.signIn(operator)
	o.get("/ui/run", http.StatusOK)
}

// TestRequiredFieldsNotErrorsBeforeTyping: the stylesheet marks a field invalid only once the user
// changed it (:user-invalid), so an empty required field is not drawn as an error on a fresh form.
func TestRequiredFieldsNotErrorsBeforeTyping(t *testing.T) {
	css, err := os.ReadFile("static/ui.css")
	must(t, err)
	if m := regexp.MustCompile(`(^|[^-])(:invalid)`).FindString(string(css)); m != "" {
		t.Fatalf("ui.css styles :invalid (%q), which is true of an untouched empty required field", m)
	}
	if !strings.Contains(string(css), ":user-invalid") {
		t.Fatal("ui.css does not mark fields the user made invalid")
	}
}

// TestOverviewNamesTargetRelease: the overview names the fleet's target release, not the newest one
// published: release 2, published without a rollout, moves no node and is not the target.
func TestOverviewNamesTargetRelease(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	if over := b.get("/ui/", http.StatusOK); !strings.Contains(over, `<td id="target-release">none published</td>`) {
		t.Fatalf("the overview before any release:\n%s", over)
	}
	b.get("/ui/releases", http.StatusOK)
	b.upload(releaseTar(t, p.pub, 1, map[string]string{"probe": "v1"}), b.csrf, http.StatusCreated)
	b.get("/ui/releases", http.StatusOK)
	b.upload(releaseTar(t, p.pub, 2, map[string]string{"probe": "v2"}), b.csrf, http.StatusCreated)
	over := b.get("/ui/", http.StatusOK)
	if !regexp.MustCompile(`<td id="target-release"><a href="/ui/releases/1">[^<]+</a> \(sequence 1,`).MatchString(over) {
		t.Fatalf("the overview's release after publishing 2 without a rollout:\n%s", over)
	}
}

// TestStaticCachedAndCompressed: pages and static files are gzipped for a browser that takes gzip;
// each page links its stylesheet, script and favicon by fingerprint, which a browser may keep for a
// year; the same file asked for without its fingerprint (or with an old one) is checked every time.
func TestStaticCachedAndCompressed(t *testing.T) {
	p := newPlane(t)
	c := p.ts.Client()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, p.ts.URL+path, nil)
		must(t, err)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := c.Do(req)
		must(t, err)
		defer res.Body.Close()
		var r io.Reader = res.Body
		if res.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(res.Body)
			must(t, err)
			r = zr
		}
		data, err := io.ReadAll(r)
		must(t, err)
		return res, string(data)
	}
	res, page := get("/ui/signin")
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("the sign-in page is not gzipped: %v", res.Header)
	}
	links := regexp.MustCompile(`(?:href|src)="(/ui/static/([a-z.]+)\?v=[0-9a-f]{16})"`).FindAllStringSubmatch(page, -1)
	names := map[string]string{}
	for _, l := range links {
		names[l[2]] = l[1]
	}
	if len(names) != 3 || names["favicon.svg"] == "" || !strings.Contains(page, `<link rel="icon" href="`+names["favicon.svg"]+`" type="image/svg+xml">`) {
		t.Fatalf("the page's static links %v:\n%s", names, page)
	}
	for name, link := range names {
		res, body := get(link)
		if res.StatusCode != http.StatusOK || body == "" || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s: %d, Cache-Control %q", link, res.StatusCode, res.Header.Get("Cache-Control"))
		}
		if name != "favicon.svg" && res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s is not gzipped", link)
		}
		for _, stale := range []string{"/ui/static/" + name, "/ui/static/" + name + "?v=0123456789abcdef"} {
			if res, _ := get(stale); res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("%s: %d, Cache-Control %q", stale, res.StatusCode, res.Header.Get("Cache-Control"))
			}
		}
	}
	if res, _ := get(names["favicon.svg"]); res.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("the favicon's type %q", res.Header.Get("Content-Type"))
	}
}
