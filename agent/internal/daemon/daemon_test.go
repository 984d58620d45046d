package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/client"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type reporter struct {
	cases     []channel.CaseReport
	delivered [][]channel.CaseReport
}

func (r *reporter) Report() ([]channel.RecipeReport, []channel.CaseReport) {
	out := append([]channel.CaseReport(nil), r.cases...)
	return []channel.RecipeReport{{Name: "unit_health", State: channel.RecipeActive}}, out
}

func (r *reporter) Delivered(c []channel.CaseReport) { r.delivered = append(r.delivered, c) }

var _ Reporter = (*reporter)(nil)

// TestCaseBodyWaitsForRoom: a case body larger than the claim size the plane accepts rides only after
// a claim has announced the room it needs; the summary rides at once.
func TestCaseBodyWaitsForRoom(t *testing.T) {
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`{"facts": "` + strings.Repeat("x", 100<<10) + `"}`)
	rep := &reporter{cases: []channel.CaseReport{{ID: 3, Recipe: "unit_health", State: channel.CaseOpen, Summary: "s",
		Body: &channel.CaseBody{Mode: "repair", HostReport: big}}}}
	d := &Daemon{Vocab: v, Version: "test", Recipes: rep}

	first, _ := d.claim()
	if len(first.Cases) != 1 || first.Cases[0].Body != nil || first.ClaimSize < 200<<10 {
		t.Fatalf("first claim: %d cases, body %v, claim_size %d", len(first.Cases), first.Cases[0].Body != nil, first.ClaimSize)
	}
	if rep.cases[0].Body == nil {
		t.Fatal("the claim dropped the reporter's own body")
	}
	if b, _ := json.Marshal(first); len(b) > channel.DefaultBodyCap {
		t.Fatalf("first claim of %d bytes", len(b))
	}
	d.accepted = max(first.ClaimSize, channel.DefaultBodyCap) // what Run records when the claim succeeds
	second, _ := d.claim()
	if second.Cases[0].Body == nil {
		t.Fatal("the body does not ride once there is room")
	}
	if b, _ := json.Marshal(second); len(b) > d.accepted {
		t.Fatalf("second claim of %d bytes over the %d accepted", len(b), d.accepted)
	}
}

// TestRunRetriesWhatThePlaneCouldNotTake runs the daemon against a plane whose database fails once on
// a claim and once on a result. The failed claim does not count as delivering the case it carried, so
// the body rides again; the result is sent again and taken; the job is not run twice.
func TestRunRetriesWhatThePlaneCouldNotTake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	unavailable := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(errcode.New(errcode.StoreUnavailable, "the database failed"))
	}
	var mu sync.Mutex
	var claims []channel.ClaimRequest
	var results []channel.ResultRequest
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case channel.PathClaim:
			var req channel.ClaimRequest
			json.Unmarshal(body, &req)
			claims = append(claims, req)
			switch len(claims) {
			case 1:
				unavailable(w)
			case 2:
				json.NewEncoder(w).Encode(channel.ClaimResponse{Job: &channel.Job{ID: "job_1", Word: "absent"}})
			default:
				cancel() // the test is over
				json.NewEncoder(w).Encode(channel.ClaimResponse{})
			}
		case channel.PathResult:
			var req channel.ResultRequest
			json.Unmarshal(body, &req)
			results = append(results, req)
			if len(results) == 1 {
				unavailable(w)
				return
			}
			json.NewEncoder(w).Encode(channel.ResultResponse{JobID: req.JobID, State: req.Outcome})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer plane.Close()
	c, err := client.New(plane.URL, "", keys.NewNode())
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := &reporter{cases: []channel.CaseReport{{ID: 1, Recipe: "unit_health", State: channel.CaseOpen, Summary: "s",
		Body: &channel.CaseBody{Mode: "repair"}}}}
	log := slog.New(slog.DiscardHandler)
	d := &Daemon{Client: c, Vocab: v, Runner: &runner.Runner{Vocab: v, Log: log}, Version: "test", Log: log, Recipes: rep,
		retry: time.Millisecond}
	if err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(claims) != 3 {
		t.Fatalf("%d claims, want 3", len(claims))
	}
	for i, c := range claims[:2] {
		if len(c.Cases) != 1 || c.Cases[0].Body == nil {
			t.Fatalf("claim %d carried %+v; the body rides until a claim carrying it is taken", i+1, c.Cases)
		}
	}
	if len(rep.delivered) < 1 || rep.delivered[0][0].Body == nil {
		t.Fatalf("delivered %+v: the second claim, which the plane took, delivered the body", rep.delivered)
	}
	if len(results) != 2 || results[0].JobID != "job_1" || results[1].JobID != "job_1" || results[1].Code != errcode.JobWordUnavailable {
		t.Fatalf("results %+v: the refusal is reported twice, the second taken", results)
	}
}

