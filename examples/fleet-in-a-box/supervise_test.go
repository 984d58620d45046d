package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestSupervisor runs a real program under the supervisor as systemd runs the agent's unit: a guard
// that fails means no start, and the next attempt guards again; a run that exits 0 (as the agent does
// once it has swapped in its update) is started again; each run is in its own process group, so
// Ctrl-C at the demo's terminal reaches only the demo; stop ends the run with SIGTERM and starts no
// other.
func TestSupervisor(t *testing.T) {
	work := t.TempDir()
	calls := filepath.Join(work, "calls")
	// The first guard fails; the first run exits 0; the second runs until it is told to stop.
	exe := filepath.Join(work, "agent")
	script := `#!/bin/sh
calls=` + calls + `
echo "$*" >> "$calls"
n=$(grep -c "^$1 " "$calls")
case "$1.$n" in
guard.1) exit 1 ;;
guard.*) exit 0 ;;
run.1) exit 0 ;;
esac
trap 'kill $!; echo "run.$n TERM" >> "$calls"; exit 0' TERM
sleep 600 &
echo "run.$n waiting"
wait $!
`
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	log := &testkit.Buffer{}
	s := supervise(exe, []string{"--state", work}, log)
	log.WaitFor(t, "guard before start 1 failed: exit status 1")
	log.WaitFor(t, "start 2 ended: exit status 0")
	log.WaitFor(t, "run.2 waiting") // its stdout goes to the log, as the agent's does
	pid, _ := strconv.Atoi(regexp.MustCompile(`start 3: pid (\d+)`).FindStringSubmatch(log.String())[1])
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("the run's process group %d (%v), the test's %d: want its own", pgid, err, syscall.Getpgrp())
	}
	if got := s.started(); got != 3 {
		t.Errorf("started() = %d after the third start", got)
	}
	s.stop()
	s.stop() // a second stop waits for the first, as the demo's deferred stop after Ctrl-C does
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("guard --state "+work+"\n", 2) + "run --state " + work + "\n" +
		"guard --state " + work + "\n" + "run --state " + work + "\n" + "run.2 TERM\n"
	if string(b) != want {
		t.Errorf("the supervisor's calls:\n%s\nwant:\n%s\nlog:\n%s", b, want, log)
	}
	if strings.Contains(log.String(), "start 4") {
		t.Errorf("a start after stop:\n%s", log)
	}
}
