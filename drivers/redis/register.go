package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// Importing the package registers the "redis" driver of lock.Open and
// routes go-redis's own messages through log/slog (see goredisLogger).
func init() {
	drivers.Register("redis", func(ctx context.Context, o drivers.OpenOptions) (drivers.Driver, error) {
		return Open(ctx, Config{URL: o.RedisURL, Logger: o.Logger})
	})
	goredis.SetLogger(goredisLogger{})
}

// goredisLog is the logger go-redis's messages go to: the Logger of the
// Driver opened last (Open and New set it), which discards by default.
var goredisLog atomic.Pointer[slog.Logger]

func init() { goredisLog.Store(slog.New(slog.DiscardHandler)) }

// goredisLogger receives go-redis's messages (pool and connection
// trouble, which it otherwise prints on the process's stderr whatever the
// application configured).
//
// go-redis has one logger per process (redis.SetLogger), not one per
// client, so its messages cannot be told apart by Driver. They go to the
// logger of the Driver opened last: in the common case of one Driver per
// process, that is its own; with several, every message reaches one of the
// loggers the application configured, and a program that logs nothing
// (Config.Logger nil) prints nothing. It is set once, when this package is
// initialised: an application that calls redis.SetLogger itself, later,
// keeps its own.
type goredisLogger struct{}

func (goredisLogger) Printf(ctx context.Context, format string, v ...any) {
	l := goredisLog.Load()
	if !l.Enabled(ctx, slog.LevelWarn) {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	l.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("logger", "go-redis"))
}
