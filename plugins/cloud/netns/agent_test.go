package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
)

// The real lexicon-agent, built from this tree, installed by user data as provisioning installs it
// (fetched with curl, sha256 checked, the real unit file) and started by the systemctl shim: it runs
// in the instance, guard first, and power-off stops it. (Joining needs a plane: the plane's end-to-end
// tests do that.)
func TestRealAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lexicon-agent")
	}
	needNamespaces(t)
	bin := filepath.Join(t.TempDir(), "lexicon-agent")
	build := exec.Command("go", "build", "-o", bin, "./agent/cmd/lexicon-agent")
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build lexicon-agent: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	url := "http://10.213.108.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	unit, err := os.ReadFile("../../../agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	ud := fmt.Sprintf(`#cloud-config
write_files:
  - path: /etc/systemd/system/lexicon-agent.service
    encoding: b64
    content: %s
runcmd:
  - curl -fsS -o /usr/local/bin/lexicon-agent.new %s/agent/linux-amd64
  - echo "%s  /usr/local/bin/lexicon-agent.new" | sha256sum -c -
  - install -m 0755 /usr/local/bin/lexicon-agent.new /usr/local/bin/lexicon-agent
  - rm /usr/local/bin/lexicon-agent.new
  - systemctl enable --now lexicon-agent
`, base64.StdEncoding.EncodeToString(unit), url, hex.EncodeToString(sum[:]))
	ctx := context.Background()
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.108.0/24"})
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "host", Label: "real", UserData: ud})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	waitStatus(t, d, in.ID, cloud.StatusRunning)

	// The agent logs "agent running" with its pid once it is up (recipes only: no plane, no policy).
	logPath := filepath.Join(d.cfg.state.dir(in.ID), "run", "lexicon-agent.service.log")
	pid := 0
	waitFor(t, "the agent's \"agent running\" line", func() bool {
		raw, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(raw), "\n") {
			var ev struct {
				Msg string `json:"msg"`
				PID int    `json:"pid"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Msg == "agent running" {
				pid = ev.PID
				return true
			}
		}
		return false
	})
	if !inNamespace(pid, in.ID) {
		t.Fatalf("the agent (pid %d) does not run in the instance's namespace", pid)
	}
	// Its state is the instance's own, not the host's.
	if entries, err := os.ReadDir(filepath.Join(d.cfg.state.dir(in.ID), "fs", "var-lib-lexicon-agent")); err != nil || len(entries) == 0 {
		t.Errorf("the agent left no state in the instance's /var/lib/lexicon-agent: %v %v", entries, err)
	}
	if err := d.PowerOff(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if !waitGone(pid, time.Second) {
		t.Errorf("the agent (%d) runs on after power off", pid)
	}
}
