package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitsVerify checks the packages' units with systemd-analyze verify, as the agent's own unit is
// checked in agent/cmd/lexicon-agent: the plane's unit, and the agent's unit with the package's drop-in
// beside it, which must still restart always, guard each start with the known-good binary, and now run
// the binary from /usr/lib/lexicon-agent.
// Their binary paths point at an executable that exists here (this test's own), since verify only
// checks that the command can be found.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is required in CI (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plane := read(t, "debian/lexicon-plane/lexicon-plane.service")
	agent := read(t, "debian/lexicon-agent/lexicon-agent.service")
	dropIn := read(t, "debian/lexicon-agent/package.conf")
	for _, want := range []string{"\nExecStart=\nExecStart=/usr/lib/lexicon-agent/lexicon-agent run ",
		"\nReadWritePaths=/usr/lib/lexicon-agent\n", "\nConfigurationDirectoryMode=0700\n"} {
		if !strings.Contains(dropIn, want) {
			t.Errorf("the agent's drop-in lacks %q", strings.TrimSpace(want))
		}
	}
	// The unit's guard is the known-good binary wherever the agent is installed: the drop-in keeps it.
	if strings.Contains(dropIn, "\nExecStartPre=") {
		t.Error("the agent's drop-in replaces the unit's guard")
	}
	for _, want := range []string{"\nUser=lexicon-plane\n", "\nExecStart=/usr/bin/lexicon-plane serve --data /var/lib/lexicon-plane $LEXICON_PLANE_OPTS\n",
		"\nStateDirectory=lexicon-plane\n", "\nStateDirectoryMode=0700\n", "\nEnvironmentFile=-/etc/default/lexicon-plane\n"} {
		if !strings.Contains(plane, want) {
			t.Errorf("the plane's unit lacks %q", strings.TrimSpace(want))
		}
	}

	dir := t.TempDir()
	write(t, filepath.Join(dir, "lexicon-plane.service"), strings.ReplaceAll(plane, "/usr/bin/lexicon-plane", exe))
	write(t, filepath.Join(dir, "lexicon-agent.service"), strings.ReplaceAll(agent, "/usr/local/bin/lexicon-agent", exe))
	must(t, os.MkdirAll(filepath.Join(dir, "lexicon-agent.service.d"), 0o755))
	write(t, filepath.Join(dir, "lexicon-agent.service.d", "package.conf"), strings.ReplaceAll(dropIn, "/usr/lib/lexicon-agent/lexicon-agent", exe))
	for _, unit := range []string{"lexicon-plane.service", "lexicon-agent.service"} {
		out, err := exec.Command(analyze, "verify", filepath.Join(dir, unit)).CombinedOutput()
		// Without systemd as PID 1 verify may still complain about the machine (no D-Bus, no
		// multi-user.target); only complaints naming the unit or its drop-in count.
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, unit) || strings.Contains(line, "package.conf") {
				t.Errorf("systemd-analyze verify %s: %s", unit, line)
			}
		}
		if err != nil && strings.Contains(string(out), unit) {
			t.Fatalf("systemd-analyze verify %s failed: %v\n%s", unit, err, out)
		}
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	data, err := assets.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func write(t *testing.T, path, data string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(data), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
