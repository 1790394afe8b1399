package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// acquireAllScript takes every key or none: it reads every lock key
// first, and writes only when none is held by another owner.
//
// KEYS: lock and fence of each key, in pairs; ARGV[1] owner, ARGV[2] TTL
// in milliseconds. Reply {1, fence...} when every key is granted or
// refreshed; {0, i, remaining TTL in ms, holder's owner} when the i-th key
// (from 1) is held by another owner; {-1, i} when the i-th key is a
// semaphore or read/write lock.
var acquireAllScript = goredis.NewScript(replicateEffects + `
local n = #KEYS / 2
local held = {}
for i = 1, n do
  local v = redis.pcall('GET', KEYS[2*i-1])
  if type(v) == 'table' and v.err then return {-1, i} end
  if v and v ~= ARGV[1] then
    return {0, i, redis.call('PTTL', KEYS[2*i-1]), v}
  end
  held[i] = v
end
local reply = {1}
for i = 1, n do
  local lk, fk = KEYS[2*i-1], KEYS[2*i]
  if held[i] then
    redis.call('PEXPIRE', lk, ARGV[2])
    reply[i+1] = tonumber(redis.call('GET', fk) or '0')
  else
    redis.call('SET', lk, ARGV[1], 'PX', ARGV[2])
` + nextFenceAt("fk") + `
    reply[i+1] = fence
  end
end
return reply
`)

// acquireSet takes every key or none in one script (drivers.MultiAcquirer).
// On Redis Cluster a script may only touch one hash slot, and each key has
// a slot of its own (its name is its hash tag, see keysFor): keys that do
// not all fall in one slot get an error matching drivers.ErrUnsupported,
// having taken nothing, and the Manager takes them one at a time instead.
func (d *Driver) acquireSet(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	if err := d.usable(ctx, "acquire", strings.Join(keys, ",")); err != nil {
		return nil, false, drivers.Busy{}, err
	}
	names := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		ks := keysFor(k)
		names = append(names, ks.lock, ks.fence)
	}
	if _, cluster := d.client.(*goredis.ClusterClient); cluster && !oneSlot(names) {
		return nil, false, drivers.Busy{}, fmt.Errorf("redis: acquire %q: the keys are in different hash slots of the cluster, which one script cannot take together: %w", keys, drivers.ErrUnsupported)
	}
	res, err := d.run(ctx, acquireAllScript, names, owner, millis(ttl)).Slice()
	if err != nil {
		return nil, false, drivers.Busy{}, d.translate(ctx, "acquire", strings.Join(keys, ","), err)
	}
	return readAcquireAll(keys, res)
}

// readAcquireAll reads acquireAllScript's reply.
func readAcquireAll(keys []string, res []any) ([]uint64, bool, drivers.Busy, error) {
	ints := make([]int64, 0, len(res))
	for _, v := range res {
		n, ok := v.(int64)
		if !ok {
			break
		}
		ints = append(ints, n)
	}
	bad := fmt.Errorf("redis: acquire %q: unexpected reply %v", keys, res)
	switch {
	case len(ints) == 0:
		return nil, false, drivers.Busy{}, bad
	case ints[0] == 1 && len(ints) == len(keys)+1:
		fences := make([]uint64, len(keys))
		for i := range keys {
			fences[i] = uint64(ints[i+1])
		}
		return fences, true, drivers.Busy{}, nil
	case len(ints) < 2 || ints[1] < 1 || int(ints[1]) > len(keys):
		return nil, false, drivers.Busy{}, bad
	}
	key := keys[ints[1]-1]
	switch {
	case ints[0] == -1:
		return nil, false, drivers.Busy{}, mutexOnShared(key)
	case ints[0] != 0 || len(ints) < 3:
		return nil, false, drivers.Busy{}, bad
	}
	busy := drivers.Busy{Key: key}
	if len(res) > 3 {
		h, _ := res[3].(string)
		busy.Holder = drivers.HolderOf(h)
	}
	busy.TTL = max(time.Duration(ints[2])*time.Millisecond, 0)
	return nil, false, busy, nil
}

// oneSlot reports whether every name falls in the same Redis Cluster hash
// slot.
func oneSlot(names []string) bool {
	for _, n := range names[1:] {
		if slot(n) != slot(names[0]) {
			return false
		}
	}
	return true
}

// slot is a name's Redis Cluster hash slot: CRC16 (XMODEM) of its hash
// tag, or of the whole name when it has none, modulo 16384.
func slot(name string) uint16 {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if j := strings.IndexByte(name[i+1:], '}'); j > 0 {
			name = name[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(name); i++ {
		crc ^= uint16(name[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

var _ drivers.ChangeWatcher = (*Driver)(nil)

// Changed tells when key is released (drivers.ChangeWatcher): it listens
// on the key's release channel, which a release or force release
// publishes to. A lease that runs out, and a grant, publish nothing. The
// subscription is the one the driver's waiters for the key share, kept a
// while after the last watcher or waiter leaves.
func (d *Driver) Changed(key string) (<-chan struct{}, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.PollInterval)
	defer cancel()
	ch, stop, err := d.hub.watch(ctx, keysFor(key).channel)
	if err != nil {
		return nil, func() {} // closed: the observer reads on its timer
	}
	return ch, stop
}
