-- gpujit fuzz reproducer (docs/fuzzing.md)
-- seeds 20261201..20261208 (spec/fuzz_spec.lua's set), backend cpu: a compile error
-- 'bit.bnot expects 1 argument, got 2' for bit.bnot(math.modf(x)): a call's last
-- argument passes all its results, and LuaJIT's math and bit functions ignore the
-- extra ones.  Written by hand from the failing kernel.
return {
  precision = "double", N = 2, M = 4,
  data = {
    s = 1.5,
    ri = { 0, 0, 0, 0 },
    rl = { 0, 0, 0, 0 },
    ru = { 0, 0, 0, 0 },
    rf = { 0, 0, 0, 0 },
    rd = { 0, 0, 0, 0 },
    oi = { 0, 0, 0, 0, 0, 0, 0, 0 },
    ol = { 0, 0, 0, 0, 0, 0, 0, 0 },
    ou = { 0, 0, 0, 0, 0, 0, 0, 0 },
    oh = { 0, 0, 0, 0, 0, 0, 0, 0 },
    of = { 0, 0, 0, 0, 0, 0, 0, 0 },
    od = { 0, 0, 0, 0, 0, 0, 0, 0 },
  },
  source = [==[
local gpu = ...
local bit, math = bit, math
local function two(x) return x * 2, 99 end
return function(n, s, ri, rl, ru, rf, rd, oi, ol, ou, oh, of, od)
  local g = gpu.global_id(0)
  if g >= n then return end
  oi[g * 4] = bit.bnot(math.modf(s + g))
  oi[g * 4 + 1] = math.floor(two(g + 0.25))
  od[g * 4] = math.log(two(s), 2)
  od[g * 4 + 1] = math.sqrt(math.modf(s * 10))
  oi[g * 4 + 2] = bit.band(7, two(g + 1))
end
]==],
}
