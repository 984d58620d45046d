// Package clitest checks that a binary built on sdk/cli keeps the convention its users rely on:
// every group and command answers --help with exit status 0, a mistyped command is refused with a
// suggestion and exit status 2, refusals keep the JSON envelope under -o json, and completion
// scripts are generated for bash, zsh and fish.
//
// A binary's test is one line, over the same commands its main passes to cli.Main:
//
//	func TestCLI(t *testing.T) { clitest.Conformance(t, "lexicon", commands()) }
//
// It walks cli.Tree, so a command added later is checked without editing a list. No command's Run
// is called: every invocation is refused, or answered by help, before it would run.
package clitest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Conformance runs every check on the tree that cli.Run builds from cmds.
func Conformance(t *testing.T, binary string, cmds []*cli.Command) {
	t.Helper()
	tree := cli.Tree(binary, cmds)
	t.Run("paths are unique", func(t *testing.T) { uniquePaths(t, tree) })
	t.Run("help", func(t *testing.T) {
		for _, l := range tree {
			t.Run(name(binary, l), func(t *testing.T) { Help(t, binary, cmds, l) })
		}
	})
	t.Run("mistyped", func(t *testing.T) {
		for _, l := range tree {
			if l.Group {
				t.Run(name(binary, l), func(t *testing.T) { Mistyped(t, binary, cmds, l, children(tree, l)) })
			}
		}
	})
	t.Run("refusals keep the envelope", func(t *testing.T) {
		for _, l := range tree {
			if !l.Group && len(children(tree, l)) == 0 {
				t.Run(name(binary, l), func(t *testing.T) { Refusals(t, binary, cmds, l) })
			}
		}
	})
	t.Run("completion", func(t *testing.T) { Completion(t, binary, cmds) })
}

// Help checks that l answers --help with exit status 0 on stdout alone, showing its summary and
// each of its flags spelled --name; a group also answers with no arguments at all, listing its
// commands.
func Help(t *testing.T, binary string, cmds []*cli.Command, l cli.Listing) {
	t.Helper()
	code, out, errOut := Run(t, binary, cmds, append(strings.Fields(l.Path), "--help")...)
	if code != 0 || errOut != "" || out == "" {
		t.Fatalf("%s --help: exit %d\nstdout:\n%s\nstderr:\n%s", name(binary, l), code, out, errOut)
	}
	if l.Path != "" && strings.TrimSpace(l.Summary) == "" {
		t.Errorf("%s has no summary", name(binary, l))
	}
	if !strings.Contains(out, l.Summary) {
		t.Errorf("%s --help lacks its summary %q:\n%s", name(binary, l), l.Summary, out)
	}
	if !strings.Contains(out, "\n  "+name(binary, l)) {
		t.Errorf("%s --help lacks its usage line:\n%s", name(binary, l), out)
	}
	for _, f := range l.Flags {
		if !strings.Contains(out, "--"+f+" ") && !strings.Contains(out, "--"+f+"\n") {
			t.Errorf("%s --help does not list --%s:\n%s", name(binary, l), f, out)
		}
	}
	if !l.Group {
		return
	}
	code, bare, errOut := Run(t, binary, cmds, strings.Fields(l.Path)...)
	if code != 0 || errOut != "" || bare != out {
		t.Fatalf("%s alone: exit %d, want its help (exit 0)\nstdout:\n%s\nstderr:\n%s", name(binary, l), code, bare, errOut)
	}
}

// Mistyped checks that a group refuses a misspelling of each of its commands with exit status 2, a
// usage.invalid error naming the command meant, in text and in the -o json envelope.
func Mistyped(t *testing.T, binary string, cmds []*cli.Command, group cli.Listing, subs []cli.Listing) {
	t.Helper()
	if len(subs) == 0 {
		t.Fatalf("group %s holds no commands", name(binary, group))
	}
	for _, sub := range subs {
		words := strings.Fields(sub.Path)
		meant := words[len(words)-1]
		if meant == "help" {
			continue // cobra suggests commands, never its help command
		}
		typo := misspell(meant)
		if slices.ContainsFunc(subs, func(s cli.Listing) bool { return strings.HasSuffix(" "+s.Path, " "+typo) }) {
			continue // the misspelling names another command
		}
		args := append(strings.Fields(group.Path), typo)
		code, out, errOut := Run(t, binary, cmds, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "error: "+errcode.UsageInvalid+": ") ||
			!strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, strconv.Quote(meant)) {
			t.Errorf("%s %s: exit %d, want 2 and a suggestion of %q\nstdout:\n%s\nstderr:\n%s", binary, strings.Join(args, " "), code, meant, out, errOut)
		}
		code, env := RunJSON(t, binary, cmds, append(args, "-o", "json")...)
		if code != 2 || env["code"] != errcode.UsageInvalid || !strings.Contains(env["message"].(string), strconv.Quote(meant)) {
			t.Errorf("%s %s -o json: exit %d, envelope %v", binary, strings.Join(args, " "), code, env)
		}
	}
}

