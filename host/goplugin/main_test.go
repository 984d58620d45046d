package goplugin_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
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

// logTo is a logger that writes every record, at any level, as text to b, where a test reads it or waits
// for a line with b.WaitFor.
func logTo(b *testkit.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.Level(-8)}))
}

// quiet is a logger for benchmarks: warnings and errors only.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
