/**
 * The rate limiter's operations in Lua, line for line the JavaScript of
 * src/policy/rate/ops.ts and src/policy/rate/meter.ts (the reference;
 * docs/policies.md is the spec).
 */

const COMMON = `
local cfg = args.cfg
local RPS = nil
if cfg.rps ~= NULL then RPS = cfg.rps end
local BURST = nil
if cfg.burst ~= NULL then BURST = cfg.burst end
local STATE_KEYS = { 'tokens', 'at', 'epoch', 'rate', 'wMax', 'lastDecrease', 'meter', 'plateau',
  'ok', 'pausedAt', 'before', 'tally', 'low', 'stated', 'ceiling' }
local B = 500
local S = 0.8

local function bucketOf(t) return math.floor(t / B) * B end

local function smoothed(m, bucket)
  local closed = S * (m[2] / (B / 1000)) + (1 - S) * m[3]
  local empty = (bucket - m[1]) / B - 1
  if empty > 0 then return closed * (1 - S) ^ empty end
  return closed
end

local function meterRecord(m, t)
  local bucket = bucketOf(t)
  if m == nil or m == NULL then return { bucket, 1, 0 } end
  if bucket > m[1] then return { bucket, 1, smoothed(m, bucket) } end
  return { m[1], m[2] + 1, m[3] }
end

local function meterRate(m, t)
  if m == nil or m == NULL then return 0 end
  local bucket = bucketOf(t)
  if bucket > m[1] then return smoothed(m, bucket) end
  return jmax(m[3], m[2] / (B / 1000))
end

-- meterRate, a bucket in progress counted over the time elapsed in it (at least 250 ms):
-- what a cut reads (rate/meter.ts, meterNow).
local function meterNow(m, t)
  local rate = meterRate(m, t)
  if m == nil or m == NULL or bucketOf(t) > m[1] then return rate end
  return jmax(rate, m[2] / (jmax(250, t - m[1]) / 1000))
end

local function meterOk(m)
  return m == NULL or (type(m) == 'table' and isnum(m[1]) and isnum(m[2]) and isnum(m[3]))
end

local function meterSettled(m, t)
  if m == nil or m == NULL then return 0 end
  local bucket = bucketOf(t)
  if bucket > m[1] then return smoothed(m, bucket) end
  return m[3]
end

local function meterShift(m, ms)
  if m == NULL or not (ms > 0) then return m end
  return { m[1] + math.floor(ms / B) * B, m[2], m[3] }
end

local function readState(j)
  if type(j) ~= 'table' or not isnum(j.tokens) or not isnum(j.at) or not isnum(j.epoch)
    or not isnum(j.plateau) or not isnum(j.low) or type(j.tally) ~= 'table'
    or not isnum(j.rate) or not isnum(j.wMax) or not isnum(j.lastDecrease)
    or not isnum(j.pausedAt) or not isnum(j.before) then
    return nil
  end
  if not meterOk(j.meter) or not meterOk(j.ok) then return nil end
  for i = 1, 4 do
    if not isnum(j.tally[i]) then return nil end
  end
  if j.stated == nil then j.stated = 0 elseif not isnum(j.stated) then return nil end
  if j.ceiling == nil then j.ceiling = 0 elseif not isnum(j.ceiling) then return nil end
  return j
end

local function rateOf(s) return RPS or s.rate end
local function burstOf(s) return BURST or jmax(1, s.rate * cfg.burstSeconds) end

local function fixedFresh()
  return { tokens = BURST or 1, at = now, epoch = 0, rate = 0, wMax = 0, lastDecrease = 0,
    meter = NULL, plateau = 0, ok = NULL, pausedAt = 0, before = 0, tally = { 0, 0, 0, 0 },
    low = 0, stated = 0, ceiling = 0 }
end

local function engaged(s) return s ~= nil and (RPS ~= nil or s.rate > 0) end

-- Refills the bucket up to now (nothing while paused).
local function settle(s)
  if now <= s.at then return s end
  local c = copy(s)
  c.tokens = jmin(burstOf(s), s.tokens + ((now - s.at) * rateOf(s)) / 1000)
  c.at = now
  return c
end

local function write(s, result)
  local fullAt = s.at + (jmax(0, burstOf(s) - s.tokens) * 1000) / rateOf(s)
  local keep = 1000
  if RPS == nil then keep = cfg.memoryMs end
  return obj(STATE_KEYS, s), math.ceil(jmax(0, fullAt - now)) + keep, result
end
`;

