package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestRunExitsWhenThePairingIsOver: when the plane answers a claim that the node is no longer active,
// run stops claiming and exits with ExitPairingOver and agent.not_joined, so systemd does not start it
// again every few seconds; other failures keep exit status 1.
func TestRunExitsWhenThePairingIsOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var claims atomic.Int32
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case channel.PathArtifact:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(errcode.New(errcode.ReleaseNotFound, "nothing published yet"))
		case channel.PathClaim:
			if claims.Add(1) > 1 {
				cancel() // the agent claimed again after being told its pairing is over: end the test
			}
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(errcode.New(errcode.NodeNotActive, "node node_1 is disconnected; the machine must join again with a fresh key").
				With("state", "disconnected"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer plane.Close()

	dir := filepath.Join(t.TempDir(), "state")
	sd, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sd.Key(); err != nil {
		t.Fatal(err)
	}
	if err := sd.SavePairing(state.Pairing{Plane: plane.URL, JoinID: "join_1", Status: channel.JoinApproved, NodeID: "node_1"}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, "lexicon-agent", "test", commands(),
		[]string{"run", "--state-dir", dir, "--config-dir", t.TempDir(), "-o", "json"}, &out, &errOut)
	if code != ExitPairingOver {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPairingOver, out.String(), errOut.String())
	}
	var res struct {
		OK      bool   `json:"ok"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.OK || res.Code != errcode.AgentNotJoined || !strings.Contains(res.Message, errcode.NodeNotActive) {
		t.Fatalf("result %+v", res)
	}
	if n := claims.Load(); n != 1 {
		t.Fatalf("%d claims, want 1", n)
	}

	// A state folder that cannot be made is a failure a restart may cure: exit status 1.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runAgent(t, "run", "--state-dir", filepath.Join(file, "state"), "--config-dir", t.TempDir(), "-o", "json"); code != 1 ||
		!strings.Contains(out, errcode.IOFailed) {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
}

// TestUnitDoesNotRestartAnOverPairing: the service unit restarts the agent when it fails, except with
// ExitPairingOver.
func TestUnitDoesNotRestartAnOverPairing(t *testing.T) {
	f, err := os.Open("lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			settings[k] = append(settings[k], strings.Fields(v)...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(settings["Restart"], []string{"on-failure"}) {
		t.Fatalf("Restart=%v", settings["Restart"])
	}
	if !slices.Contains(settings["RestartPreventExitStatus"], strconv.Itoa(ExitPairingOver)) {
		t.Fatalf("RestartPreventExitStatus=%v does not name %d", settings["RestartPreventExitStatus"], ExitPairingOver)
	}
}
