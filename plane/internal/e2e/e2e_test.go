package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
)

func TestJoinApproveAndRunWords(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{})
		a := f.newAgent("web-1", acceptLookAndChange)
		a.join()

		// The fingerprint the agent prints is the one OpenSSH computes for its public key.
		pub := filepath.Join(a.state, "node.pub")
		out, err := exec.Command("ssh-keygen", "-lf", pub).Output()
		if err != nil || !strings.Contains(string(out), a.fingerprint) {
			t.Fatalf("ssh-keygen -lf says %q, the agent showed %s", out, a.fingerprint)
		}

		// The wrong fingerprint is refused, and the join stays pending.
		wrong := f.lexicon(true, "joins", "approve", a.joinID, "--fingerprint", "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		if wrong["code"] != "join.fingerprint_mismatch" {
			t.Fatalf("wrong fingerprint: %v", wrong)
		}
		pending := f.lexicon(false, "joins", "list", "--status", "pending")
		if len(pending["joins"].([]any)) != 1 {
			t.Fatalf("pending joins after a refused approval: %v", pending)
		}

		a.approve()
		a.start()

		job := f.runJob(a.nodeID, "host_report")
		if job["state"] != "completed" {
			t.Fatalf("host_report: %v", job)
		}
		output := job["output"].(map[string]any)
		if output["kernel"] == "" || output["cpus"].(float64) < 1 {
			t.Fatalf("host_report output: %v", output)
		}
		if caps, _ := job["audit"].([]any); len(caps) == 0 {
			t.Fatalf("host_report recorded no capability calls: %v", job)
		}

		// A word the node does not report is refused when the job is built, saying what to do.
		missing := f.lexicon(true, "jobs", "run", a.nodeID, "no_such_word")
		if missing["code"] != "job.word_unavailable" || !strings.Contains(missing["message"].(string), "publish") {
			t.Fatalf("unreported word: %v", missing)
		}
		// Params are checked on the plane, naming the field.
		bad := f.lexicon(true, "jobs", "run", a.nodeID, "e2e_spin", "--param", "attack=dance")
		if bad["code"] != "word.param_invalid" {
			t.Fatalf("bad params on the plane: %v", bad)
		}
	})
}

func TestPolicyRefusalIsCounted(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{})
		a := f.enrol("strict-1", `{"classes": {"look": "refuse", "change": "refuse", "destructive": "refuse"}}`)
		job := f.runJob(a.nodeID, "host_report")
		if job["state"] != "refused" || job["outcome_code"] != "policy.refused" {
			t.Fatalf("job under a refusing policy: %v", job)
		}
		n := f.lexicon(false, "nodes", "show", a.nodeID)
		if n["refusals"].(float64) != 1 {
			t.Fatalf("refusals not counted: %v", n["refusals"])
		}
	})
}

// TestNodeValidatesParams bypasses the plane's check by writing a job straight into the store: the node
// is the authority and refuses it.
func TestNodeValidatesParams(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{claimWait: "2s"})
		a := f.enrol("web-2", acceptLookAndChange)
		n := f.lexicon(false, "nodes", "show", a.nodeID)
		var digest string
		for _, w := range n["vocabulary"].([]any) {
			if w.(map[string]any)["name"] == "e2e_spin" {
				digest = w.(map[string]any)["digest"].(string)
			}
		}
		ctx := context.Background()
		st, err := open.URL(ctx, f.store)
		must(t, err)
		defer st.Close()
		job, err := st.JobCreate(ctx, store.JobCreateParams{
			NodeID: a.nodeID, Word: "e2e_spin", WordDigest: digest, Class: "look",
			Params: json.RawMessage(`{"attack": "loop", "rm": "-rf /"}`), CreatedBy: "bypass",
		})
		must(t, err)
		f.planeLog.WaitFor(t, jobLogged("job finished", job.ID)) // the node's verdict
		got := f.job(job.ID)
		if got["state"] != "refused" || got["outcome_code"] != "word.param_invalid" {
			t.Fatalf("bypassed bad params: %v", got)
		}
	})
}

// TestKilledAgentLosesItsJob kills an agent mid-job and restarts it: the job is lost, never re-run.
func TestKilledAgentLosesItsJob(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{})
		a := f.enrol("web-3", acceptLookAndChange)
		queued := f.lexicon(false, "jobs", "run", a.nodeID, "e2e_spin", "--param", "attack=loop")
		id := queued["id"].(string)
		f.planeLog.WaitFor(t, jobLogged("job handed out", id)) // the spin job is running
		a.p.kill()
		a.start()
		// The restarted agent claims idle, and the plane counts the job it thought was running lost.
		f.planeLog.WaitFor(t, jobLogged("job lost: its node claimed while idle", id))
		got := f.job(id)
		if got["state"] != "lost" {
			t.Fatalf("job after the agent's restart: %v", got)
		}
		// The restarted agent never started it again.
		if strings.Contains(a.p.log(), `"job":"`+id+`"`) {
			t.Fatalf("the restarted agent touched the lost job:\n%s", a.p.log())
		}
		// And the node is free for the next job.
		if job := f.runJob(a.nodeID, "host_report"); job["state"] != "completed" {
			t.Fatalf("after the lost job: %v", job)
		}
	})
}

