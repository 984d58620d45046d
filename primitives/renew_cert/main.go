// Command renew_cert is cert_expiry's repair: it runs the renewal program the node's own policy names
// and pins by sha256 (exec.pinned "@renewal": certbot renew, or a site's own script), with the fixed
// arguments the policy gives and none of its own. The loop's next tick re-checks the certificates. A
// node whose policy names no program answers capability.unknown, and the loop never gets that far: it
// keeps cert_expiry check-only there. A program that exits non-zero fails with renew_cert.failed and the
// end of what it wrote.
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type output struct {
	ExitCode   int     `json:"exit_code"`
	DurationMS float64 `json:"duration_ms"`
	Output     string  `json:"output,omitempty"`
}

// tail keeps the last n bytes of what the program wrote: where renewal tools say what went wrong.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func main() {
	word.Run(func(struct{}) (output, error) {
		res, err := word.Exec().Run("@renewal")
		if err != nil {
			return output{}, err
		}
		out := output{ExitCode: res.ExitCode, DurationMS: res.DurationMS, Output: tail(append(res.Stdout, res.Stderr...), 2048)}
		if res.ExitCode != 0 {
			return output{}, word.Fail("renew_cert.failed", "the renewal program exited %d: %s", res.ExitCode, tail(res.Stderr, 512)).
				With("exit_code", res.ExitCode)
		}
		return out, nil
	})
}
