package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// Semaphores and read/write locks (drivers.Sharer). A shared key is one
// Redis hash at the lock's own name, so a mutex acquire of it meets a key
// that exists (and the wrong type) and never takes it, whatever release the
// caller runs. Its fields:
//
//	kind, lim      the key's kind and limit while anyone holds or waits
//	h:<owner>      a grant: "fence:expires_ms:write"
//	q:<owner>      a place in the queue: "seq:alive_ms:write"
//	seq            the last place handed out
//
// Every operation is one script. Only the head of the queue is granted,
// when it fits, so waiting is first come, first served across processes; a
// waiter keeps its place alive by visiting it (every attempt does), and
// the place of a process that died lapses after waiterLease. The hash
// expires with its last grant or place. Waiters are woken by a publish on
// the key's shared channel, and within a process each one granted wakes
// the next local waiter at once (hub.leave).
var (
	_ drivers.Inspector = (*Driver)(nil)
)

// waiterLease is how long a waiter's place outlives its last visit.
const waiterLease = 3 * time.Second

// sharedLoad is the Lua that reads the hash KEYS[1] at now (ms), drops the
// grants and places that lapsed, and leaves holders and queue (sorted by
// seq) in locals, with:
//
//   - settle, to set the hash's expiry to its last grant or place, or
//     delete it when none is left;
//   - admit, to let waiters in from the head of the queue while they fit
//     (their places become grants, for their own TTL; each learns of it
//     at its next attempt, which finds it holds the key), publishing
//     their owners on ARGV[chanArg] so that exactly they try at once.
//
// A place is "seq:alive_ms:write:ttl_ms"; a grant "fence:expires_ms:write".
var sharedLoad = `
local holders, queue, kind, lim = {}, {}, nil, nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local p = string.sub(f, 1, 2)
  if p == 'h:' then
    local fence, exp, w = string.match(v, '^(%d+):(%d+):(%d)')
    exp = tonumber(exp)
    if exp <= now then redis.call('HDEL', KEYS[1], f)
    else holders[#holders + 1] = {owner = string.sub(f, 3), fence = tonumber(fence), exp = exp, w = w} end
  elseif p == 'q:' then
    local seq, alive, w, ttl = string.match(v, '^(%d+):(%d+):(%d):(%d+)')
    alive = tonumber(alive)
    if alive <= now then redis.call('HDEL', KEYS[1], f)
    else queue[#queue + 1] = {owner = string.sub(f, 3), seq = tonumber(seq), alive = alive, w = w, ttl = tonumber(ttl)} end
  elseif f == 'kind' then kind = v
  elseif f == 'lim' then lim = v
  end
end
table.sort(queue, function(a, b) return a.seq < b.seq end)
local function settle()
  local last = 0
  for _, h in ipairs(holders) do if h.exp > last then last = h.exp end end
  for _, q in ipairs(queue) do if q.alive > last then last = q.alive end end
  if last <= now then redis.call('DEL', KEYS[1]) return end
  redis.call('PEXPIRE', KEYS[1], last - now)
end
local function fits(w)
  if kind == '1' then return #holders < tonumber(lim) end
  if w == '1' then return #holders == 0 end
  return #holders == 0 or (holders[1].w == '0' and #holders < ` + strconv.Itoa(drivers.MaxHolders) + `)
end
local function newFence()
` + nextFence + `
  return fence
end
local function grant(owner, ttl, w)
  local f = newFence()
  redis.call('HSET', KEYS[1], 'h:' .. owner, string.format('%.0f:%d:%s', f, now + ttl, w))
  table.insert(holders, {owner = owner, fence = f, exp = now + ttl, w = w})
  return f
end
local function admit(chan, except, own)
  local let, out = {}, {}
  while #queue > 0 and fits(queue[1].w) do
    local q = table.remove(queue, 1)
    redis.call('HDEL', KEYS[1], 'q:' .. q.owner)
    local f = grant(q.owner, q.ttl, q.w)
    if q.owner ~= except then
      table.insert(let, q.owner)
      table.insert(out, q.owner)
      table.insert(out, f)
    end
  end
  -- own: the releasing process's subscriptions to chan, whose waiters it
  -- hands their grants itself; -1 when unknown (always publish).
  if #let > 0 and (own < 0 or redis.call('PUBSUB', 'NUMSUB', chan)[2] > own) then
    redis.call('PUBLISH', chan, 'granted:' .. table.concat(let, ','))
  end
  return out
end
`

const sharedNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// acquireSharedScript takes, refreshes, queues or refuses.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] TTL ms, ARGV[3]
// kind, ARGV[4] limit, ARGV[5] write (0/1), ARGV[6] wait (0/1), ARGV[7]
// the place's lease ms, ARGV[8] the shared channel. Reply {1, fence}
// granted (or refreshed); {0, the first holder's ms left, queued 0/1,
// the owner in the way, its ms left} (drivers.Claim.InTheWay: the grant
// that ends first, for a write the one that ends last; "" and -1 when
// nobody holds the key); {-1, kind, limit} held as another kind or limit
// ("mutex" for a mutex); {-2} owner holds or waits for the other side.
var acquireSharedScript = goredis.NewScript(replicateEffects + sharedNow + `
if redis.call('TYPE', KEYS[1]).ok == 'string' then return {-1, 'mutex', '0'} end
` + sharedLoad + `
local owner, ttl, write = ARGV[1], tonumber(ARGV[2]), ARGV[5]
if kind and (#holders > 0 or #queue > 0) and (kind ~= ARGV[3] or lim ~= ARGV[4]) then
  return {-1, kind, lim}
end
kind, lim = ARGV[3], ARGV[4]
redis.call('HSET', KEYS[1], 'kind', kind, 'lim', lim)
admit(ARGV[8], owner, -1)
for _, h in ipairs(holders) do
  if h.owner == owner then
    if h.w ~= write then return {-2} end
    h.exp = now + ttl
    redis.call('HSET', KEYS[1], 'h:' .. owner, string.format('%.0f:%d:%s', h.fence, h.exp, write))
    settle()
    return {1, h.fence}
  end
end
local ahead = #queue
for i, q in ipairs(queue) do if q.owner == owner then ahead = i - 1 break end end
if ahead == 0 and fits(write) then
  if #queue > 0 then
    redis.call('HDEL', KEYS[1], 'q:' .. owner)
    table.remove(queue, 1)
  end
  local f = grant(owner, ttl, write)
  settle()
  return {1, f}
end
local left = -1
for _, h in ipairs(holders) do if left < 0 or h.exp - now < left then left = h.exp - now end end
local way
for _, h in ipairs(holders) do
  if way == nil
    or (write == '1' and (h.exp > way.exp or (h.exp == way.exp and h.fence > way.fence)))
    or (write ~= '1' and (h.exp < way.exp or (h.exp == way.exp and h.fence < way.fence))) then
    way = h
  end
end
local wayOwner, wayLeft = '', -1
if way then wayOwner, wayLeft = way.owner, way.exp - now end
if ARGV[6] ~= '1' then
  settle()
  return {0, left, 0, wayOwner, wayLeft}
end
local seq
if ahead < #queue then
  if queue[ahead + 1].w ~= write then return {-2} end
  seq = queue[ahead + 1].seq
  queue[ahead + 1].alive = now + tonumber(ARGV[7])
else
  seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  table.insert(queue, {owner = owner, seq = seq, alive = now + tonumber(ARGV[7]), w = write, ttl = ttl})
end
redis.call('HSET', KEYS[1], 'q:' .. owner, string.format('%d:%d:%s:%d', seq, now + tonumber(ARGV[7]), write, ttl))
settle()
return {0, left, 1, wayOwner, wayLeft}
`)

// releaseSharedBody ends owner's grant of the shared key KEYS[1] (with
// its fence counter KEYS[2]), lets the waiters that now fit in and wakes
// exactly them on ARGV[3]. Reply {1 when a grant that had not lapsed
// ended, else 0; then the owner and fence of each waiter let in}.
var releaseSharedBody = sharedNow + sharedLoad + `
local released = 0
for i, h in ipairs(holders) do
  if h.owner == ARGV[1] then
    redis.call('HDEL', KEYS[1], 'h:' .. ARGV[1])
    table.remove(holders, i)
    released = 1
    break
  end
end
local let = admit(ARGV[3], '', tonumber(ARGV[4]))
settle()
table.insert(let, 1, released)
return let
`

// releaseSharedScript is releaseSharedBody alone (a waiter giving up).
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[3] shared channel,
// ARGV[4] -1.
var releaseSharedScript = goredis.NewScript(replicateEffects + `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return {0} end
` + releaseSharedBody)

