package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/internal/logbridge"
)

// The environment: every flag of a command can also be set by the variable
// LOCKCLUSTER_ and the flag's name in upper case with _ for -
// (--raft-secret: LOCKCLUSTER_RAFT_SECRET), one family for every command
// and for lock.ConfigFromEnv. The command line wins over the variable.
//
// The client commands (status, locks, join, leave, run, bench) also read
// the earlier names lock.ConfigFromEnv still accepts (LOCK_CLUSTER_ADDRS
// for LOCKCLUSTER_ENDPOINTS ...), deprecated; the new name wins.

const envPrefix = "LOCKCLUSTER_"

// envName is the variable of the flag name.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Annotations.
const (
	// annEnv on a command: its flags are read from the environment;
	// envWithAliases also from the deprecated names.
	annEnv = "lockcluster/env"
	// annNoEnv on a flag: never read from the environment; the value is
	// why, shown in the help.
	annNoEnv = "lockcluster/no-env"
)

// How a command reads the environment (the value of annEnv).
const (
	envOnly        = "env"
	envWithAliases = "env+aliases"
)

// readsEnv marks cmd as reading its flags from the environment, with the
// deprecated names when aliases is set.
func readsEnv(cmd *cobra.Command, aliases bool) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annEnv] = envOnly
	if aliases {
		cmd.Annotations[annEnv] = envWithAliases
	}
}

// noEnv keeps flag name of cmd from the environment, for the reason why.
func noEnv(cmd *cobra.Command, name, why string) {
	_ = cmd.Flags().SetAnnotation(name, annNoEnv, []string{why})
}

// envVars returns the variables that set f on cmd, the preferred first;
// none when the flag is not read from the environment.
func envVars(cmd *cobra.Command, f *pflag.Flag) []string {
	mode := cmd.Annotations[annEnv]
	if mode == "" || f.Hidden || f.Name == "help" || f.Name == "version" || f.Annotations[annNoEnv] != nil {
		return nil
	}
	vars := []string{envName(f.Name)}
	if mode == envWithAliases {
		if old := lock.DeprecatedEnv(vars[0]); old != "" {
			vars = append(vars, old)
		}
	}
	return vars
}

// envNote is the line of a flag's help that names its variables.
func envNote(cmd *cobra.Command, f *pflag.Flag) string {
	if why := f.Annotations[annNoEnv]; why != nil {
		return "(not read from the environment: " + why[0] + ")"
	}
	vars := envVars(cmd, f)
	switch len(vars) {
	case 0:
		return ""
	case 1:
		return "env " + vars[0]
	}
	return "env " + vars[0] + " (or " + strings.Join(vars[1:], ", ") + ", deprecated)"
}

// applyEnv sets every flag of cmd the command line left unset from its
// variable. A value the flag refuses is a usage error that names the
// variable.
func applyEnv(cmd *cobra.Command, e *env) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, name := range envVars(cmd, f) {
			v := e.getenv(name)
			if v == "" {
				continue
			}
			if serr := cmd.Flags().Set(f.Name, v); serr != nil {
				err = usagef("%s: %s", name, valueProblem(f, v, serr))
				return
			}
			_ = cmd.Flags().SetAnnotation(f.Name, annFromEnv, []string{name})
			return
		}
	})
	return err
}

// valueProblem says what is wrong with value for f, in the flag's terms
// (pflag's own errors name Go's parsing functions).
func valueProblem(f *pflag.Flag, value string, err error) string {
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

// given reports whether flag name was set, on the command line or from the
// environment.
func given(cmd *cobra.Command, name string) bool {
	return flagSource(cmd, name) != unset
}

// annFromEnv on a flag: its value came from this variable.
const annFromEnv = "lockcluster/from-env"

// source is where a flag's value came from, in increasing precedence.
type source int

const (
	unset source = iota
	fromEnv
	fromCommandLine
)

func flagSource(cmd *cobra.Command, name string) source {
	f := cmd.Flags().Lookup(name)
	switch {
	case f == nil || !f.Changed:
		return unset
	case f.Annotations[annFromEnv] != nil:
		return fromEnv
	}
	return fromCommandLine
}

// aliasFlags makes the flag names old (hidden: they are in no help and no
// completion) mean the flag name: the names an earlier version used.
func aliasFlags(cmd *cobra.Command, aliases map[string]string) {
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			name = to
		}
		return pflag.NormalizedName(name)
	})
}

