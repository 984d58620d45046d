package ui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// TestNodePageShowsFactsAndRecipes: the host facts a node reported are on its page with when the agent
// read them and the last report, and its recipes are a table, not JSON; a node that reported no facts
// says so.
func TestNodePageShowsFactsAndRecipes(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	now := time.Now().UTC().Truncate(time.Second)
	fleet := storetest.Fleet(t, p.store, "node", 2, now)
	recipes, _ := json.Marshal([]map[string]any{{"name": "disk_full", "version": "1.0.0", "state": "active", "last_verdict": "ok",
		"last_check_at": now, "detail": "<b>92% used</b>"}})
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: fleet[0].ID, Now: now, AgentVersion: "0.3.0", Idle: true,
		Recipes: recipes, Facts: store.NodeFacts{CollectedAt: now, OS: "debian-12", OSName: "Debian GNU/Linux 12 (bookworm)",
			Kernel: "6.1.0-28-amd64", Arch: "x86_64", CPUs: 4, CPUModel: "Test CPU", MemoryBytes: 8 << 30, MemoryFreeBytes: 3 << 30,
			DiskBytes: 100 << 30, DiskFreeBytes: 40 << 30, BootedAt: now.Add(-50 * time.Hour), Addresses: []string{"192.0.2.10"}}}); err != nil {
		t.Fatal(err)
	}
	b := p.browser()
	b.signIn(viewer)
	page := b.get("/ui/nodes/"+fleet[0].ID, http.StatusOK)
	for _, want := range []string{
		`id="fact-os">Debian GNU/Linux 12 (bookworm)`, `<code>os=debian-12</code>`, `id="fact-kernel">6.1.0-28-amd64 (x86_64)`,
		`id="fact-cpu">4 × Test CPU`, `id="fact-memory">8.0 GiB, 3.0 GiB available`, `id="fact-disk">100.0 GiB, 40.0 GiB free`,
		`id="fact-uptime">2d 2h`, `<code>192.0.2.10</code>`, `id="facts-at">` + now.Format("2006-01-02 15:04:05Z"),
		`<table class="list" id="recipes">`, `<td>active</td><td>ok</td>`, `&lt;b&gt;92% used&lt;/b&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("the node page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, `<pre class="json">[`) {
		t.Fatal("the recipes are shown as JSON")
	}
	other := b.get("/ui/nodes/"+fleet[1].ID, http.StatusOK)
	if !strings.Contains(other, `<p id="facts">No facts reported`) {
		t.Fatalf("a node with no facts:\n%s", other)
	}
}

// TestNodesListSearchSortPage: the node list has column headers that sort, a where and a search field
// whose filters its pages keep, and shows each node's OS; a bad filter is node.filter_invalid.
func TestNodesListSearchSortPage(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	now := time.Now()
	fleet := storetest.Fleet(t, p.store, "node", 60, now)
	for i, n := range fleet {
		os := "debian-12"
		if i%2 == 1 {
			os = "ubuntu-24.04"
		}
		if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: n.ID, Now: now, Idle: true,
			Facts: store.NodeFacts{CollectedAt: now, OS: os}}); err != nil {
			t.Fatal(err)
		}
	}
	b := p.browser()
	b.signIn(viewer)
	page := b.get("/ui/nodes?where=fact.os%3Ddebian-12&sort=name", http.StatusOK)
	for _, want := range []string{`<th scope="col"><a href="/ui/nodes?sort=-name&amp;where=fact.os%3Ddebian-12">Name</a></th>`,
		`name="where" value="fact.os=debian-12"`, `<td>debian-12</td>`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the node list lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "ubuntu-24.04") {
		t.Fatal("the where filter let an ubuntu node through")
	}
	next := regexp.MustCompile(`id="next" href="/ui/nodes\?([^"]+)"`).FindStringSubmatch(b.get("/ui/nodes?q=os%3Dubuntu-24.04&limit=5", http.StatusOK))
	if next != nil {
		t.Fatalf("30 ubuntu nodes fit one page of 50, yet a next page: %v", next)
	}
	page = b.get("/ui/nodes?q=node", http.StatusOK)
	next = regexp.MustCompile(`id="next" href="/ui/nodes\?([^"]+)"`).FindStringSubmatch(page)
	if next == nil || !strings.Contains(next[1], "q=node") || !strings.Contains(next[1], "cursor=at") {
		t.Fatalf("the next page of a search: %v", next)
	}
	rows := regexp.MustCompile(`<tr><td><a href="/ui/nodes/`)
	if got := len(rows.FindAllString(b.get("/ui/nodes?"+strings.ReplaceAll(next[1], "&amp;", "&"), http.StatusOK), -1)); got != 10 {
		t.Fatalf("the second page of the search: %d rows, want 10", got)
	}
	if body := b.get("/ui/nodes?where=fact.nosuch%3D1", http.StatusBadRequest); !strings.Contains(body, "node.filter_invalid") {
		t.Fatalf("a bad where: %s", body)
	}
}

