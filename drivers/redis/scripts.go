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
// Every claim is one data model. A lock key K has, all under one hash
// tag (keysFor):
//
//	{K}        hash: a field "h:<owner>" per grant, "fence:expires_ms:write",
//	           or "fence:expires_ms:write:cap_ms" for a grant with a cap on
//	           its total hold time (Request.MaxHold; cap_ms 0: the cap of a
//	           set's key, which starts when the set's last key comes), "c",
//	           the claim "kind:limit" (absent for a mutex), and "q" while
//	           anyone may be queued
//	{K}:q      sorted set: the queue, each waiting owner scored by its
//	           place's number (drawn from the fence counter, so increasing)
//	{K}:w      hash: each waiting owner's place, "alive_ms:write:ttl_ms",
//	           or "alive_ms:write:ttl_ms:max_hold_ms" for a request with a
//	           cap (0 for a set's), and "#c", the claim, for when the grants
//	           lapse before the queue
//	{K}:fence  the last fence handed out
//
// A mutex is the exclusive claim of one slot: the same keys, one grant at
// most. {K} expires with its last grant and the queue with its last place
// written, so a free key nobody waits for is two missing keys: the
// uncontended acquire creates {K} and the uncontended release deletes it,
// without reading a queue. A grant with nobody queued is {K}'s only field:
// a script that queues a waiter, or lets one in with others perhaps still
// behind it, marks {K} with "q", and one that finds the queue empty takes
// the mark away, so the release that sees one field needs no look at the
// queue. Only the head of the queue is let in, when it
// fits, so a wait is first come, first served across processes for every
// claim; each step looks at the head only, whatever the queue's length. A
// waiter keeps its place alive by visiting it (every attempt does), and
// the place of a process that died lapses after waiterLease: it is dropped
// when it reaches the head.
//
// A grant's cap (Request.MaxHold) is written only when it has one, so a
// lock without a cap costs what it did before caps: the cap is the time
// of the grant (later, as for its deadline) plus MaxHold, fixed when the
// grant is made, by whichever script makes it (an acquire, or a release
// that lets a waiter in, whose place carries its MaxHold); every deadline
// written after is at most the cap (setExp), so no refresh, by Extend or
// by an acquire of the owner's own key, takes the grant past it, and at
// the cap the grant lapses as at any deadline. The keys a set takes, or
// is let in to, while it still waits for others are held for a lease at
// most, their cap pending (0), as their TTL is: both start with the
// attempt that finds the set's last key come (driverstest's Model).

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
// requires; later versions always do): the server's time (now, in whole
// ms), the ms from which a new deadline counts (later: rounding the time
// down never shortens a TTL), the lease, and newFence.
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
// replica that takes over) never steps back by FenceRetention or more. The
// counter is written and its last value read in one SET ... GET, and
// written again in the rare case that the clock did not pass it.
var prelude = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local later = now + 1
local lease = ` + strconv.FormatInt(waiterLease.Milliseconds(), 10) + `
local function newFence(counter)
  local fence = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local prev, written = redis.pcall('SET', counter, string.format('%.0f', fence), 'PX', ` + retention + `, 'GET'), true
  if type(prev) == 'table' then
    prev, written = redis.call('GET', counter), false -- before Redis 6.2, SET has no GET
  end
  local last = tonumber(prev)
  if last and fence <= last then fence, written = last + 1, false end
  if not written then redis.call('SET', counter, string.format('%.0f', fence), 'PX', ` + retention + `) end
  return fence
