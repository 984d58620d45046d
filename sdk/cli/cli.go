// Package cli holds Lexicon's command-line conventions, shared by every binary: subcommands in
// groups with --help, -o text|json on each, coded errors, and an exit status of 0 only on success.
//
// A binary lists its Commands; a path of several words ("jobs run") puts the command in a group
// ("jobs"), and a Command without Run gives a group its summary. The tree is built on cobra, so a
// group alone or with --help prints its commands, a mistyped command is refused with suggestions, and
// "<binary> completion bash|zsh|fish" prints a completion script. Commands declare their flags with
// Go's flag package (Setup); they are spelled --name, and may come before or after positional
// arguments.
//
// In JSON mode a success prints the command's result object with "ok": true merged in, and a failure
// prints {"ok": false, "code": "...", "message": "..."} on stdout. In text mode errors go to stderr as
// "error: <code>: <message>". The exit status is 0 on success, 2 for a usage error (usage.invalid:
// an unknown command or flag, a wrong argument count), 1 for any other failure, or what a Statuser
// result says, which must be 0, 1 or a status the command declares (Exits) with its meaning; help
// lists them, so a script's author reads every status a command can end with.
package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Command is one subcommand. Path is its words after the binary name ("verify", "joins approve").
// A Command without Run is a group's: it gives the group of that path its Summary.
type Command struct {
	Path    string
	Args    string // synopsis of positional args and flags, for usage
	Summary string
	// Setup declares the command's flags on fs. It runs each time the tree is built, before parsing,
	// so that help and completion know every command's flags.
	Setup func(fs *flag.FlagSet)
	// Run does the work. A returned result is printed (text through Env.Text, or as JSON).
	Run func(ctx context.Context, env *Env, args []string) (any, error)
	// MinArgs and MaxArgs bound the positional arguments (MaxArgs < 0: no bound).
	MinArgs, MaxArgs int
	// Exits are the statuses besides 0, 1 and 2 that a Statuser result of Run may end the command
	// with. A status means one thing in a binary: two commands that declare it give it one meaning.
	Exits []Exit
}

// Env is what a running command writes to.
type Env struct {
	Stdout, Stderr io.Writer
	JSON           bool
}

// Textf writes a line of human output; it is silent in JSON mode.
func (e *Env) Textf(format string, args ...any) {
	if !e.JSON {
		fmt.Fprintf(e.Stdout, format+"\n", args...)
	}
}

// Progressf writes progress to stderr, in both modes, so stdout stays one JSON document.
func (e *Env) Progressf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, format+"\n", args...)
}

// Texter is a result that prints itself for people.
type Texter interface{ Text(w io.Writer) }

// Statuser is a result that is printed in full but still ends the command with a non-zero status, for
// a command whose work ran and reports its own failure (a word that ran and failed).
type Statuser interface{ ExitStatus() int }

// UsageError is returned for wrong arguments; it exits 2.
func UsageError(format string, args ...any) error {
	return errcode.New(errcode.UsageInvalid, format, args...)
}

// Main runs the subcommand named by os.Args and exits.
func Main(binary, about string, cmds []*Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, binary, about, cmds, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run is Main without the process: it returns the exit status. Tests call it directly.
func Run(ctx context.Context, binary, about string, cmds []*Command, args []string, stdout, stderr io.Writer) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	r := &runner{stdout: stdout, stderr: stderr, args: args}
	root := r.tree(binary, about, cmds)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil && r.refused != nil {
		err = r.refused // help was asked of a command that does not exist
	}
	if err == nil {
		return r.status
	}
	// What reaches here was refused before any command ran: a flag, an argument count, a command
	// that does not exist. Cobra's own refusals carry no code; they are all about usage.
	if errcode.Code(err) == "" {
		err = errcode.Wrap(err, errcode.UsageInvalid, "")
	}
	env := &Env{Stdout: stdout, Stderr: stderr, JSON: r.output == "json" || wantsJSON(args)}
	status := 1
	if errcode.Has(err, errcode.UsageInvalid) {
		status = 2
	}
	status = fail(env, err, status)
	if !env.JSON && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return status
}

// leaf is the cobra RunE of c: it checks the argument count, runs c and prints its result.
// A failure of c itself is printed here, so that Run sees only refusals made before c ran.
func (r *runner) leaf(c *Command) func(*cobra.Command, []string) error {
	return func(cc *cobra.Command, positional []string) error {
		if len(positional) < c.MinArgs {
			return UsageError("%s needs %s", c.Path, c.Args)
		}
		if c.MaxArgs >= 0 && len(positional) > c.MaxArgs {
			return r.usageError(cc, "%s takes %s; unexpected %q", c.Path, c.Args, positional[c.MaxArgs:])
		}
		env := &Env{Stdout: r.stdout, Stderr: r.stderr, JSON: r.output == "json"}
		result, err := c.Run(cc.Context(), env, positional)
		if err != nil {
			status := 1
			if errcode.Has(err, errcode.UsageInvalid) {
				status = 2
			}
			r.status = fail(env, err, status)
			return nil
		}
		if env.JSON {
			writeJSON(r.stdout, result)
		} else if t, ok := result.(Texter); ok {
			t.Text(r.stdout)
		}
		if s, ok := result.(Statuser); ok {
			r.status = s.ExitStatus()
			if !c.declares(r.status) {
				// A bug of the command, not of its use: the result stands, the status is not one
				// help explains, so the command fails plainly, on stderr whatever the mode.
				e := errcode.New(errcode.InternalError, "%s ended with exit status %d, which it does not declare", c.Path, r.status)
				fmt.Fprintf(r.stderr, "error: %s\n", e.Error())
				r.status = StatusFailed
			}
		}
		return nil
	}
}

func fail(env *Env, err error, status int) int {
	e := errcode.From(err, errcode.InternalError)
	if env.JSON {
		out := map[string]any{"ok": false, "code": e.Code, "message": e.Error()}
		if len(e.Details) > 0 {
			out["details"] = e.Details
		}
		writeJSON(env.Stdout, out)
	} else {
		fmt.Fprintf(env.Stderr, "error: %s\n", e.Error())
	}
	return status
}

// writeJSON prints result with "ok": true merged in when it is an object.
func writeJSON(w io.Writer, result any) {
	b, err := json.Marshal(result)
	if err != nil {
		fmt.Fprintf(w, `{"ok":false,"code":%q,"message":%q}`+"\n", errcode.InternalError, err.Error())
		return
	}
	var obj map[string]any
	if json.Unmarshal(b, &obj) == nil && obj != nil {
		if _, has := obj["ok"]; !has {
			obj["ok"] = true
		}
		b, _ = json.Marshal(obj)
	} else if result == nil || string(b) == "null" {
		b = []byte(`{"ok":true}`)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(json.RawMessage(b))
}

// wantsJSON spots -o json in arguments that failed to parse, so the refusal still comes as JSON.
func wantsJSON(args []string) bool {
	for i, a := range args {
		switch a {
		case "--":
			return false
		case "-o=json", "-ojson", "--output=json":
			return true
		case "-o", "--output":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		}
	}
	return false
}
