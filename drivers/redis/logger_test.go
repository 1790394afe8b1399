package redis_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// lockedBuffer is a log destination safe for the driver's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// go-redis logs through one process-wide logger, which printed on stderr
// whatever the application configured. It now goes to the Logger of the
// driver opened last.
//
// Not parallel: the other tests open drivers, which would take go-redis's
// messages over.
func TestLogger_GoRedisMessagesGoThroughSlog(t *testing.T) {
	srv := redistest.Start(t)
	var buf lockedBuffer
	d := open(t, srv, redis.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if _, _, err := driverstest.Take(t.Context(), d, newKey("k"), "o", time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The pool has to dial again, and cannot: go-redis logs it.
	_, _, err := driverstest.Take(t.Context(), d, newKey("k2"), "o", time.Minute)
	if err == nil {
		t.Fatal("Acquire on a stopped Redis succeeded")
	}
	poll.Until(t, 5*time.Second, "go-redis's dial failure in the driver's log", func() bool {
		return strings.Contains(buf.String(), "logger=go-redis")
	})
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "failed to dial") {
		t.Errorf("log = %q, want go-redis's dial failure at WARN", got)
	}
}
