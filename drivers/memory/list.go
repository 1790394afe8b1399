package memory

import (
	"context"
	"slices"

	"github.com/zerotal/lock/drivers"
)

var _ drivers.Lister = (*Driver)(nil)

// ListHeld describes the held keys that start with prefix, sorted, at most
// limit of them (drivers.Lister): one read of the engine's table, which
// holds no other call up for longer than a sort of limit keys.
func (d *Driver) ListHeld(ctx context.Context, prefix string, limit int) ([]drivers.Listed, bool, error) {
	if err := d.ready(ctx); err != nil {
		return nil, false, err
	}
	// One more than asked says whether more keys match.
	infos, err := d.e.List(ctx, prefix, limit+1)
	if err != nil {
		return nil, false, err
	}
	truncated := len(infos) > limit
	if truncated {
		infos = infos[:limit]
	}
	locks := make([]drivers.Listed, 0, len(infos))
	for _, in := range infos {
		h := HoldingOf(in, d.e.Remaining)
		// A grant whose deadline passed is free, though the loop may not
		// have removed it yet.
		h.Holders = slices.DeleteFunc(h.Holders, func(x drivers.Holder) bool { return x.Remaining <= 0 })
		if len(h.Holders) > 0 {
			locks = append(locks, drivers.Listed{Key: in.Key, Holding: h})
		}
	}
	return locks, truncated, nil
}
