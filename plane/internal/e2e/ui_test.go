package e2e_test

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
)

// chromium starts a headless Chromium for one test and returns a context driving a tab of it. Debian's
// chromium is installed by .ci/run; without it the test fails under CI=true and is skipped elsewhere.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// The plane's certificate is its own CA's, which this throwaway profile does not hold; the
		// browser only ever talks to the plane on loopback.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	opts = append(opts, browserNetwork(t)...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// The first run starts the browser, which lives as long as that run's context: it gets no
	// timeout. Every later step is bounded by the test's own deadline (less a margin to report in), so
	// a page that never shows what a step waits for fails the test rather than hanging it, and a slow,
	// shared machine is not mistaken for a broken page.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Minute)
	}
	tctx, cancelTime := context.WithDeadline(ctx, deadline.Add(-time.Minute))
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	return tctx
}

// chromiumPath finds the browser: LEXICON_CHROMIUM, else Debian's chromium on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("LEXICON_CHROMIUM"); path != "" {
		return path
	}
	for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if found, err := exec.LookPath(p); err == nil {
			return found
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required in CI (.ci/run installs it)")
	}
	t.Skip("no chromium on this machine; CI=true makes this a failure")
	return ""
}

// shots saves a full-page screenshot of what the browser shows as name.png when LEXICON_UI_SHOTS
// names a folder (make ui-shots).
type shots struct {
	t   *testing.T
	dir string
}

// take also checks the page at a phone's width (390 px), always: nothing is wider than the screen
// but what scrolls inside itself, and the header's links all lie on the header's dark ground (a
// header that did not wrap drew half of them light on the light page). The phone's screenshot is
// name-390.png.
func (s shots) take(ctx context.Context, name string) {
	s.t.Helper()
	shoot := func(file string) {
		s.t.Helper()
		if s.dir == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		must(s.t, err)
		must(s.t, os.WriteFile(filepath.Join(s.dir, file+".png"), png, 0o644))
	}
	shoot(name)
	must(s.t, chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateMobile)))
	defer func() { must(s.t, chromedp.Do(ctx, chromedp.ResetViewport())) }()
	// Compared with the screen's width, not innerWidth: a mobile browser widens its layout viewport to
	// content that overflows.
	fit := value(s.t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
		const wide = document.documentElement.scrollWidth;
		if (wide > %d) return "the page is " + wide + " px wide";
		const h = document.querySelector("header.top").getBoundingClientRect();
		for (const a of document.querySelectorAll("header.top a, header.top button")) {
			const r = a.getBoundingClientRect();
			if (r.left < h.left || r.right > h.right || r.top < h.top || r.bottom > h.bottom) return a.textContent + " lies outside the header";
		}
		return "";
	})()`, phoneWidth)))
	if fit != "" {
		s.t.Errorf("%s at %d px: %s", name, phoneWidth, fit)
	}
	shoot(name + "-390")
}

// phoneWidth is the narrowest screen the UI is made for (an iPhone 12 to 15's CSS pixels).
const phoneWidth = 390

// browse runs steps in the browser, failing the test at the first that fails.
func browse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for _, step := range steps {
		if err := chromedp.Do(ctx, step); err != nil {
			t.Fatal(err)
		}
	}
}

// value runs one action and returns its value.
func value[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// textOf reads an element's text.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

// setValue sets a form field's value as a person clearing it and typing would leave it.
func setValue(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = %q; null`, sel, v))
}

// until waits for a JavaScript condition on the page to hold. A form's submission replaces the page
// while the condition is polled; the poll then starts again on the new page.
func until(cond string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(100*time.Millisecond))
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for {
			v, err := poll(ctx, tg)
			if err != nil && ctx.Err() == nil && (strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "context was destroyed") || strings.Contains(err.Error(), "Cannot find context")) {
				continue
			}
			return v, err
		}
	}
}

