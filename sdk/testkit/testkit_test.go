package testkit_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// recorder is a testing.TB whose failures are recorded instead of failing the real test, with a
// deadline of its own so a wait's bound can be tested in milliseconds.
type recorder struct {
	testing.TB
	deadline time.Time
	mu       sync.Mutex
	failures []string
	fatal    bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Deadline() (time.Time, bool) { return r.deadline, !r.deadline.IsZero() }

// run calls f with a recorder as testing.T would run a test: on its own goroutine, which Fatalf ends.
// The recorder's deadline leaves f's waits about 50ms.
func run(t *testing.T, f func(tb testing.TB)) *recorder {
	t.Helper()
	r := &recorder{TB: t, deadline: time.Now().Add(3*time.Second + 50*time.Millisecond)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestWantCode(t *testing.T) {
	notFound := errcode.New(errcode.CloudNotFound, "no instance i-1")
	for _, tc := range []struct {
		name string
		err  error
		fail string // "" when the assertion holds
	}{
		{"the code", notFound, ""},
		{"the code wrapped without one", fmt.Errorf("get: %w", notFound), ""},
		{"no error", nil, "got no error, want cloud.not_found"},
		{"another code", errcode.New(errcode.CloudInvalid, "bad"), `(code "cloud.invalid"), want cloud.not_found`},
		{"no code", errors.New("plain"), `(code ""), want cloud.not_found`},
		{"the code inside another", errcode.Wrap(notFound, errcode.DriverCrashed, "lost"), `(code "driver.crashed")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, func(tb testing.TB) { testkit.WantCode(tb, tc.err, errcode.CloudNotFound) })
			checkFailure(t, r, tc.fail, true)
			r = run(t, func(tb testing.TB) {
				if got := testkit.CheckCode(tb, tc.err, errcode.CloudNotFound, "GetInstance"); got != (tc.fail == "") {
					t.Errorf("CheckCode = %v", got)
				}
			})
			checkFailure(t, r, tc.fail, false)
			if tc.fail != "" && !strings.HasPrefix(r.failures[0], "GetInstance: ") {
				t.Errorf("CheckCode's failure %q does not name what was checked", r.failures[0])
			}
		})
	}
}

// checkFailure checks that r failed with a message holding want (or did not fail when want is ""),
// fatally or not.
func checkFailure(t *testing.T, r *recorder, want string, fatal bool) {
	t.Helper()
	switch {
	case want == "" && len(r.failures) > 0:
		t.Errorf("failed with %q, want no failure", r.failures)
	case want != "" && (len(r.failures) != 1 || !strings.Contains(r.failures[0], want)):
		t.Errorf("failures %q, want one holding %q", r.failures, want)
	case want != "" && r.fatal != fatal:
		t.Errorf("fatal = %v, want %v", r.fatal, fatal)
	}
}

func TestWait(t *testing.T) {
	ch := make(chan int)
	go func() { ch <- 7 }()
	if got := testkit.Wait(t, ch, "seven"); got != 7 {
		t.Fatalf("got %d", got)
	}
	closed := make(chan struct{})
	close(closed)
	testkit.Wait(t, closed, "a closed channel")

	never := make(chan int)
	start := time.Now()
	r := run(t, func(tb testing.TB) { testkit.Wait(tb, never, "a value never sent") })
	checkFailure(t, r, "timed out waiting for a value never sent", true)
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("the wait lasted %s, past the test's deadline less the margin", waited)
	}
}

func TestCondUntil(t *testing.T) {
	var (
		c  testkit.Cond
		mu sync.Mutex
		n  int
	)
	go func() {
		for range 100 {
			mu.Lock()
			n++
			mu.Unlock()
			c.Broadcast()
		}
	}()
	c.Until(t, "n to reach 100", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n == 100
	})

	r := run(t, func(tb testing.TB) { c.Until(tb, "something false", func() bool { return false }) })
	checkFailure(t, r, "timed out waiting for something false", true)
}

func TestBufferWaitFor(t *testing.T) {
	var b testkit.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	b.WaitFor(t, "line 7\n")
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 8 {
		t.Fatalf("%d lines, want 8:\n%s", got, b.String())
	}
	if string(b.Bytes()) != b.String() {
		t.Fatal("Bytes and String differ")
	}
	b.Reset()
	if b.String() != "" {
		t.Fatal("Reset kept text")
	}
	r := run(t, func(tb testing.TB) { b.WaitFor(tb, "line 7") })
	checkFailure(t, r, `timed out waiting for the output to hold "line 7"`, true)
	fmt.Fprint(&b, "line 6\n")
	r = run(t, func(tb testing.TB) { b.WaitFor(tb, "line 7") })
	checkFailure(t, r, "it ends:\nline 6\n", true)
}

func TestBufferWaitForAny(t *testing.T) {
	var b testkit.Buffer
	go fmt.Fprint(&b, "state: failed\n")
	if got := b.WaitForAny(t, "state: ok", "state: failed"); got != "state: failed" {
		t.Fatalf("WaitForAny found %q", got)
	}
	r := run(t, func(tb testing.TB) { b.WaitForAny(tb, "x", "y") })
	checkFailure(t, r, `timed out waiting for the output to hold one of ["x" "y"]`, true)
}

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := testkit.NewClock(t0)
	select {
	case got := <-c.After(0):
		if !got.Equal(t0) {
			t.Fatalf("After(0) gave %s", got)
		}
	default:
		t.Fatal("After(0) did not fire at once")
	}
	five, ten := c.After(5*time.Minute), c.After(10*time.Minute)
	testkit.Wait(t, c.Waiting(), "the first timer")
	testkit.Wait(t, c.Waiting(), "the second timer")
	c.Advance(4 * time.Minute)
	select {
	case <-five:
		t.Fatal("a timer fired early")
	default:
	}
	c.Advance(time.Minute)
	if got := testkit.Wait(t, five, "the five-minute timer"); !got.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("fired with %s", got)
	}
	select {
	case <-ten:
		t.Fatal("the ten-minute timer fired at five")
	default:
	}
	c.Advance(time.Hour)
	testkit.Wait(t, ten, "the ten-minute timer")
	if got := c.Now(); !got.Equal(t0.Add(65 * time.Minute)) {
		t.Fatalf("Now = %s", got)
	}
}

func ExampleClock() {
	c := testkit.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	due := c.After(time.Hour)
	c.Advance(time.Hour)
	fmt.Println((<-due).Format(time.Kitchen))
	// Output: 10:00AM
}