end
`

// {K} expires at its last deadline, exp: Redis drops a key once its clock
// in ms is past the key's expiry time, and a script sees a grant lapse
// once now reaches exp, so the expiry time is exp-1 (PEXPIREAT): a hash
// that is still there holds a grant that has not lapsed, and the release
// of a hash's only field, which reads no deadline, never reports a lapsed
// grant as released.

// retention is FenceRetention in ms, for the scripts.
var retention = strconv.FormatInt(FenceRetention.Milliseconds(), 10)

const replicateEffects = `if redis.replicate_commands then redis.replicate_commands() end
`

// model is the Lua of the rules, over the state s of the i-th key of the
// script (KEYS[4i-3..4i]: lock, fence, queue, places) that load reads:
//
//   - load reads the key's grants, drops those that lapsed, and returns
//     them as holders (each with its cap, nil for none), with the claim;
//   - fits says whether a claim of side w (write '1') fits beside the
//     holders: one slot for a mutex, limit for a semaphore, one writer or
//     up to MaxHolders readers;
//   - head is the first live place of the queue, the lapsed ones before it
//     dropped, and pop takes it out; place keeps (or takes, at the back,
//     reporting whether it is first) owner's place alive; unplace drops
//     it;
//   - grant writes a new grant, its deadline at most its cap (capFrom:
//     hold nil, none; 0, pending; else from now); setExp moves a grant's
//     deadline, never past the cap it was granted with;
//   - admit lets waiters in from the head of the queue while they fit,
//     reading the head only while a claim can fit at all (s.known: s.top
//     is then the head left waiting, or nil for an empty queue). A
//     waiter named in locals (the releasing process's own) is granted for
//     its TTL, and returned for that process to hand it over; any other,
//     but self, for waiterLease at most, until its next attempt takes the
//     grant up, and is told on the key's channel; a waiter's cap counts
//     from this grant;
//   - settle sets the grants' expiry to the last of them, or deletes them
//     when none is left, once they changed (s.dirty), and marks {K} "q"
//     when the script left somebody queued (s.queue 'some': placed, or let
//     in from the queue before it was seen empty), unmarks it when the
//     script saw the queue empty ('empty');
//   - inTheWay is the first holder's time left, and the holder whose grant,
//     by ending, lets a claim of side w in (drivers.Claim.InTheWay); a time
//     left counts from later, so that it is never told longer than the TTL.
var model = `
local function capFrom(hold)
  if hold and hold > 0 then return later + hold end
  return hold
end
local function capped(h, exp)
  if h.cap and h.cap > 0 and h.cap < exp then return h.cap end
  return exp
end
local function holderValue(h)
  if h.cap then return string.format('%.0f:%d:%s:%d', h.fence, h.exp, h.w, h.cap) end
  return string.format('%.0f:%d:%s', h.fence, h.exp, h.w)
