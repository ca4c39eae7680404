//! The Lua scripts of the Redis job store (`jobs`): each change to a job is one script, so
//! it happens whole on every replica (the keys and the design are described in `jobs`).
//! The arguments are positional; `jobs` passes them in the order each script reads.

use std::sync::LazyLock;

use ::redis::Script;

/// Creates a job, or finds the one its idempotency key names.
pub(super) static BEGIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if #KEYS == 3 then
  local seen = redis.call('GET', KEYS[3])
  if seen then
    local fp, id = string.match(seen, '^(%x*):(%x+)$')
    if id and redis.call('EXISTS', ARGV[9] .. 'job:' .. id) == 1 then
      if fp == ARGV[8] then return {'existing', id} end
      return {'mismatch', ''}
    end
  end
  redis.call('SET', KEYS[3], ARGV[8] .. ':' .. ARGV[1], 'PX', ARGV[7])
end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'op', ARGV[3], 'status', 'running', 'created', ARGV[4])
if #KEYS == 3 then redis.call('HSET', KEYS[1], 'idem', KEYS[3]) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
return {'new', ARGV[1]}
",
    )
});

/// Logs a progress event while the job runs.
pub(super) static PUSH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
redis.call('XADD', KEYS[2], '0-*', 'e', ARGV[1], 'd', ARGV[2])
redis.call('HSET', KEYS[1], 'pname', ARGV[1], 'pdata', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'bytes', #ARGV[1] + #ARGV[2] + ARGV[3])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
",
    )
});

/// Ends a running job once: `finish` (its runner), `cancel` (its owner), `lost` (only
/// when the lease is gone).
pub(super) static END: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local st = redis.call('HMGET', KEYS[1], 'status', 'owner', 'idem')
if not st[1] then return 'missing' end
if ARGV[7] == 'cancel' and st[2] ~= ARGV[8] then return 'missing' end
if st[1] ~= 'running' then return 'done' end
if ARGV[7] == 'lost' and redis.call('EXISTS', KEYS[3]) == 1 then return 'held' end
redis.call('XADD', KEYS[2], '0-*', 'e', ARGV[3], 'd', ARGV[4])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'http', ARGV[2], 'oname', ARGV[3], 'odata', ARGV[4], 'finished', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('DEL', KEYS[3])
if st[3] then
  if ARGV[7] == 'lost' then redis.call('DEL', st[3]) else redis.call('PEXPIRE', st[3], ARGV[6]) end
end
-- The ceilings on finished jobs (COMPACTD_JOBS_MAX, COMPACTD_JOBS_MAX_BYTES): this job
-- joins the finished ones (KEYS[4], by finish time; KEYS[5] their bytes; KEYS[6] the
-- total), those that expired by themselves leave the count, then the oldest go, never
-- this one. An evicted job leaves a marker for its owner (410, not 404).
local size = redis.call('HINCRBY', KEYS[1], 'bytes', #ARGV[3] + #ARGV[4] + ARGV[12])
local now = tonumber(ARGV[5])
local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. (now - tonumber(ARGV[6])))
for _, old in ipairs(expired) do
  redis.call('DECRBY', KEYS[6], tonumber(redis.call('HGET', KEYS[5], old) or '0'))
  redis.call('HDEL', KEYS[5], old)
  redis.call('ZREM', KEYS[4], old)
end
redis.call('ZADD', KEYS[4], now, ARGV[11])
redis.call('HSET', KEYS[5], ARGV[11], size)
local total = redis.call('INCRBY', KEYS[6], size)
local max, max_bytes = tonumber(ARGV[9]), tonumber(ARGV[10])
while redis.call('ZCARD', KEYS[4]) > 1 and (redis.call('ZCARD', KEYS[4]) > max or total > max_bytes) do
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
  if oldest == ARGV[11] then
    -- Same millisecond as an older one: take the next instead.
    oldest = redis.call('ZRANGE', KEYS[4], 1, 1)[1]
  end
  redis.call('ZREM', KEYS[4], oldest)
  total = redis.call('DECRBY', KEYS[6], tonumber(redis.call('HGET', KEYS[5], oldest) or '0'))
  redis.call('HDEL', KEYS[5], oldest)
  local rec = ARGV[13] .. 'job:' .. oldest
  local o = redis.call('HMGET', rec, 'owner', 'idem')
  if o[1] then
    redis.call('SET', ARGV[13] .. 'evicted:' .. oldest, o[1], 'PX', ARGV[6])
    if o[2] then redis.call('DEL', o[2]) end
  end
  redis.call('DEL', rec, rec .. ':events', rec .. ':lease')
end
return 'ended'
",
    )
});