// Refusals checks that a command refuses an unknown flag and a wrong -o with exit status 2 and the
// usage.invalid envelope under -o json, the flag whether it comes before or after an argument.
func Refusals(t *testing.T, binary string, cmds []*cli.Command, l cli.Listing) {
	t.Helper()
	path := strings.Fields(l.Path)
	for _, args := range [][]string{
		append(append([]string{}, path...), "--no-such-flag", "-o", "json"),
		append(append([]string{}, path...), "-o", "json", "an-argument", "--no-such-flag"),
		append(append([]string{"-o", "json"}, path...), "--no-such-flag", "an-argument"),
	} {
		if code, env := RunJSON(t, binary, cmds, args...); code != 2 || env["code"] != errcode.UsageInvalid ||
			!strings.Contains(env["message"].(string), "--no-such-flag") {
			t.Errorf("%s %s: exit %d, envelope %v", binary, strings.Join(args, " "), code, env)
		}
	}
	code, out, errOut := Run(t, binary, cmds, append(path, "-o", "yaml")...)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "error: "+errcode.UsageInvalid+": ") {
		t.Errorf("%s %s -o yaml: exit %d\nstdout:\n%s\nstderr:\n%s", binary, l.Path, code, out, errOut)
	}
}

// Completion checks that completion scripts are generated for bash, zsh and fish.
func Completion(t *testing.T, binary string, cmds []*cli.Command) {
	t.Helper()
	for shell, marker := range map[string]string{
		"bash": "# bash completion V2 for " + binary,
		"zsh":  "#compdef " + binary,
		"fish": "complete -c " + binary,
	} {
		code, out, errOut := Run(t, binary, cmds, "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, want a script holding %q\nstderr:\n%s", shell, code, marker, errOut)
		}
	}
}

// Run runs the binary's commands in-process and returns the exit status, stdout and stderr.
func Run(t *testing.T, binary string, cmds []*cli.Command, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(t.Context(), binary, "", cmds, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// RunJSON runs the commands with args that ask for -o json, and decodes stdout, which must be one
// JSON object; a failure must be the envelope {"ok": false, "code", "message"}.
func RunJSON(t *testing.T, binary string, cmds []*cli.Command, args ...string) (int, map[string]any) {
	t.Helper()
	code, out, _ := Run(t, binary, cmds, args...)
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&obj); err != nil || dec.More() {
		t.Fatalf("%s %s: stdout is not one JSON object (%v):\n%s", binary, strings.Join(args, " "), err, out)
	}
	if code != 0 {
		if _, isString := obj["message"].(string); obj["ok"] != false || !isString {
			t.Fatalf("%s %s: exit %d without the error envelope:\n%s", binary, strings.Join(args, " "), code, out)
		}
	}
	return code, obj
}

func uniquePaths(t *testing.T, tree []cli.Listing) {
	seen := map[string]bool{}
	for _, l := range tree {
		if seen[l.Path] {
			t.Errorf("two commands at %q", l.Path)
		}
		seen[l.Path] = true
	}
}

// children are the listings one word below l.
func children(tree []cli.Listing, l cli.Listing) []cli.Listing {
	var subs []cli.Listing
	depth := len(strings.Fields(l.Path))
	for _, s := range tree {
		words := strings.Fields(s.Path)
		if len(words) == depth+1 && strings.Join(words[:depth], " ") == l.Path {
			subs = append(subs, s)
		}
	}
	return subs
}

// misspell drops the second letter ("verify" to "vrify"), or doubles a one-letter name; either is
// one edit away, within cobra's suggestion distance.
func misspell(word string) string {
	if len(word) < 3 {
		return word + word[len(word)-1:]
	}
	return word[:1] + word[2:]
}

func name(binary string, l cli.Listing) string {
	return strings.TrimSpace(binary + " " + l.Path)
}