// TestWatchJobStopsWhatThePlaneEnded: a running job is stopped once the plane says it is no longer
// running, and not for an answer that says nothing (the database down).
func TestWatchJobStopsWhatThePlaneEnded(t *testing.T) {
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(errcode.New(errcode.StoreUnavailable, "the database failed"))
		},
		func(w http.ResponseWriter) {
			json.NewEncoder(w).Encode(channel.JobStatusResponse{JobID: "job_1", State: "running"})
		},
		func(w http.ResponseWriter) {
			json.NewEncoder(w).Encode(channel.JobStatusResponse{JobID: "job_1", State: "failed"})
		},
	}
	var mu sync.Mutex
	asked := 0
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var req channel.JobStatusRequest
		if r.URL.Path != channel.PathJobStatus || json.NewDecoder(r.Body).Decode(&req) != nil || req.JobID != "job_1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		answers[min(asked, len(answers)-1)](w)
		asked++
	}))
	defer plane.Close()
	c, err := client.New(plane.URL, "", keys.NewNode())
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Client: c, Log: slog.New(slog.DiscardHandler), watch: time.Millisecond}
	ctx, stop := context.WithCancel(context.Background())
	d.watchJob(ctx, "job_1", stop) // returns once it has stopped the job
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() == nil || asked != 3 {
		t.Fatalf("after %d answers the job is stopped: %v", asked, ctx.Err())
	}
}

// TestClaimsBriefAndFinishAndClaim: the report rides until the plane says it holds it, then claims
// leave it out; a result carries the next claim, and the job that answer hands out runs without a
// claim of its own; a plane that asks for the report gets it in full on the next claim.
func TestClaimsBriefAndFinishAndClaim(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var trail []string // what reached the plane, in order
	var failed []string
	fail := func(format string, args ...any) { failed = append(failed, fmt.Sprintf(format, args...)) }
	form := func(c *channel.ClaimRequest) string {
		switch {
		case c == nil:
			return "none"
		case c.ReportDigest == "":
			return "undigested"
		case c.ReportOmitted:
			if c.Vocabulary != nil || c.Version != "" {
				fail("a brief claim carries its report: %+v", c)
			}
			return "brief"
		}
		if c.ReportDigest != c.Digest() {
			fail("a full claim names digest %s, not its own %s", c.ReportDigest, c.Digest())
		}
		return "full"
	}
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case channel.PathClaim:
			var req channel.ClaimRequest
			json.Unmarshal(body, &req)
			trail = append(trail, "claim "+form(&req))
			if len(trail) == 1 {
				json.NewEncoder(w).Encode(channel.ClaimResponse{Job: &channel.Job{ID: "job_1", Word: "absent"}, ReportDigest: req.ReportDigest})
				return
			}
			cancel() // the test is over
			json.NewEncoder(w).Encode(channel.ClaimResponse{})
		case channel.PathResult:
			var req channel.ResultRequest
			json.Unmarshal(body, &req)
			trail = append(trail, "result "+req.JobID+" "+form(req.Claim))
			resp := channel.ResultResponse{JobID: req.JobID, State: req.Outcome, Claim: &channel.ClaimResponse{SendReport: true}}
			if req.JobID == "job_1" {
				resp.Claim = &channel.ClaimResponse{Job: &channel.Job{ID: "job_2", Word: "absent"}, ReportDigest: req.Claim.ReportDigest}
			}
			json.NewEncoder(w).Encode(resp)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer plane.Close()
	c, err := client.New(plane.URL, "", keys.NewNode())
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	d := &Daemon{Client: c, Vocab: v, Runner: &runner.Runner{Vocab: v, Log: log}, Version: "test", Log: log, retry: time.Millisecond}
	if err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"claim full", "result job_1 brief", "result job_2 brief", "claim full"}
	if !slices.Equal(trail, want) || len(failed) > 0 {
		t.Fatalf("the plane saw %q, want %q; %v", trail, want, failed)
	}
}

