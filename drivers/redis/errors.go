package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// unavailablePrefixes are the error replies with which a reachable Redis
// says it cannot serve a write right now (a replica after a failover, a
// server still loading its data, a cluster without quorum, a busy script,
// no memory left). To the caller they mean the same as a broken connection.
var unavailablePrefixes = []string{
	"READONLY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
	"BUSY", "OOM", "NOREPLICAS", "MISCONF",
}

// translate turns an error from go-redis into one of ours: ctx.Err() when
// the caller's context ended, ErrClosed after Close, ErrUnavailable when
// Redis could not be reached or cannot serve, and a plain wrapped error for
// anything else (a Redis error reply such as WRONGTYPE, which means someone
// else wrote to our keys).
func (d *Driver) translate(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("redis: %s %q: %w", op, key, ctxErr)
	}
	if d.closed.Load() || errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("redis: %s %q: %w", op, key, drivers.ErrClosed)
	}
	var reply goredis.Error
	if errors.As(err, &reply) && isAuthReply(reply.Error()) {
		return fmt.Errorf("redis: %s %q: %w: %w", op, key, drivers.ErrUnauthorized, err)
	}
	if errors.As(err, &reply) && !isUnavailableReply(reply.Error()) {
		return fmt.Errorf("redis: %s %q: %w", op, key, err)
	}
	return drivers.Unavailable(op, err)
}

// isAuthReply reports a reply that refuses the connection's credentials:
// NOAUTH (a password is required), WRONGPASS (Redis 6 ACLs), and the
// "invalid password" of older servers.
func isAuthReply(msg string) bool {
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") ||
		strings.Contains(msg, "invalid password") || strings.Contains(msg, "invalid username-password")
}

func isUnavailableReply(msg string) bool {
	for _, p := range unavailablePrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
