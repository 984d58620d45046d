package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Exit is an exit status a command may end with besides the three every command shares, and what it
// means. A command declares its own in Command.Exits: its help lists them, the binary's help lists
// every command's, and a result whose ExitStatus a command did not declare ends it with status 1 and
// an internal.error, so that no status reaches a script that help does not explain.
type Exit struct {
	Status  int
	Meaning string
}

// The statuses every command may end with.
const (
	StatusOK     = 0
	StatusFailed = 1
	StatusUsage  = 2
)

// Shared returns the statuses every command may end with, as help explains them.
func Shared() []Exit {
	return []Exit{
		{StatusOK, "the command did what it was asked"},
		{StatusFailed, "it failed: the error's code says why"},
		{StatusUsage, "usage: an unknown command or flag, or wrong arguments; nothing was done"},
	}
}

// declares reports whether status is one c may end with.
func (c *Command) declares(status int) bool {
	return status == StatusOK || status == StatusFailed ||
		slices.ContainsFunc(c.Exits, func(e Exit) bool { return e.Status == status })
}

// Table is the exit statuses of a binary as its help lists them: the shared ones, then each status
// some command declares, with the commands that declare it, by status.
func Table(cmds []*Command) []TableRow {
	rows := map[int]*TableRow{}
	var order []int
	for _, c := range cmds {
		for _, e := range c.Exits {
			r, ok := rows[e.Status]
			if !ok {
				r = &TableRow{Exit: e}
				rows[e.Status] = r
				order = append(order, e.Status)
			}
			r.Commands = append(r.Commands, c.Path)
		}
	}
	slices.Sort(order)
	shared := Shared()
	out := make([]TableRow, 0, len(shared)+len(order))
	for _, e := range shared {
		out = append(out, TableRow{Exit: e})
	}
	for _, s := range order {
		out = append(out, *rows[s])
	}
	return out
}

// TableRow is one status of a binary's table and the commands that end with it (none for a shared one).
type TableRow struct {
	Exit
	Commands []string
}

// Line is the row as help prints it, without its indent.
func (r TableRow) Line() string {
	if len(r.Commands) == 0 {
		return fmt.Sprintf("%d  %s", r.Status, r.Meaning)
	}
	return fmt.Sprintf("%d  %s (%s)", r.Status, r.Meaning, strings.Join(r.Commands, ", "))
}

// writeExits prints the section of c's help that lists its exit statuses: the binary's whole table
// for the root, the shared statuses and the command's own for a command that declares any, and
// nothing for the others (the binary's help explains the shared ones).
func (r *runner) writeExits(w io.Writer, c *cobra.Command) {
	var lines []string
	if !c.HasParent() {
		for _, row := range r.table {
			lines = append(lines, row.Line())
		}
	} else if cmd := r.commands[c]; cmd != nil && len(cmd.Exits) > 0 {
		for _, e := range append(Shared(), cmd.Exits...) {
			lines = append(lines, TableRow{Exit: e}.Line())
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExit status:\n")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
