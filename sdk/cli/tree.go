package cli

import (
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// runner carries one invocation: where it writes, the -o value every command shares, and the exit
// status the command chose.
type runner struct {
	stdout, stderr io.Writer
	args           []string
	output         string
	status         int
	// refused is set when help was asked of a word that names no command: Run refuses it as it
	// would the word alone, where cobra would print the group's help and succeed.
	refused error
	// commands are the Commands the tree's runnable nodes run, and table the binary's exit statuses,
	// for help and Tree.
	commands map[*cobra.Command]*Command
	table    []TableRow
}

// tree builds the cobra commands for cmds under a root named binary. A path of several words makes a
// group of each leading word ("jobs run" makes "jobs"); a Command without Run names a group and gives
// its summary. Every Setup runs here, so flags exist before parsing and for completion.
func (r *runner) tree(binary, about string, cmds []*Command) *cobra.Command {
	root := &cobra.Command{
		Use:   binary,
		Short: about,
		// Errors and usage are printed by Run, in the envelope or the error line of the convention.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(r.stdout)
	root.SetErr(r.stderr)
	root.SetHelpFunc(r.help)
	root.SetUsageFunc(r.usage)
	r.commands, r.table = map[*cobra.Command]*Command{}, Table(cmds)
	root.SetFlagErrorFunc(r.flagError)
	root.PersistentFlags().StringVarP(&r.output, "output", "o", "text", "output format: text or json")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if r.output != "json" && r.output != "text" {
			return r.usageError(c, "-o must be text or json, not %q", r.output)
		}
		return nil
	}
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))

	for _, c := range cmds {
		node := r.node(root, strings.Fields(c.Path))
		if c.Summary != "" {
			node.Short = c.Summary
		}
		if c.Run == nil {
			continue
		}
		if c.Args != "" {
			node.Use = node.Name() + " " + c.Args
		}
		node.Args = cobra.ArbitraryArgs
		node.RunE = r.leaf(c)
		r.commands[node] = c
		fs := flag.NewFlagSet(binary+" "+c.Path, flag.ContinueOnError)
		if c.Setup != nil {
			c.Setup(fs)
		}
		node.Flags().AddGoFlagSet(fs)
		node.Flags().VisitAll(nameType)
	}

	// The built-in help and completion commands are made now, not when cobra would make them on
	// Execute, so that they join the groups below and Tree lists them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(r.args...)
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "show the help of any command"
			c.Run, c.RunE = nil, helpCommand
		case "completion":
			c.Short = "print a shell completion script: bash, fish, powershell or zsh"
			for _, shell := range c.Commands() {
				shell.Short = "print the completion script for " + shell.Name()
			}
		}
	}
	groups(root)
	return root
}

// node returns the command at path under parent, making the missing ones; the ones made are groups
// until a Command gives them a Run.
func (r *runner) node(parent *cobra.Command, path []string) *cobra.Command {
	for _, word := range path {
		var next *cobra.Command
		for _, c := range parent.Commands() {
			if c.Name() == word {
				next = c
				break
			}
		}
		if next == nil {
			next = &cobra.Command{Use: word}
			parent.AddCommand(next)
		}
		parent = next
	}
	return parent
}

// groups makes every command that holds commands and runs none answer like a group: alone it prints
// its help; followed by a word that names none of its commands it refuses it, with suggestions.
// Cobra would print the help and exit 0 in both cases.
func groups(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = ""
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownCommand(c, args[0])
		}
	}
	for _, sub := range c.Commands() {
		groups(sub)
	}
}

// helpCommand is "help [COMMAND]": help on a command that does not exist is a usage error, as the
// command itself would be.
func helpCommand(c *cobra.Command, args []string) error {
	target, rest, err := c.Root().Find(args)
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "")
	}
	if len(rest) > 0 {
		return unknownCommand(target, rest[0])
	}
	target.InitDefaultHelpFlag() // so that its help lists -h as well
	return target.Help()
}

func unknownCommand(c *cobra.Command, word string) error {
	err := errcode.New(errcode.UsageInvalid, "unknown command %q for %q", word, c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default, which it sets only on its own path
	}
	if s := c.SuggestionsFor(word); len(s) > 0 {
		err.Message += "; did you mean " + orList(s) + "?"
	}
	return err
}

// orList quotes words and joins them as a sentence does: "a", "b" or "c".
func orList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strconv.Quote(w)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// goTypes are the value types of Go's flag package, which pflag's bridge names well ("string",
// "duration"). Any other flag.Value is a command's own, named by its Go type ("multi"); help calls it
// a string instead, which is what is typed.
var goTypes = map[string]bool{
	"string": true, "bool": true, "int": true, "int64": true, "uint": true, "uint64": true,
	"float64": true, "duration": true, "func": true, "boolFunc": true, "text": true,
}

func nameType(f *pflag.Flag) {
	if !goTypes[f.Value.Type()] {
		f.Value = typed{f.Value}
	}
	// pflag knows "0s" for the zero of its own duration type only; for a bridged one it would print
	// "(default 0s)" after a usage that says what zero means.
	if f.Value.Type() == "duration" && f.DefValue == "0s" {
		f.DefValue = "0"
	}
}

type typed struct{ pflag.Value }

func (typed) Type() string { return "string" }

// Listing is one command of the tree Run builds, as its help shows it.
type Listing struct {
	Path    string   // the words after the binary name; "" for the binary itself
	Summary string   // the line help shows for it
	Group   bool     // it holds commands and runs none
	Flags   []string // the long names of the flags its help lists under Flags
	// MinArgs and MaxArgs bound its positional arguments (MaxArgs < 0: no bound); a group and the
	// built-in commands take none that Tree knows of.
	MinArgs, MaxArgs int
	// Exits are the statuses it declares besides 0, 1 and 2.
	Exits []Exit
}

// Tree lists every command Run answers for: the binary itself first, then its groups and commands
// depth first, the built-in help and completion commands among them. Conformance tests walk it
// (sdk/cli/clitest), so no list of commands is kept by hand.
func Tree(binary string, cmds []*Command) []Listing {
	r := &runner{stdout: io.Discard, stderr: io.Discard}
	var out []Listing
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		c.InitDefaultHelpFlag()
		l := Listing{Path: strings.Join(path, " "), Summary: c.Short}
		_, l.Group = c.Annotations[groupAnnotation]
		if cmd := r.commands[c]; cmd != nil {
			l.MinArgs, l.MaxArgs, l.Exits = cmd.MinArgs, cmd.MaxArgs, cmd.Exits
		} else {
			l.MaxArgs = -1
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				l.Flags = append(l.Flags, f.Name)
			}
		})
		out = append(out, l)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(path[:len(path):len(path)], sub.Name()))
			}
		}
	}
	walk(r.tree(binary, "", cmds), nil)
	return out
}
