// Package clitest checks that a binary built on sdk/cli keeps the convention its users rely on:
// every group and command answers --help with exit status 0, a mistyped command is refused with a
// suggestion and exit status 2 (followed by --help too), refusals keep the JSON envelope under -o
// json, and completion scripts are generated for bash, zsh and fish. Help must say only what the
// binary does: each default once, no form of a command that the command refuses, and exit statuses
// only in the table help prints from what the commands declare, which a main package's doc repeats.
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
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
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
	t.Run("help says what the binary does", func(t *testing.T) {
		for _, l := range tree {
			t.Run(name(binary, l), func(t *testing.T) { HelpAgrees(t, binary, cmds, tree, l) })
		}
	})
	t.Run("exit statuses", func(t *testing.T) { ExitTable(t, binary, cmds) })
	t.Run("mistyped", func(t *testing.T) {
		for _, l := range tree {
			if l.Group {
				t.Run(name(binary, l), func(t *testing.T) {
					Mistyped(t, binary, cmds, l, children(tree, l))
					UnknownWithHelp(t, binary, cmds, l)
				})
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

// UnknownWithHelp checks that a word naming no command of group is refused with exit status 2 and
// usage.invalid when --help follows it, alone or with more words, as it is without --help: help
// printed instead would tell a script that the command exists.
func UnknownWithHelp(t *testing.T, binary string, cmds []*cli.Command, group cli.Listing) {
	t.Helper()
	for _, tail := range [][]string{{"no-such-command", "--help"}, {"no-such-command", "create", "--help"}, {"--help", "no-such-command"}} {
		args := append(strings.Fields(group.Path), tail...)
		code, out, errOut := Run(t, binary, cmds, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "error: "+errcode.UsageInvalid+": unknown command \"no-such-command\"") {
			t.Errorf("%s %s: exit %d, want 2 and unknown command\nstdout:\n%s\nstderr:\n%s", binary, strings.Join(args, " "), code, out, errOut)
		}
		if code, env := RunJSON(t, binary, cmds, append(args, "-o", "json")...); code != 2 || env["code"] != errcode.UsageInvalid {
			t.Errorf("%s %s -o json: exit %d, envelope %v", binary, strings.Join(args, " "), code, env)
		}
	}
}

// exitMention is a clause that tells an exit status by its number: "exit status 3 when...", "exits 4".
// Help may tell statuses only in its table, which is made from what the commands declare.
var exitMention = regexp.MustCompile(`(?i)\bexit[^.;,()\n]*?\b\d+\b`)

// HelpAgrees checks that l's help says only what the binary does: no flag shows its default twice
// (a usage that spells its default beside the one help prints), exit statuses are told only in the
// table help prints from what l declares, and every command of the binary that help names
// ("see lexicon cloud regions") exists and takes the arguments it is shown with.
func HelpAgrees(t *testing.T, binary string, cmds []*cli.Command, tree []cli.Listing, l cli.Listing) {
	t.Helper()
	_, out, _ := Run(t, binary, cmds, append(strings.Fields(l.Path), "--help")...)
	for _, p := range helpProblems(binary, cmds, tree, l, out) {
		t.Errorf("%s --help %s", name(binary, l), p)
	}
}

// helpProblems is what HelpAgrees finds wrong with help, the help l printed.
func helpProblems(binary string, cmds []*cli.Command, tree []cli.Listing, l cli.Listing, help string) []string {
	var problems []string
	body, table, _ := strings.Cut(help, "\nExit status:\n")
	table, _, _ = strings.Cut(table, "\n\n")
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		if strings.Count(line, "(default") > 1 {
			problems = append(problems, "shows a default twice: "+strings.TrimSpace(line))
		}
		if m := exitMention.FindString(line); m != "" {
			problems = append(problems, fmt.Sprintf("tells an exit status outside its table (%q); declare it in the command's Exits: %s", m, strings.TrimSpace(line)))
		}
		if i > 0 && lines[i-1] == "Usage:" || strings.HasPrefix(line, "Run '") {
			continue // the command's own synopsis, and the pointer to COMMAND --help
		}
		for _, ref := range references(binary, line) {
			if msg := checkReference(tree, ref); msg != "" {
				problems = append(problems, fmt.Sprintf("names %q: %s", binary+" "+strings.Join(ref, " "), msg))
			}
		}
	}
	var want []string
	switch {
	case l.Path == "":
		for _, row := range cli.Table(cmds) {
			want = append(want, "  "+row.Line())
		}
	case len(l.Exits) > 0:
		for _, e := range append(cli.Shared(), l.Exits...) {
			want = append(want, "  "+cli.TableRow{Exit: e}.Line())
		}
	}
	if got, wanted := strings.TrimSuffix(table, "\n"), strings.Join(want, "\n"); got != wanted {
		problems = append(problems, fmt.Sprintf("lists the exit statuses\n%s\nwant\n%s", got, wanted))
	}
	return problems
}

// references are the words after each "BINARY " in line that may name a command and its arguments:
// command names and argument placeholders (ACCOUNT, ID...), up to a flag, another word, or a word
// that ends a clause ("(lexicon cloud regions)").
func references(binary, line string) [][]string {
	var out [][]string
	for i := 0; ; {
		j := strings.Index(line[i:], binary+" ")
		if j < 0 {
			return out
		}
		at := i + j
		i = at + len(binary) + 1
		if at > 0 && !strings.ContainsRune(" (`'\"", rune(line[at-1])) {
			continue // the tail of a longer word
		}
		var words []string
		for _, f := range strings.Fields(line[i:]) {
			f = strings.TrimLeft(f, "([")
			w := strings.TrimRight(f, ")],;:.`'\"")
			if !isPlaceholder(w) && !isCommandLike(w) {
				break
			}
			words = append(words, w)
			if w != f {
				break
			}
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
}

// isPlaceholder is a word that stands for an argument: upper case, digits and _, maybe followed by
// "..." (ACCOUNT, ID_A, TEXT...).
func isPlaceholder(w string) bool {
	w = strings.TrimSuffix(w, "...")
	if w == "" {
		return false
	}
	for _, r := range w {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// checkReference says what is wrong with a reference to a command (the words after the binary), or
// is "": its words must name a command, and the placeholders after them must be as many as it takes.
// A first word that names no command is prose that merely follows the binary's name.
func checkReference(tree []cli.Listing, words []string) string {
	byPath := map[string]cli.Listing{}
	for _, l := range tree {
		byPath[l.Path] = l
	}
	at, n := byPath[""], 0
	for ; n < len(words) && !isPlaceholder(words[n]); n++ {
		next, ok := byPath[strings.TrimSpace(at.Path+" "+words[n])]
		switch {
		case ok:
			at = next
			continue
		case n == 0:
			return ""
		case at.Group:
			return fmt.Sprintf("%s has no command %q", at.Path, words[n])
		}
		break // a value given to the command
	}
	args := 0
	for _, w := range words[n:] {
		if !isPlaceholder(w) {
			break
		}
		args++
	}
	switch {
	case at.Group && (args > 1 || args == 1 && words[n] != "COMMAND"):
		return fmt.Sprintf("%s is a group: it takes a command, not %s", at.Path, strings.Join(words[n:n+args], " "))
	case !at.Group && at.MaxArgs >= 0 && args > at.MaxArgs:
		return fmt.Sprintf("%s takes at most %d arguments, not %d", at.Path, at.MaxArgs, args)
	case !at.Group && args > 0 && args < at.MinArgs:
		return fmt.Sprintf("%s takes at least %d arguments, not %d", at.Path, at.MinArgs, args)
	}
	return ""
}

// isCommandLike is a word spelled as command names are: lower case letters, digits and dashes.
func isCommandLike(w string) bool {
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return w != ""
}

// ExitTable checks the statuses the commands declare: each above the shared 0, 1 and 2, once per
// command, with one meaning in the binary; and, when the test runs in a main package (a binary's
// own test), that its doc comment lists the binary's table as help prints it.
func ExitTable(t *testing.T, binary string, cmds []*cli.Command) {
	t.Helper()
	doc, isMain := packageDoc(t)
	if !isMain {
		doc = ""
	}
	for _, p := range exitProblems(cmds, doc, isMain) {
		t.Errorf("%s: %s", binary, p)
	}
}

// exitProblems is what ExitTable finds wrong with the commands' statuses, and with doc when it must
// list them.
func exitProblems(cmds []*cli.Command, doc string, needDoc bool) []string {
	var problems []string
	meaning := map[int]string{}
	for _, c := range cmds {
		seen := map[int]bool{}
		for _, e := range c.Exits {
			if e.Status <= cli.StatusUsage || e.Status > 125 {
				problems = append(problems, fmt.Sprintf("%s declares exit status %d: a command's own are 3 to 125", c.Path, e.Status))
			}
			if seen[e.Status] {
				problems = append(problems, fmt.Sprintf("%s declares exit status %d twice", c.Path, e.Status))
			}
			seen[e.Status] = true
			if m, ok := meaning[e.Status]; ok && m != e.Meaning {
				problems = append(problems, fmt.Sprintf("exit status %d means %q and, for %s, %q", e.Status, m, c.Path, e.Meaning))
			}
			meaning[e.Status] = e.Meaning
			if strings.TrimSpace(e.Meaning) == "" {
				problems = append(problems, fmt.Sprintf("%s declares exit status %d without its meaning", c.Path, e.Status))
			}
		}
	}
	if !needDoc || len(meaning) == 0 {
		return problems
	}
	flat := strings.Join(strings.Fields(doc), " ")
	for _, row := range cli.Table(cmds) {
		if line := strings.Join(strings.Fields(row.Line()), " "); !strings.Contains(flat, line) {
			problems = append(problems, fmt.Sprintf("the package doc lacks the exit status line %q, as help prints it", row.Line()))
		}
	}
	return problems
}

// packageDoc is the doc comment of the package in the working directory, and whether it is a main
// package.
func packageDoc(t *testing.T) (string, bool) {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatalf("reading the package doc: %v", err)
	}
	main, ok := pkgs["main"]
	if !ok {
		return "", false
	}
	var doc strings.Builder
	for _, f := range main.Files {
		if f.Doc != nil {
			doc.WriteString(f.Doc.Text())
		}
	}
	return doc.String(), true
}