end
local function load(i)
  local lk = KEYS[4 * i - 3]
  local s = {lk = lk, fk = KEYS[4 * i - 2], qk = KEYS[4 * i - 1], wk = KEYS[4 * i], chan = lk .. ':released', holders = {}, claim = '', kind = '0', lim = 1}
  local all = redis.pcall('HGETALL', lk)
  if all.err then return nil end
  s.absent = #all == 0
  for j = 1, #all, 2 do
    local f, v = all[j], all[j + 1]
    if string.sub(f, 1, 2) == 'h:' then
      local fence, exp, w, cap = string.match(v, '^(%d+):(%d+):(%d):?(%d*)')
      exp = tonumber(exp)
      if exp <= now then
        redis.call('HDEL', lk, f)
        s.dirty = true
      else
        s.holders[#s.holders + 1] = {owner = string.sub(f, 3), fence = tonumber(fence), exp = exp, w = w, cap = tonumber(cap)}
      end
    elseif f == 'q' then
      s.marked = true
    elseif f == 'c' then
      s.claim = v
      local kind, lim = string.match(v, '^(%d+):(%d+)')
      s.kind, s.lim = kind, tonumber(lim)
    end
  end
  return s
end
local function fits(s, w)
  local n = #s.holders
  if s.kind ~= '2' then return n < s.lim end
  if w == '1' then return n == 0 end
  return n == 0 or (s.holders[1].w == '0' and n < ` + strconv.Itoa(drivers.MaxHolders) + `)
end
local function unplace(s, owner)
  redis.call('ZREM', s.qk, owner)
  redis.call('HDEL', s.wk, owner)
end
local function placeOf(owner, v)
  if not v then return nil end
  local alive, w, ttl, hold = string.match(v, '^(%d+):(%d):(%d+):?(%d*)')
  if tonumber(alive) <= now then return nil end
  return {owner = owner, w = w, ttl = tonumber(ttl), hold = tonumber(hold)}
end
local function head(s)
  while true do
    local top = redis.call('ZRANGE', s.qk, 0, 0)[1]
    if not top then return nil end
    local q = placeOf(top, redis.call('HGET', s.wk, top))
    if q then return q end
    unplace(s, top)
  end
end
local function pop(s)
  while true do
    local top = redis.call('ZPOPMIN', s.qk)[1]
    if not top then return nil end
    local q = placeOf(top, redis.call('HGET', s.wk, top))
    redis.call('HDEL', s.wk, top)
    if q then return q end
  end
end
local function place(s, owner, w, ttl, placed, claim, hold)
  local first = false
  if not placed then
    local seq = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local last = tonumber(redis.call('ZRANGE', s.qk, -1, -1, 'WITHSCORES')[2])
    if last and seq <= last then seq = last + 1 end
    first = last == nil
    redis.call('ZADD', s.qk, seq, owner)
  end
  local v = string.format('%d:%s:%d', now + lease, w, ttl)
  if hold then v = v .. ':' .. hold end
  if claim == '' then
    redis.call('HSET', s.wk, owner, v)
  else
    redis.call('HSET', s.wk, owner, v, '#c', claim)
  end
  redis.call('PEXPIRE', s.qk, lease)
  redis.call('PEXPIRE', s.wk, lease)
  s.queue = 'some'
  return first
end
local function grant(s, owner, w, exp, hold)
  local h = {owner = owner, fence = newFence(s.fk), w = w, cap = capFrom(hold)}
  h.exp = capped(h, exp)
  redis.call('HSET', s.lk, 'h:' .. owner, holderValue(h))
  s.holders[#s.holders + 1] = h
  s.dirty = true
  return h.fence
end
local function setExp(s, h, exp)
  h.exp, s.dirty = capped(h, exp), true
  redis.call('HSET', s.lk, 'h:' .. h.owner, holderValue(h))
end
local function admit(s, locals, self)
  local mine, named = {}, {}
  s.top, s.known = nil, false
  while fits(s, '0') or fits(s, '1') do
    local q
    if s.kind == '2' then
      q = head(s)
      s.top, s.known = q, true
      if not q then s.queue = 'empty' break end
      s.queue = 'some'
      if not fits(s, q.w) then break end
      unplace(s, q.owner)
    else
      q, s.known = pop(s), true
      if not q then s.queue = 'empty' break end
      s.queue = 'some'
    end
    if s.absent then
      -- the grants lapsed with the claim: the queue keeps it too
      s.absent = false
      local c = redis.call('HGET', s.wk, '#c')
      if c then
        s.claim = c
        s.kind, s.lim = string.match(c, '^(%d+):(%d+)')
        s.lim = tonumber(s.lim)
        redis.call('HSET', s.lk, 'c', c)
      end
    end
    if locals[q.owner] then
      table.insert(mine, q.owner)
      table.insert(mine, grant(s, q.owner, q.w, later + q.ttl, q.hold))
    else
      grant(s, q.owner, q.w, later + math.min(q.ttl, lease), q.hold)
      if q.owner ~= self then table.insert(named, q.owner) end
    end
    s.top, s.known = nil, false
  end
  if #named > 0 then redis.call('PUBLISH', s.chan, 'granted:' .. table.concat(named, ',')) end
  return mine, #named
end
local function settle(s)
  if s.dirty then
    local last = 0
    for _, h in ipairs(s.holders) do if h.exp > last then last = h.exp end end
    if last <= now then redis.call('DEL', s.lk) return end
    redis.call('PEXPIREAT', s.lk, last - 1)
  end
  if #s.holders == 0 then return end
  if s.queue == 'some' and not s.marked then
    redis.call('HSET', s.lk, 'q', '1')
    s.marked = true
  elseif s.queue == 'empty' and s.marked then
    redis.call('HDEL', s.lk, 'q')
    s.marked = false
  end
end
local function inTheWay(s, w)
  local left, way = -1, nil
  for _, h in ipairs(s.holders) do
    if left < 0 or h.exp - later < left then left = h.exp - later end
    if way == nil
      or (w == '1' and (h.exp > way.exp or (h.exp == way.exp and h.fence > way.fence)))
      or (w ~= '1' and (h.exp < way.exp or (h.exp == way.exp and h.fence < way.fence))) then
      way = h
    end
  end
  if way then return left, way.owner, way.exp - later end
  return left, '', -1
end
`

// acquireScript takes, refreshes, queues or refuses a request of one or
// more keys, all or none.
//
// KEYS: lock, fence, queue and places of each key (keyspace.names);
// ARGV[1] owner, ARGV[2] TTL ms, ARGV[3] claim ("" for a mutex, else
// "kind:limit"), ARGV[4] write (0/1), ARGV[5] wait (0/1), ARGV[6] again
// (1: a later attempt of a wait, which may have places; a first attempt
// has none, and reads no rank), ARGV[7] busy (1: the caller knows the key
// to be contended, and the free key's shortcut is not tried), ARGV[8] max
// hold ms (0: no cap; a refresh keeps the cap of the grant it refreshes).
// Replies:
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
local owner, ttl, claim, write, wait, again = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5] == '1', ARGV[6] == '1'
local hold, pending = nil, nil
if tonumber(ARGV[8]) > 0 then hold, pending = tonumber(ARGV[8]), 0 end
local n = #KEYS / 4
if n == 1 and ARGV[7] ~= '1' and redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  local f, exp, v = newFence(KEYS[2]), later + ttl, nil
  if hold then -- as model's grant writes it
    exp = math.min(exp, later + hold)
    v = string.format('%.0f:%d:%s:%d', f, exp, write, later + hold)
  else
    v = string.format('%.0f:%d:%s', f, exp, write)
  end
  if claim == '' then
    redis.call('HSET', KEYS[1], 'h:' .. owner, v)
  else
    redis.call('HSET', KEYS[1], 'h:' .. owner, v, 'c', claim)
  end
  redis.call('PEXPIREAT', KEYS[1], exp - 1)
  return {1, f}
end
` + model + `
local S, busy, none = {}, 0, {}
local function settleAll() for _, s in ipairs(S) do settle(s) end end
for i = 1, n do
  local s = load(i)
  if not s then
    settleAll()
    local lk = KEYS[4 * i - 3]
    local pt = redis.call('PTTL', lk)
    return {0, i, pt, redis.call('GET', lk), pt, 0, 0}
  end
  S[i] = s
  admit(s, none, owner)
  if (#s.holders > 0 or s.top or not s.known) and s.claim ~= claim then
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
  s.ahead = 0
  if s.top or not s.known then
    s.ahead = 1 -- behind the head, or not let in anyway: only a place's rank tells more
    local rank = again and redis.call('ZRANK', s.qk, owner)
    if rank then
      s.ahead, s.placed, s.queue = rank, true, 'some'
      local v = redis.call('HGET', s.wk, owner)
      if v and string.match(v, '^%d+:(%d)') ~= write then
        settleAll()
        return {-2, i}
      end
    end
  end
  if s.mine and s.mine.w ~= write then
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
    if busy == 0 and s.mine.cap == 0 then s.mine.cap = capFrom(hold) end -- the set's last key came
    if busy == 0 or s.mine.exp < exp then setExp(s, s.mine, exp) end
    return s.mine.fence
  end
  if s.placed then unplace(s, owner) end
  if busy == 0 then return grant(s, owner, write, exp, hold) end
  return grant(s, owner, write, exp, pending)
end
if busy == 0 then
  local out = {1}
  for i, s in ipairs(S) do
    out[i + 1] = take(s, later + ttl)
    settle(s)
  end
  return out
end
local left, way, wayLeft = inTheWay(S[busy], write)
if not wait then
  settleAll()
  return {0, busy, left, way, wayLeft, 0, 0}
end
local first = S[busy].ahead == 0
for i, s in ipairs(S) do
  if s.free then
    take(s, later + math.min(ttl, lease))
  elseif place(s, owner, write, ttl, s.placed, claim, n > 1 and pending or hold) and i == busy then
    first = true
  end
  settle(s)
end
return {0, busy, left, way, wayLeft, 1, first and 1 or 0}
`)

// releaseScript ends owner's grant of the key (ARGV[2] 1) and its place
// in the queue, and lets in the waiters that now fit.
//
// KEYS: lock, fence, queue and places; ARGV[1] owner, ARGV[2] 1 to end the
// grant too, 0 for the place only (a waiter whose owner is reused giving
// up); ARGV[3...] the waiters of the releasing process for this key,
// granted for their TTL and handed over by it. Reply {1 when a grant that
// had not lapsed ended, else 0; then owner and fence of each of those
// waiters let in}. The key's channel hears "granted:<owners>" for the
// other waiters let in, or "released" when a grant ended and nobody was
// let in. The owner's grant as the hash's only field is the uncontended
// release: the hash exists only while its last grant has not lapsed, it is
// marked "q" while anyone may be queued, and Redis deletes a hash with its
// last field. A release that names waiters of its process has a queue.
var releaseScript = goredis.NewScript(replicateEffects + `
local lk, owner = KEYS[1], ARGV[1]
if ARGV[2] == '1' and #ARGV == 2 and redis.pcall('HLEN', lk) == 1 then
  if redis.call('HDEL', lk, 'h:' .. owner) == 0 then return {0} end
  redis.call('PUBLISH', lk .. ':released', 'released')
  return {1}
end
` + prelude + model + `
local s = load(1)
if not s then return {0} end
local released = 0
if ARGV[2] == '1' then
  for i, h in ipairs(s.holders) do
    if h.owner == owner then
      redis.call('HDEL', lk, 'h:' .. owner)
      table.remove(s.holders, i)
      released, s.dirty = 1, true
      break
    end
  end
end
if released == 0 then unplace(s, owner) end
local locals = {}
for i = 3, #ARGV do locals[ARGV[i]] = true end
local mine, named = admit(s, locals, '')
if released == 1 and #mine == 0 and named == 0 and s.known and not s.top then
  redis.call('PUBLISH', s.chan, 'released')
end
settle(s)
table.insert(mine, 1, released)
return mine
`)

// extendScript sets owner's grant of the key to end TTL from now, or at
// its cap if that comes first, if it has not lapsed; it never creates
// one.
//
// KEYS: lock, fence, queue and places; ARGV[1] owner, ARGV[2] TTL ms.
// Reply 1 when extended.
var extendScript = goredis.NewScript(replicateEffects + prelude + model + `
local s = load(1)
if not s then return 0 end
admit(s, {}, '')
local done = 0
for _, h in ipairs(s.holders) do
  if h.owner == ARGV[1] then
    setExp(s, h, later + tonumber(ARGV[2]))
    done = 1
  end
end
settle(s)
return done
`)

// forceReleaseScript ends every grant of the key, whoever holds it, and
// lets its waiters in; a key that v0.1.0 holds is deleted.
//
// KEYS: lock, fence, queue and places. Reply 1 when a grant ended.
var forceReleaseScript = goredis.NewScript(replicateEffects + prelude + model + `
local typ = redis.call('TYPE', KEYS[1]).ok
if typ == 'string' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[1] .. ':released', 'forced')
  return 1
end
local s = load(1)
local ended = #s.holders
for _, h in ipairs(s.holders) do redis.call('HDEL', KEYS[1], 'h:' .. h.owner) end
s.holders, s.dirty = {}, true
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
