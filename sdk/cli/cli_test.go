package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// statusError is an error that asks for its own exit status.
type statusError struct {
	error
	status int
}

func (e statusError) Unwrap() error   { return e.error }
func (e statusError) ExitStatus() int { return e.status }

// TestErrorExitStatus: a failing command exits 1, 2 for usage, and the status an error in its chain
// asks for; the error is printed with its code either way, and 0 is never a failure's status.
func TestErrorExitStatus(t *testing.T) {
	notJoined := errcode.New(errcode.AgentNotJoined, "the plane no longer serves this node")
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"coded", notJoined, 1, errcode.AgentNotJoined},
		{"usage", UsageError("bad"), 2, errcode.UsageInvalid},
		{"own status", statusError{notJoined, 6}, 6, errcode.AgentNotJoined},
		{"own status, wrapped", fmt.Errorf("run: %w", statusError{notJoined, 6}), 6, errcode.AgentNotJoined},
		{"zero status", statusError{notJoined, 0}, 1, errcode.AgentNotJoined},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &Command{Path: "run", Run: func(context.Context, *Env, []string) (any, error) { return nil, c.err }}
			var out, errOut bytes.Buffer
			if got := Run(context.Background(), "test", "", []*Command{cmd}, []string{"run"}, &out, &errOut); got != c.status {
				t.Fatalf("exit %d, want %d", got, c.status)
			}
			if !strings.HasPrefix(errOut.String(), "error: "+c.code+": ") {
				t.Fatalf("stderr %q", errOut.String())
			}
		})
	}
}
