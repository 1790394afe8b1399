package cliflags

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// AnnNotes on a command: text shown after its examples.
const AnnNotes = "lockcluster/notes"

// RenderHelp prints a command's help: what it does, its usage line, its
// subcommands, its flags each with its environment variable, its
// examples and notes.
func RenderHelp(w io.Writer, c *cobra.Command) {
	text := c.Long
	if text == "" {
		text = c.Short
	}
	fmt.Fprintln(w, strings.TrimRight(text, "\n"))
	use := c.UseLine()
	if c.HasAvailableSubCommands() {
		use = c.CommandPath() + " COMMAND [flags]"
	}
	fmt.Fprintf(w, "\nUsage: %s\n", use)
	if c.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nCommands:")
		for _, sc := range c.Commands() {
			if sc.IsAvailableCommand() || sc.Name() == "help" {
				fmt.Fprintf(w, "  %-*s %s\n", c.NamePadding(), sc.Name(), sc.Short)
			}
		}
	}
	if c.HasAvailableFlags() {
		fmt.Fprintln(w, "\nFlags:")
		writeFlags(w, c)
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if notes := c.Annotations[AnnNotes]; notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(notes, "\n"))
	}
}

// writeFlags lists the visible flags of c, in the order they were
// defined, each with its default and the variable that also sets it.
func writeFlags(w io.Writer, c *cobra.Command) {
	type row struct{ left, right string }
	var rows []row
	width := 0
	add := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" {
			left += " " + varname
		}
		if showDefault(f) {
			if f.Value.Type() == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		if note := EnvNote(c, f); note != "" {
			usage += "\n" + note
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	width = min(width, 30) + 3
	for _, r := range rows {
		lines := strings.Split(r.right, "\n")
		if len(r.left)+2 > width {
			fmt.Fprintln(w, r.left)
			fmt.Fprintf(w, "%*s%s\n", width, "", lines[0])
		} else {
			fmt.Fprintf(w, "%-*s%s\n", width, r.left, lines[0])
		}
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%*s%s\n", width, "", l)
		}
	}
}

// showDefault reports whether a flag's default is worth printing.
func showDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return false
	}
	return true
}
