package main

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Restart timing: the first restart waits restartSec, as the agent's unit's RestartSec does; a start
// that dies within youngFor doubles the wait, up to maxRestartWait, so a binary that cannot run does
// not spin; one that ran longer starts the count again.
const (
	restartSec     = time.Second
	maxRestartWait = 30 * time.Second
	youngFor       = 10 * time.Second
)

// supervisor runs the demo's agent the way its systemd unit runs it on a machine
// (lexicon-agent.service: ExecStartPre=guard, ExecStart=run, Restart=always): guard before every
// start, then run, and both again whenever run exits, an exit 0 included, because that is how the
// agent asks for its new binary to be started once it has swapped it in. Without it an agent that
// updates itself stays down.
type supervisor struct {
	exe  string   // the agent's own copy, which it replaces when it updates
	args []string // the folders, after the command
	log  io.Writer

	mu      sync.Mutex
	cur     *exec.Cmd
	starts  int
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// supervise starts exe under a supervisor; stop ends both.
func supervise(exe string, args []string, log io.Writer) *supervisor {
	s := &supervisor{exe: exe, args: args, log: log, quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *supervisor) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "%s supervisor: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

func (s *supervisor) loop() {
	defer close(s.done)
	wait := restartSec
	for n := 1; ; n++ {
		started := time.Now()
		guard := exec.Command(s.exe, append([]string{"guard"}, s.args...)...)
		guard.Stdout, guard.Stderr = s.log, s.log
		guard.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err := guard.Run()
		if err != nil {
			s.logf("guard before start %d failed: %v", n, err) // as ExecStartPre failing: no start
		} else {
			cmd := exec.Command(s.exe, append([]string{"run"}, s.args...)...)
			cmd.Stdout, cmd.Stderr = s.log, s.log
			// Its own process group, as a service's: Ctrl-C reaches the demo, which stops the agent
			// through the supervisor, never the agent behind the supervisor's back.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			// A child the agent left behind may hold its output open; Wait must not wait on it.
			cmd.WaitDelay = 5 * time.Second
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				return
			}
			err = cmd.Start()
			if err == nil {
				s.cur, s.starts = cmd, n
			}
			s.mu.Unlock()
			if err != nil {
				s.logf("start %d failed: %v", n, err)
			} else {
				s.logf("start %d: pid %d", n, cmd.Process.Pid)
				err = cmd.Wait()
				s.logf("start %d ended: %s", n, exitOf(err))
			}
		}
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
		if time.Since(started) >= youngFor {
			wait = restartSec
		}
		select {
		case <-s.quit:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRestartWait)
	}
}

// stop ends the agent and what it started, its whole process group (SIGTERM, SIGKILL after 10 s), and
// starts no other.
func (s *supervisor) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.stopped = true
	close(s.quit)
	cur := s.cur
	s.mu.Unlock()
	if cur != nil {
		_ = syscall.Kill(-cur.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cur.Process.Pid, syscall.SIGKILL)
		}
	}
	<-s.done
}

// started is how many times the agent was started.
func (s *supervisor) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

func exitOf(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
