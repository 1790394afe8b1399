package redis

import goredis "github.com/redis/go-redis/v9"

// Every operation is one Lua script, so that Redis runs it atomically. They
// are sent by SHA (EVALSHA) and fall back to EVAL when the server does not
// know the SHA (after a restart or SCRIPT FLUSH), which also loads them
// again: goredis.Script.Run does exactly that.

// acquireScript takes a free key, or refreshes it for the owner that holds
// it, together with the fence.
//
// KEYS[1] lock, KEYS[2] fence; ARGV[1] owner, ARGV[2] TTL in milliseconds.
// Reply {1, fence} when granted or refreshed, {0, remaining TTL in ms} when
// another owner holds the key. The free key is the common case, so the
// script tries SET NX first.
//
// A new fence is max(last fence + 1, server time in microseconds). The
// counter alone would restart at 1 when the counter key is lost: a restart
// without persistence, or a failover to a replica that had not yet received
// the last increments (replication is asynchronous). The clock floor keeps
// fences growing across both, as long as the server clock does not step
// back. replicate_commands makes Redis before 5.0 replicate the effects
// rather than the script, which TIME requires; later versions always do.
var acquireScript = goredis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local fence = now[1] * 1000000 + now[2]
  local last = tonumber(redis.call('GET', KEYS[2]))
  if last and fence <= last then fence = last + 1 end
  redis.call('SET', KEYS[2], string.format('%.0f', fence))
  return {1, fence}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
return {0, redis.call('PTTL', KEYS[1])}
`)

// releaseScript deletes the key if the owner holds it and publishes the
// release so that waiters wake up. The message is the released owner, so
// that the releasing process can tell its own releases apart.
//
// KEYS[1] lock; ARGV[1] owner, ARGV[2] channel. Reply 1 when deleted.
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
`)

// extendScript sets a new TTL if the owner still holds the key. It never
// creates the key.
//
// KEYS[1] lock; ARGV[1] owner, ARGV[2] TTL in milliseconds. Reply 1 when
// extended.
var extendScript = goredis.NewScript(`
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
