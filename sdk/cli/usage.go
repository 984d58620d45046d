package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// groupAnnotation marks the commands that hold commands and run none, for usage.
const groupAnnotation = "lexicon.cli/group"

// flagError makes a refused flag a usage error, and names the flag meant when it was typed with one
// dash: "-plane" reads to pflag as the shorthands p, l, a, n, e.
func (r *runner) flagError(c *cobra.Command, err error) error {
	if errcode.Has(err, errcode.UsageInvalid) {
		return err // a flag's own Set refused the value, in its words
	}
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		if want := expects[invalid.GetFlag().Value.Type()]; want != "" {
			// Go's flag package says only "parse error": say what the flag takes.
			e := errcode.New(errcode.UsageInvalid, "--%s takes %s, not %q", invalid.GetFlag().Name, want, invalid.GetValue())
			if cause := errors.Unwrap(err); cause != nil && cause.Error() != "parse error" {
				e.Message += ": " + cause.Error()
			}
			return e
		}
	}
	return errcode.Wrap(err, errcode.UsageInvalid, "%s", r.dashHint(c))
}

// expects says in words what a flag of each of Go's value types takes.
var expects = map[string]string{
	"bool":     "true or false",
	"int":      "a whole number",
	"int64":    "a whole number",
	"uint":     "a whole number, 0 or more",
	"uint64":   "a whole number, 0 or more",
	"float64":  "a number",
	"duration": "a duration such as 90s, 10m or 1h30m",
}

// dashHint names the first argument that is a long flag of c typed with a single dash, or is "".
// Such an argument is refused for another reason ("-out" is -o with the value "ut"), so the refusal
// adds this hint.
func (r *runner) dashHint(c *cobra.Command) string {
	for _, a := range r.args {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && c.Flags().Lookup(name) != nil {
			return fmt.Sprintf("long flags take two dashes: --%s, not -%s", name, name)
		}
	}
	return ""
}

// usageError is UsageError with the single-dash hint appended when there is one.
func (r *runner) usageError(c *cobra.Command, format string, args ...any) error {
	err := errcode.New(errcode.UsageInvalid, format, args...)
	if hint := r.dashHint(c); hint != "" {
		err.Message += "; " + hint
	}
	return err
}

// help prints a command's summary and usage on stdout. Asked of a group with words left over
// ("roles create --help", where no group roles exists), it prints nothing and has Run refuse the
// first word, as the same words without --help are: help must not pass for a command that exists.
func (r *runner) help(c *cobra.Command, _ []string) {
	if _, group := c.Annotations[groupAnnotation]; group && c.Flags().Parsed() {
		if rest := c.Flags().Args(); len(rest) > 0 {
			r.refused = unknownCommand(c, rest[0])
			return
		}
	}
	w := c.OutOrStdout()
	if c.Short != "" {
		fmt.Fprintf(w, "%s\n\n", c.Short)
	}
	r.writeUsage(w, c)
}

// usage is cobra's usage function; Run prints refusals itself, so cobra calls it only when asked.
func (r *runner) usage(c *cobra.Command) error {
	r.writeUsage(c.OutOrStderr(), c)
	return nil
}

// writeUsage prints the synopsis, a group's commands, the flags and the exit statuses, in cobra's
// layout without its template engine.
func (r *runner) writeUsage(w io.Writer, c *cobra.Command) {
	_, group := c.Annotations[groupAnnotation]
	fmt.Fprintf(w, "Usage:\n")
	if group {
		fmt.Fprintf(w, "  %s COMMAND\n", c.CommandPath())
	} else {
		fmt.Fprintf(w, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		var subs []*cobra.Command
		width := 0
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				subs = append(subs, s)
				width = max(width, len(s.Name()))
			}
		}
		fmt.Fprintf(w, "\nCommands:\n")
		for _, s := range subs {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name(), s.Short)
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", c.LocalFlags().FlagUsages())
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s", c.InheritedFlags().FlagUsages())
	}
	r.writeExits(w, c)
	if group {
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n", c.CommandPath())
	}
}
