package testkit

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// WantCode fails the test at once unless err's code is code. The code compared is errcode.Code(err),
// the outermost one: the code a caller branches on and the one the wire envelope carries. An inner code
// wrapped in another does not satisfy it.
func WantCode(t testing.TB, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := errcode.Code(err); got != code {
		t.Fatalf("got %v (code %q), want %s", err, got, code)
	}
}

// CheckCode is WantCode for suites whose checks should all run: a mismatch marks the test failed with
// what (the operation checked) and the test goes on. It reports whether err's code is code.
func CheckCode(t testing.TB, err error, code, what string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %s", what, code)
		return false
	}
	if got := errcode.Code(err); got != code {
		t.Errorf("%s: got %v (code %q), want %s", what, err, got, code)
		return false
	}
	return true
}
