package fence

import (
	"context"
	"sync"
)

// Store keeps, per resource, the highest fence seen, and orders the work
// done under fences: the HTTP middleware's pluggable part. Memory keeps it
// in the process, DB in a table that many processes share.
type Store interface {
	// Guard runs fn when fence is not below the highest fence recorded for
	// resource, and records fence as the highest once fn has returned nil.
	// When fence is below it, Guard returns a *StaleError and does not run
	// fn. Calls on one resource are ordered: one that starts while another
	// runs fn waits for it, so an older holder's call made while a newer
	// holder's is in progress is checked against the newer fence, and
	// refused.
	Guard(ctx context.Context, resource string, fence uint64, fn func(ctx context.Context) error) error
}

// Memory is a Store in the process's memory: enough for a resource served
// by one process, and lost when it restarts (the first fence after a
// restart is admitted whatever it is). It keeps one small entry per
// resource name it has seen. The zero value is ready to use; it must not
// be copied after first use.
type Memory struct {
	mu        sync.Mutex
	resources map[string]*slot
}

// slot is one resource: a lock of one token, taken with a context (a
// sync.Mutex cannot be given up when the caller's context ends), and the
// highest fence recorded.
type slot struct {
	turn    chan struct{} // holds a token while a call runs
	highest uint64        // guarded by turn
}

var _ Store = (*Memory)(nil)

// Guard implements Store.
func (m *Memory) Guard(ctx context.Context, resource string, fence uint64, fn func(ctx context.Context) error) error {
	if err := validate(resource, fence); err != nil {
		return err
	}
	s := m.slot(resource)
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if fence < s.highest {
		return &StaleError{Resource: resource, Fence: fence, Highest: s.highest}
	}
	if err := fn(ctx); err != nil {
		return err
	}
	s.highest = fence
	return nil
}

// Highest is the highest fence recorded for resource, 0 when none was.
func (m *Memory) Highest(ctx context.Context, resource string) (uint64, error) {
	s := m.slot(resource)
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-s.turn }()
	return s.highest, nil
}

func (m *Memory) slot(resource string) *slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.resources[resource]
	if s == nil {
		if m.resources == nil {
			m.resources = make(map[string]*slot)
		}
		s = &slot{turn: make(chan struct{}, 1)}
		m.resources[resource] = s
	}
	return s
}
