// Package cliflags holds lockcluster's conventions for flags, shared by
// every command: each flag can also be set by a variable of the
// LOCKCLUSTER_ family, the single-dash form keeps working, durations take days, and the help lists each flag with its
// variable. The commands themselves, and what their flags mean, stay in
// cmd/lockcluster.
package cliflags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The environment carries settings, not behaviour: a flag is set by the
// variable LOCKCLUSTER_ and the flag's name in upper case with _ for -
// (--endpoints: LOCKCLUSTER_ENDPOINTS), one family for every command and
// for lock.ConfigFromEnv, and the command line wins over the variable.
//
// The client commands (status, locks, join, leave, run, bench) read only
// the connection settings from it (ConnectionFlags), which mean the same
// to every command and to the library; a flag that shapes what one
// command does (run's --timeout, locks' --prefix filter, -o) is not read
// from a variable that another command, or an application, also reads.
// The node commands (agent, dev) read every flag of theirs:
// each is a setting of the node.

const envPrefix = "LOCKCLUSTER_"

// EnvName is the variable of the flag name.
func EnvName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Annotations.
const (
	// annEnv on a command: its flags are read from the environment,
	// only the connection flags for a client command.
	annEnv = "lockcluster/env"
	// annNoEnv on a flag: never read from the environment; the value is
	// why, shown in the help.
	annNoEnv = "lockcluster/no-env"
)

// ConnectionFlags are the flags a client command reads from the
// environment: where the backend is and how to reach it. --prefix is the
// key prefix of the library (LOCKCLUSTER_PREFIX) where a command has it
// (run, bench); locks' --prefix, a filter, is not read (NoEnv).
var ConnectionFlags = map[string]bool{
	"driver": true, "endpoints": true, "token": true, "sqlite-path": true, "prefix": true,
	"tls-ca": true, "tls-cert": true, "tls-key": true, "cluster-id": true,
}

// How a command reads the environment (the value of annEnv).
const (
	envAll        = "env"
	envConnection = "env:connection"
)

// ReadsEnv marks cmd as reading its flags from the environment: all of
// them for a node command, only the ConnectionFlags for a client command.
func ReadsEnv(cmd *cobra.Command, client bool) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annEnv] = envAll
	if client {
		cmd.Annotations[annEnv] = envConnection
	}
}

// NoEnv keeps flag name of cmd from the environment, for the reason why.
func NoEnv(cmd *cobra.Command, name, why string) {
	_ = cmd.Flags().SetAnnotation(name, annNoEnv, []string{why})
}

// IsNoEnv reports whether NoEnv keeps f from the environment.
func IsNoEnv(f *pflag.Flag) bool { return f.Annotations[annNoEnv] != nil }

// envVar returns the variable that sets f on cmd, or "" when the flag
// is not read from the environment.
func envVar(cmd *cobra.Command, f *pflag.Flag) string {
	mode := cmd.Annotations[annEnv]
	if mode == "" || f.Hidden || f.Name == "help" || f.Name == "version" || f.Annotations[annNoEnv] != nil {
		return ""
	}
	if mode == envConnection && !ConnectionFlags[f.Name] {
		return "" // a client command's behaviour: the command line only
	}
	return EnvName(f.Name)
}

// EnvNote is the line of a flag's help that names its variable.
func EnvNote(cmd *cobra.Command, f *pflag.Flag) string {
	if why := f.Annotations[annNoEnv]; why != nil {
		return "(not read from the environment: " + why[0] + ")"
	}
	if name := envVar(cmd, f); name != "" {
		return "env " + name
	}
	return ""
}

// ApplyEnv sets every flag of cmd the command line left unset from its
// variable, as getenv reads it. A value the flag refuses is an
// *EnvValueError that names the variable.
func ApplyEnv(cmd *cobra.Command, getenv func(string) string) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := envVar(cmd, f)
		v := ""
		if name != "" {
			v = getenv(name)
		}
		if v == "" {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = &EnvValueError{Var: name, Problem: ValueProblem(f, v, serr)}
			return
		}
		_ = cmd.Flags().SetAnnotation(f.Name, annFromEnv, []string{name})
	})
	return err
}

// EnvValueError is a variable whose value its flag refuses.
type EnvValueError struct {
	Var     string // the variable
	Problem string // what is wrong with its value, in the flag's terms
}

func (e *EnvValueError) Error() string { return e.Var + ": " + e.Problem }

// ValueProblem says what is wrong with value for f, in the flag's terms
// (pflag's own errors name Go's parsing functions).
func ValueProblem(f *pflag.Flag, value string, err error) string {
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return fmt.Sprintf("%q is not an integer", value)
	case "bool":
		return fmt.Sprintf("%q is not true or false", value)
	}
	var inv *pflag.InvalidValueError
	if errors.As(err, &inv) && inv.Unwrap() != nil {
		err = inv.Unwrap()
	}
	if err == nil {
		return fmt.Sprintf("%q is not valid", value)
	}
	return err.Error()
}

// Given reports whether flag name was set, on the command line or from the
// environment.
func Given(cmd *cobra.Command, name string) bool {
	return FlagSource(cmd, name) != Unset
}

// annFromEnv on a flag: its value came from this variable.
const annFromEnv = "lockcluster/from-env"

// Source is where a flag's value came from, in increasing precedence.
type Source int

const (
	Unset           Source = iota // the flag keeps its default
	FromEnv                       // set from its variable
	FromCommandLine               // set on the command line
)

// FlagSource says where the value of flag name of cmd came from.
func FlagSource(cmd *cobra.Command, name string) Source {
	f := cmd.Flags().Lookup(name)
	switch {
	case f == nil || !f.Changed:
		return Unset
	case f.Annotations[annFromEnv] != nil:
		return FromEnv
	}
	return FromCommandLine
}

// SingleDash rewrites "-name" and "-name=value" to "--name" for the
// long flags of the command args[0] names: lockcluster once parsed its
// flags with Go's flag package, which takes both forms, and scripts
// written then keep working. Rewriting stops at "--", and, for a command
// that takes no flags after its arguments (run), at the first argument.
func SingleDash(root *cobra.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	fs := cmd.Flags()
	out := append([]string(nil), args...)
	for i := 1; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			if !fs.HasFlags() || !interspersed(cmd) {
				break
			}
			continue
		}
		long := strings.HasPrefix(a, "--")
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil || len(name) < 2 {
			continue
		}
		if !long {
			out[i] = "-" + a
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value, whatever it looks like
		}
	}
	return out
}

// interspersed reports whether cmd takes flags after its arguments.
func interspersed(cmd *cobra.Command) bool {
	return cmd.Annotations[AnnFlagsFirst] == ""
}

// AnnFlagsFirst on a command (any non-empty value): its flags come before
// its arguments (the arguments are a command line of their own).
const AnnFlagsFirst = "lockcluster/flags-first"
