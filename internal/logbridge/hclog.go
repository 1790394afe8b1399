// Package logbridge hands a *slog.Logger to libraries that want an
// hclog.Logger (hashicorp/raft and its transport and snapshot store), so
// that a program configures one logger, the slog one, and every line goes
// through its handler.
package logbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// LevelTrace is the slog level of hclog's Trace: below Debug, so that a
// handler at Debug leaves raft's trace lines out.
const LevelTrace = slog.LevelDebug - 4

// NameKey is the attribute that carries the hclog name ("raft",
// "raft.transport"): slog has no names, hclog's Named becomes this one
// attribute, extended with a dot.
const NameKey = "logger"

// HCLog returns an hclog.Logger that writes through l, as name (empty: no
// name). A nil l discards everything. Levels map to slog's (Trace to
// LevelTrace); SetLevel does nothing, since the level is the handler's to
// decide.
func HCLog(l *slog.Logger, name string) hclog.Logger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &adapter{l: l, name: name, peers: &peerDownLimiter{}}
}

type adapter struct {
	l       *slog.Logger
	name    string
	implied []any            // With's arguments, for ImpliedArgs
	peers   *peerDownLimiter // shared by every adapter derived from one HCLog
}

var _ hclog.Logger = (*adapter)(nil)

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel, Off
		return slog.LevelInfo
	}
}

func (a *adapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	a.log(toSlog(level), msg, args)
}

func (a *adapter) log(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if level > slog.LevelDebug && closedUnderIt(args) {
		// raft's transport reports a connection this node closed itself,
		// as it stops, at ERROR ("failed to decode incoming command: use
		// of closed network connection"): an ordinary stop is no error.
		level = slog.LevelDebug
	}
	if level > slog.LevelWarn && deposed[msg] {
		level = slog.LevelWarn
	}
	level = a.peers.level(level, msg, args)
	if !a.l.Enabled(ctx, level) {
		return
	}
	out := make([]any, 0, len(args)+2)
	if a.name != "" {
		out = append(out, NameKey, a.name)
	}
	for _, v := range args {
		out = append(out, value(v))
	}
	a.l.Log(ctx, level, msg, out...)
}

// closedUnderIt reports an error argument that says the connection was
// closed on this side (net.ErrClosed), or raft's transport was
// (raft.ErrTransportShutdown: a connection still being read as it stops).
func closedUnderIt(args []any) bool {
	for _, v := range args {
		if err, ok := v.(error); ok && (errors.Is(err, net.ErrClosed) || errors.Is(err, raft.ErrTransportShutdown)) {
			return true
		}
	}
	return false
}

// value renders hclog's formatting wrappers as hclog would; other values
// are left to the handler.
func value(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) > 0 {
			if format, ok := v[0].(string); ok {
				return fmt.Sprintf(format, v[1:]...)
			}
		}
		return fmt.Sprint([]any(v)...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(v))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(v))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(v))
	case hclog.Quote:
		return fmt.Sprintf("%q", string(v))
	}
	return v
}

func (a *adapter) Trace(msg string, args ...any) { a.log(LevelTrace, msg, args) }
func (a *adapter) Debug(msg string, args ...any) { a.log(slog.LevelDebug, msg, args) }
func (a *adapter) Info(msg string, args ...any)  { a.log(slog.LevelInfo, msg, args) }
func (a *adapter) Warn(msg string, args ...any)  { a.log(slog.LevelWarn, msg, args) }
func (a *adapter) Error(msg string, args ...any) { a.log(slog.LevelError, msg, args) }

func (a *adapter) enabled(level slog.Level) bool { return a.l.Enabled(context.Background(), level) }

func (a *adapter) IsTrace() bool { return a.enabled(LevelTrace) }
func (a *adapter) IsDebug() bool { return a.enabled(slog.LevelDebug) }
func (a *adapter) IsInfo() bool  { return a.enabled(slog.LevelInfo) }
func (a *adapter) IsWarn() bool  { return a.enabled(slog.LevelWarn) }
func (a *adapter) IsError() bool { return a.enabled(slog.LevelError) }

func (a *adapter) ImpliedArgs() []any { return a.implied }

func (a *adapter) With(args ...any) hclog.Logger {
	return &adapter{l: a.l.With(args...), name: a.name, implied: append(a.implied[:len(a.implied):len(a.implied)], args...), peers: a.peers}
}

func (a *adapter) Name() string { return a.name }

func (a *adapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return &adapter{l: a.l, name: name, implied: a.implied, peers: a.peers}
}

func (a *adapter) ResetNamed(name string) hclog.Logger {
	return &adapter{l: a.l, name: name, implied: a.implied, peers: a.peers}
}

// SetLevel does nothing: the slog handler decides.
func (a *adapter) SetLevel(hclog.Level) {}

// GetLevel reports the lowest level the handler takes.
func (a *adapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(toSlog(l)) {
			return l
		}
	}
	return hclog.Off
}

func (a *adapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line written to it; with
// opts.InferLevels a leading "[DEBUG]", "[INFO]", "[WARN]" or "[ERROR]"
// (or "[ERR]") sets the level and is dropped.
func (a *adapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	w := &stdWriter{a: a, level: slog.LevelInfo}
	if opts != nil {
		w.infer = opts.InferLevels
		if opts.ForceLevel != hclog.NoLevel && opts.ForceLevel != hclog.Off {
			w.level = toSlog(opts.ForceLevel)
			w.infer = false
		}
	}
	return w
}

type stdWriter struct {
	a     *adapter
	infer bool
	level slog.Level
}

var prefixes = []struct {
	prefix string
	level  slog.Level
}{
	{"[TRACE]", LevelTrace}, {"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo},
	{"[WARN]", slog.LevelWarn}, {"[ERROR]", slog.LevelError}, {"[ERR]", slog.LevelError},
}

func (w *stdWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		msg := strings.TrimSpace(string(line))
		if msg == "" {
			continue
		}
		level := w.level
		if w.infer {
			for _, pr := range prefixes {
				if rest, ok := strings.CutPrefix(msg, pr.prefix); ok {
					msg, level = strings.TrimSpace(rest), pr.level
					break
				}
			}
		}
		w.a.log(level, msg, nil)
	}
	return len(p), nil
}
