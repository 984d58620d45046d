package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// maxExposure is the exposure `systemd-analyze security` may rate the shipped unit at most (the scale
// runs from 0, fully sandboxed, to 10); agent/RATIONALE.md records the score and what each setting is
// for.
const maxExposure = 4.5

// exposure rates unit (with any drop-ins in its .d folder) offline, as systemd-analyze security does.
func exposure(t *testing.T, analyze, unit string) float64 {
	t.Helper()
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+) `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no overall exposure:\n%s", out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return score
}

// TestUnitExposure: the shipped unit, alone and with each capability's drop-in (dropins/), is rated
// offline by systemd-analyze security; the unit alone, and with each drop-in, stays within
// maxExposure. Packages need no drop-in: the package manager's changes run in transient units of
// their own (host/wasm/pkgmgr), outside this sandbox.
func TestUnitExposure(t *testing.T) {
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
	for _, name := range []string{"", "certbot.conf", "nftables.conf", "users.conf"} {
		t.Run("unit+"+name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lexicon-agent.service")
			if err := os.WriteFile(path, unit, 0o644); err != nil {
				t.Fatal(err)
			}
			if name != "" {
				dropIn, err := os.ReadFile(filepath.Join("dropins", name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(path+".d", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(path+".d", name), dropIn, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Every line parses: verify names the unit or the drop-in for any it does not take (the
			// binary is pointed at one that exists; the machine's own complaints are left aside).
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			verified := filepath.Join(t.TempDir(), "lexicon-agent.service")
			if err := os.WriteFile(verified, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/lexicon-agent", exe)), 0o644); err != nil {
				t.Fatal(err)
			}
			if name != "" {
				if err := os.CopyFS(verified+".d", os.DirFS(path+".d")); err != nil {
					t.Fatal(err)
				}
			}
			out, _ := exec.Command(analyze, "verify", verified).CombinedOutput()
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "lexicon-agent.service") || (name != "" && strings.Contains(line, name)) {
					t.Errorf("systemd-analyze verify: %s", line)
				}
			}
			score := exposure(t, analyze, path)
			t.Logf("exposure of the unit with %q: %.1f", name, score)
			if score > maxExposure {
				t.Fatalf("systemd-analyze security rates the unit with %q at %.1f, above %.1f", name, score, maxExposure)
			}
		})
	}
}