/** `staunch.rate.acquire`. */
export const RATE_ACQUIRE: string = `${COMMON}
local OK = { 'ok', 'wait', 'epoch', 'engaged', 'rate' }
local NO = { 'ok', 'retryAfter' }

local function acquire()
  local stored = readState(json)
  if RPS == nil and not engaged(stored) then
    return nil, 0, obj(OK, { ok = true, wait = 0, epoch = 0, engaged = false, rate = 0 })
  end
  if stored ~= nil and args.epoch ~= NULL and stored.epoch == args.epoch then
    return write(stored, obj(OK, { ok = true, wait = 0, epoch = args.epoch, engaged = true,
      rate = rateOf(stored) }))
  end
  local s = settle(stored or fixedFresh())
  local tokens = s.tokens - 1
  local debt = 0
  if tokens < 0 then debt = (-tokens * 1000) / rateOf(s) end
  local wait = math.ceil(s.at - now + debt)
  if args.maxWait ~= NULL and wait > args.maxWait then
    local result = obj(NO, { ok = false, retryAfter = wait })
    if stored == nil then return nil, 0, result end
    return write(s, result)
  end
  local nxt = copy(s)
  nxt.tokens = tokens
  nxt.meter = NULL
  if RPS == nil then nxt.meter = meterRecord(s.meter, now + wait) end
  return write(nxt, obj(OK, { ok = true, wait = wait, epoch = s.epoch, engaged = true,
    rate = rateOf(s) }))
end

return finish(acquire())
`;

/** `staunch.rate.refund`. */
export const RATE_REFUND: string = `${COMMON}
local function refund()
  local stored = readState(json)
  if not engaged(stored) or stored.epoch ~= args.epoch then
    local ttl = 0
    if stored ~= nil then
      local _, t = write(stored, 'null')
      ttl = t
    end
    return RAW, ttl, 'null'
  end
  local s = copy(settle(stored))
  s.tokens = jmin(burstOf(s), s.tokens + 1)
  return write(s, 'null')
end

return finish(refund())
`;