// singleDashFlags rewrites "-name" and "-name=value" to "--name" for the
// long flags of the command args[0] names: lockcluster once parsed its
// flags with Go's flag package, which takes both forms, and scripts
// written then keep working. Rewriting stops at "--", and, for a command
// that takes no flags after its arguments (run), at the first argument.
func singleDashFlags(root *cobra.Command, args []string) []string {
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
	return cmd.Annotations[annFlagsFirst] == ""
}

// annFlagsFirst on a command: its flags come before its arguments (the
// arguments are a command line of their own).
const annFlagsFirst = "lockcluster/flags-first"

// Durations. Every duration flag takes Go's units plus days ("7d",
// "1d12h"), and refuses a bare number other than 0, which would name no
// unit.

// durationValue is a pflag.Value for such a duration.
type durationValue struct{ p *time.Duration }

func (d durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

func (d durationValue) String() string {
	if d.p == nil {
		return "0s"
	}
	return formatDuration(*d.p)
}

func (d durationValue) Type() string { return "duration" }

// durationVar defines a duration flag.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationValue{p}, name, usage)
}

// durationForms ends every message about a malformed duration.
const durationForms = "write 30s, 5m, 2h or 1d"

// maxDays keeps a day count within time.Duration.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// parseDuration is time.ParseDuration with a leading number of days ("7d",
// "1d12h", "1.5d"); a bare number is an error, except 0.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty; " + durationForms)
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		if f, _ := strconv.ParseFloat(t, 64); f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%s has no unit; %s", t, durationForms)
	}
	bad := fmt.Errorf("%q is not a duration; %s", t, durationForms)
	body, neg := t, false
	if rest, ok := strings.CutPrefix(body, "-"); ok {
		body, neg = rest, true
	} else {
		body = strings.TrimPrefix(body, "+")
	}
	var total time.Duration
	if i := strings.IndexFunc(body, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i > 0 && body[i] == 'd' {
		days, err := strconv.ParseFloat(body[:i], 64)
		if err != nil {
			return 0, bad
		}
		if days > float64(maxDays) {
			return 0, fmt.Errorf("%q is too long", t)
		}
		total = time.Duration(days * float64(24*time.Hour))
		body = body[i+1:]
	}
	if body != "" {
		if body[0] == '-' || body[0] == '+' {
			return 0, bad
		}
		d, err := time.ParseDuration(body)
		if err != nil {
			return 0, bad
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("%q is too long", t)
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// formatDuration prints d the way the flags take it, without zero units:
// "30s", "10m", "1h30m", "7d", "1d12h".
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	const day = 24 * time.Hour
	s := ""
	if d >= day {
		s = strconv.FormatInt(int64(d/day), 10) + "d"
		d %= day
	}
	if d > 0 {
		r := d.String() // "1h30m0s", "10m0s", "10s", "1.5s", "500ms"
		if strings.HasSuffix(r, "m0s") {
			r = strings.TrimSuffix(r, "0s")
		}
		if strings.HasSuffix(r, "h0m") {
			r = strings.TrimSuffix(r, "0m")
		}
		s += r
	}
	return sign + s
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// levelOff is above every level a logger uses: --log-level off.
const levelOff = slog.Level(1 << 20)

// logLevelNames maps --log-level to slog levels; trace is raft's.
var logLevelNames = map[string]slog.Level{
	"trace": logbridge.LevelTrace, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError, "off": levelOff,
}

// newLogger returns the root logger, text lines on w at level ("trace",
// "debug", "info", "warn", "error", "off"), and the level it reads, which
// the caller may change while it runs.
func newLogger(w io.Writer, level string) (*slog.Logger, *slog.LevelVar, error) {
	lvl, ok := logLevelNames[strings.ToLower(strings.TrimSpace(level))]
	if !ok {
		return nil, nil, fmt.Errorf("unknown log level %q (trace, debug, info, warn, error, off)", level)
	}
	v := new(slog.LevelVar)
	v.Set(lvl)
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: v, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.LevelKey && a.Value.Any() == logbridge.LevelTrace {
			a.Value = slog.StringValue("TRACE")
		}
		return a
	}})
	return slog.New(h), v, nil
}

// logLevels completes --log-level.
func logLevels(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"trace", "debug", "info", "warn", "error", "off"}, cobra.ShellCompDirectiveNoFileComp
}
