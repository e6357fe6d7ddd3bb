/**
 * The Lua shared by every script: how a script reads `now`, decodes its
 * arguments and the key's state, encodes JSON with full double precision, and
 * writes the next state back with its expiry.
 *
 * Calling convention (every script): `KEYS[1]` the state key, `ARGV[1]` the
 * operation's arguments as JSON, `ARGV[2]` empty (the time is Redis's `TIME`)
 * or, for the differential tests only, the caller's `now` in epoch ms. The
 * script's body ends with `return finish(state, ttl, result)`: `state` is
 * `nil` (delete), `RAW` (write back what was read) or an encoded JSON string;
 * `result` is the decision, encoded as JSON.
 */
export const PRELUDE: string = `
local NULL = cjson.null
local RAW = {}
local INF = 1 / 0

local now
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  if redis.replicate_commands then pcall(redis.replicate_commands) end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local args = cjson.decode(ARGV[1])
local raw = redis.call('GET', KEYS[1])
local json = nil
if raw then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok then json = decoded else json = RAW end
end

local function isnum(x) return type(x) == 'number' end
local function isnan(x) return x ~= x end
-- Math.max / Math.min of JavaScript: NaN if either side is NaN.
local function jmax(a, b)
  if isnan(a) or isnan(b) then return 0 / 0 end
  if a > b then return a end
  return b
end
local function jmin(a, b)
  if isnan(a) or isnan(b) then return 0 / 0 end
  if a < b then return a end
  return b
end
local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Numbers as JSON.stringify writes them: the shortest of 15, 16 or 17
-- significant digits that reads back as the same double (cjson stops at 14).
local function num(x)
  if isnan(x) or x == INF or x == -INF then return 'null' end
  if x == 0 then return '0' end
  for _, p in ipairs({ '%.15g', '%.16g' }) do
    local s = string.format(p, x)
    if tonumber(s) == x then return s end
  end
  return string.format('%.17g', x)
end

-- A value inside a state or result: below the top level every table is an array.
local function enc(v)
  local t = type(v)
  if t == 'number' then return num(v) end
  if t == 'boolean' then return v and 'true' or 'false' end
  if t == 'string' then return cjson.encode(v) end
  if t == 'table' then
    local out = {}
    for i = 1, #v do out[i] = enc(v[i]) end
    return '[' .. table.concat(out, ',') .. ']'
  end
  return 'null'
end

-- An object with its fields in the given order.
local function obj(keys, t)
  local out = {}
  for i, k in ipairs(keys) do out[i] = '"' .. k .. '":' .. enc(t[k]) end
  return '{' .. table.concat(out, ',') .. '}'
end

local function finish(state, ttl, result)
  if state == nil or not (ttl > 0) then
    if raw then redis.call('DEL', KEYS[1]) end
    return result
  end
  local value = state
  if state == RAW then value = raw end
  if not value then return result end
  -- Past 2^53 ms (285,000 years) an expiry means never; Redis would refuse it.
  if ttl >= 9007199254740992 then
    redis.call('SET', KEYS[1], value)
  else
    redis.call('SET', KEYS[1], value, 'PX', string.format('%d', math.ceil(ttl)))
  end
  return result
end
`;