// TestWebUI drives the admin UI in headless Chromium against a real plane and a real agent: sign in,
// approve a join by its fingerprint (a wrong one refused on the page), run disk_usage through the form
// made from its schema (an invalid value refused next to its field, by the browser and by the plane),
// watch the job's output arrive, triage an incident, sign out; then a viewer finds nothing to change
// and a crafted POST of theirs is refused.
func TestWebUI(t *testing.T) {
	ctx := chromium(t)
	sh := shots{t: t, dir: os.Getenv("LEXICON_UI_SHOTS")}
	if sh.dir != "" {
		must(t, os.MkdirAll(sh.dir, 0o755))
	}
	f := newFleet(t, "sqlite", fleetOptions{})
	adminTok, err := os.ReadFile(f.tokenFile)
	must(t, err)
	viewerTok := runJSON(t, false, "lexicon-plane", "token", "create", "--role", "viewer", "--name", "e2e-viewer", "--data", f.planeData, "--db", f.store)["token"].(string)
	a := f.newAgent("web-1", acceptLookAndChange)
	a.join()
	ui := f.url + "/ui"

	// Sign in.
	browse(t, ctx, chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	sh.take(ctx, "signin")
	browse(t, ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(adminTok))),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#node-states")))
	if who := textOf(t, ctx, "#who"); !strings.Contains(who, "e2e-admin (admin)") {
		t.Fatalf("signed in as %q", who)
	}

	// Approve the join: a wrong fingerprint is refused on the page, the one the machine shows is taken.
	row := `[id="join-` + a.joinID + `"]`
	browse(t, ctx, chromedp.Navigate(ui+"/joins"), chromedp.WaitVisible(chromedp.CSS(row)))
	wrong := a.fingerprint[:len(a.fingerprint)-1] + "x"
	if strings.HasSuffix(a.fingerprint, "x") {
		wrong = a.fingerprint[:len(a.fingerprint)-1] + "y"
	}
	browse(t, ctx,
		chromedp.SendKeys(chromedp.CSS(row+` input[name="fingerprint"]`), wrong),
		chromedp.Click(chromedp.CSS(row+` button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(row+` .field-error`)))
	if msg := textOf(t, ctx, row+` .field-error`); !strings.Contains(msg, "join.fingerprint_mismatch") {
		t.Fatalf("a wrong fingerprint: %q", msg)
	}
	sh.take(ctx, "joins")
	browse(t, ctx,
		setValue(row+` input[name="fingerprint"]`, ""),
		chromedp.SendKeys(chromedp.CSS(row+` input[name="fingerprint"]`), a.fingerprint),
		chromedp.Click(chromedp.CSS(row+` button.approve`)),
		chromedp.WaitVisible(chromedp.CSS("#approved")))
	st := runJSON(t, false, "lexicon-agent", append([]string{"status"}, a.dirs()...)...)
	if st["status"] != "approved" {
		t.Fatalf("agent status after approval in the UI: %v", st)
	}
	a.nodeID = st["node_id"].(string)
	a.start()

	// Nodes and the node's page.
	browse(t, ctx, chromedp.Navigate(ui+"/nodes"), chromedp.WaitVisible(chromedp.CSS("#nodes")))
	sh.take(ctx, "nodes")
	browse(t, ctx, chromedp.Navigate(ui+"/nodes/"+a.nodeID), chromedp.WaitVisible(chromedp.CSS("#vocabulary")))
	if v := textOf(t, ctx, "#vocabulary"); !strings.Contains(v, "disk_usage") {
		t.Fatalf("the node's vocabulary: %q", v)
	}
	sh.take(ctx, "node")

	// Run disk_usage from the form its schema makes. "relative" breaks the schema's pattern: the
	// browser will not send it; sent anyway (as a browser without validation would), the plane
	// refuses it and the page says so next to the field.
	runURL := ui + "/run?node=" + a.nodeID + "&word=disk_usage"
	root := `[name="/root"]`
	browse(t, ctx, chromedp.Navigate(runURL), chromedp.WaitVisible(chromedp.CSS(root)),
		chromedp.SendKeys(chromedp.CSS(root), "relative"))
	if value(t, ctx, chromedp.Evaluate[bool](`document.querySelector('[name="/root"]').checkValidity()`)) {
		t.Fatal("the browser takes a root the schema's pattern refuses")
	}
	browse(t, ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("run-form").noValidate = true; null`),
		chromedp.Click(chromedp.CSS("#run-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-path="/root"] .field-error`)))
	if msg := textOf(t, ctx, `[data-path="/root"] .field-error`); !strings.Contains(msg, "/root") {
		t.Fatalf("the plane's refusal by the field: %q", msg)
	}
	sh.take(ctx, "run-refused")
	browse(t, ctx,
		setValue(root, ""),
		chromedp.SendKeys(chromedp.CSS(root), "/tmp"),
		chromedp.SendKeys(chromedp.CSS(`[name="/top"]`), "5"),
		chromedp.Click(chromedp.CSS("#run-submit")),
		chromedp.WaitVisible(chromedp.CSS("#job-state")))
	// The page follows the job over Server-Sent Events and shows the output once it is final.
	browse(t, ctx, chromedp.WaitReady(chromedp.CSS("#job-final")))
	if st, out := textOf(t, ctx, "#job-state"), textOf(t, ctx, "#job-output"); st != "completed" || !strings.Contains(out, "total_bytes") {
		t.Fatalf("the job page once final: %s\n%s", st, out)
	}
	jobURL := value(t, ctx, chromedp.Location())
	sh.take(ctx, "job")

	// A batch from the run page's second form: disk_usage on every node (this agent and a second),
	// at most one at a time; the batch page shows both nodes side by side, and filters by outcome.
	f.enrol("web-2", acceptLookAndChange)
	browse(t, ctx, chromedp.Navigate(ui+"/run"), chromedp.WaitVisible(chromedp.CSS("#batch-form")),
		setValue("#batch-selector", "all"), setValue("#batch-word", "disk_usage"),
		setValue("#batch-params", `{"root": "/tmp", "top": 1}`), setValue("#batch-max-parallel", "1"),
		chromedp.Click(chromedp.CSS("#batch-submit")),
		chromedp.WaitVisible(chromedp.CSS("#batch-state")))
	batchURL := value(t, ctx, chromedp.Location())
	deadline := time.Now().Add(2 * time.Minute)
	for textOf(t, ctx, "#batch-state") != "done" {
		if time.Now().After(deadline) {
			t.Fatalf("the batch did not end: %s", textOf(t, ctx, "#batch-counts"))
		}
		browse(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#batch-state")))
	}
	if counts, nodes := textOf(t, ctx, "#batch-counts"), textOf(t, ctx, "#batch-jobs"); !strings.Contains(counts, "Completed 2,") ||
		!strings.Contains(nodes, "web-1") || !strings.Contains(nodes, "web-2") || !strings.Contains(nodes, "total_bytes") {
		t.Fatalf("the batch page once done: %s\n%s", counts, nodes)
	}
	if groups := textOf(t, ctx, "#batch-groups"); !strings.Contains(groups, "nodes answered the same") {
		t.Fatalf("the batch's groups: %s", groups)
	}
	sh.take(ctx, "batch")
	browse(t, ctx, chromedp.Navigate(batchURL+"?state=failed"), chromedp.WaitVisible(chromedp.CSS("#batch-jobs")))
	if rows := textOf(t, ctx, "#batch-jobs tbody"); !strings.Contains(rows, "No nodes here.") {
		t.Fatalf("the batch's failed nodes: %s", rows)
	}

	// An incident from the node's case, triaged and noted on the page.
	st2, err := open.URL(context.Background(), f.store)
	must(t, err)
	now := time.Now()
	_, err = st2.CaseIntake(context.Background(), store.CaseIntakeParams{NodeID: a.nodeID, Now: now, Cases: []store.CaseReport{
		{ID: 1, Recipe: "disk_space", State: store.CaseOpen, OpenedAt: now, Summary: "/var is 97% full"}}})
	must(t, err)
	must(t, st2.Close())
	browse(t, ctx, chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS("#node-states")))
	sh.take(ctx, "overview")
	browse(t, ctx, chromedp.Navigate(ui+"/incidents"), chromedp.WaitVisible(chromedp.CSS(`a[href^="/ui/incidents/"]`)))
	sh.take(ctx, "incidents")
	browse(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href^="/ui/incidents/"]`)),
		chromedp.WaitVisible(chromedp.CSS("#triage-form")),
		setValue("#triage-select", "resolved"),
		chromedp.SendKeys(chromedp.CSS(`#triage-form input[name="reason"]`), "cleaned /var/log"),
		chromedp.Click(chromedp.CSS("#triage-submit")),
		until(`document.getElementById("triage").textContent.startsWith("resolved")`),
		chromedp.SendKeys(chromedp.CSS("#note-text"), "rotated the logs"),
		chromedp.Click(chromedp.CSS("#note-submit")),
		until(`document.getElementById("timeline").textContent.includes("rotated the logs")`))
	incidentURL := value(t, ctx, chromedp.Location())
	sh.take(ctx, "incident")
	browse(t, ctx, chromedp.Navigate(ui+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	sh.take(ctx, "jobs")
	browse(t, ctx, chromedp.Navigate(ui+"/tokens"), chromedp.WaitVisible(chromedp.CSS("#tokens")))
	sh.take(ctx, "tokens")
	// The fleet's backups: every node's health (none backed up yet: no target), the target form.
	browse(t, ctx, chromedp.Navigate(ui+"/backups"), chromedp.WaitVisible(chromedp.CSS("#backup-health")))
	if h := textOf(t, ctx, "#backup-health"); !strings.Contains(h, "web-1") {
		t.Fatalf("the backups page: %q", h)
	}
	sh.take(ctx, "backups")
	// The node's backups page, reached from its row: its health, policy and runs, and the restore form,
	// which asks first (its button is hidden until the panel saying what a restore does is opened).
	// Submitted, it reaches the plane, which refuses it: web-1 has no witnessed run to restore.
	browse(t, ctx, chromedp.Click(chromedp.CSS(`#backup-web-1 a`)), chromedp.WaitVisible(chromedp.CSS("#backup-runs")))
	if h, pol, runs := textOf(t, ctx, "#backup-health"), textOf(t, ctx, "#backup-policy"), textOf(t, ctx, "#backup-runs tbody"); !strings.Contains(h, "red") ||
		pol == "" || !strings.Contains(runs, "None yet.") {
		t.Fatalf("web-1's backups page: %q %q %q", h, pol, runs)
	}
	if value(t, ctx, chromedp.Evaluate[bool](`(() => { const b = document.querySelector("#node-restore button.restore-confirm"); return !!b && !b.closest("details").open && !b.checkVisibility(); })()`)) != true {
		t.Fatal("the restore button shows before the operator asked for it")
	}
	browse(t, ctx, chromedp.Click(chromedp.CSS("#node-restore summary.restore")), chromedp.WaitVisible(chromedp.CSS("#node-restore button.restore-confirm")))
	if msg := textOf(t, ctx, "#node-restore form p"); !strings.Contains(msg, "destructive word backup_restore") {
		t.Fatalf("the restore confirmation says %q", msg)
	}
	sh.take(ctx, "backup-node")
	browse(t, ctx, chromedp.SendKeys(chromedp.CSS(`#node-restore input[name="into"]`), "/srv/restored"),
		chromedp.Click(chromedp.CSS("#node-restore button.restore-confirm")),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	if msg := textOf(t, ctx, "#error"); !strings.Contains(msg, "backup.run_not_found") {
		t.Fatalf("a restore with no witnessed run: %q", msg)
	}

	// Publish release 2, which adds the in-memory DNS driver, by uploading it on the releases page: the
	// plane's verdicts are shown line by line. Then its words and drivers, and the diff from release 1.
	f.stageDrivers("dns-memory")
	rel2 := filepath.Join(f.dir, "release-2")
	run(t, false, "lexicon-release", "build", "--key", f.keyFile, "--modules", f.modules, "--release", "1.1.0", "--sequence", "2", "--out", rel2)
	upload := filepath.Join(f.dir, "release-2.tar")
	tarFolder(t, rel2, upload)
	// Signed by a key the plane does not trust, the same modules are refused, and the page says which
	// check failed and which were not run.
	strangerKeys := filepath.Join(f.dir, "stranger-keys")
	run(t, false, "lexicon-release", "keygen", "--out", strangerKeys)
	stranger := filepath.Join(f.dir, "release-stranger")
	run(t, false, "lexicon-release", "build", "--key", filepath.Join(strangerKeys, "publisher.key"), "--modules", f.modules, "--release", "1.1.0", "--sequence", "2", "--out", stranger)
	tarFolder(t, stranger, stranger+".tar")
	browse(t, ctx, chromedp.Navigate(ui+"/releases"), chromedp.WaitVisible(chromedp.CSS("#publish-form")),
		chromedp.SetUploadFiles(chromedp.CSS("#release-file"), []string{stranger + ".tar"}),
		chromedp.Click(chromedp.CSS("#publish-submit")),
		chromedp.WaitVisible(chromedp.CSS("#publish-refused")))
	if checks := textOf(t, ctx, "#checks"); !strings.Contains(checks, "failed (statement.signature_invalid)") || !strings.Contains(checks, "skipped") {
		t.Fatalf("the verdicts of a release signed by a stranger: %q", checks)
	}
	sh.take(ctx, "release-refused")
	browse(t, ctx, chromedp.Navigate(ui+"/releases"), chromedp.WaitVisible(chromedp.CSS("#publish-form")),
		chromedp.SetUploadFiles(chromedp.CSS("#release-file"), []string{upload}),
		chromedp.Click(chromedp.CSS("#publish-submit")),
		chromedp.WaitVisible(chromedp.CSS("#published")))
	if checks := textOf(t, ctx, "#checks"); !strings.Contains(checks, "passed") || strings.Contains(checks, "failed") {
		t.Fatalf("the verdicts of the published release: %q", checks)
	}
	if drv := textOf(t, ctx, "#drivers"); !strings.Contains(drv, "memory") {
		t.Fatalf("release 2's drivers: %q", drv)
	}
	sh.take(ctx, "release-published")
	browse(t, ctx, chromedp.Navigate(ui+"/releases"), chromedp.WaitVisible(chromedp.CSS(`#releases a[href="/ui/releases/2"]`)))
	sh.take(ctx, "releases")
	browse(t, ctx, chromedp.Navigate(ui+"/releases/1"), chromedp.WaitVisible(chromedp.CSS("#words")))
	if words := textOf(t, ctx, "#words"); !strings.Contains(words, "disk_usage") {
		t.Fatalf("release 1's words: %q", words)
	}
	sh.take(ctx, "release")
	browse(t, ctx, chromedp.Navigate(ui+"/releases/diff"), chromedp.WaitVisible(chromedp.CSS("#diff")))
	if d := textOf(t, ctx, "#diff"); !strings.Contains(d, "memory") || !strings.Contains(d, "added") {
		t.Fatalf("the diff 1→2: %q", d)
	}
	sh.take(ctx, "release-diff")

	// Enable the driver and add an account from the form its config schema makes; the credential is
	// typed into a password field and is nowhere on any page after.
	secret := "e2e-ui-credential-" + fmt.Sprint(time.Now().UnixNano())
	browse(t, ctx, chromedp.Navigate(ui+"/drivers"), chromedp.WaitVisible(chromedp.CSS("#driver-dns-memory button.enable")),
		chromedp.Click(chromedp.CSS("#driver-dns-memory button.enable")),
		chromedp.WaitVisible(chromedp.CSS("#driver-dns-memory a.add-account")),
		chromedp.Click(chromedp.CSS("#driver-dns-memory a.add-account")),
		chromedp.WaitVisible(chromedp.CSS("#account-form")),
		chromedp.SendKeys(chromedp.CSS("#account-name"), "lab"),
		chromedp.SendKeys(chromedp.CSS(`[name="/zones"]`), "example.com"),
		chromedp.SendKeys(chromedp.CSS("#account-credential"), secret))
	sh.take(ctx, "account-form")
	browse(t, ctx, chromedp.Click(chromedp.CSS("#account-submit")), chromedp.WaitVisible(chromedp.CSS("#account-lab")))
	// Removing the account is a second step: the first button only opens a panel saying what happens.
	if value(t, ctx, chromedp.Evaluate[bool](`document.querySelector("#account-lab button.remove-confirm").checkVisibility()`)) {
		t.Fatal("the account's remove button is shown before its confirmation was opened")
	}
	browse(t, ctx, chromedp.Click(chromedp.CSS("#account-lab summary.remove")), chromedp.WaitVisible(chromedp.CSS("#account-lab button.remove-confirm")))
	if msg := textOf(t, ctx, "#account-lab details.confirm form p"); !strings.Contains(msg, "forgets the account") {
		t.Fatalf("the remove confirmation says %q", msg)
	}
	sh.take(ctx, "drivers")
	browse(t, ctx, chromedp.Navigate(ui+"/drivers/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	if a := textOf(t, ctx, "#audit"); !strings.Contains(a, "account.add") {
		t.Fatalf("the driver audit log: %q", a)
	}
	sh.take(ctx, "driver-audit")

	// A rollout of release 2 over every node, started from the form; its page shows its steps.
	browse(t, ctx, chromedp.Navigate(ui+"/rollouts"), chromedp.WaitVisible(chromedp.CSS("#rollout-form")),
		setValue("#rollout-release", "2"),
		chromedp.SendKeys(chromedp.CSS("#rollout-selector"), "all"),
		chromedp.Click(chromedp.CSS("#rollout-submit")),
		chromedp.WaitVisible(chromedp.CSS("#rollout-state")))
	if steps := textOf(t, ctx, "#steps"); !strings.Contains(steps, "web-1") {
		t.Fatalf("the rollout's steps: %q", steps)
	}
	rolloutURL := value(t, ctx, chromedp.Location())
	sh.take(ctx, "rollout")
	browse(t, ctx, chromedp.Navigate(ui+"/rollouts"), chromedp.WaitVisible(chromedp.CSS(`#rollouts a[href^="/ui/rollouts/"]`)))
	sh.take(ctx, "rollouts")

	// A role made from the create form, pasted as a file; its page then offers edit and assign.
	browse(t, ctx, chromedp.Navigate(ui+"/roles"), chromedp.WaitVisible(chromedp.CSS("#role-create-form")),
		setValue("#role-create-file", "name: web-e2e\npackages:\n  - name: nginx\n"),
		chromedp.Click(chromedp.CSS("#role-create")),
		chromedp.WaitVisible(chromedp.CSS("#role-edit-form")))
	if items := textOf(t, ctx, "#role-items"); !strings.Contains(items, "package:nginx") {
		t.Fatalf("the created role's items: %q", items)
	}
	roleURL := ui + "/roles/web-e2e"
	sh.take(ctx, "role")

	// Schedules: the default packages_report schedule is listed; a bad cron expression is refused on
	// the page with its code; a good one is stored with its next run, then paused.
	browse(t, ctx, chromedp.Navigate(ui+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedule-form")))
	if list := textOf(t, ctx, "#schedules"); !strings.Contains(list, "packages-report") || !strings.Contains(list, "every 1h") {
		t.Fatalf("the schedules: %q", list)
	}
	browse(t, ctx,
		chromedp.SendKeys(chromedp.CSS("#schedule-name"), "nightly-disk"),
		chromedp.SendKeys(chromedp.CSS("#schedule-word"), "disk_usage"),
		chromedp.SendKeys(chromedp.CSS(`#schedule-form [name="params"]`), `{"root": "/var"}`),
		chromedp.SendKeys(chromedp.CSS("#schedule-cron"), "0 25 * * *"),
		chromedp.Click(chromedp.CSS("#schedule-submit")),
		chromedp.WaitVisible(chromedp.CSS("#schedule-error")))
	if msg := textOf(t, ctx, "#schedule-error"); !strings.Contains(msg, "schedule.cron_invalid") {
		t.Fatalf("a bad cron expression: %q", msg)
	}
	browse(t, ctx, setValue("#schedule-cron", "0 3 * * *"), chromedp.Click(chromedp.CSS("#schedule-submit")),
		chromedp.WaitVisible(chromedp.CSS("#schedule-facts")))
	if next := textOf(t, ctx, "#schedule-next"); !strings.Contains(next, "03:00") {
		t.Fatalf("the schedule's next run: %q", next)
	}
	sh.take(ctx, "schedule")
	browse(t, ctx, chromedp.Click(chromedp.CSS("#schedule-pause")), chromedp.WaitVisible(chromedp.CSS("#schedule-resume")))
	if state := textOf(t, ctx, "#schedule-state"); state != "paused" {
		t.Fatalf("the paused schedule's state: %q", state)
	}
	browse(t, ctx, chromedp.Navigate(ui+"/schedules"), chromedp.WaitVisible(chromedp.CSS(`#schedules a[href^="/ui/schedules/"]`)))
	sh.take(ctx, "schedules")

	// Fleet security: the node's row, at a level with its reasons (grey until the default schedule's
	// packages_report has reported; what the host's packages say after), linked to its page.
	browse(t, ctx, chromedp.Navigate(ui+"/security"), chromedp.WaitVisible(chromedp.CSS("#security")))
	if row := textOf(t, ctx, "#security-web-1"); !(strings.Contains(row, "grey") || strings.Contains(row, "red") ||
		strings.Contains(row, "amber") || strings.Contains(row, "green")) {
		t.Fatalf("the security row of web-1: %q", row)
	}
	if href := value(t, ctx, chromedp.AttributeValue(chromedp.CSS(`#security-web-1 a`), "href")).Value; href != "/ui/nodes/"+a.nodeID {
		t.Fatalf("the security row links to %q", href)
	}
	sh.take(ctx, "security")

	// The plane's own health: the replica that answers, with its heartbeat and memory.
	browse(t, ctx, chromedp.Navigate(ui+"/plane"), chromedp.WaitVisible(chromedp.CSS("#replicas")))
	if reps := textOf(t, ctx, "#replicas"); !strings.Contains(reps, "(answered)") {
		t.Fatalf("the plane's replicas: %q", reps)
	}
	sh.take(ctx, "plane")

	// Provisionings: the list and, for an admin, the provision form (this plane has no cloud account).
	browse(t, ctx, chromedp.Navigate(ui+"/provisionings"), chromedp.WaitVisible(chromedp.CSS("#provision-form")))
	sh.take(ctx, "provisionings")

	// The machine inventory: the node beside a machine written down from the form, red (its OS is past
	// its standard support and its retire-by day has passed), red rows first.
	browse(t, ctx, chromedp.Navigate(ui+"/machines"), chromedp.WaitVisible(chromedp.CSS("#machine-form")),
		chromedp.SendKeys(chromedp.CSS(`#machine-form [name="name"]`), "backup-nas"),
		chromedp.SendKeys(chromedp.CSS(`#machine-form [name="purpose"]`), "nightly backups"),
		chromedp.SendKeys(chromedp.CSS(`#machine-form [name="owner"]`), "ops"),
		chromedp.SendKeys(chromedp.CSS(`#machine-form [name="os_release"]`), "debian 11"),
		chromedp.SendKeys(chromedp.CSS(`#machine-form [name="retire_by"]`), "2026-01-31"),
		chromedp.Click(chromedp.CSS("#machine-add")),
		chromedp.WaitVisible(chromedp.CSS(`#machines tr.machine-red[data-source="written"]`)))
	if first := textOf(t, ctx, "#machines tbody tr:first-child"); !strings.Contains(first, "backup-nas") || !strings.Contains(first, "retire-by day 2026-01-31 has passed") {
		t.Fatalf("the machines page's first row: %q", first)
	}
	sh.take(ctx, "machines")
	for _, page := range []string{ui + "/releases", ui + "/drivers", ui + "/drivers/audit", ui + "/rollouts", ui + "/plane", ui + "/provisionings", ui + "/"} {
		browse(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("main")))
		if html := value(t, ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, secret) {
			t.Fatalf("%s shows the driver credential", page)
		}
	}

	// Sign out: the session ends, and the overview sends the browser to sign in again.
	browse(t, ctx, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))

	// A viewer sees no button that changes anything, and a crafted POST is refused.
	browse(t, ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), viewerTok),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#node-states")))
	browse(t, ctx, chromedp.Navigate(ui+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	jobLink := value(t, ctx, chromedp.AttributeValue(chromedp.CSS(`#jobs a[href^="/ui/jobs/"]`), "href")).Value
	for _, page := range []string{ui + "/", ui + "/joins", ui + "/nodes", ui + "/nodes/" + a.nodeID, f.url + jobLink, incidentURL, ui + "/run",
		ui + "/releases", ui + "/releases/2", ui + "/releases/diff", ui + "/drivers", ui + "/drivers/audit", ui + "/rollouts", ui + "/schedules", ui + "/security", ui + "/plane", ui + "/machines",
		ui + "/batches", batchURL, ui + "/roles", roleURL} {
		browse(t, ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("main")))
		forms := value(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('form[method="post"]')).map(f => f.getAttribute("action")).filter(a => a !== "/ui/signout")`))
		if len(forms) != 0 {
			t.Errorf("a viewer is offered %v on %s", forms, page)
		}
	}
	browse(t, ctx, chromedp.Navigate(incidentURL), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	status := value(t, ctx, chromedp.Evaluate[int](`(async () => {
			const body = new URLSearchParams({csrf: document.querySelector('input[name="csrf"]').value, triage: "ignored"});
			const res = await fetch(location.pathname + "/triage", {method: "POST", body});
			return res.status;
		})()`, chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Fatalf("a viewer's crafted triage POST: %d, want 403", status)
	}
	sh.take(ctx, "viewer-incident")

	// Lighthouse on the main pages, at a phone's width, in a browser of its own with a session of its
	// own: last, as it takes minutes the steps above are not bounded by.
	lighthouse(t, f, string(adminTok), ui+"/", ui+"/nodes/"+a.nodeID, jobURL, incidentURL, rolloutURL, ui+"/tokens", ui+"/roles", roleURL)
}

// tarFolder packs a release folder as lexicon releases publish sends it: statement.bundle.json and
// sha256/<hex>, as a file a person would upload.
func tarFolder(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	must(t, err)
	defer f.Close()
	tw := tar.NewWriter(f)
	blobs, err := os.ReadDir(filepath.Join(dir, "sha256"))
	must(t, err)
	names := []string{"statement.bundle.json"}
	for _, b := range blobs {
		names = append(names, "sha256/"+b.Name())
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		must(t, err)
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(data)
		must(t, err)
	}
	must(t, tw.Close())
}
