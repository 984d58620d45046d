package testkit

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer that goroutines of the code under test may write while the test reads it: a
// log sink, a command's stderr. Its zero value is ready to use. WaitFor waits for text to be written.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written Cond
}

// Write appends p and wakes every WaitFor.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	b.written.Broadcast()
	return n, err
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of everything written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Reset forgets everything written so far.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// WaitFor returns once the buffer holds s. If it does not by the test's deadline, the test fails with
// the end of what was written.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	if !b.written.until(t, func() bool { return strings.Contains(b.String(), s) }) {
		t.Fatalf("timed out waiting for the output to hold %q; it ends:\n%s", s, tail(b.String(), 4096))
	}
}

// WaitForAny returns the first of ss the buffer holds, once it holds one: a test that waits for an
// outcome names the bad ones too, and fails on one at once rather than at its deadline.
func (b *Buffer) WaitForAny(t testing.TB, ss ...string) string {
	t.Helper()
	var found string
	held := func() bool {
		out := b.String()
		for _, s := range ss {
			if strings.Contains(out, s) {
				found = s
				return true
			}
		}
		return false
	}
	if !b.written.until(t, held) {
		t.Fatalf("timed out waiting for the output to hold one of %q; it ends:\n%s", ss, tail(b.String(), 4096))
	}
	return found
}

// tail is the last n bytes of s at most, cut at a line start when one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 256 {
		s = s[i+1:]
	}
	return "…" + s
}
