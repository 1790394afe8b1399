package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zerotal/lock/drivers"
)

// failed classifies the error of a call to the database. The server's
// refusal of the credentials is ErrUnauthorized; its answer that it cannot
// serve now (shutting down, starting, out of connections, a lock or idle
// timeout, a deadlock it broke) is ErrUnavailable, the transaction rolled
// back; a connection that failed, or a context that ended, mid-call is
// ErrUnavailable, and ErrOutcomeUnknown as well when the call's writes
// (sent) may have reached the server and committed. Any other error of
// the server is a fault of this package, returned as is.
func (d *Driver) failed(ctx context.Context, op string, err error, sent bool) error {
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	op = "postgres: " + op
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch c := pe.Code; {
		case c == "28P01" || c == "28000":
			return fmt.Errorf("%s: %w: %w", op, drivers.ErrUnauthorized, err)
		case c == "42501":
			return fmt.Errorf("%s: %w: %w", op, drivers.ErrForbidden, err)
		case strings.HasPrefix(c, "08"), strings.HasPrefix(c, "53"), strings.HasPrefix(c, "57"),
			c == "55P03", c == "25P03", c == "40P01", c == "40001", c == "3D000":
			return drivers.Unavailable(op, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w: %w", ctxErr, err)
	}
	if sent && !pgconn.SafeToRetry(err) {
		return drivers.OutcomeUnknown(op, err)
	}
	return drivers.Unavailable(op, err)
}
