package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

var _ drivers.Inspector = (*Driver)(nil)

// inspectScript describes the key: {claim, holders..., '|', queue...}
// with the claim "kind:limit" ("" for a mutex), each holder as owner,
// fence, ms left, write and each waiter as owner, write; {} for a key
// nobody holds or waits for. It writes nothing. A key that v0.1.0 holds (a
// string) is a mutex with one holder whose fence is its counter's.
//
// KEYS[1] lock, KEYS[2] fence.
var inspectScript = goredis.NewScript(prelude + `
local typ = redis.call('TYPE', KEYS[1]).ok
if typ == 'string' then
  return {'', redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) or '0', tostring(redis.call('PTTL', KEYS[1])), '0', '|'}
end
if typ ~= 'hash' then return {} end
local all = redis.call('HGETALL', KEYS[1])
local reply, waiters = {''}, {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p = string.sub(f, 1, 2)
  local a, b, c = string.match(v, '^([^:]*):([^:]*):([^:]*)')
  if f == 'c' then
    reply[1] = v
  elseif p == 'h:' and tonumber(b) > now then
    table.insert(reply, string.sub(f, 3)) table.insert(reply, a)
    table.insert(reply, tostring(tonumber(b) - now)) table.insert(reply, c)
  elseif p == 'q:' and tonumber(b) > now then
    table.insert(waiters, {owner = string.sub(f, 3), seq = tonumber(a), w = c})
  end
end
table.sort(waiters, function(x, y) return x.seq < y.seq end)
table.insert(reply, '|')
for _, w in ipairs(waiters) do table.insert(reply, w.owner) table.insert(reply, w.w) end
return reply
`)

// Inspect describes key (drivers.Inspector).
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	if err := d.usable(ctx, "inspect", key); err != nil {
		return drivers.Holding{}, false, err
	}
	ks := keysFor(key)
	res, err := inspectScript.Run(ctx, d.client, []string{ks.lock, ks.fence}).StringSlice()
	if err != nil {
		return drivers.Holding{}, false, d.translate(ctx, "inspect", key, err)
	}
	return parseInspect(res)
}

func parseInspect(res []string) (drivers.Holding, bool, error) {
	if len(res) < 2 {
		return drivers.Holding{}, false, nil
	}
	var h drivers.Holding
	if res[0] != "" {
		var kind, lim int64
		if _, err := fmt.Sscanf(res[0], "%d:%d", &kind, &lim); err != nil {
			return drivers.Holding{}, false, fmt.Errorf("redis: inspect: claim %q: %w", res[0], err)
		}
		h.Claim = drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
	}
	i := 1
	for ; i+3 < len(res) && res[i] != "|"; i += 4 {
		var fence, left int64
		_, _ = fmt.Sscan(res[i+1], &fence)
		_, _ = fmt.Sscan(res[i+2], &left)
		h.Holders = append(h.Holders, drivers.Holder{Owner: res[i], Fence: uint64(fence), Remaining: time.Duration(left) * time.Millisecond, Write: res[i+3] == "1"})
	}
	for i++; i+1 < len(res); i += 2 {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: res[i], Write: res[i+1] == "1"})
	}
	h.WaiterCount = len(h.Waiters)
	return h, len(h.Holders) > 0, nil
}
