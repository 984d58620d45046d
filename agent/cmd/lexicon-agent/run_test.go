package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestRunKeepsRecipesWhenThePairingIsOver: when the plane answers a claim that the node is no longer
// active, run stops claiming and carries on with its recipes only, until it is stopped; it does not
// exit to be restarted and refused again.
func TestRunKeepsRecipesWhenThePairingIsOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var claims atomic.Int32
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case channel.PathArtifact:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(errcode.New(errcode.ReleaseNotFound, "nothing published yet"))
		case channel.PathClaim:
			claims.Add(1)
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
	// The log says when the agent has gone over to recipes only; the test then stops it.
	logR, logW := io.Pipe()
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "running recipes only") {
				said <- sc.Text()
				cancel()
				break
			}
		}
		io.Copy(io.Discard, logR)
	}()
	var out bytes.Buffer
	code := cli.Run(ctx, "lexicon-agent", "test", commands(),
		[]string{"run", "--state-dir", dir, "--config-dir", t.TempDir(), "-o", "json"}, &out, logW)
	logW.Close()
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out.String())
	}
	select {
	case line := <-said:
		if !strings.Contains(line, "ended this node's pairing") || !strings.Contains(line, errcode.AgentNotJoined) {
			t.Fatalf("log line %s", line)
		}
	default:
		t.Fatal("run ended without going over to recipes only")
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

// TestUnitRestartsOnFailure: the service unit starts the agent again whenever it exits (a self-update
// exits 0 for the new binary to start), with the guard before every start.
func TestUnitRestartsOnFailure(t *testing.T) {
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
	if !slices.Equal(settings["Restart"], []string{"always"}) || len(settings["ExecStart"]) == 0 || settings["ExecStart"][1] != "run" ||
		len(settings["ExecStartPre"]) < 2 || settings["ExecStartPre"][1] != "guard" {
		t.Fatalf("Restart=%v ExecStart=%v ExecStartPre=%v", settings["Restart"], settings["ExecStart"], settings["ExecStartPre"])
	}
}