// TestAlteredModuleRefused alters a module in the plane's store before a node fetches it: the node
// refuses the module and does not offer the word.
func TestAlteredModuleRefused(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{})
		digest := moduleDigest(t, f, "disk_usage")
		tamper(t, backend, f.store, digest)
		a := f.enrol("web-4", acceptLookAndChange)
		n := f.lexicon(false, "nodes", "show", a.nodeID)
		for _, w := range n["vocabulary"].([]any) {
			if w.(map[string]any)["name"] == "disk_usage" {
				t.Fatalf("the node offers a word whose module was altered: %v", n["vocabulary"])
			}
		}
		if !strings.Contains(a.p.log(), "module.digest_mismatch") && !strings.Contains(runJSON(t, false, "lexicon-agent", append([]string{"status"}, a.dirs()...)...)["untrusted"].(string), "module.digest_mismatch") {
			t.Fatalf("the node did not say why it refused the module")
		}
		if job := f.lexicon(true, "jobs", "run", a.nodeID, "disk_usage"); job["code"] != "job.word_unavailable" {
			t.Fatalf("job for the refused word: %v", job)
		}
		if job := f.runJob(a.nodeID, "host_report"); job["state"] != "completed" {
			t.Fatalf("an intact word after the refusal: %v", job)
		}
	})
}

func moduleDigest(t *testing.T, f *fleet, word string) string {
	rel := f.lexicon(false, "releases", "list")
	for _, r := range rel["releases"].([]any) {
		for _, a := range r.(map[string]any)["artifacts"].([]any) {
			art := a.(map[string]any)
			if strings.HasPrefix(art["name"].(string), "word/"+word+"@") {
				return art["digest"].(string)
			}
		}
	}
	t.Fatalf("no artifact for %s", word)
	return ""
}

// tamper flips bytes of a stored artifact behind the plane's back.
func tamper(t *testing.T, backend, url, digest string) {
	ctx := context.Background()
	const q = `UPDATE artifacts SET data = $1 WHERE digest = $2`
	evil := []byte("\x00asm\x01\x00\x00\x00 altered in the store")
	if backend == "sqlite" {
		db, err := sql.Open("sqlite", url)
		must(t, err)
		defer db.Close()
		res, err := db.ExecContext(ctx, strings.ReplaceAll(strings.ReplaceAll(q, "$1", "?"), "$2", "?"), evil, digest)
		must(t, err)
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("tampered %d rows", n)
		}
		return
	}
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, q, evil, digest)
	must(t, err)
	if tag.RowsAffected() != 1 {
		t.Fatalf("tampered %d rows", tag.RowsAffected())
	}
}

// TestReplayAndSkewRefused signs claims with a real node key: a replay and a skewed clock are refused
// by the plane process.
func TestReplayAndSkewRefused(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{claimWait: "1s"})
		a := f.newAgent("web-5", acceptLookAndChange)
		a.join()
		a.approve()
		key, err := keys.ReadNodePrivateFile(filepath.Join(a.state, "node.key"))
		must(t, err)
		client := planeClient(t, f.ca)
		body, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "e2e", Vocabulary: []channel.Word{}})
		send := func(req *http.Request) map[string]any {
			resp, err := client.Do(req)
			must(t, err)
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			m["status"] = resp.StatusCode
			return m
		}
		req, _ := http.NewRequest(http.MethodPost, f.url+channel.PathClaim, bytes.NewReader(body))
		must(t, httpsig.Sign(req, body, key, time.Now()))
		replay := req.Clone(context.Background())
		replay.Body = http.NoBody
		if first := send(req); first["status"] != 200 {
			t.Fatalf("first signed claim: %v", first)
		}
		replay.Body, replay.ContentLength = bodyOf(body), int64(len(body))
		if got := send(replay); got["status"] != 401 || code(got) != "channel.replayed" {
			t.Fatalf("replayed claim: %v", got)
		}
		for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
			req, _ := http.NewRequest(http.MethodPost, f.url+channel.PathClaim, bytes.NewReader(body))
			must(t, httpsig.Sign(req, body, key, time.Now().Add(skew)))
			if got := send(req); got["status"] != 401 || code(got) != "channel.clock_skew" {
				t.Fatalf("claim %s off: %v", skew, got)
			}
		}
	})
}

func bodyOf(b []byte) *readCloser { return &readCloser{bytes.NewReader(b)} }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func code(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func planeClient(t *testing.T, caFile string) *http.Client {
	pem, err := os.ReadFile(caFile)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
}