// TestClaimCarriesFacts: the host facts ride in the claim's report, so a brief claim holds while they
// are unchanged and a refresh that changed them sends the report in full.
func TestClaimCarriesFacts(t *testing.T) {
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &channel.HostFacts{OS: "debian-12", Kernel: "6.1.0", CPUs: 2}
	d := &Daemon{Vocab: v, Version: "test", Facts: func() *channel.HostFacts { c := *f; return &c }}
	full, send := d.claim()
	if send.Facts == nil || send.Facts.OS != "debian-12" || send.ReportOmitted {
		t.Fatalf("first claim: %+v", send)
	}
	d.held = full.ReportDigest
	if _, send = d.claim(); !send.ReportOmitted || send.Facts != nil {
		t.Fatalf("unchanged facts: the claim is not brief: %+v", send)
	}
	f.Kernel = "6.1.1"
	if _, send = d.claim(); send.ReportOmitted || send.Facts.Kernel != "6.1.1" {
		t.Fatalf("changed facts: %+v", send)
	}
}

// TestClaimCarriesReach: each word's reach rides in the claim's report like the facts: an unchanged
// reach keeps claims brief, and a policy that narrowed it sends the report in full.
func TestClaimCarriesReach(t *testing.T) {
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{"/etc/nginx"}
	d := &Daemon{Vocab: v, Version: "test", Reach: func() []channel.WordReach {
		return []channel.WordReach{{Word: "file_head", Digest: "d", Caps: []channel.CapReach{{Cap: "fs.read", Roots: slices.Clone(roots)}}}}
	}}
	full, send := d.claim()
	if len(send.Reach) != 1 || send.Reach[0].Caps[0].Roots[0] != "/etc/nginx" || send.ReportOmitted {
		t.Fatalf("first claim: %+v", send)
	}
	d.held = full.ReportDigest
	if _, send = d.claim(); !send.ReportOmitted || send.Reach != nil {
		t.Fatalf("unchanged reach: the claim is not brief: %+v", send)
	}
	roots = []string{"/etc/nginx/sites"}
	if _, send = d.claim(); send.ReportOmitted || send.Reach[0].Caps[0].Roots[0] != "/etc/nginx/sites" {
		t.Fatalf("narrowed reach: %+v", send)
	}
}

// TestTellIsABusyClaim: the updater's tell, mid-swap, reaches the plane as a busy claim (it takes no
// job and loses none) carrying the update's state in a full report, whose digest the plane then holds.
// A job a plane hands out anyway is not run.
func TestTellIsABusyClaim(t *testing.T) {
	var mu sync.Mutex
	var got []channel.ClaimRequest
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var req channel.ClaimRequest
		if r.URL.Path != channel.PathClaim || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		got = append(got, req)
		json.NewEncoder(w).Encode(channel.ClaimResponse{ReportDigest: req.ReportDigest, Job: &channel.Job{ID: "job_1", Word: "absent"}})
	}))
	defer plane.Close()
	c, err := client.New(plane.URL, "", keys.NewNode())
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// No runner: a job run here would panic.
	d := &Daemon{Client: c, Vocab: v, Version: "1.0.0", Log: slog.New(slog.DiscardHandler)}
	teller{d}.Tell(context.Background(), &channel.UpdateReport{State: channel.UpdateProbing, Offered: "2.0.0"})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("the plane saw %d claims, want 1", len(got))
	}
	req := got[0]
	if req.Idle || req.ReportOmitted || req.Update == nil || req.Update.State != channel.UpdateProbing ||
		req.Update.Offered != "2.0.0" || req.ReportDigest != req.Digest() {
		t.Fatalf("the tell sent %+v (update %+v), want a busy full claim naming probing 2.0.0", req, req.Update)
	}
	if d.held != req.ReportDigest {
		t.Fatalf("the daemon holds digest %q, want the told report's %q", d.held, req.ReportDigest)
	}
}
