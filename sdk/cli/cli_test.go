package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/cli/clitest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// greeting is a result with a text form and, when it says so, a non-zero exit status.
type greeting struct {
	Names  []string `json:"names"`
	Loud   bool     `json:"loud"`
	Status int      `json:"-"`
}

func (g greeting) Text(w io.Writer) { fmt.Fprintf(w, "hello %s\n", strings.Join(g.Names, ", ")) }
func (g greeting) ExitStatus() int  { return g.Status }

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// fixture is a small binary: two groups with summaries, one nested group, a command at the top.
func fixture() []*cli.Command {
	var loud bool
	var status int
	var tags multi
	var wait time.Duration
	greet := &cli.Command{
		Path: "people greet", Args: "NAME...", Summary: "greet people", MinArgs: 1, MaxArgs: 3,
		Exits: []cli.Exit{{Status: 3, Meaning: "the greeting was not heard"}, {Status: 4, Meaning: "nobody answered"}},
		Setup: func(fs *flag.FlagSet) {
			fs.BoolVar(&loud, "loud", false, "shout")
			fs.IntVar(&status, "status", 0, "exit with this status, the greeting printed")
			fs.Var(&tags, "tag", "a tag (repeatable)")
			fs.DurationVar(&wait, "wait", time.Second, "how long to wait")
		},
		Run: func(_ context.Context, env *cli.Env, args []string) (any, error) {
			env.Progressf("greeting %d", len(args))
			return greeting{Names: args, Loud: loud, Status: status}, nil
		},
	}
	fail := &cli.Command{
		Path: "people fail", Summary: "fail with a coded error", MaxArgs: 0,
		Run: func(context.Context, *cli.Env, []string) (any, error) {
			return nil, errcode.New(errcode.AgentNotJoined, "gone").With("node_id", "n1")
		},
	}
	list := &cli.Command{
		Path: "people list", Summary: "list people", MaxArgs: 0,
		Run: func(_ context.Context, env *cli.Env, _ []string) (any, error) {
			env.Textf("nobody")
			return nil, nil
		},
	}
	deep := &cli.Command{
		Path: "people teams show", Args: "TEAM", Summary: "show a team", MinArgs: 1, MaxArgs: 1,
		Run: func(_ context.Context, _ *cli.Env, args []string) (any, error) {
			return map[string]string{"team": args[0]}, nil
		},
	}
	version := &cli.Command{
		Path: "version", Summary: "print the version", MaxArgs: 0,
		Run: func(context.Context, *cli.Env, []string) (any, error) { return map[string]string{"version": "1"}, nil },
	}
	return []*cli.Command{
		greet, fail, list, deep, version,
		{Path: "people", Summary: "greet and list people"},
		{Path: "people teams", Summary: "teams of people"},
	}
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), "demo", "a demonstration binary", fixture(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestConformance(t *testing.T) { clitest.Conformance(t, "demo", fixture()) }

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
		{"usage", cli.UsageError("bad"), 2, errcode.UsageInvalid},
		{"wrapped", fmt.Errorf("run: %w", notJoined), 1, errcode.AgentNotJoined},
		{"uncoded", fmt.Errorf("plain"), 1, errcode.InternalError},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &cli.Command{Path: "run", Run: func(context.Context, *cli.Env, []string) (any, error) { return nil, c.err }}
			var out, errOut bytes.Buffer
			if got := cli.Run(t.Context(), "test", "", []*cli.Command{cmd}, []string{"run"}, &out, &errOut); got != c.status {
				t.Fatalf("exit %d, want %d", got, c.status)
			}
			if !strings.HasPrefix(errOut.String(), "error: "+c.code+": ") || out.Len() != 0 {
				t.Fatalf("stdout %q, stderr %q", out.String(), errOut.String())
			}
		})
	}
}

