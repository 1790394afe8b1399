package redis

import (
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Every operation is one Lua script, so that Redis runs it atomically. They
// are sent by SHA (EVALSHA) and fall back to EVAL when the server does not
// know the SHA (after a restart or SCRIPT FLUSH), which also loads them
// again: goredis.Script.Run does exactly that.

// FenceRetention is how long a key's fence counter is kept after the
// key's last new grant: the counter expires then, so that Redis holds one
// for each key granted in the last FenceRetention, not one for every key
// ever locked ("invoice:<id>" keys would otherwise grow it without bound).
const FenceRetention = time.Hour

// nextFence is the Lua that hands out a new fence for the key whose fence
// counter is KEYS[2], leaving it in the local variable fence
// (nextFenceAt: for the counter named by any Lua expression).
//
// A new fence is max(last fence + 1, server time in microseconds), and the
// counter is kept for FenceRetention after it. The clock floor is what
// makes fences grow: a fence exceeds the time of its grant only when
// several grants of one key fall in one microsecond, by one per grant, so
// once the counter is gone (expired, a restart without persistence, a
// failover to a replica that had not yet received the last increments:
// replication is asynchronous) the clock alone is past every fence handed
// out. The counter covers what the clock cannot: grants within one
// microsecond, and a server clock that steps back, by less than
// FenceRetention. What it assumes: the clock of the Redis server (and of a
// replica that takes over) never steps back by FenceRetention or more.
// replicate_commands makes Redis before 5.0 replicate the effects rather
// than the script, which TIME requires; later versions always do.
var nextFence = nextFenceAt("KEYS[2]")

func nextFenceAt(counter string) string {
	return `
local now = redis.call('TIME')
local fence = now[1] * 1000000 + now[2]
local last = tonumber(redis.call('GET', ` + counter + `))
if last and fence <= last then fence = last + 1 end
redis.call('SET', ` + counter + `, string.format('%.0f', fence), 'PX', ` + strconv.FormatInt(FenceRetention.Milliseconds(), 10) + `)
`
}

const replicateEffects = `if redis.replicate_commands then redis.replicate_commands() end
`

// acquireScript takes a free key, or refreshes it for the owner that holds
// it, together with the fence.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] TTL in milliseconds.
// Reply {1, fence} when granted or refreshed, {0, remaining TTL in ms,
// holder's owner} when another owner holds the key. The free key is the common case, so the
// script tries SET NX first.
var acquireScript = goredis.NewScript(replicateEffects + `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
` + nextFence + `
  return {1, fence}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
return {0, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[1])}
`)

// releaseScript deletes the key if the owner holds it and publishes the
// release so that waiters wake up; a shared key's grant it ends as
// releaseSharedBody does, in the same round trip.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] channel, ARGV[3]
// shared channel, ARGV[4] the releasing process's confirmed subscriptions
// to it (-1: publish always). Reply 1 when deleted, 0 when not; for a
// shared key releaseSharedBody's reply.
var releaseScript = goredis.NewScript(replicateEffects + `
if redis.call('TYPE', KEYS[1]).ok == 'hash' then
` + releaseSharedBody + `
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
`)

// handOffScript releases the key and grants it in the same step to the
// next waiter of the releasing process, unless some other process waits
// for the key too: then it releases and publishes like releaseScript, so
// that every waiter has its chance.
//
// Other processes are seen through the subscriber count of the key's
// channel: each waiting driver keeps one subscription on it. ARGV[5] is how
// many of those are the releasing driver's own (1, or 0 while its
// subscription is not confirmed).
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] next owner,
// ARGV[3] its TTL in milliseconds, ARGV[4] channel, ARGV[5] own
// subscriptions. Reply -1 when the owner did not hold the key, 0 when it
// was released for all, else the fence of the grant to the next owner.
var handOffScript = goredis.NewScript(replicateEffects + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
if redis.call('PUBSUB', 'NUMSUB', ARGV[4])[2] > tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[4], 'released')
  return 0
end
` + nextFence + `
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return fence
`)

// extendScript sets a new TTL if the owner still holds the key, and for a
// shared key extends the owner's grant as extendSharedBody does, in the
// same round trip. It never creates the key.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] TTL in milliseconds,
// ARGV[3] shared channel. Reply 1 when extended.
var extendScript = goredis.NewScript(replicateEffects + `
if redis.call('TYPE', KEYS[1]).ok == 'hash' then
` + extendSharedBody + `
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// forceReleaseScript deletes the key whoever holds it and publishes the
// release when there was something to delete.
//
// KEYS[1] lock; ARGV[1] channel. Reply 1 when deleted.
var forceReleaseScript = goredis.NewScript(`
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call('PUBLISH', ARGV[1], 'forced')
  return 1
end
return 0
`)
