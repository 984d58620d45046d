package goplugin_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
)

// Driver executables built once for the package's tests, from internal/testdriver.
var bins = map[string][]byte{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goplugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		for name, pkg := range map[string]string{
			"dns":    "./internal/testdriver/dns",
			"cloud":  "./internal/testdriver/cloud",
			"memory": "../../examples/driver-memory", // an outside author's driver
			"future": "./internal/testdriver/future",
		} {
			out := filepath.Join(dir, name)
			// Built as a release builds drivers: no symbol table or DWARF, no local paths.
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "build test driver %s: %v\n", name, err)
				return 1
			}
			b, err := os.ReadFile(out)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			bins[name] = b
		}
		return m.Run()
	}()
	os.Exit(code)
}

// storeWith returns a fresh store holding the test driver name, and its digest.
func storeWith(t testing.TB, name string) (*cas.Store, string) {
	t.Helper()
	s, err := cas.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Put(bins[name])
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// logSink is a slog handler that keeps every record as text and can wait for one containing a marker.
type logSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiters map[string]chan struct{}
}

func newLogSink() *logSink { return &logSink{waiters: map[string]chan struct{}{}} }

func (l *logSink) Logger() *slog.Logger { return slog.New(l) }

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var line strings.Builder
	fmt.Fprintf(&line, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&line, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(line.String() + "\n")
	for marker, ch := range l.waiters {
		if strings.Contains(line.String(), marker) {
			close(ch)
			delete(l.waiters, marker)
		}
	}
	return nil
}

func (l *logSink) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrSink{l, attrs}
}

func (l *logSink) WithGroup(string) slog.Handler { return l }

// attrSink carries With attributes into the sink's lines.
type attrSink struct {
	*logSink
	attrs []slog.Attr
}

func (a *attrSink) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(a.attrs...)
	return a.logSink.Handle(ctx, r)
}

func (a *attrSink) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrSink{a.logSink, append(append([]slog.Attr{}, a.attrs...), attrs...)}
}

// Wait returns a channel closed when a line holding marker has been logged (or already was).
func (l *logSink) Wait(marker string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(l.buf.String(), marker) {
		close(ch)
		return ch
	}
	l.waiters[marker] = ch
	return ch
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// quiet is a logger for benchmarks: warnings and errors only.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
