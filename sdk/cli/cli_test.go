package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestErrorExitStatus: a failing command exits 1, or 2 for usage; the error is printed with its code
// either way.
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
		{"wrapped", fmt.Errorf("run: %w", notJoined), 1, errcode.AgentNotJoined},
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
