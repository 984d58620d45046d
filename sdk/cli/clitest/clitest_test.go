package clitest

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

func nothing(context.Context, *cli.Env, []string) (any, error) { return nil, nil }

// flawed is a binary whose help says what it does not do, each flaw in one place.
func flawed() []*cli.Command {
	return []*cli.Command{
		{Path: "regions", Summary: "list regions", Run: nothing, MaxArgs: 0},
		{Path: "things show", Args: "ID", Summary: "show a thing", Run: nothing, MinArgs: 1, MaxArgs: 1},
		{Path: "things", Summary: "things; see demo things show ID"},
		{Path: "create", Summary: "create a thing; see demo regions", Run: nothing, MaxArgs: 0,
			Setup: func(fs *flag.FlagSet) {
				fs.String("region", "", "the region (demo regions ACCOUNT)")
				fs.String("kind", "small", "the kind (default small)")
				fs.Duration("wait", 0, "how long to wait; 0 leaves it to the server")
				fs.Duration("timeout", time.Minute, "how long it may take")
				fs.String("thing", "", "a thing (demo things shw ID)")
				fs.String("other", "", "shown with demo things show A B")
			}},
		{Path: "sync", Summary: "sync; exit status 3 when conflicts remain", Run: nothing, MaxArgs: 0},
	}
}

func helpOf(t *testing.T, cmds []*cli.Command, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Run(t.Context(), "demo", "", cmds, append(args, "--help"), &out, &errOut); code != 0 {
		t.Fatalf("%v --help: exit %d %s", args, code, errOut.String())
	}
	return out.String()
}

// TestHelpProblems: each flaw of the flawed binary's help is found, and nothing else.
func TestHelpProblems(t *testing.T) {
	cmds := flawed()
	tree := cli.Tree("demo", cmds)
	found := map[string][]string{}
	for _, l := range tree {
		found[l.Path] = helpProblems("demo", cmds, tree, l, helpOf(t, cmds, strings.Fields(l.Path)...))
	}
	want := map[string][]string{
		"create": {
			`names "demo regions ACCOUNT": regions takes at most 0 arguments, not 1`,
			`shows a default twice`,
			`names "demo things shw ID": things has no command "shw"`,
			`names "demo things show A B": things show takes at most 1 arguments, not 2`,
		},
		"sync": {`tells an exit status outside its table ("exit status 3")`},
		"":     {`tells an exit status outside its table ("exit status 3")`},
	}
	for path, problems := range found {
		if len(problems) != len(want[path]) {
			t.Errorf("%q: problems %q\nwant %q", path, problems, want[path])
			continue
		}
		for _, w := range want[path] {
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
				t.Errorf("%q: problems %q lack %q", path, problems, w)
			}
		}
	}
	// The zero duration's default is not printed after a usage that says what zero means.
	if h := helpOf(t, cmds, "create"); strings.Contains(h, "(default 0") || !strings.Contains(h, "(default 1m0s)") {
		t.Errorf("durations' defaults:\n%s", h)
	}
}

// TestExitProblems: a status declared below 3, twice, with two meanings, or missing from a main
// package's doc is found.
func TestExitProblems(t *testing.T) {
	cmds := []*cli.Command{
		{Path: "a", Run: nothing, Exits: []cli.Exit{{Status: 3, Meaning: "conflicts remain"}, {Status: 3, Meaning: "conflicts remain"}}},
		{Path: "b", Run: nothing, Exits: []cli.Exit{{Status: 3, Meaning: "it halted"}, {Status: 2, Meaning: "usage"}, {Status: 4, Meaning: ""}}},
	}
	problems := exitProblems(cmds, "3  conflicts remain (a, a, b)", true)
	for _, w := range []string{
		"a declares exit status 3 twice", `exit status 3 means "conflicts remain" and, for b, "it halted"`,
		"b declares exit status 2: a command's own are 3 to 125", "b declares exit status 4 without its meaning",
		`the package doc lacks the exit status line "0  the command did what it was asked"`,
		`the package doc lacks the exit status line "4   (b)"`,
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("problems %q lack %q", problems, w)
		}
	}
	good := []*cli.Command{{Path: "a", Run: nothing, Exits: []cli.Exit{{Status: 3, Meaning: "conflicts remain"}}}}
	var doc strings.Builder
	for _, row := range cli.Table(good) {
		doc.WriteString("\t" + row.Line() + "\n")
	}
	if p := exitProblems(good, doc.String(), true); len(p) != 0 {
		t.Errorf("a good table: %q", p)
	}
}
