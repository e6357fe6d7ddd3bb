/**
 * The circuit breaker's operations in Lua, line for line the JavaScript of
 * src/policy/breaker/ops.ts (the reference; docs/policies.md is the spec).
 */

const COMMON = `
local cfg = args.cfg
local KEEP = jmax(cfg.window, cfg.maxBreakDuration)
local STATE_KEYS = { 'state', 'gen', 'buckets', 'streak', 'breakMs', 'openUntil', 'probes', 'lastProbe', 'waitUntil', 'openedAt' }

local function closedState(gen, lastProbe)
  return { state = 'closed', gen = gen, buckets = {}, streak = 0, breakMs = 0,
    openUntil = 0, probes = {}, lastProbe = lastProbe, waitUntil = 0, openedAt = 0 }
end

-- Anything unrecognisable counts as a fresh closed circuit.
local function readState(j)
  if type(j) == 'table' and (j.state == 'closed' or j.state == 'open' or j.state == 'half-open')
    and type(j.buckets) == 'table' and type(j.probes) == 'table' and isnum(j.gen)
    and isnum(j.streak) and isnum(j.breakMs) and isnum(j.openUntil) and isnum(j.lastProbe) then
    -- States written before waitUntil existed: nobody waits.
    if not isnum(j.waitUntil) then j.waitUntil = 0 end
    -- ...and before openedAt: probed every probeInterval.
    if not isnum(j.openedAt) then j.openedAt = 0 end
    return j
  end
  return closedState(0, 0)
end

-- While requests wait: probeInterval; when several wait (quick), a tenth of the outage so
-- far, at least 50 ms, at most probeInterval.
-- With waiters reported: the ceiling is 24000 / waiters (at least the floor).
local function waitBreak(s, quick)
  local longest = jmin(cfg.probeInterval, cfg.maxBreakDuration)
  if not quick then return longest end
  local floor = jmin(50, longest)
  local ceiling = longest
  local n = args.waiters
  if isnum(n) and n > 0 then ceiling = jmin(longest, jmax(floor, 24000 / n)) end
  local share = (now - s.openedAt) * 0.1
  return jmin(ceiling, jmax(floor, share))
end

local function update(s, result)
  local ttl = cfg.window
  if s.state == 'open' then
    ttl = s.openUntil - now + KEEP
  elseif s.state == 'half-open' then
    local lastLease = now
    for _, p in ipairs(s.probes) do lastLease = jmax(lastLease, p[2]) end
    ttl = lastLease - now + KEEP
  end
  return obj(STATE_KEYS, s), ttl, result
end

local function change(from, to)
  if from == nil then return NULL end
  return { from, to }
end
`;

/** `staunch.breaker.admit`. */
export const BREAKER_ADMIT: string = `${COMMON}
local ADMIT_OK = { 'ok', 'gen', 'probe', 'change' }
local ADMIT_NO = { 'ok', 'retryAfter' }

local function admitProbe(s, ch)
  local id = jmax(now, s.lastProbe + 1)
  local probes = {}
  for i, p in ipairs(s.probes) do probes[i] = p end
  probes[#probes + 1] = { id, now + args.leaseMs }
  local nxt = copy(s)
  nxt.probes = probes
  nxt.lastProbe = id
  return update(nxt, obj(ADMIT_OK, { ok = true, gen = s.gen, probe = id, change = ch }))
end

local function admit()
  local s = readState(json)
  if s.state == 'closed' then
    local state = nil
    if json ~= nil then state = RAW end
    return state, cfg.window, obj(ADMIT_OK, { ok = true, gen = s.gen, probe = NULL, change = NULL })
  end
  local waitMs = 0
  if isnum(args.waitMs) then waitMs = args.waitMs end
  local peek = args.peek == true
  if waitMs > 0 then
    s = copy(s)
    s.waitUntil = jmax(s.waitUntil, now + waitMs)
    if s.state == 'open' then s.openUntil = jmin(s.openUntil, now + waitBreak(s, args.quick == true)) end
  end
  if s.state == 'open' then
    if now < s.openUntil then
      return update(s, obj(ADMIT_NO, { ok = false, retryAfter = s.openUntil - now }))
    end
    if peek then return update(s, obj(ADMIT_NO, { ok = false, retryAfter = 0 })) end
    local half = copy(s)
    half.state = 'half-open'
    half.openUntil = 0
    half.probes = {}
    return admitProbe(half, change('open', 'half-open'))
  end
  local live = {}
  for _, p in ipairs(s.probes) do
    if p[2] > now then live[#live + 1] = p end
  end
  local pruned = copy(s)
  pruned.probes = live
  if #live < cfg.halfOpenProbes then
    if peek then return update(pruned, obj(ADMIT_NO, { ok = false, retryAfter = 0 })) end
    return admitProbe(pruned, NULL)
  end
  local freeAt = INF
  for _, p in ipairs(live) do freeAt = jmin(freeAt, p[2]) end
  return update(pruned, obj(ADMIT_NO, { ok = false, retryAfter = jmax(1, freeAt - now) }))
end

return finish(admit())
`;

