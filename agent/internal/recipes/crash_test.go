package recipes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// crashEnv names the folders a crash child works in.
const crashEnv = "LEXICON_RECIPES_CRASH_CHILD"

type crashDirs struct {
	Release, Trust, State, Config, Script, Lock string
}

// TestCrashChild is the agent that dies: it repairs nginx, and the restart kills it (as restarting the
// agent's own unit would), between the attempt's ledger line and its outcome. It runs only as the
// child of TestCrashBetweenAttemptAndOutcome.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		t.Skip("run by TestCrashBetweenAttemptAndOutcome")
	}
	var d crashDirs
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatal(err)
	}
	sd := &machine{Fake: systemdtest.New(map[string]string{"nginx.service": failed}), onRestart: func() { os.Exit(7) }}
	e := newEnv(t, setup{dirs: &env{state: d.State, config: d.Config, script: d.Script, lock: d.Lock, sd: sd,
		rel: vocabtest.Release{Dir: d.Release, Trust: d.Trust}, clock: testkit.NewClock(t0)}})
	e.step()
	e.after(tick)
	t.Fatal("the repair returned; it should have ended the process")
}

// TestCrashBetweenAttemptAndOutcome: a repair that kills the agent is, on the next start, a counted and
// failed (interrupted) attempt, and the waits go on from it.
func TestCrashBetweenAttemptAndOutcome(t *testing.T) {
	e := newEnv(t, unitHealth(nil))
	raw, _ := json.Marshal(crashDirs{Release: e.rel.Dir, Trust: e.rel.Trust, State: e.state, Config: e.config, Script: e.script, Lock: e.lock})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(raw))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("the child did not die in its repair: %v\n%s", err, out)
	}
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair")

	e.clock.Advance(6 * time.Minute)
	e = newEnv(t, setup{dirs: e})
	e.step()
	e.every(tick, 2)
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "6 outcome:1:interrupted:recipe.interrupted",
		"6 check:fail", "11 check:fail", "16 check:fail", "16 attempt:2:repair", "16 outcome:2:repaired")
}

// TestRun drives the loop through Run on the fake clock while claims read and deliver its reports
// from another goroutine (run with -race).
func TestRun(t *testing.T) {
	e := newEnv(t, unitHealth(nil))
	stepped := make(chan struct{})
	e.loop.onStep = func() { stepped <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.loop.Run(ctx) }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, cases := e.loop.Report()
				e.loop.Delivered(cases)
				runtime.Gosched()
			}
		}
	})
	<-stepped
	e.loop.Wake() // a new vocabulary: Run steps at once, without the clock moving
	<-stepped
	testkit.Wait(t, e.clock.Waiting(), "the wait the wake cut short")
	for range 3 {
		testkit.Wait(t, e.clock.Waiting(), "the loop waiting on the clock")
		e.clock.Advance(tick)
		<-stepped
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:repaired", "10 check:pass")
}