// TestNodeSilentSinceUpdate: a node whose target pins another agent and that has not reported since
// is "silent since its update" on its page and the list, not its stale "current".
func TestNodeSilentSinceUpdate(t *testing.T) {
	p := newTrusted(t)
	viewer, _ := p.token(store.RoleViewer)
	admin, _ := p.token(store.RoleAdmin)
	n := storetest.Node(t, p.store, "web-9", "0.0.1", time.Now())
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: n.ID, Now: time.Now().Add(-time.Hour), AgentVersion: "0.0.1",
		Idle: true, Update: store.NodeUpdate{State: "current"}}); err != nil {
		t.Fatal(err)
	}
	a := p.browser()
	a.signIn(admin)
	a.get("/ui/releases", http.StatusOK)
	a.upload(releaseTarWithAgent(t, p.pub, 1, map[string]string{"probe": "v1"}), a.csrf, http.StatusCreated)
	b := p.browser()
	b.signIn(viewer)
	page := b.get("/ui/nodes/"+n.ID, http.StatusOK)
	if !strings.Contains(page, `id="updating">silent since its update to`) {
		t.Fatalf("the node page does not say silent since its update:\n%s", page)
	}
	if list := b.get("/ui/nodes", http.StatusOK); !strings.Contains(list, "silent since update to") {
		t.Fatalf("the list does not say silent since update:\n%s", list)
	}
}

// TestRolloutStepNamesUpdatePhase: a release rollout's step under way on a node that runs the release's
// agent on trial says so on its row, beside the step's phase.
func TestRolloutStepNamesUpdatePhase(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	n := storetest.Node(t, p.store, "web-8", "0.0.1", time.Now())
	a := p.browser()
	a.signIn(admin)
	a.get("/ui/releases", http.StatusOK)
	a.upload(releaseTarWithAgent(t, p.pub, 1, map[string]string{"probe": "v1"}), a.csrf, http.StatusCreated)
	res, _ := a.do(http.MethodPost, "/ui/rollouts", url.Values{"csrf": {a.csrf}, "release": {"1"}, "selector": {"web-8"}})
	m := rolloutLoc.FindStringSubmatch(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("starting a rollout: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	// The step starts as the engine starts it; this plane runs no engine.
	if _, err := p.store.RolloutStepUpdate(t.Context(), store.RolloutStepUpdateParams{RolloutID: m[1], NodeID: n.ID,
		FromState: store.StepPending, State: store.StepRunning, Phase: store.PhaseChange, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: n.ID, Now: time.Now(), AgentVersion: "1.1.0",
		Idle: true, Update: store.NodeUpdate{State: "trial", Offered: "1.1.0"}}); err != nil {
		t.Fatal(err)
	}
	page := a.get("/ui/rollouts/"+m[1], http.StatusOK)
	if !strings.Contains(page, `<small class="update-phase">on trial with agent 1.1.0</small>`) {
		t.Fatalf("the step row does not name the trial:\n%s", page)
	}
}

// TestWordReachOnNodeAndRunForm: the reach a node reported for a word, as its policy narrows it, is on
// the node page beside the word and on the run form once the word is chosen; a denial and a refused
// class are drawn as errors; a word the node reported no reach for says so.
func TestWordReachOnNodeAndRunForm(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	b.get("/ui/releases", http.StatusOK)
	b.upload(releaseTar(t, p.pub, 1, map[string]string{"probe": "v1", "other": "o1"}), b.csrf, http.StatusCreated)
	now := time.Now().UTC().Truncate(time.Second)
	fleet := storetest.Fleet(t, p.store, "node", 1, now)
	probe := cas.Sum([]byte("\x00asm\x01\x00\x00\x00v1"))
	other := cas.Sum([]byte("\x00asm\x01\x00\x00\x00o1"))
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: fleet[0].ID, Now: now, AgentVersion: "0.3.0", Idle: true,
		Vocabulary: []store.WordRef{{Name: "other", Version: "1.0.0", Digest: other, Class: "look"}, {Name: "probe", Version: "1.0.0", Digest: probe, Class: "look"}},
		Reach: []store.WordReach{{Word: "probe", Digest: probe, Refused: "this node's policy does not accept <look> words", Caps: []channel.CapReach{
			{Cap: "fs.install", Roots: []string{"/etc/nginx"}, Narrowed: true, Note: "never beneath the agent's own folders /etc/lexicon"},
			{Cap: "nft.apply", Narrowed: true, Denied: "no converge.firewall"}}}}}); err != nil {
		t.Fatal(err)
	}
	node := b.get("/ui/nodes/"+fleet[0].ID, http.StatusOK)
	for _, want := range []string{`id="reach-probe"><summary>refused</summary>`, `Refused on this node: this node&#39;s policy does not accept &lt;look&gt; words`,
		`roots <code>/etc/nginx</code> <small>(narrowed by the node's policy)</small>`, `<span class="error">denied: no converge.firewall</span>`,
		`id="reach-other"><summary>not reported</summary>`} {
		if !strings.Contains(node, want) {
			t.Fatalf("the node page lacks %s:\n%s", want, node)
		}
	}
	form := b.get("/ui/run?node="+fleet[0].ID+"&word=probe", http.StatusOK)
	i := strings.Index(form, `<div id="node-reach">`)
	if i < 0 || !strings.Contains(form[i:], `roots <code>/etc/nginx</code>`) || !strings.Contains(form[i:], `denied: no converge.firewall`) {
		t.Fatalf("the run form lacks the node's reach:\n%s", form)
	}
	if form := b.get("/ui/run?node="+fleet[0].ID+"&word=other", http.StatusOK); !strings.Contains(form, `class="node-reach-none"`) {
		t.Fatalf("the run form of a word with no reported reach:\n%s", form)
	}
}
