package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// startTestlog runs testlog with args in the background until the test ends and returns its URL, read
// from the ready line it prints once it serves.
func startTestlog(t *testing.T, args ...string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Run(ctx, "lexicon-release", "test", commands(), append([]string{"testlog", "--listen", "127.0.0.1:0", "-o", "json"}, args...), stdoutW, io.Discard)
		stdoutW.Close()
	}()
	t.Cleanup(func() {
		stop()
		<-exited
	})
	stdout := bufio.NewReader(stdoutR)
	line, err := stdout.ReadString('\n')
	var ready testLogReady
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.URL == "" {
		t.Fatalf("testlog's ready line: %q %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return ready.URL
}

// TestWitnessPolicyCLI: testlog cosigned by test witnesses, trust init with a quorum of them, and
// trust witnesses changing the policy of the folder: verify passes while the quorum is met and is
// refused with statement.unwitnessed once it is not.
func TestWitnessPolicyCLI(t *testing.T) {
	work := t.TempDir()
	logKey, witnessKeys := filepath.Join(work, "log.pub"), filepath.Join(work, "witnesses.pub")
	url := startTestlog(t, "--log-key-out", logKey, "--witness", "w1.test", "--witness", "w2.test", "--witness-key-out", witnessKeys)
	data, err := os.ReadFile(witnessKeys)
	must(t, err)
	ws := keys.Lines(data)
	if len(ws) != 2 {
		t.Fatalf("witness keys: %q", data)
	}
	for _, w := range ws {
		if _, err := keys.ParseWitnessPublic(w); err != nil {
			t.Fatal(err)
		}
	}
	// The read side is served: the checkpoint, cosigned.
	resp, err := http.Get(url + "/checkpoint")
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("— w1.test ")) || !bytes.Contains(body, []byte("— w2.test ")) {
		t.Fatalf("checkpoint: %d %s", resp.StatusCode, body)
	}

	key, pub := publisher(t)
	release := func(seq string) string {
		rel := filepath.Join(work, "rel-"+seq)
		if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1."+seq+".0", nil), "--release", "1."+seq+".0", "--sequence", seq, "--out", rel); code != 0 {
			t.Fatalf("build: %v", res)
		}
		if code, res := runJSON(t, "log", "--rekor", url, rel); code != 0 {
			t.Fatalf("log: %v", res)
		}
		return rel
	}
	trust := filepath.Join(work, "trust")
	code, res := runJSON(t, "trust", "init", "--out", trust, "--key", pub, "--log-key", logKey, "--witness", ws[0],
		"--witness", strings.TrimPrefix(ws[1], "witness-key:"), "--witness-quorum", "2")
	if code != 0 || res["witnesses"].(map[string]any)["quorum"] != float64(2) {
		t.Fatalf("trust init: %v", res)
	}
	code, out, _ := run(t, "verify", release("1"), "--trust", trust)
	if code != 0 || !strings.Contains(out, "cosigned by 2 of 2 held witnesses") {
		t.Fatalf("verify: %d\n%s", code, out)
	}

	other := "witness-key:" + otherWitness(t)
	if code, res := runJSON(t, "trust", "witnesses", "--trust", trust, "--witness", ws[0], "--witness", other, "--quorum", "2"); code != 0 {
		t.Fatalf("trust witnesses: %v", res)
	}
	rel2 := release("2")
	code, res = runJSON(t, "verify", rel2, "--trust", trust)
	if code != 1 || res["code"] != errcode.StatementUnwitnessed {
		t.Fatalf("verify with 1 of the 2 required: %d %v", code, res)
	}
	if code, res := runJSON(t, "trust", "witnesses", "--trust", trust, "--none"); code != 0 || res["quorum"] != float64(0) {
		t.Fatalf("trust witnesses --none: %v", res)
	}
	if code, out, _ := run(t, "verify", rel2, "--trust", trust); code != 0 {
		t.Fatalf("verify without a policy: %d\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"trust", "witnesses", "--trust", trust, "--witness", ws[0], "--quorum", "2"}, errcode.KeyMalformed},
		{[]string{"trust", "witnesses", "--trust", trust, "--witness", "w+00000000+AA=="}, errcode.KeyMalformed},
		{[]string{"trust", "witnesses", "--trust", trust, "--witness", ws[0], "--none"}, errcode.UsageInvalid},
		{[]string{"trust", "witnesses", "--trust", filepath.Join(work, "none"), "--witness", ws[0]}, errcode.IOFailed},
		{[]string{"trust", "init", "--out", filepath.Join(work, "t2"), "--key", pub, "--witness", ws[0]}, errcode.UsageInvalid},
	} {
		if code, res := runJSON(t, c.args...); code == 0 || res["code"] != c.code {
			t.Errorf("%v: %d %v, want %s", c.args, code, res, c.code)
		}
	}
	noLog := filepath.Join(work, "nolog")
	if code, res := runJSON(t, "trust", "init", "--out", noLog, "--key", pub); code != 0 {
		t.Fatalf("trust init: %v", res)
	}
	if code, res := runJSON(t, "trust", "witnesses", "--trust", noLog, "--witness", ws[0]); code != 1 || res["code"] != errcode.KeyMalformed {
		t.Fatalf("witnesses for a folder with no log: %d %v", code, res)
	}
}

func otherWitness(t *testing.T) string {
	t.Helper()
	w, err := keys.NewWitnessPublic("other.test", make([]byte, 32))
	must(t, err)
	return w.VKey()
}

// TestProve: prove writes the log's consistency proof from an earlier release's checkpoint to this
// release's, which verifies against the two signed checkpoints; an earlier release not in the log is
// refused.
func TestProve(t *testing.T) {
	work := t.TempDir()
	logKey := filepath.Join(work, "log.pub")
	url := startTestlog(t, "--log-key-out", logKey)
	key, _ := publisher(t)
	release := func(seq string, logged bool) string {
		rel := filepath.Join(work, "rel-"+seq)
		if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1."+seq+".0", nil), "--release", "1."+seq+".0", "--sequence", seq, "--out", rel); code != 0 {
			t.Fatalf("build: %v", res)
		}
		if logged {
			if code, res := runJSON(t, "log", "--rekor", url, rel); code != 0 {
				t.Fatalf("log: %v", res)
			}
		}
		return rel
	}
	r1, r2, r3 := release("1", true), release("2", true), release("3", true)
	code, res := runJSON(t, "prove", "--rekor", url, "--log-key", logKey, "--previous", r1, "--previous", r2, r3)
	if code != 0 || len(res["proofs"].([]any)) != 2 {
		t.Fatalf("prove: %d %v", code, res)
	}
	data, err := os.ReadFile(filepath.Join(r3, registry.LogProofsFile))
	must(t, err)
	proofs, err := checkpoint.ParseProofs(data)
	must(t, err)
	raw, err := os.ReadFile(logKey)
	must(t, err)
	lk, err := keys.ParseLogPublic(string(raw))
	must(t, err)
	this, err := releaseCheckpoint(r3, lk)
	must(t, err)
	for i, dir := range []string{r1, r2} {
		was, err := releaseCheckpoint(dir, lk)
		must(t, err)
		if err := proofs[i].Verify(was, this); err != nil {
			t.Fatalf("proof from %s: %v", dir, err)
		}
	}
	if code, res := runJSON(t, "prove", "--rekor", url, "--log-key", logKey, "--previous", release("4", false), r3); code != 1 || res["code"] != errcode.StatementUnlogged {
		t.Fatalf("unlogged previous: %d %v", code, res)
	}
}
