package redis

import (
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// Every operation is one Lua script, so that Redis runs it atomically. They
// are sent by SHA (EVALSHA) and fall back to EVAL when the server does not
// know the SHA (after a restart or SCRIPT FLUSH), which also loads them
// again: goredis.Script.Run does exactly that.
//
// Every claim is one data model: a lock key K is one hash at keysFor(K).lock
// whose fields are
//
//	h:<owner>   a grant: "fence:expires_ms:write"
//	q:<owner>   a place in the queue: "seq:alive_ms:write:ttl_ms"
//	seq         the last place handed out
//	c           the claim, "kind:limit", absent for a mutex
//
// A mutex is the exclusive claim of one slot: the same fields, one grant at
// most. The hash expires with its last grant or place, and is deleted when
// none is left, so a free key is a missing one: the uncontended acquire
// creates it and the uncontended release deletes it, without reading a
// queue. Only the head of the queue is let in, when it fits, so a wait is
// first come, first served across processes for every claim; a waiter
// keeps its place alive by visiting it (every attempt does), and the place
// of a process that died lapses after waiterLease.

// FenceRetention is how long a key's fence counter is kept after the
// key's last new grant: the counter expires then, so that Redis holds one
// for each key granted in the last FenceRetention, not one for every key
// ever locked ("invoice:<id>" keys would otherwise grow it without bound).
const FenceRetention = time.Hour

// waiterLease is how long a waiter's place outlives its last visit, and
// how long a grant lasts that a release made to a waiter of another
// process until the waiter's next attempt takes it up (for its TTL): a
// process killed while it waits holds up the queue for a lease at most,
// whatever its TTL.
const waiterLease = 3 * time.Second

// prelude starts every script after replicateEffects (which makes Redis
// before 5.0 replicate the effects rather than the script, as TIME
// requires; later versions always do): the server's time (now in ms) and
// the lease, and newFence.
//
// A new fence (newFence) is max(last fence + 1, server time in
// microseconds), and the counter is kept for FenceRetention after it. The
// clock floor is what makes fences grow: a fence exceeds the time of its
// grant only when several grants of one key fall in one microsecond, by
// one per grant, so once the counter is gone (expired, a restart without
// persistence, a failover to a replica that had not yet received the last
// increments: replication is asynchronous) the clock alone is past every
// fence handed out. The counter covers what the clock cannot: grants within
// one microsecond, and a server clock that steps back, by less than
// FenceRetention. What it assumes: the clock of the Redis server (and of a
// replica that takes over) never steps back by FenceRetention or more.
var prelude = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = ` + strconv.FormatInt(waiterLease.Milliseconds(), 10) + `
local function newFence(counter)
  local fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', counter))
  if last and fence <= last then fence = last + 1 end
  redis.call('SET', counter, string.format('%.0f', fence), 'PX', ` + strconv.FormatInt(FenceRetention.Milliseconds(), 10) + `)
  return fence
end
`

const replicateEffects = `if redis.replicate_commands then redis.replicate_commands() end
`

// model is the Lua of the rules, over a key's state s that load reads:
//
//   - load reads the hash lk (fence counter fk), drops the grants and
//     places that lapsed, and returns its holders, its queue sorted by
//     seq, and its claim;
//   - fits says whether a claim of side w (write '1') fits beside the
//     holders: one slot for a mutex, limit for a semaphore, one writer or
//     up to MaxHolders readers;
//   - admit lets waiters in from the head of the queue while they fit. A
//     waiter named in locals (the releasing process's own) is granted for
//     its TTL, and returned for that process to hand it over; any other,
//     but self, for waiterLease at most, until its next attempt takes the
//     grant up, and is told on the key's channel;
//   - settle sets the hash's expiry to its last grant or place, or deletes
//     it when none is left;
//   - inTheWay is the first holder's time left, and the holder whose grant,
//     by ending, lets a claim of side w in (drivers.Claim.InTheWay).
var model = `
local function load(lk, fk)
  local s = {lk = lk, fk = fk, chan = lk .. ':released', holders = {}, queue = {}, claim = '', kind = '0', lim = 1}
  local all = redis.call('HGETALL', lk)
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    local p = string.sub(f, 1, 2)
    if p == 'h:' then
      local fence, exp, w = string.match(v, '^(%d+):(%d+):(%d)')
      exp = tonumber(exp)
      if exp <= now then redis.call('HDEL', lk, f)
      else s.holders[#s.holders + 1] = {owner = string.sub(f, 3), fence = tonumber(fence), exp = exp, w = w} end
    elseif p == 'q:' then
      local seq, alive, w, ttl = string.match(v, '^(%d+):(%d+):(%d):(%d+)')
      alive = tonumber(alive)
      if alive <= now then redis.call('HDEL', lk, f)
      else s.queue[#s.queue + 1] = {owner = string.sub(f, 3), seq = tonumber(seq), alive = alive, w = w, ttl = tonumber(ttl)} end
    elseif f == 'c' then
      s.claim = v
      local kind, lim = string.match(v, '^(%d+):(%d+)')
      s.kind, s.lim = kind, tonumber(lim)
    end
  end
  table.sort(s.queue, function(a, b) return a.seq < b.seq end)
  return s
end
local function fits(s, w)
  local n = #s.holders
  if s.kind ~= '2' then return n < s.lim end
  if w == '1' then return n == 0 end
  return n == 0 or (s.holders[1].w == '0' and n < ` + strconv.Itoa(drivers.MaxHolders) + `)
end
local function grant(s, owner, w, exp)
  local f = newFence(s.fk)
  redis.call('HSET', s.lk, 'h:' .. owner, string.format('%.0f:%d:%s', f, exp, w))
  s.holders[#s.holders + 1] = {owner = owner, fence = f, exp = exp, w = w}
  return f
end
local function setExp(s, h, exp)
  h.exp = exp
  redis.call('HSET', s.lk, 'h:' .. h.owner, string.format('%.0f:%d:%s', h.fence, exp, h.w))
end
local function admit(s, locals, self)
  local mine, named = {}, {}
  while #s.queue > 0 and fits(s, s.queue[1].w) do
    local q = table.remove(s.queue, 1)
    redis.call('HDEL', s.lk, 'q:' .. q.owner)
    if locals[q.owner] then
      table.insert(mine, q.owner)
      table.insert(mine, grant(s, q.owner, q.w, now + q.ttl))
    else
      grant(s, q.owner, q.w, now + math.min(q.ttl, lease))
      if q.owner ~= self then table.insert(named, q.owner) end
    end
  end
  if #named > 0 then redis.call('PUBLISH', s.chan, 'granted:' .. table.concat(named, ',')) end
  return mine, #named
end
local function settle(s)
  local last = 0
  for _, h in ipairs(s.holders) do if h.exp > last then last = h.exp end end
  for _, q in ipairs(s.queue) do if q.alive > last then last = q.alive end end
  if last <= now then redis.call('DEL', s.lk) return end
  redis.call('PEXPIRE', s.lk, last - now)
end
local function inTheWay(s, w)
  local left, way = -1, nil
  for _, h in ipairs(s.holders) do
    if left < 0 or h.exp - now < left then left = h.exp - now end
    if way == nil
      or (w == '1' and (h.exp > way.exp or (h.exp == way.exp and h.fence > way.fence)))
      or (w ~= '1' and (h.exp < way.exp or (h.exp == way.exp and h.fence < way.fence))) then
      way = h
    end
  end
  if way then return left, way.owner, way.exp - now end
  return left, '', -1
end
`

// acquireScript takes, refreshes, queues or refuses a request of one or
// more keys, all or none.
//
// KEYS: lock and fence of each key, in pairs; ARGV[1] owner, ARGV[2] TTL
// ms, ARGV[3] claim ("" for a mutex, else "kind:limit"), ARGV[4] write
// (0/1), ARGV[5] wait (0/1). Replies:
//
//	{1, fence...}                               granted or refreshed, every key
//	{0, i, left, way, way's left, queued, head} the i-th key (from 1) is busy
//	{-1, i, claim}                              the i-th key is held as another claim
//	{-2, i}                                     owner holds or waits for its other side
//
// where left is the first holder's ms left (-1: none), way the owner in
// the way ("" when none), queued 1 when the request keeps places (Wait)
// and head 1 when it is first in the busy key's queue. A waiting request
// takes the free keys meanwhile (for waiterLease at most, until it has
// them all) and queues for the busy ones, in this one step, so it never
// overtakes an earlier request on any key. A key that v0.1.0 holds (a
// string, its mutex layout) is busy and keeps no place: its waiters try
// again when it is released or expires.
var acquireScript = goredis.NewScript(replicateEffects + prelude + `
local owner, ttl, claim, write, wait = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5] == '1'
local n = #KEYS / 2
if n == 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  local f = newFence(KEYS[2])
  if claim == '' then
    redis.call('HSET', KEYS[1], 'h:' .. owner, string.format('%.0f:%d:%s', f, now + ttl, write))
  else
    redis.call('HSET', KEYS[1], 'h:' .. owner, string.format('%.0f:%d:%s', f, now + ttl, write), 'c', claim)
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, f}
end
` + model + `
local S, busy, none = {}, 0, {}
local function settleAll() for _, s in ipairs(S) do settle(s) end end
for i = 1, n do
  local lk = KEYS[2 * i - 1]
  if redis.call('TYPE', lk).ok == 'string' then
    settleAll()
    local pt = redis.call('PTTL', lk)
    return {0, i, pt, redis.call('GET', lk), pt, 0, 0}
  end
  local s = load(lk, KEYS[2 * i])
  S[i] = s
  admit(s, none, owner)
  if (#s.holders > 0 or #s.queue > 0) and s.claim ~= claim then
    settleAll()
    return {-1, i, s.claim}
  end
  if s.claim ~= claim then
    s.claim, s.kind, s.lim = claim, '0', 1
    local kind, lim = string.match(claim, '^(%d+):(%d+)')
    if kind then s.kind, s.lim = kind, tonumber(lim) end
    s.newClaim = true
  end
  for _, h in ipairs(s.holders) do if h.owner == owner then s.mine = h end end
  s.ahead = #s.queue
  for j, q in ipairs(s.queue) do if q.owner == owner then s.ahead, s.place = j - 1, q break end end
  if (s.mine and s.mine.w ~= write) or (s.place and s.place.w ~= write) then
    settleAll()
    return {-2, i}
  end
  s.free = s.mine ~= nil or (s.ahead == 0 and fits(s, write))
  if not s.free and busy == 0 then busy = i end
end
local function take(s, exp)
  if s.newClaim then
    if claim == '' then redis.call('HDEL', s.lk, 'c') else redis.call('HSET', s.lk, 'c', claim) end
  end
  if s.mine then
    if busy == 0 or s.mine.exp < exp then setExp(s, s.mine, exp) end
    return s.mine.fence
  end
  if s.place then
    redis.call('HDEL', s.lk, 'q:' .. owner)
    table.remove(s.queue, 1)
  end
  return grant(s, owner, write, exp)
end
if busy == 0 then
  local out = {1}
  for i, s in ipairs(S) do
    out[i + 1] = take(s, now + ttl)
    settle(s)
  end
  return out
end
local left, way, wayLeft = inTheWay(S[busy], write)
if not wait then
  settleAll()
  return {0, busy, left, way, wayLeft, 0, 0}
end
for _, s in ipairs(S) do
  if s.free then
    take(s, now + math.min(ttl, lease))
  else
    if s.newClaim then redis.call('HSET', s.lk, 'c', claim) end
    local seq
    if s.place then
      seq = s.place.seq
      s.place.alive = now + lease
    else
      seq = redis.call('HINCRBY', s.lk, 'seq', 1)
      table.insert(s.queue, {owner = owner, seq = seq, alive = now + lease, w = write, ttl = ttl})
    end
    redis.call('HSET', s.lk, 'q:' .. owner, string.format('%d:%d:%s:%d', seq, now + lease, write, ttl))
  end
  settle(s)
end
return {0, busy, left, way, wayLeft, 1, S[busy].ahead == 0 and 1 or 0}
`)

// releaseScript ends owner's grant of the key (ARGV[2] 1) and its place
// in the queue, and lets in the waiters that now fit.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] 1 to end the grant
// too, 0 for the place only (a waiter whose owner is reused giving up);
// ARGV[3...] the waiters of the releasing process for this key, granted
// for their TTL and handed over by it. Reply {1 when a grant that had not
// lapsed ended, else 0; then owner and fence of each of those waiters let
// in}. The key's channel hears "granted:<owners>" for the other waiters
// let in, or "released" when a grant ended and nobody was let in. The
// owner's grant alone in the hash is the uncontended release: the hash
// exists only while its last grant or place has not lapsed, and Redis
// deletes a hash with its last field.
var releaseScript = goredis.NewScript(replicateEffects + `
local lk, owner = KEYS[1], ARGV[1]
local len = redis.pcall('HLEN', lk)
if type(len) ~= 'number' or len == 0 then return {0} end
if ARGV[2] == '1' and len == 1 and redis.call('HDEL', lk, 'h:' .. owner) == 1 then
  redis.call('PUBLISH', lk .. ':released', 'released')
  return {1}
end
` + prelude + model + `
local s = load(lk, KEYS[2])
local released = 0
if ARGV[2] == '1' then
  for i, h in ipairs(s.holders) do
    if h.owner == owner then
      redis.call('HDEL', lk, 'h:' .. owner)
      table.remove(s.holders, i)
      released = 1
      break
    end
  end
end
for i, q in ipairs(s.queue) do
  if q.owner == owner then
    redis.call('HDEL', lk, 'q:' .. owner)
    table.remove(s.queue, i)
    break
  end
end
local locals = {}
for i = 3, #ARGV do locals[ARGV[i]] = true end
local mine, named = admit(s, locals, '')
if released == 1 and #mine == 0 and named == 0 and #s.queue == 0 then
  redis.call('PUBLISH', s.chan, 'released')
end
settle(s)
table.insert(mine, 1, released)
return mine
`)

// extendScript sets owner's grant of the key to end TTL from now, if it
// has not lapsed; it never creates one.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] TTL ms. Reply 1
// when extended.
var extendScript = goredis.NewScript(replicateEffects + prelude + model + `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
local s = load(KEYS[1], KEYS[2])
admit(s, {}, '')
local done = 0
for _, h in ipairs(s.holders) do
  if h.owner == ARGV[1] then
    setExp(s, h, now + tonumber(ARGV[2]))
    done = 1
  end
end
settle(s)
return done
`)

// forceReleaseScript ends every grant of the key, whoever holds it, and
// lets its waiters in; a key that v0.1.0 holds is deleted.
//
// KEYS[1] lock, KEYS[2] fence. Reply 1 when a grant ended.
var forceReleaseScript = goredis.NewScript(replicateEffects + prelude + model + `
local typ = redis.call('TYPE', KEYS[1]).ok
if typ == 'string' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[1] .. ':released', 'forced')
  return 1
end
if typ ~= 'hash' then return 0 end
local s = load(KEYS[1], KEYS[2])
local ended = #s.holders
for _, h in ipairs(s.holders) do redis.call('HDEL', KEYS[1], 'h:' .. h.owner) end
s.holders = {}
local _, named = admit(s, {}, '')
if ended > 0 and named == 0 then redis.call('PUBLISH', s.chan, 'forced') end
settle(s)
if ended > 0 then return 1 end
return 0
`)

// existsScript reports 1 when the key has a grant that has not lapsed
// (or v0.1.0 holds it); it writes nothing.
//
// KEYS[1] lock.
var existsScript = goredis.NewScript(prelude + `
local typ = redis.call('TYPE', KEYS[1]).ok
if typ == 'string' then return 1 end
if typ ~= 'hash' then return 0 end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'h:' and tonumber(string.match(all[i + 1], '^%d+:(%d+)')) > now then return 1 end
end
return 0
`)
