/**
 * The retry budget's operations in Lua, line for line the JavaScript of
 * src/policy/budget/budget.ts (the reference; docs/policies.md is the spec).
 */

const COMMON = `
local STATE_KEYS = { 'floor', 'earned', 'at' }
local mps = args.minPerSecond
local cap = 0
if mps > 0 then cap = jmax(1, mps) end

local function refill()
  if type(json) ~= 'table' or not isnum(json.floor) or not isnum(json.earned)
    or not isnum(json.at) then
    return { floor = cap, earned = 0, at = now }
  end
  local dt = jmax(0, now - json.at)
  return {
    floor = jmin(cap, json.floor + (dt * mps) / 1000),
    earned = json.earned * math.exp(-dt / args.memoryMs),
    at = jmax(now, json.at),
  }
end

-- The credit of n first attempts made args.age ms ago.
local function credit(n)
  if isnum(args.age) and args.age > 0 then
    return args.ratio * n * math.exp(-args.age / args.memoryMs)
  end
  return args.ratio * n
end

local function store(s, result)
  local refillMs = 0
  if mps > 0 then refillMs = ((cap - s.floor) * 1000) / mps end
  return obj(STATE_KEYS, s), jmax(math.ceil(refillMs), 3 * args.memoryMs), result
end
`;

/** `staunch.budget.deposit`. */
export const BUDGET_DEPOSIT: string = `${COMMON}
local s = refill()
if isnum(args.count) then
  s.earned = s.earned + credit(args.count)
else
  s.earned = s.earned + args.ratio
end
return finish(store(s, num(s.floor + s.earned)))
`;

/** `staunch.budget.withdraw`. */
export const BUDGET_WITHDRAW: string = `${COMMON}
local s = refill()
if isnum(args.deposits) then s.earned = s.earned + credit(args.deposits) end
if s.floor + s.earned < 1 then return finish(store(s, 'false')) end
if s.earned >= 1 then
  s.earned = s.earned - 1
else
  s.floor = jmax(0, s.floor - (1 - s.earned))
  s.earned = 0
end
return finish(store(s, 'true'))
`;