// extendSharedBody sets owner's grant of the shared key KEYS[1] (fence
// counter KEYS[2]) to end TTL from now, if it has not lapsed; waiters let
// in meanwhile are woken on ARGV[3]. Reply 1 when extended.
var extendSharedBody = sharedNow + sharedLoad + `
admit(ARGV[3], '', -1)
for _, h in ipairs(holders) do
  if h.owner == ARGV[1] then
    h.exp = now + tonumber(ARGV[2])
    redis.call('HSET', KEYS[1], 'h:' .. ARGV[1], string.format('%.0f:%d:%s', h.fence, h.exp, h.w))
    settle()
    return 1
  end
end
settle()
return 0
`

// inspectScript describes the key: {type, kind, limit, holders..., '|',
// queue...} with each holder as owner, fence, ms left, write and each
// waiter as owner, write.
//
// KEYS[1] lock, KEYS[2] fence. A mutex's fence is its counter's: the
// last grant's, which is the holder's (a refresh keeps it), as the
// acquire script's refresh reports it.
var inspectScript = goredis.NewScript(sharedNow + `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'string' then
  return {'mutex', '0', '0', redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) or '0', tostring(redis.call('PTTL', KEYS[1])), '0', '|'}
end
if t ~= 'hash' then return {'none'} end
local holders, queue, kind, lim = {}, {}, nil, nil
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == 'kind' then kind = v elseif f == 'lim' then lim = v end
end
local reply = {'shared', kind or '0', lim or '0'}
local waiters = {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local a, b, c = string.match(v, '^([^:]*):([^:]*):([^:]*)')
  if string.sub(f, 1, 2) == 'h:' and tonumber(b) > now then
    table.insert(reply, string.sub(f, 3)) table.insert(reply, a)
    table.insert(reply, tostring(tonumber(b) - now)) table.insert(reply, c)
  elseif string.sub(f, 1, 2) == 'q:' and tonumber(b) > now then
    table.insert(waiters, {owner = string.sub(f, 3), seq = tonumber(a), w = c})
  end
end
table.sort(waiters, function(x, y) return x.seq < y.seq end)
table.insert(reply, '|')
for _, w in ipairs(waiters) do table.insert(reply, w.owner) table.insert(reply, w.w) end
return reply
`)

// acquireClaim takes a semaphore's slot or a read/write lock's side of
// key for owner (drivers.Sharer): one script. Refused, it says who is in
// the way and for how long.
func (d *Driver) acquireClaim(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim) (uint64, bool, drivers.HeldBy, error) {
	r, err := d.acquireShared(ctx, key, owner, ttl, c, false)
	return r.fence, r.ok, r.held, err
}

type sharedReply struct {
	fence uint64
	ok    bool
	left  time.Duration // the first holder's time left; negative: none
	held  drivers.HeldBy
}

func (d *Driver) acquireShared(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, wait bool) (sharedReply, error) {
	if err := d.usable(ctx, "acquire", key); err != nil {
		return sharedReply{}, err
	}
	if err := c.CheckShared(); err != nil {
		return sharedReply{}, err
	}
	ks := keysFor(key)
	res, err := d.run(ctx, acquireSharedScript, []string{ks.lock, ks.fence},
		owner, millis(ttl), int(c.Kind), int64(c.Limit), flag(c.Write), flag(wait), waiterLease.Milliseconds(), ks.shared).Slice()
	if err != nil {
		return sharedReply{}, d.translate(ctx, "acquire", key, err)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		f, _ := res[1].(int64)
		return sharedReply{fence: uint64(f), ok: true}, nil
	case 0:
		left, _ := res[1].(int64)
		r := sharedReply{left: time.Duration(left) * time.Millisecond}
		if len(res) == 5 {
			way, _ := res[3].(string)
			wayLeft, _ := res[4].(int64)
			if way != "" && wayLeft >= 0 {
				r.held = drivers.HeldBy{Holder: drivers.HolderOf(way), TTL: time.Duration(wayLeft) * time.Millisecond}
			}
		}
		return r, nil
	case -1:
		return sharedReply{}, drivers.KindMismatch(key, heldAs(res), c)
	}
	return sharedReply{}, &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds or waits for the other side of %q; release it first", key)}
}

