/**
 * The two Lua scripts the store runs (each one round trip, atomic on the server). Every key they
 * touch is passed in KEYS.
 */

/**
 * KEYS[1] verdicts hash; ARGV worker id, verdict JSON, its `at`. Writes unless the stored verdict
 * is newer (a late write of an older observation never overwrites a newer one). 1 when written.
 */
export const PUT_VERDICT = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  local ok, decoded = pcall(cjson.decode, current)
  if ok and type(decoded) == 'table' then
    local at = tonumber(decoded['at'])
    if at and at > tonumber(ARGV[3]) then return 0 end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/**
 * KEYS[1] replicas sorted set, KEYS[2..n] load hashes; ARGV[1..n-1] the replica ids of those
 * hashes. Removes each replica whose load hash has expired, checked and removed in one step so a
 * replica reporting meanwhile is never dropped. Answers how many were removed.
 */
export const DROP_EXPIRED_REPLICAS = `
local removed = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i - 1])
  end
end
return removed
`;
