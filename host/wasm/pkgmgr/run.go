package pkgmgr

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// env is every program's whole environment: no terminal, no questions, changed configuration files
// kept (ucf's as well as dpkg's), apt's listchanges and needrestart's hook silent (the word reports
// and restarts, not the package manager behind its back), and messages in the C locale, which is the
// text the host reads.
var env = []string{
	"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
	"LC_ALL=C", "LANG=C", "LANGUAGE=",
	"HOME=/root", "TERM=dumb",
	"DEBIAN_FRONTEND=noninteractive", "DEBCONF_NONINTERACTIVE_SEEN=true",
	"APT_LISTCHANGES_FRONTEND=none", "APT_LISTBUGS_FRONTEND=none",
	"UCF_FORCE_CONFFOLD=1",
	"NEEDRESTART_SUSPEND=1",
}

// Output caps: what a program may print before the rest is dropped.
const (
	maxOutput    = 8 << 20
	maxErrOutput = 256 << 10
)

// output is a finished program's output and exit status.
type output struct {
	stdout, stderr []byte
	exit           int
}

// run runs argv (an absolute path inside the root, and fixed arguments) with env and no input, in its
// own process group, chrooted into the root when it is not "/". The whole group is killed when limit
// passes or ctx ends: a timeout is capability.timeout. A program that cannot start is
// capability.failed; one that ran and exited non-zero is no error here (its status is in output).
func (a *Apt) run(ctx context.Context, limit time.Duration, environ []string, argv ...string) (output, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = environ
	cmd.Dir = "/"
	stdout, stderr := &capped{n: maxOutput}, &capped{n: maxErrOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r := a.root(); r != "/" {
		cmd.SysProcAttr.Chroot = r
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	out := output{stdout: stdout.b.Bytes(), stderr: stderr.b.Bytes()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return out, errcode.New(errcode.CapabilityTimeout, "%s ran past %s and was stopped", argv[0], limit.Round(time.Millisecond)).
			With(errcode.DetailLimitMS, limit.Milliseconds())
	case errors.As(err, &exit):
		out.exit = exit.ExitCode()
	case err != nil:
		return out, errcode.Wrap(err, errcode.CapabilityFailed, "cannot run %s", argv[0])
	}
	return out, nil
}

// messages returns apt's and dpkg's "E:"/"W:" lines and dpkg's "dpkg: error" lines, at most max of
// them, in order.
func messages(out []byte, max int) []string {
	var msgs []string
	sc := newScanner(out)
	for sc.Scan() && len(msgs) < max {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "E: ") || strings.HasPrefix(l, "W: ") || strings.HasPrefix(l, "dpkg: error") {
			msgs = append(msgs, l)
		}
	}
	return msgs
}

// firstError is the first "E:" or "dpkg: error" line, or the last line printed when there is none.
func firstError(o output) string {
	for _, m := range messages(append(append([]byte{}, o.stderr...), o.stdout...), 64) {
		if !strings.HasPrefix(m, "W: ") {
			return m
		}
	}
	lines := strings.Split(strings.TrimSpace(string(o.stderr)), "\n")
	return lines[len(lines)-1]
}

// lockMessage reports whether apt or dpkg said another run holds its lock.
func lockMessage(o output) bool {
	s := string(o.stderr) + string(o.stdout)
	for _, m := range []string{"Could not get lock", "Unable to lock", "Unable to acquire the dpkg frontend lock",
		"frontend lock was locked by another process", "database is locked by another process"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// capped keeps the first n bytes written and drops the rest.
type capped struct {
	b bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
