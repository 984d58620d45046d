package word

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A recipe is a module whose check the agent runs on its own clock. Its program is a word's, with Check
// in place of Run: the params are the recipe's declaration (the agent takes them from the defaults of
// the signed manifest's params schema, and fills a "names" property with the node's own names), and
// the answer is a Verdict.
//
//	type Decl struct{ Path string `json:"path"` }
//
//	func main() {
//		word.Check(func(d Decl) (word.Verdict, error) {
//			disk, err := word.Sys().Disk(d.Path)
//			if err != nil {
//				return word.Verdict{}, err // capability.unknown becomes an unknown verdict
//			}
//			if disk.Available < 5<<30 {
//				return word.Failing("%s has %d bytes free", d.Path, disk.Available), nil
//			}
//			return word.Pass("%s has room", d.Path), nil
//		})
//	}

// Verdicts a check answers.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictUnknown = "unknown"
)

// MaxDetail caps a verdict's detail in bytes; longer details are cut at a character boundary. The agent
// caps what it reports again, on the node.
const MaxDetail = 1024

// Verdict is a check's answer: pass, fail or unknown, one line a person reads, and, when it fails, the
// params its repair word needs. Build one with Pass, Failing or Unknown.
type Verdict struct {
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	// Repair is the repair word's params, as a value encoding to one JSON object. The agent checks it
	// against the repair word's params schema before anything runs.
	Repair any `json:"repair,omitempty"`
}

// Pass says the condition holds.
func Pass(format string, args ...any) Verdict { return verdict(VerdictPass, format, args) }

// Failing says the condition does not hold. Give the repair word's params with WithRepair.
func Failing(format string, args ...any) Verdict { return verdict(VerdictFail, format, args) }

// Unknown says this machine cannot answer (no systemd, a name that does not resolve): never a guess.
// An unknown verdict never repairs and never counts.
func Unknown(format string, args ...any) Verdict { return verdict(VerdictUnknown, format, args) }

func verdict(v, format string, args []any) Verdict {
	return Verdict{Verdict: v, Detail: fmt.Sprintf(format, args...)}
}

// WithRepair returns the failing verdict carrying params for the repair word.
func (v Verdict) WithRepair(params any) Verdict {
	v.Repair = params
	return v
}

// Check decodes the declaration into P, calls fn, writes its verdict and exits. An error fn returns
// that says the machine cannot answer (capability.unknown) becomes an unknown verdict; any other error
// fails the check, which the agent reports as unknown too, with the error as the detail. It never
// returns.
func Check[P any](fn func(P) (Verdict, error)) {
	os.Exit(check(os.Stdin, os.Stdout, fn))
}

func check[P any](in io.Reader, out io.Writer, fn func(P) (Verdict, error)) int {
	return run(in, out, func(p P) (Verdict, error) {
		v, err := fn(p)
		if IsUnknown(err) {
			e := errcode.From(err, errcode.CapabilityUnknown)
			return Unknown("%s", e.Message).normal()
		}
		if err != nil {
			return Verdict{}, err
		}
		return v.normal()
	})
}

// normal checks the verdict's shape and bounds its detail.
func (v Verdict) normal() (Verdict, error) {
	switch v.Verdict {
	case VerdictPass, VerdictFail, VerdictUnknown:
	default:
		return Verdict{}, Fail(errcode.RecipeNoVerdict, "a check answers pass, fail or unknown, not %q", v.Verdict)
	}
	if v.Repair != nil && v.Verdict != VerdictFail {
		return Verdict{}, Fail(errcode.RecipeNoVerdict, "only a failing verdict carries repair params")
	}
	v.Detail = cut(v.Detail, MaxDetail)
	return v, nil
}

// cut shortens s to at most n bytes of valid UTF-8.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
