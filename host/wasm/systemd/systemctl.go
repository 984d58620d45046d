package systemd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Systemctl is the Manager of a machine running systemd, through systemctl and journalctl run with
// fixed arguments (never a shell), the unit name always after "--".
type Systemctl struct {
	Systemctl  string // path of systemctl
	Journalctl string // path of journalctl
}

// Detect returns a Systemctl when systemd is the running service manager (as sd_booted decides: the
// directory /run/systemd/system exists), and Unavailable otherwise.
func Detect() Manager {
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return Unavailable{Reason: "systemd is not running on this machine"}
	}
	s := &Systemctl{Systemctl: findTool("systemctl"), Journalctl: findTool("journalctl")}
	if s.Systemctl == "" {
		return Unavailable{Reason: "systemd runs but systemctl was not found"}
	}
	return s
}

func findTool(name string) string {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

const maxToolOutput = 8 << 20

func run(ctx context.Context, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"LANG=C", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}
	cmd.Dir = "/"
	var out, stderr bytes.Buffer
	cmd.Stdout = &limited{w: &out, n: maxToolOutput}
	cmd.Stderr = &limited{w: &stderr, n: 64 << 10}
	err := cmd.Run()
	if err != nil {
		var exit *exec.ExitError
		msg := strings.TrimSpace(stderr.String())
		if errors.As(err, &exit) {
			// systemctl's exit status 5 is "unit not loaded / not found" (LSB status 5 for actions).
			if exit.ExitCode() == 5 || strings.Contains(msg, "not found") {
				return nil, fmt.Errorf("%w: %s", ErrNotFound, msg)
			}
			return nil, fmt.Errorf("%s exited %d: %s", path, exit.ExitCode(), msg)
		}
		return nil, err
	}
	return out.Bytes(), nil
}

func (s *Systemctl) Unit(ctx context.Context, name string) (capv1.Unit, error) {
	out, err := run(ctx, s.Systemctl, "show", "--no-pager", "--property="+strings.Join(ShowProperties, ","), "--", name)
	if err != nil {
		return capv1.Unit{}, wrap(err, "systemctl show")
	}
	return UnitFromProperties(name, ParseShow(string(out))), nil
}

func (s *Systemctl) FailedUnits(ctx context.Context) ([]string, error) {
	out, err := run(ctx, s.Systemctl, "list-units", "--state=failed", "--all", "--plain", "--no-legend", "--no-pager")
	if err != nil {
		return nil, wrap(err, "systemctl list-units")
	}
	return ParseListUnits(string(out)), nil
}

// ParseListUnits reads the unit names of systemctl list-units --plain --no-legend.
func ParseListUnits(out string) []string {
	var names []string
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && ValidName(f[0]) {
			names = append(names, f[0])
		}
	}
	return names
}

func (s *Systemctl) Restart(ctx context.Context, name string) error {
	_, err := run(ctx, s.Systemctl, "restart", "--no-ask-password", "--", name)
	return wrap(err, "systemctl restart")
}

func (s *Systemctl) ResetFailed(ctx context.Context, name string) error {
	_, err := run(ctx, s.Systemctl, "reset-failed", "--no-ask-password", "--", name)
	return wrap(err, "systemctl reset-failed")
}

func (s *Systemctl) Enable(ctx context.Context, name string) error {
	if _, err := run(ctx, s.Systemctl, "daemon-reload", "--no-ask-password"); err != nil {
		return wrap(err, "systemctl daemon-reload")
	}
	_, err := run(ctx, s.Systemctl, "enable", "--no-ask-password", "--", name)
	return wrap(err, "systemctl enable")
}

func (s *Systemctl) Act(ctx context.Context, action, name string) error {
	switch action {
	case ActDaemonReload:
		_, err := run(ctx, s.Systemctl, "daemon-reload", "--no-ask-password")
		return wrap(err, "systemctl daemon-reload")
	case ActStart, ActStop, ActReload, ActDisable:
		_, err := run(ctx, s.Systemctl, action, "--no-ask-password", "--", name)
		return wrap(err, "systemctl "+action)
	}
	return errcode.New(errcode.CapabilityInvalid, "no systemd action %q", action)
}

// Vacuum runs journalctl --vacuum-size, which removes only archived journal files, oldest first; the
// active files stay, so the journal keeps what it is writing now.
func (s *Systemctl) Vacuum(ctx context.Context, bytes int64) error {
	if s.Journalctl == "" {
		return errcode.New(errcode.CapabilityUnknown, "journalctl was not found").With(errcode.DetailReason, "journalctl was not found")
	}
	_, err := run(ctx, s.Journalctl, "--vacuum-size="+strconv.FormatInt(bytes, 10))
	return wrap(err, "journalctl --vacuum-size")
}

func (s *Systemctl) Journal(ctx context.Context, unit string, lines int) ([]capv1.JournalEntry, error) {
	if s.Journalctl == "" {
		return nil, errcode.New(errcode.CapabilityUnknown, "journalctl was not found").With(errcode.DetailReason, "journalctl was not found")
	}
	out, err := run(ctx, s.Journalctl, "--no-pager", "--output=json", "--lines="+strconv.Itoa(lines), "--unit", unit)
	if err != nil {
		return nil, wrap(err, "journalctl")
	}
	return ParseJournalJSON(out)
}

// ParseJournalJSON reads journalctl --output=json: one object per line, MESSAGE a string or, when it is
// not UTF-8, an array of bytes; PRIORITY and __REALTIME_TIMESTAMP (microseconds) as strings.
func ParseJournalJSON(out []byte) ([]capv1.JournalEntry, error) {
	var entries []capv1.JournalEntry
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), maxToolOutput)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Message  json.RawMessage `json:"MESSAGE"`
			Priority string          `json:"PRIORITY"`
			Time     string          `json:"__REALTIME_TIMESTAMP"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "journalctl wrote a line that is not JSON")
		}
		e := capv1.JournalEntry{Priority: 6}
		if p, err := strconv.Atoi(rec.Priority); err == nil {
			e.Priority = p
		}
		if us, err := strconv.ParseInt(rec.Time, 10, 64); err == nil {
			e.Time = time.UnixMicro(us).UTC()
		}
		var s string
		if json.Unmarshal(rec.Message, &s) == nil {
			e.Message = s
		} else {
			var ints []int
			if json.Unmarshal(rec.Message, &ints) == nil {
				b := make([]byte, len(ints))
				for i, v := range ints {
					b[i] = byte(v)
				}
				e.Message = strings.ToValidUTF8(string(b), "\uFFFD")
			}
		}
		entries = append(entries, e)
	}
	return entries, sc.Err()
}

func wrap(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return errcode.Wrap(err, errcode.CapabilityNotFound, "%s: unit not found", what)
	case errors.Is(err, context.DeadlineExceeded):
		return errcode.Wrap(err, errcode.CapabilityTimeout, "%s did not finish in time", what)
	}
	return errcode.Wrap(err, errcode.CapabilityFailed, "%s failed", what)
}

// limited keeps the first n bytes and drops the rest, so a tool's flood cannot fill memory.
type limited struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

var (
	_ Manager = (*Systemctl)(nil)
	_ Manager = Unavailable{}
)
