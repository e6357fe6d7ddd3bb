/**
 * The rate limiter's operations in Lua, line for line the JavaScript of
 * src/policy/rate-ops.ts and src/policy/rate-meter.ts (the reference;
 * docs/policies.md is the spec).
 */

const COMMON = `
local cfg = args.cfg
local RPS = nil
if cfg.rps ~= NULL then RPS = cfg.rps end
local BURST = nil
if cfg.burst ~= NULL then BURST = cfg.burst end
local STATE_KEYS = { 'tokens', 'at', 'epoch', 'rate', 'wMax', 'lastDecrease', 'meter' }
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

local function readState(j)
  if type(j) ~= 'table' or not isnum(j.tokens) or not isnum(j.at) or not isnum(j.epoch)
    or not isnum(j.rate) or not isnum(j.wMax) or not isnum(j.lastDecrease) then
    return nil
  end
  if j.meter ~= NULL and (type(j.meter) ~= 'table' or not isnum(j.meter[1])
    or not isnum(j.meter[2]) or not isnum(j.meter[3])) then
    return nil
  end
  return j
end

local function rateOf(s) return RPS or s.rate end
local function burstOf(s) return BURST or jmax(1, s.rate * cfg.burstSeconds) end

local function fixedFresh()
  return { tokens = BURST or 1, at = now, epoch = 0, rate = 0, wMax = 0, lastDecrease = 0,
    meter = NULL }
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

local function decrease(s, base)
  local d = copy(settle(s))
  d.rate = jmax(cfg.minRate, base * cfg.beta)
  d.wMax = base
  d.lastDecrease = now
  d.tokens = 0
  d.epoch = s.epoch + 1
  return d
end

local function increase(s)
  local settled = settle(s)
  local t = (now - s.lastDecrease) / 1000
  local x = (s.wMax * (1 - cfg.beta)) / cfg.scale
  -- cbrt: x^(1/3) and one Newton step (Lua 5.1 has no cbrt).
  local k = x
  if x > 0 and x < INF then
    k = x ^ (1 / 3)
    k = k - (k * k * k - x) / (3 * k * k)
  end
  local cubic = cfg.scale * (t - k) ^ 3 + s.wMax
  local ceiling = 2 * meterRate(s.meter, now)
  local nxt = copy(settled)
  nxt.rate = jmax(jmax(s.rate, cfg.minRate), jmin(cubic, ceiling))
  nxt.tokens = jmin(nxt.tokens, burstOf(nxt))
  return nxt
end

local function feedback()
  local stored = readState(json)
  local s = nil
  if engaged(stored) then s = stored end
  if args.signal == 'success' then
    if s == nil or RPS ~= nil then
      local result = obj(RESULT, { engaged = s ~= nil, reset = false })
      if s == nil then return nil, 0, result end
      return write(s, result)
    end
    return write(increase(s), obj(RESULT, { engaged = true, reset = false }))
  end
  local reset = false
  if args.signal == 'throttle' and RPS == nil then
    if s == nil then
      local epoch = 0
      if stored ~= nil then epoch = stored.epoch end
      local fresh = { tokens = 0, at = now, epoch = epoch, rate = 0, wMax = 0, lastDecrease = now,
        meter = { bucketOf(now), 0, args.measured } }
      s = decrease(fresh, args.measured)
      reset = true
    else
      local sentAt = now
      if args.sentAt ~= NULL then sentAt = args.sentAt end
      if args.joining == true then
        -- joins the shared rate as it is: neither lowered nor raised
      elseif sentAt >= s.lastDecrease and now >= s.lastDecrease + cfg.holdoffMs then
        local fleet = jmax(meterRate(s.meter, now), args.measured)
        s = decrease(s, jmin(s.rate, fleet))
        reset = true
      end
    end
  end
  local pauseUntil = args.pauseUntil
  if pauseUntil ~= NULL and pauseUntil > now then
    if s == nil and RPS ~= nil then s = fixedFresh() end
    if s ~= nil and pauseUntil > s.at then
      local p = copy(settle(s))
      p.at = pauseUntil
      p.tokens = 1
      p.epoch = s.epoch + 1
      s = p
      reset = true
    end
  end
  if s == nil then return nil, 0, obj(RESULT, { engaged = false, reset = false }) end
  return write(s, obj(RESULT, { engaged = true, reset = reset }))
end

return finish(feedback())
`;
