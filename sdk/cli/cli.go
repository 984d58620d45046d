// Package cli holds Lexicon's command-line conventions, shared by every binary: subcommands with
// --help, -o text|json on each, coded errors, and an exit status of 0 only on success.
//
// In JSON mode a success prints the command's result object with "ok": true merged in, and a failure
// prints {"ok": false, "code": "...", "message": "..."} on stdout. In text mode errors go to stderr as
// "error: <code>: <message>". Flags may come before or after positional arguments.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Command is one subcommand. Path is its words after the binary name ("verify", "joins approve").
type Command struct {
	Path    string
	Args    string // synopsis of positional args and flags, for usage
	Summary string
	// Setup declares the command's flags on fs; it runs before parsing.
	Setup func(fs *flag.FlagSet)
	// Run does the work. A returned result is printed (text through Env.Text, or as JSON).
	Run func(ctx context.Context, env *Env, args []string) (any, error)
	// MinArgs and MaxArgs bound the positional arguments (MaxArgs < 0: no bound).
	MinArgs, MaxArgs int
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
	cmd, rest := find(cmds, args)
	if cmd == nil {
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			usage(stdout, binary, about, cmds)
			return 0
		}
		usage(stderr, binary, about, cmds)
		fmt.Fprintf(stderr, "error: %s: unknown command %q\n", errcode.UsageInvalid, strings.Join(args, " "))
		return 2
	}
	fs := flag.NewFlagSet(binary+" "+cmd.Path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	output := fs.String("o", "text", "output format: text or json")
	if cmd.Setup != nil {
		cmd.Setup(fs)
	}
	env := &Env{Stdout: stdout, Stderr: stderr}
	positional, err := parse(fs, rest)
	env.JSON = *output == "json" || (err != nil && wantsJSON(rest))
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, binary, cmd, fs)
		return 0
	}
	if err == nil && *output != "json" && *output != "text" {
		err = UsageError("-o must be text or json, not %q", *output)
	}
	if err == nil && len(positional) < cmd.MinArgs {
		err = UsageError("%s needs %s", cmd.Path, cmd.Args)
	}
	if err == nil && cmd.MaxArgs >= 0 && len(positional) > cmd.MaxArgs {
		err = UsageError("%s takes %s; unexpected %q", cmd.Path, cmd.Args, positional[cmd.MaxArgs:])
	}
	if err != nil {
		if !errcode.Has(err, errcode.UsageInvalid) {
			err = errcode.Wrap(err, errcode.UsageInvalid, "%s", strings.TrimPrefix(err.Error(), "flag provided but not defined: "))
		}
		if !env.JSON {
			commandUsage(stderr, binary, cmd, fs)
		}
		return fail(env, err, 2)
	}
	result, err := cmd.Run(ctx, env, positional)
	if err != nil {
		status := 1
		if errcode.Has(err, errcode.UsageInvalid) {
			status = 2
		}
		return fail(env, err, status)
	}
	if env.JSON {
		writeJSON(stdout, result)
	} else if t, ok := result.(Texter); ok {
		t.Text(stdout)
	}
	if s, ok := result.(Statuser); ok {
		return s.ExitStatus()
	}
	return 0
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
		case "-o=json", "--o=json":
			return true
		case "-o", "--o":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		}
	}
	return false
}

// find matches the longest command path at the start of args.
func find(cmds []*Command, args []string) (*Command, []string) {
	var best *Command
	bestLen := 0
	for _, c := range cmds {
		words := strings.Fields(c.Path)
		if len(words) <= len(args) && len(words) > bestLen && slices.Equal(words, args[:len(words)]) {
			best, bestLen = c, len(words)
		}
	}
	if best == nil {
		return nil, args
	}
	return best, args[bestLen:]
}

// parse lets flags and positional arguments mix: Go's flag package stops at the first positional.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func usage(w io.Writer, binary, about string, cmds []*Command) {
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n", binary, about)
	sorted := append([]*Command(nil), cmds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %s %-28s %s\n", binary, c.Path, c.Summary)
	}
	fmt.Fprintf(w, "\nEvery command takes --help and -o json.\n")
}

func commandUsage(w io.Writer, binary string, c *Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s %s %s\n\n%s\n\nFlags:\n", binary, c.Path, c.Args, c.Summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
