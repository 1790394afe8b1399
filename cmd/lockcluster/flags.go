package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/internal/logbridge"
)

// The flag conventions every command follows (the environment, earlier
// durations, the help) are cliflags'; these are the short names of
// the ones most commands use.

const (
	annNotes      = cliflags.AnnNotes
	annFlagsFirst = cliflags.AnnFlagsFirst
)

func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	cliflags.DurationVar(fs, p, name, def, usage)
}

func formatDuration(d time.Duration) string { return cliflags.FormatDuration(d) }

func given(cmd *cobra.Command, name string) bool { return cliflags.Given(cmd, name) }

// readsEnv marks cmd as reading its flags from the environment: only the
// connection flags for a client command.
func readsEnv(cmd *cobra.Command, client bool) { cliflags.ReadsEnv(cmd, client) }

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

// raftLogUsage is --raft-log's help, for agent and dev.
var raftLogUsage = fmt.Sprintf("store of the raft log: wal (segment files in DIR/wal) or bolt (raft.db); a data dir\n"+
	"keeps the one it was created with, the other is refused (empty: the data dir's; %s for a new one:\n%s)",
	cluster.DefaultRaftLog, raftLogWhy)

// raftLogWhy says why DefaultRaftLog is the default (the figures are in
// docs/PERFORMANCE.md).
const raftLogWhy = "more cycles/s and a lower p50 than bolt in every measured run (docs/PERFORMANCE.md), for 64 MiB of disk allocated per segment"

// raftLogs completes --raft-log.
func raftLogs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{cluster.RaftLogWAL, cluster.RaftLogBolt}, cobra.ShellCompDirectiveNoFileComp
}

func durationVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	cliflags.DurationVarP(fs, p, name, short, def, usage)
}
