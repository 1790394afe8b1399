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
// KEYS: lock, fence, queue and places.
var inspectScript = goredis.NewScript(prelude + `
local typ = redis.call('TYPE', KEYS[1]).ok
if typ == 'string' then
  return {'', redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) or '0', tostring(redis.call('PTTL', KEYS[1])), '0', '|'}
end
local reply = {''}
if typ == 'hash' then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local fence, exp, w = string.match(v, '^(%d+):(%d+):(%d)')
    if f == 'c' then
      reply[1] = v
    elseif string.sub(f, 1, 2) == 'h:' and tonumber(exp) > now then
      table.insert(reply, string.sub(f, 3)) table.insert(reply, fence)
      table.insert(reply, tostring(tonumber(exp) - later)) table.insert(reply, w)
    end
  end
end
table.insert(reply, '|')
for _, o in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local v = redis.call('HGET', KEYS[4], o)
  local alive, w = string.match(v or '0:0', '^(%d+):(%d)')
  if tonumber(alive) > now then table.insert(reply, o) table.insert(reply, w) end
end
if #reply == 2 then return {} end
return reply
`)

// Inspect describes key (drivers.Inspector).
func (d *Driver) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	if err := d.usable(ctx, "inspect", key); err != nil {
		return drivers.Holding{}, false, err
	}
	ks := keysFor(key)
	res, err := inspectScript.Run(ctx, d.client, ks.names()).StringSlice()
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