// heldAs describes the kind a refused acquire met: "mutex", or the
// hash's kind and limit.
func heldAs(res []any) string {
	kind, _ := res[1].(string)
	lim, _ := res[2].(string)
	if kind == "mutex" {
		return drivers.Claim{}.Describe()
	}
	k, _ := strconv.Atoi(kind)
	l, _ := strconv.ParseUint(lim, 10, 32)
	return drivers.Claim{Kind: drivers.Kind(k), Limit: uint32(l)}.Describe()
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// acquireClaimWait waits in key's queue until owner is at its head and
// fits, or ctx ends; then its place is given up.
func (d *Driver) acquireClaimWait(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, opts drivers.WaitOptions) (uint64, error) {
	if err := d.usable(ctx, "wait for", key); err != nil {
		return 0, err
	}
	w, err := d.hub.join(ctx, keysFor(key).shared, owner, ttl, opts.OwnerReused)
	if err != nil {
		return 0, err
	}
	fence, err := d.waitShared(ctx, key, owner, ttl, c, w)
	d.hub.leave(w, false) // the next local waiter tries at once
	if err != nil {
		d.leaveShared(key, owner)
	}
	return fence, err
}

// waitShared tries at every wake-up, when the first holder's grant ends,
// and in time to keep the place alive.
func (d *Driver) waitShared(ctx context.Context, key, owner string, ttl time.Duration, c drivers.Claim, w *waiter) (uint64, error) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var held drivers.HeldBy // the holder in the way at the last attempt
	var heldAt time.Time
	for {
		select {
		case <-ctx.Done():
			err := fmt.Errorf("redis: wait for %q: %w", key, ctx.Err())
			if heldAt.IsZero() {
				return 0, err
			}
			held.TTL -= time.Since(heldAt)
			return 0, drivers.HeldByWhenEnded(err, key, held)
		case <-d.done:
			return 0, drivers.ErrClosed
		case <-w.wake:
		case <-timer.C:
		}
		if st := d.hub.turn(w); st.granted {
			return st.fence, nil
		}
		r, err := d.acquireShared(ctx, key, owner, ttl, c, true)
		if err != nil {
			return 0, err
		}
		if r.ok {
			return r.fence, nil
		}
		next := min(waiterLease/3, d.cfg.PollInterval)
		if r.left >= 0 {
			held, heldAt = r.held, time.Now()
			next = min(next, max(r.left, time.Millisecond))
		}
		timer.Reset(next)
	}
}

// leaveShared gives up owner's place, and a grant an attempt cut off by
// the caller's ctx may have made, in the background, bounded.
func (d *Driver) leaveShared(key, owner string) {
	if d.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	ks := keysFor(key)
	_ = d.client.HDel(ctx, ks.lock, "q:"+owner).Err()
	_ = releaseSharedScript.Run(ctx, d.client, []string{ks.lock, ks.fence}, owner, ks.channel, ks.shared, -1).Err()
}

// isWrongType reports the error of a mutex script run on a shared key.
func isWrongType(err error) bool {
	var reply goredis.Error
	return errors.As(err, &reply) && strings.Contains(reply.Error(), "WRONGTYPE")
}

// releasedShared reads the reply of a release of a shared key.
func (d *Driver) releasedShared(ks keyspace, res []any) bool {
	// The waiters of this process that the release let in get their
	// grant at once, without the round trips of a wake-up and an attempt.
	for i := 1; i+1 < len(res); i += 2 {
		o, _ := res[i].(string)
		f, _ := res[i+1].(int64)
		d.hub.grantShared(ks.shared, o, uint64(f))
	}
	n, _ := res[0].(int64)
	return n == 1
}

// mutexOnShared is the error of a mutex acquire of a shared key.
func mutexOnShared(key string) error {
	return drivers.KindMismatch(key, drivers.AnyShared, drivers.Claim{})
}

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
	if len(res) < 3 || res[0] == "none" {
		return drivers.Holding{}, false, nil
	}
	var h drivers.Holding
	if res[0] == "shared" {
		var kind, lim int64
		_, _ = fmt.Sscan(res[1], &kind)
		_, _ = fmt.Sscan(res[2], &lim)
		h.Claim = drivers.Claim{Kind: drivers.Kind(kind), Limit: uint32(lim)}
	}
	i := 3
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
