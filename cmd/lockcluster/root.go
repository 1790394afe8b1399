package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/internal/buildinfo"
)

const rootLong = `lockcluster: distributed locks on a Raft cluster (three nodes on loopback with "dev"),
and the commands to run it, look into it and hold its locks from the shell.`

const rootNotes = `Settings can also come from the environment: LOCKCLUSTER_ and the flag's name in upper
case with _ for - (--endpoints: LOCKCLUSTER_ENDPOINTS); the command line wins. The client
commands read the connection settings only (--driver, --endpoints, --token, --sqlite-path,
--prefix of run and bench, --tls-ca, --tls-cert, --tls-key, --cluster-id): what one command
does (--timeout, --key, locks' --prefix filter) comes from its command line. agent and dev
read every flag of theirs.

Try it:
  lockcluster dev --demo                        # three nodes on 127.0.0.1, with a short demo
  export LOCKCLUSTER_ENDPOINTS=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
  lockcluster status
  lockcluster run --key backup --ttl 30s -- ./backup.sh

Run "lockcluster COMMAND --help" for a command's flags and examples; docs/CLI.md has it all.
`

// newRootCmd builds the command tree. Commands return errors; dispatch
// prints them once and chooses the exit status.
func newRootCmd(e *env) *cobra.Command {
	cobra.EnableCommandSorting = false // the order below, most used first
	root := &cobra.Command{
		Use:     "lockcluster",
		Short:   "distributed locks on a Raft cluster",
		Long:    rootLong,
		Version: buildinfo.Version(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cliflags.RenderHelp(e.stderr, cmd)
			return exitStatus(exitUsage)
		},
		SilenceErrors:              true,
		SilenceUsage:               true,
		SuggestionsMinimumDistance: 2,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := cliflags.ApplyEnv(cmd, e.getenv); err != nil {
				return &usageError{msg: err.Error()}
			}
			return nil
		},
	}
	root.Annotations = map[string]string{annNotes: rootNotes}
	root.Flags().Bool("version", false, "print the version and exit")
	root.SetVersionTemplate("lockcluster {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { cliflags.RenderHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { cliflags.RenderHelp(c.OutOrStderr(), c); return nil })
	root.SetHelpCommand(newHelpCmd(e))
	root.AddCommand(
		newAgentCmd(e),
		newDevCmd(e),
		newStatusCmd(e),
		newLocksCmd(e),
		newJoinCmd(e),
		newLeaveCmd(e),
		newTokenCmd(e),
		newRunCmd(e),
		newElectCmd(e),
		newLeaderCmd(e),
		newBenchCmd(e),
		newVersionCmd(e),
	)
	return root
}

// unknownCommand is the error for a command name that is none of ours,
// with the nearest names (cobra's suggestions) when there are some.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{msg: msg}
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, the commit and the Go version of this build",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			i := buildinfo.Get()
			rev := i.Revision
			if rev == "" {
				rev = "unknown"
			}
			fmt.Fprintf(e.stdout, "lockcluster %s\nrevision    %s\ngo version  %s\n", i.Version, rev, dash(i.GoVersion))
			return nil
		},
	}
}

// usageError is a mistake on the command line: dispatch prints it with a
// pointer to --help, and exits with exitUsage.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// flagError turns pflag's parse errors into usage errors that say what is
// wrong with a value in the flag's own terms.
func flagError(cmd *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		f := bad.GetFlag()
		msg := fmt.Sprintf("--%s: %s", f.Name, cliflags.ValueProblem(f, bad.GetValue(), bad.Unwrap()))
		if f.Name == "slots" {
			// flock -n does not wait; here, as in consul lock, -n counts slots.
			msg += "; -n is the number of slots (as consul lock -n): to fail at once when the lock is held (flock -n), use --no-wait"
		}
		return &usageError{msg: msg}
	}
	return &usageError{msg: err.Error()}
}

// newHelpCmd is "lockcluster help [COMMAND]": the help of COMMAND, and a
// usage error (exit 64) for a name that is no command.
func newHelpCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "show the help of lockcluster or of one command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return unknownCommand(cmd.Root(), strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			cliflags.RenderHelp(e.stdout, target)
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range cmd.Root().Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}
