package lock

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zerotal/lock/drivers"
)

// Listed is one held key that List found: Key, without the Manager's
// prefix, and who holds it and waits for it (drivers.Holding: the kind,
// every grant with its owner, fence and time left, the waiters).
type Listed = drivers.Listed

// MaxListLimit is the most keys one List call may ask for.
const MaxListLimit = drivers.MaxListLimit

// List describes the held keys that start with prefix, a key prefix as the
// caller writes keys (the Manager's own prefix is added to it, and taken
// off every Key returned), sorted by key, at most limit of them (1 to
// MaxListLimit). truncated is true when more keys may match. Grants past
// their deadline are left out.
//
// It sees the locks of every process on the backend: other processes'
// grants, whose owners it reports whole where the backend shows them (the
// cluster shows another credential's owner without its token). On the
// memory driver it sees this process's locks only.
//
// A backend that cannot list (drivers.Lister) gives an error matching
// ErrUnsupported; every driver of this module can. On Redis the list
// walks at most redis.ListScanBound keys of each node; a larger database
// gives a truncated list.
func (m *Manager) List(ctx context.Context, prefix string, limit int) (locks []Listed, truncated bool, err error) {
	switch {
	case limit < 1 || limit > MaxListLimit:
		return nil, false, &InvalidError{Field: "limit", Reason: fmt.Sprintf("must be 1 to %d (MaxListLimit), got %d", MaxListLimit, limit)}
	case !utf8.ValidString(prefix):
		return nil, false, &InvalidError{Field: "prefix", Reason: "must be valid UTF-8"}
	case len(m.prefix)+len(prefix) > drivers.MaxKeyLen:
		return nil, false, &InvalidError{Field: "prefix", Reason: fmt.Sprintf(
			"is %d bytes with the Manager's %d-byte prefix; no key is longer than %d", len(m.prefix)+len(prefix), len(m.prefix), drivers.MaxKeyLen)}
	}
	if m.closed.Load() {
		return nil, false, ErrClosed
	}
	l, ok := m.driver.(drivers.Lister)
	if !ok {
		return nil, false, wrapOp("list", prefix, fmt.Errorf("the %T backend cannot list its locks: %w", m.driver, ErrUnsupported))
	}
	locks, truncated, err = l.ListHeld(ctx, m.prefix+prefix, limit)
	if err != nil {
		return nil, false, failed(ctx, "list", prefix, false, err)
	}
	for i := range locks {
		locks[i].Key = strings.TrimPrefix(locks[i].Key, m.prefix)
	}
	return locks, truncated, nil
}