/** `staunch.rate.feedback`. */
export const RATE_FEEDBACK: string = `${COMMON}
local RESULT = { 'engaged', 'reset' }
local TALLY_MIN = 10
local TALLY_REFUSED = 3
local FUTILE_BAND = 1.5
local FUTILE_MAX = 0.35
local CUT_DEEPEST = 0.25

-- cbrt: x^(1/3) and one Newton step (Lua 5.1 has no cbrt).
local function cbrt(x)
  if not (x > 0) or x == INF then return x end
  local k = x ^ (1 / 3)
  return k - (k * k * k - x) / (3 * k * k)
end

local function plateauOf(rate, wMax)
  return now + 1000 * cbrt(jmax(0, 1 - rate / wMax) / cfg.scale)
end

local function lowered(s, sentAt)
  if sentAt <= s.lastDecrease then return s end
  local t = (sentAt - s.plateau) / 1000
  local at = jmax(cfg.minRate, jmin(s.rate, s.wMax * (1 + cfg.scale * t ^ 3)))
  if s.low > 0 and s.low <= at then return s end
  local c = copy(s)
  c.low = at
  return c
end

local function tallied(s, sentAt, refused)
  if sentAt <= s.lastDecrease then return s end
  local add = 0
  if refused then add = 1 end
  local c = copy(s)
  local t = s.tally
  if sentAt < s.lastDecrease + cfg.holdoffMs then
    c.tally = { t[1] + 1, t[2] + add, t[3], t[4] }
  else
    c.tally = { t[1], t[2], t[3] + 1, t[4] + add }
  end
  return c
end

local function aim(base, accepted, inForce, depth)
  local rate = jmax(cfg.minRate, jmin(inForce, jmax(accepted, base * depth)))
  return rate, jmax(rate, base)
end

local function engage(epoch, measured, accepted, fraction)
  local rate, wMax = aim(measured, accepted, INF, cfg.beta)
  return { tokens = 0, at = now, epoch = epoch + 1, rate = rate, wMax = wMax, lastDecrease = now,
    meter = { bucketOf(now), 0, measured }, plateau = plateauOf(rate, wMax),
    ok = { bucketOf(now), 0, accepted }, pausedAt = 0, before = fraction,
    tally = { 0, 0, 0, 0 }, low = 0, stated = 0, ceiling = 0 }
end

local function increase(s)
  local settled = settle(s)
  local t = (now - s.plateau) / 1000
  local cubic = s.wMax * (1 + cfg.scale * t ^ 3)
  local ceiling = 2 * meterRate(s.meter, now)
  local nxt = copy(settled)
  nxt.rate = jmax(jmax(s.rate, cfg.minRate), jmin(cubic, ceiling))
  nxt.ok = meterRecord(s.ok, now)
  nxt.tokens = jmin(nxt.tokens, burstOf(nxt))
  return nxt
end

local function decrease(s, measured, accepted)
  local d = copy(settle(s))
  local sent = jmax(meterNow(s.meter, now), measured)
  local lowest = s.rate
  if s.low > 0 then lowest = s.low end
  local base = jmin(jmin(s.rate, sent), lowest)
  local floor = jmax(meterSettled(s.ok, now), accepted)
  local t = s.tally
  local before = s.before
  if t[3] >= TALLY_MIN then before = t[4] / t[3]
  elseif t[1] + t[3] > 0 then before = (t[2] + t[4]) / (t[1] + t[3]) end
  local depth = cfg.beta
  if t[1] + t[3] >= TALLY_MIN then depth = jmax(CUT_DEEPEST, jmin(cfg.beta, 1 - before)) end
  local rate, wMax = aim(base, floor, s.rate, depth)
  local cut = rate < s.rate
  d.rate = rate
  d.wMax = wMax
  d.lastDecrease = now
  d.plateau = plateauOf(rate, wMax)
  if cut then
    d.tokens = 0
    d.epoch = s.epoch + 1
  end
  d.before = before
  d.tally = { 0, 0, 0, 0 }
  d.low = 0
  return d
end

local function futile(s)
  local n = s.tally[1]
  local k = s.tally[2]
  if not (s.before > 0) or s.before > FUTILE_MAX or n < TALLY_MIN or k < TALLY_REFUSED then
    return false
  end
  local f = k / n
  return f <= FUTILE_MAX and f * FUTILE_BAND >= s.before and f <= s.before * FUTILE_BAND
end

local function join(s, measured, accepted)
  local j
  if now < s.lastDecrease + cfg.holdoffMs then
    j = copy(settle(s))
    j.rate = s.rate + jmax(cfg.minRate, accepted)
    j.wMax = s.wMax + jmax(measured, accepted)
  else
    local rate = meterSettled(s.ok, now) + accepted
    if not (rate > s.rate) then return s end
    j = copy(settle(s))
    j.rate = rate
    j.wMax = jmax(s.wMax, rate)
  end
  j.plateau = plateauOf(j.rate, j.wMax)
  -- A refusal noted before the join was of one process's share: forgotten (rate/ops.ts).
  j.low = 0
  return j
end

local function pause(s, untilAt)
  local p = copy(settle(s))
  local paused = untilAt - jmax(now, s.at)
  p.at = untilAt
  p.tokens = 1
  p.epoch = s.epoch + 1
  p.pausedAt = now
  p.meter = meterShift(s.meter, paused)
  p.ok = meterShift(s.ok, paused)
  return p
end

-- The server's stated rate and its policy's ceiling (each the latest statement, else the one
-- kept) bound the learned rate; the stated rate is floored at minRate, the ceiling is not.
local function capped(s, told, ceil)
  local stated = told
  if stated == nil then stated = s.stated end
  local ceiling = ceil
  if ceiling == nil then ceiling = s.ceiling end
  local cap = INF
  if stated > 0 then cap = jmax(cfg.minRate, stated) end
  if ceiling > 0 then cap = jmin(cap, ceiling) end
  if s.rate <= cap and s.wMax <= cap and s.stated == stated and s.ceiling == ceiling then
    return s
  end
  local c = copy(s)
  c.rate = jmin(s.rate, cap)
  c.wMax = jmin(s.wMax, cap)
  c.stated = stated
  c.ceiling = ceiling
  return c
end

local function feedback()
  local stored = readState(json)
  local s = nil
  if engaged(stored) then s = stored end
  local sentAt = now
  if args.sentAt ~= NULL then sentAt = args.sentAt end
  local told = nil
  if args.stated ~= nil and args.stated ~= NULL then told = args.stated end
  local ceil = nil
  if args.ceiling ~= nil and args.ceiling ~= NULL then ceil = args.ceiling end
  local reset = false
  if RPS == nil then
    if s == nil then
      -- A policy's quota engages at its ceiling; a spent quota with a stated rate, at that rate.
      local given = nil
      if args.signal == 'policy' then
        given = ceil
      elseif args.signal == 'pause' and told ~= nil and told > 0 then
        given = told
      end
      if args.signal ~= 'success' and (args.signal ~= 'policy' or (given ~= nil and given > 0)) then
        local epoch = 0
        if stored ~= nil then epoch = stored.epoch end
        local sent = args.measured
        local took = args.accepted
        local stated = given ~= nil
        if stated then
          sent = given
          took = given
        end
        s = engage(epoch, sent, took, args.fraction)
        -- The curve regains at least the recent rates (not a stated one).
        local peak = args.peak
        if not isnum(peak) then peak = 0 end
        if not stated and peak > s.wMax then
          s.wMax = peak
          s.plateau = plateauOf(s.rate, peak)
        end
        reset = true
      end
    elseif args.signal == 'success' then
      s = increase(tallied(s, sentAt, false))
    elseif args.signal == 'throttle' then
      s = lowered(tallied(s, sentAt, true), sentAt)
      if args.joining == true then
        s = join(s, args.measured, args.accepted)
      elseif sentAt >= s.lastDecrease and now >= s.lastDecrease + cfg.holdoffMs then
        if futile(s) then
          -- hold: keep the rate, judge again on the next hold-off's responses
          local h = copy(s)
          h.wMax = jmax(s.rate, cfg.minRate)
          h.plateau = now
          h.lastDecrease = now
          h.tally = { 0, 0, 0, 0 }
          h.low = 0
          s = h
        else
          local cut = decrease(s, args.measured, args.accepted)
          reset = cut.epoch ~= s.epoch
          s = cut
        end
      end
    end
  end
  if s ~= nil and RPS == nil then s = capped(s, told, ceil) end
  local pauseUntil = args.pauseUntil
  if pauseUntil ~= NULL and pauseUntil > now then
    if s == nil and RPS ~= nil then s = fixedFresh() end
    if s ~= nil and pauseUntil > s.at and sentAt >= s.pausedAt then
      s = pause(s, pauseUntil)
      reset = true
    end
  end
  if s == nil then return nil, 0, obj(RESULT, { engaged = false, reset = false }) end
  return write(s, obj(RESULT, { engaged = true, reset = reset }))
end

return finish(feedback())
`;
