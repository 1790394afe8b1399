package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache prepares each statement of the shared keys once per
// connection (or pool): SQLite compiles a statement on every call
// otherwise, which costs more than running it.
type stmtCache struct {
	mu  sync.Mutex
	p   preparer
	raw querier // for a statement that does not prepare: its error
	m   map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.m[query]; s != nil {
		return s, nil
	}
	s, err := c.p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = s
	return s, nil
}

// close closes the prepared statements.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		_ = s.Close()
	}
	c.m = nil
}

// stmtQuerier runs queries through a stmtCache.
type stmtQuerier struct{ c *stmtCache }

func (q stmtQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := q.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (q stmtQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := q.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext runs a statement that does not prepare unprepared, so
// that its error comes back through the row, as database/sql does.
func (q stmtQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := q.c.get(ctx, query)
	if err != nil {
		return q.c.raw.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}