/** `staunch.breaker.record`. */
export const BREAKER_RECORD: string = `${COMMON}
local RESULT = { 'change' }

local function open(s, breakMs)
  local o = copy(s)
  o.state = 'open'
  o.buckets = {}
  o.streak = 0
  o.breakMs = breakMs
  o.openUntil = now + breakMs
  o.probes = {}
  if s.state == 'closed' then o.openedAt = now end
  return o
end

local function recordProbe(s)
  if s.state ~= 'half-open' then return nil end
  local found = false
  for _, p in ipairs(s.probes) do
    if p[1] == args.probe then found = true end
  end
  if not found then return nil end
  if args.outcome == 'cancelled' then
    local probes = {}
    for _, p in ipairs(s.probes) do
      if p[1] ~= args.probe then probes[#probes + 1] = p end
    end
    local nxt = copy(s)
    nxt.probes = probes
    return update(nxt, obj(RESULT, { change = NULL }))
  end
  if args.outcome == 'failure' then
    local breakMs
    local waiting = s.waitUntil > now
    if waiting then
      breakMs = waitBreak(s, args.quick == true)
    else
      breakMs = jmin(cfg.maxBreakDuration, jmax(cfg.breakDuration, s.breakMs * 2))
    end
    local nxt = open(s, breakMs)
    -- Several waiting: the break runs from the probe's departure (its id).
    if waiting and args.quick == true then
      nxt.openUntil = jmax(now, jmin(nxt.openUntil, args.probe + breakMs))
    end
    return update(nxt, obj(RESULT, { change = change('half-open', 'open') }))
  end
  local closed = closedState(jmax(now, s.gen + 1), s.lastProbe)
  return update(closed, obj(RESULT, { change = change('half-open', 'closed') }))
end

local function record()
  local s = readState(json)
  local function unchanged()
    if json == nil then return nil, 0, obj(RESULT, { change = NULL }) end
    return update(s, obj(RESULT, { change = NULL }))
  end
  if args.probe ~= NULL then
    local state, ttl, result = recordProbe(s)
    if result == nil then return unchanged() end
    return state, ttl, result
  end
  if s.state ~= 'closed' or s.gen ~= args.gen then return unchanged() end
  local counted = args.outcome == 'success' or args.outcome == 'failure'
  local batch = nil
  if type(args.successes) == 'table' then batch = args.successes end
  if not counted and batch == nil then return unchanged() end

  local failed = args.outcome == 'failure'
  local width = jmax(1, math.floor(cfg.window / 10))
  local start = now - math.fmod(now, width)
  local cutoff = now - cfg.window
  local buckets = {}
  for _, b in ipairs(s.buckets) do
    if b[1] > cutoff then buckets[#buckets + 1] = { b[1], b[2], b[3] } end
  end
  local function bucketAt(at)
    for _, b in ipairs(buckets) do
      if b[1] == at then return b end
    end
    local fresh = { at, 0, 0 }
    buckets[#buckets + 1] = fresh
    return fresh
  end
  local streak = s.streak
  if batch ~= nil and batch[2] > 0 then
    streak = 0
    if batch[1] > cutoff then
      local b = bucketAt(batch[1])
      b[3] = b[3] + batch[2]
    end
  end
  local bucket = nil
  if counted then
    bucket = bucketAt(start)
    if failed then
      bucket[2] = bucket[2] + 1
      streak = streak + 1
    else
      bucket[3] = bucket[3] + 1
      streak = 0
    end
  end

  local trip = false
  if cfg.consecutiveFailures > 0 then
    trip = streak >= cfg.consecutiveFailures
  elseif failed and bucket ~= nil then
    local failures, total = 0, 0
    for _, b in ipairs(buckets) do
      failures = failures + b[2]
      total = total + b[2] + b[3]
    end
    local newest = bucket[2] + bucket[3]
    trip = (total >= cfg.minimumVolume and failures >= cfg.failureRatio * total)
      or (newest >= cfg.minimumVolume and bucket[2] >= cfg.failureRatio * newest)
  end
  if trip then
    return update(open(s, cfg.breakDuration), obj(RESULT, { change = change('closed', 'open') }))
  end
  local nxt = copy(s)
  nxt.buckets = buckets
  nxt.streak = streak
  return update(nxt, obj(RESULT, { change = NULL }))
end

return finish(record())
`;
