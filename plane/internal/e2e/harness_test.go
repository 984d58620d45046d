package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// bin holds the binaries TestMain builds.
var bin string

// root is the repository root, where `make wasm` leaves build/wasm.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "lexicon-e2e-bin-")
	if err != nil {
		panic(err)
	}
	bin = dir
	cmd := exec.Command("go", "build", "-o", dir+"/",
		"./plane/cmd/lexicon-plane", "./plane/cmd/lexicon", "./agent/cmd/lexicon-agent", "./registry/cmd/lexicon-release")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building binaries: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs a binary to completion and returns its stdout; it fails the test on a non-zero exit unless
// the caller expects failure with wantFail.
func run(t testing.TB, wantFail bool, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if (err != nil) != wantFail {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// runJSON runs a command with -o json and decodes its answer.
func runJSON(t testing.TB, wantFail bool, name string, args ...string) map[string]any {
	t.Helper()
	out := run(t, wantFail, name, append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s %v: not JSON: %v\n%s", name, args, err, out)
	}
	return m
}

// proc is a long-running process (a plane or an agent) whose stderr is kept for the test log, and is
// what the tests wait on: the processes log each change of state the tests look for.
type proc struct {
	cmd    *exec.Cmd
	stderr *testkit.Buffer
	tee    *testkit.Buffer // when set, stderr's lines are written here too
	done   chan struct{}
}

func start(t testing.TB, name string, args ...string) (*proc, io.Reader) {
	t.Helper()
	return startTee(t, nil, name, args...)
}

// startTee is start with every stderr line also written to tee (a log several processes share).
func startTee(t testing.TB, tee *testkit.Buffer, name string, args ...string) (*proc, io.Reader) {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(bin, name), args...), stderr: &testkit.Buffer{}, tee: tee, done: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := []byte(sc.Text() + "\n") // one Write a line, so a shared tee never interleaves two
			_, _ = p.stderr.Write(line)
			if p.tee != nil {
				_, _ = p.tee.Write(line)
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, p.log())
		}
	})
	return p, stdout
}

func (p *proc) log() string { return p.stderr.String() }

// logged waits until the process has logged a line holding s.
func (p *proc) logged(t testing.TB, s string) {
	t.Helper()
	p.stderr.WaitFor(t, s)
}

// jobLogged is the start of the line a plane logs (slog JSON) when job id moves with msg: "job handed
// out" when it is claimed (it is then running), "job finished" once its result is stored.
func jobLogged(msg, id string) string { return `"msg":"` + msg + `","job":"` + id + `"` }

// stop ends the process politely, then firmly.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process at once, as a crash would.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// storeURL is a fresh store for one plane: a SQLite file, or a fresh PostgreSQL schema.
func storeURL(t testing.TB, backend string) string {
	t.Helper()
	if backend == "sqlite" {
		return filepath.Join(t.TempDir(), "plane.db")
	}
	dsn := os.Getenv("LEXICON_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("PostgreSQL not reachable (%v); CI=true makes this a failure", err)
	}
	defer conn.Close(context.Background())
	schema := fmt.Sprintf("e2e_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// backends runs f on SQLite and on PostgreSQL.
func backends(t *testing.T, f func(t *testing.T, backend string)) {
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) { f(t, b) })
	}
}
