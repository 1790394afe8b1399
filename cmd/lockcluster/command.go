package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock"
)

// newCommand begins a command as each of lockcluster's begins: its usage
// line, summary, examples, and the notes its help prints after the flags;
// no positional arguments (a command that takes some sets Args); its flags
// shown in the order they are registered, which is the order of use.
func newCommand(use, short, examples, notes string) (*cobra.Command, *pflag.FlagSet) {
	cmd := &cobra.Command{
		Use:         use,
		Short:       short,
		Example:     examples,
		Annotations: map[string]string{annNotes: notes},
		Args:        noArgs,
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	return cmd, fs
}

// openOrExplain opens the backend; when it cannot, it says why under the
// command's name and returns the exit status, which ends the command.
func openOrExplain(ctx context.Context, e *env, cmd *cobra.Command, cfg lock.Config) (*lock.Manager, error) {
	m, err := openManager(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %s\n", cmd.CommandPath(), describeConfig(err))
		return nil, exitStatus(exitCodeFor(err))
	}
	return m, nil
}
