package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// flagSet is a subcommand's flags with its synopsis and examples.
type flagSet struct {
	*flag.FlagSet
	name, synopsis, examples string
}

// newFlagSet returns the flags of subcommand name. --help prints the
// synopsis, the flags and the examples on stdout; a bad flag prints the
// error and a hint on stderr.
func newFlagSet(e *env, name, synopsis, examples string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // printed by parse, on the right stream
	return &flagSet{FlagSet: fs, name: name, synopsis: synopsis, examples: examples}
}

func (fs *flagSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: lockcluster %s\n\n", fs.synopsis)
	fmt.Fprintln(w, "Flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	if fs.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s", fs.examples)
	}
}

// given reports whether flag name was set on the command line.
func (fs *flagSet) given(name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// parse parses args; done is true when the command must stop with code
// (--help: 0, bad flags: exitUsage).
func parse(fs *flagSet, e *env, args []string) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.printUsage(e.stdout)
		return exitOK, true
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "Run \"lockcluster %s --help\" for usage.\n", fs.name)
		return exitUsage, true
	}
	return 0, false
}

// usageError prints msg and the usage hint, and returns exitUsage.
func usageError(e *env, cmd, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "lockcluster %s: %s\n", cmd, fmt.Sprintf(format, args...))
	fmt.Fprintf(e.stderr, "Run \"lockcluster %s --help\" for usage.\n", cmd)
	return exitUsage
}

// envOr returns the first non-empty environment variable among names, or
// def.
func envOr(e *env, def string, names ...string) string {
	for _, n := range names {
		if v := e.getenv(n); v != "" {
			return v
		}
	}
	return def
}

// envDuration is envOr for durations; a malformed value is an error.
func envDuration(e *env, def time.Duration, name string) (time.Duration, error) {
	v := e.getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// envInt is envOr for integers; a malformed value is an error.
func envInt(e *env, def int, name string) (int, error) {
	v := e.getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", name, v)
	}
	return n, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// newLogger returns the root logger at level ("trace", "debug", "info",
// "warn", "error", "off").
func newLogger(w io.Writer, name, level string) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (trace, debug, info, warn, error, off)", level)
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: lvl, Output: w}), nil
}