// TestJSONEnvelope: under -o json stdout is one document: the result with "ok": true, or the error
// envelope; progress stays on stderr. The exit statuses are those of text mode.
func TestJSONEnvelope(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		want   map[string]any
	}{
		{[]string{"people", "greet", "ann", "-o", "json"}, 0, map[string]any{"ok": true, "names": []any{"ann"}, "loud": false}},
		{[]string{"people", "greet", "ann", "--status", "3", "-o", "json"}, 3, map[string]any{"ok": true, "names": []any{"ann"}, "loud": false}},
		{[]string{"people", "list", "-o", "json"}, 0, map[string]any{"ok": true}},
		{[]string{"people", "fail", "-o", "json"}, 1, map[string]any{"ok": false, "code": errcode.AgentNotJoined,
			"message": "agent.not_joined: gone", "details": map[string]any{"node_id": "n1"}}},
		{[]string{"people", "greet", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": "usage.invalid: people greet needs NAME..."}},
		{[]string{"people", "greet", "a", "b", "c", "d", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: people greet takes NAME...; unexpected ["d"]`}},
		{[]string{"people", "greet", "ann", "--status", "x", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: --status takes a whole number, not "x"`}},
		{[]string{"people", "greet", "ann", "--status", "99999999999999999999", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: --status takes a whole number, not "99999999999999999999": value out of range`}},
		{[]string{"people", "greet", "ann", "--wait", "5", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: --wait takes a duration such as 90s, 10m or 1h30m, not "5"`}},
		{[]string{"people", "greet", "ann", "--loud=maybe", "-o", "json"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: --loud takes true or false, not "maybe"`}},
		{[]string{"-o", "json", "peple"}, 2, map[string]any{"ok": false, "code": errcode.UsageInvalid,
			"message": `usage.invalid: unknown command "peple" for "demo"; did you mean "people"?`}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, _ := run(t, c.args...)
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			if code != c.status || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("exit %d %v\nwant %d %v", code, got, c.status, c.want)
			}
		})
	}
}

// TestText: text mode prints the result's Text on stdout, progress and errors on stderr.
func TestText(t *testing.T) {
	code, out, errOut := run(t, "people", "greet", "ann", "bob")
	if code != 0 || out != "hello ann, bob\n" || errOut != "greeting 2\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	code, out, errOut = run(t, "people", "fail")
	if code != 1 || out != "" || errOut != "error: agent.not_joined: gone\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestFlagsAnywhere: flags may come before or after positional arguments, the -o flag too, and "--"
// ends the flags.
func TestFlagsAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"people", "greet", "--loud", "--tag", "a", "-o", "json", "ann", "bob"},
		{"people", "greet", "ann", "--loud", "bob", "--tag=a", "-o=json"},
		{"people", "greet", "ann", "bob", "-ojson", "--loud=true", "--tag", "a"},
		{"-o", "json", "people", "greet", "ann", "bob", "--loud", "--tag", "a"},
		{"--output", "json", "people", "greet", "--loud", "ann", "--tag", "a", "bob"},
		{"people", "greet", "--output=json", "--loud", "--tag", "a", "--", "ann", "bob"},
	} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.Contains(out, `"names": [`+"\n"+`    "ann",`+"\n"+`    "bob"`) || !strings.Contains(out, `"loud": true`) {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	code, out, _ := run(t, "people", "greet", "-o", "json", "--", "--loud")
	if code != 0 || !strings.Contains(out, `"--loud"`) || !strings.Contains(out, `"loud": false`) {
		t.Errorf("after --: exit %d\n%s", code, out)
	}
}

// TestGroupHelp: a group alone, with --help or -h, or after "help" prints its summary and its
// commands on stdout and exits 0.
func TestGroupHelp(t *testing.T) {
	var first string
	for _, args := range [][]string{{"people"}, {"people", "--help"}, {"people", "-h"}, {"help", "people"}} {
		code, out, errOut := run(t, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		for _, want := range []string{"greet and list people\n", "\n  demo people COMMAND\n", "\n  greet  greet people\n", "\n  teams  teams of people\n", "--output string"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out)
			}
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v: help differs:\n%s\nfrom\n%s", args, out, first)
		}
	}
	code, out, _ := run(t)
	if code != 0 || !strings.HasPrefix(out, "a demonstration binary\n") || !strings.Contains(out, "\n  people  ") || !strings.Contains(out, "\n  completion  ") {
		t.Fatalf("root help: %d\n%s", code, out)
	}
}

// TestCommandHelp: a command's help spells flags --name, names a repeatable flag's value a string,
// and shows defaults.
func TestCommandHelp(t *testing.T) {
	code, out, _ := run(t, "people", "greet", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"greet people\n", "\n  demo people greet NAME... [flags]\n",
		"      --loud ", "      --tag string ", "      --wait duration ", `(default 1s)`, "  -o, --output string ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " -loud") {
		t.Errorf("help spells a flag with one dash:\n%s", out)
	}
}

// TestMistyped: a mistyped command or a help topic that does not exist exits 2 with a suggestion.
func TestMistyped(t *testing.T) {
	for args, want := range map[string]string{
		"peple":                `unknown command "peple" for "demo"; did you mean "people"?`,
		"people gret ann":      `unknown command "gret" for "demo people"; did you mean "greet"?`,
		"people teams shw":     `unknown command "shw" for "demo people teams"; did you mean "show"?`,
		"help people lst":      `unknown command "lst" for "demo people"; did you mean "list"?`,
		"completion fishh":     `unknown command "fishh" for "demo completion"; did you mean "fish"?`,
		"zzz":                  `unknown command "zzz" for "demo"`,
		"people greet -loud x": `long flags take two dashes: --loud, not -loud`,
	} {
		code, out, errOut := run(t, strings.Fields(args)...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "error: usage.invalid: ") || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant %q", args, code, out, errOut, want)
		}
	}
}

// TestOutputRefused: -o takes text or json only, on every command; "-output" is a long flag typed
// with one dash, which pflag reads as -o utput, and the refusal says so.
func TestOutputRefused(t *testing.T) {
	for _, args := range [][]string{{"version", "-o", "yaml"}, {"people", "-o", "yaml"}, {"version", "-output", "json"}} {
		code, _, errOut := run(t, args...)
		if code != 2 || !strings.HasPrefix(errOut, "error: usage.invalid: -o must be text or json") {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
	if _, _, errOut := run(t, "version", "-output", "json"); !strings.Contains(errOut, "--output, not -output") {
		t.Errorf("-output: %s", errOut)
	}
}

// TestTree: the tree lists groups, commands and the built-ins, each group with the summary its
// Command gave, and a group no Command names with none, which clitest refuses.
func TestTree(t *testing.T) {
	tree := cli.Tree("demo", fixture())
	var paths []string
	for _, l := range tree {
		paths = append(paths, l.Path)
		switch l.Path {
		case "people teams":
			if !l.Group || l.Summary != "teams of people" {
				t.Errorf("people teams: %+v", l)
			}
		case "people greet":
			if l.Group || !slices.Equal(l.Flags, []string{"help", "loud", "status", "tag", "wait"}) {
				t.Errorf("people greet: %+v", l)
			}
		}
	}
	for _, want := range []string{"", "people", "people greet", "people teams show", "version", "help", "completion", "completion zsh"} {
		if !slices.Contains(paths, want) {
			t.Errorf("tree lacks %q: %q", want, paths)
		}
	}
	bare := cli.Tree("demo", []*cli.Command{{Path: "a b", Run: func(context.Context, *cli.Env, []string) (any, error) { return nil, nil }}})
	if bare[1].Path != "a" || !bare[1].Group || bare[1].Summary != "" {
		t.Errorf("undeclared group: %+v", bare[1])
	}
}

// TestUnknownCommandWithHelp: a word that names no command is refused with exit status 2 whether or
// not --help follows it, so that a script asking for a command's help learns it does not exist.
func TestUnknownCommandWithHelp(t *testing.T) {
	for args, want := range map[string]string{
		"roles create --help":    `unknown command "roles" for "demo"`,
		"roles --help":           `unknown command "roles" for "demo"`,
		"--help roles":           `unknown command "roles" for "demo"`,
		"people gret --help":     `unknown command "gret" for "demo people"; did you mean "greet"?`,
		"people teams x -h":      `unknown command "x" for "demo people teams"`,
		"completion zsh2 --help": `unknown command "zsh2" for "demo completion"`,
	} {
		code, out, errOut := run(t, strings.Fields(args)...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "error: usage.invalid: "+want) {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
		}
	}
	// A command that exists still answers --help, its arguments notwithstanding.
	if code, out, _ := run(t, "people", "greet", "ann", "--help"); code != 0 || !strings.Contains(out, "greet people") {
		t.Errorf("people greet ann --help: exit %d\n%s", code, out)
	}
}

// TestExitStatusesDeclared: a command's help lists its statuses after the shared ones, the binary's
// help lists every status with the commands that end with it, and a status the command did not
// declare ends it with 1 and internal.error, the result still printed.
func TestExitStatusesDeclared(t *testing.T) {
	_, out, _ := run(t, "people", "greet", "--help")
	if !strings.Contains(out, "\nExit status:\n  0  the command did what it was asked\n  1  it failed: the error's code says why\n"+
		"  2  usage: an unknown command or flag, or wrong arguments; nothing was done\n  3  the greeting was not heard\n  4  nobody answered\n") {
		t.Errorf("people greet --help:\n%s", out)
	}
	_, out, _ = run(t, "--help")
	if !strings.Contains(out, "\n  3  the greeting was not heard (people greet)\n  4  nobody answered (people greet)\n") {
		t.Errorf("--help:\n%s", out)
	}
	if _, out, _ = run(t, "people", "list", "--help"); strings.Contains(out, "Exit status") {
		t.Errorf("a command with no statuses of its own lists the shared ones again:\n%s", out)
	}
	code, out, errOut := run(t, "people", "greet", "ann", "--status", "5")
	if code != 1 || out != "hello ann\n" || !strings.Contains(errOut, "error: internal.error: people greet ended with exit status 5, which it does not declare") {
		t.Errorf("an undeclared status: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	code, out, _ = run(t, "people", "greet", "ann", "--status", "5", "-o", "json")
	var got map[string]any
	if code != 1 || json.Unmarshal([]byte(out), &got) != nil || got["ok"] != true {
		t.Errorf("an undeclared status under -o json: exit %d\n%s", code, out)
	}
}
