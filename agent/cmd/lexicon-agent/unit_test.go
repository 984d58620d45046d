package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitFileVerifies checks the shipped unit with systemd-analyze verify, its binary paths pointed at
// a real build of this agent: Restart=always and the known-good binary's guard as ExecStartPre are
// what self-update relies on.
func TestUnitFileVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is required in CI (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	unit, err := os.ReadFile("lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nRestart=always\n", "\nExecStartPre=-/var/lib/lexicon-agent/update/known-good guard ", "\nStartLimitIntervalSec=0\n"} {
		if !strings.Contains(string(unit), want) {
			t.Fatalf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lexicon-agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "lexicon-agent.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/lexicon-agent", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// Without systemd as PID 1 verify may still complain about the machine (no D-Bus, no
	// multi-user.target); only complaints naming this unit's own lines count.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "lexicon-agent.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if err != nil && strings.Contains(string(out), "lexicon-agent.service") {
		t.Fatalf("systemd-analyze verify failed: %v\n%s", err, out)
	}
}
