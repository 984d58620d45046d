package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// agents are the agent binaries the tests built, by build key, in one folder for the test binary.
var agents struct {
	sync.Mutex
	dir   string
	built map[string]string
}

// buildAgent builds lexicon-agent for linux/goarch, stamped with version (none: the source's own),
// stripped of its symbol table when strip is set, once per test binary.
func buildAgent(t *testing.T, version, goarch string, strip bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds agent binaries")
	}
	agents.Lock()
	defer agents.Unlock()
	key := strings.Join([]string{version, goarch, map[bool]string{true: "stripped"}[strip]}, "-")
	if p, ok := agents.built[key]; ok {
		return p
	}
	if agents.dir == "" {
		dir, err := os.MkdirTemp("", "lexicon-release-agents-")
		if err != nil {
			t.Fatal(err)
		}
		agents.dir, agents.built = dir, map[string]string{}
	}
	var ldflags []string
	if version != "" {
		ldflags = append(ldflags, "-X", agentVersionSymbol+"="+version)
	}
	if strip {
		ldflags = append(ldflags, "-s", "-w")
	}
	out := filepath.Join(agents.dir, key, "lexicon-agent")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", strings.Join(ldflags, " "), "-o", out, "../../../agent/cmd/lexicon-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the agent %s: %v\n%s", key, err, b)
	}
	agents.built[key] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agents.dir != "" {
		os.RemoveAll(agents.dir)
	}
	os.Exit(code)
}

// TestBuildRefusesAnotherAgentVersion: build signs an agent only when the binary reports the
// release's version, read from its symbols for any platform, or asked when stripped and runnable
// here; anything else is refused with release.agent_mismatch and nothing written.
func TestBuildRefusesAnotherAgentVersion(t *testing.T) {
	key, _ := publisher(t)
	mods := modules(t, "1.2.3", nil)
	host := "linux/" + runtime.GOARCH
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || other == "" {
		t.Skip("agents are built for linux/amd64 and linux/arm64")
	}
	notAgent := filepath.Join(t.TempDir(), "not-an-agent")
	must(t, os.WriteFile(notAgent, []byte("#!/bin/sh\necho '{\"version\": \"1.2.3\"}'\n"), 0o755))
	// Four builds in all (each links a whole agent): the one stamped with the release, for this machine
	// and for the other platform, one stripped, one not stamped. The stripped one pinned for the other
	// platform stands for a stripped foreign binary: nothing runs it, so only its symbols could tell.
	stamped, stripped := buildAgent(t, "1.2.3", runtime.GOARCH, false), buildAgent(t, "1.2.3", runtime.GOARCH, true)
	for _, tc := range []struct {
		name, platform, binary string
		says                   string // "" when the build is to pass
	}{
		{"stamped with the release", host, stamped, ""},
		{"for the other platform, read from its symbols", "linux/" + other, buildAgent(t, "1.2.3", other, false), ""},
		{"stripped, asked here", host, stripped, ""},
		{"not stamped", host, buildAgent(t, "", runtime.GOARCH, false), "reports version 0.1.0, the release is 1.2.3: nodes would refuse it"},
		{"stripped, for another platform", "linux/" + other, stripped, "symbol table was stripped"},
		{"not an agent", host, notAgent, "not an ELF executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r")
			code, res := runJSON(t, "build", "--key", key, "--modules", mods, "--release", "1.2.3", "--sequence", "1", "--out", out,
				"--agent", tc.platform+"="+tc.binary)
			if tc.says == "" {
				if code != 0 {
					t.Fatalf("build: %d %v", code, res)
				}
				return
			}
			msg, _ := res["message"].(string)
			details, _ := res["details"].(map[string]any)
			if code != 1 || res["code"] != errcode.ReleaseAgentMismatch || !strings.Contains(msg, tc.says) ||
				details["artifact"] != "agent/"+strings.ReplaceAll(tc.platform, "/", "-") {
				t.Fatalf("build: %d %v, want %s saying %q", code, res, errcode.ReleaseAgentMismatch, tc.says)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("a refused build wrote the release folder")
			}
		})
	}
}
