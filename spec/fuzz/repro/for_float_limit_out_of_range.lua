-- gpujit fuzz reproducer (docs/fuzzing.md)
-- seed 20261212 (spec/fuzz_spec.lua's set), backend cpu: the kernel never ended.
-- A numeric for with integer start and step and a float limit beyond int64_t
-- (math.exp(256), math.huge) converted the limit to -2^63, so a loop counting down
-- ran ~2^63 times; LuaJIT runs it zero times.  Written by hand from the seed's kernel
-- (the shrinker cannot run a kernel that does not end).
return {
  precision = "double", N = 3, M = 4,
  data = {
    s = 1.5,
    ri = { 0, 0, 0, 0 },
    rl = { 0, 0, 0, 0 },
    ru = { 0, 0, 0, 0 },
    rf = { 0, 0, 0, 0 },
    rd = { 0, 0, 0, 0 },
    oi = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    ol = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    ou = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    oh = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    of = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    od = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
  },
  source = [==[
local gpu = ...
local bit, math = bit, math
return function(n, s, ri, rl, ru, rf, rd, oi, ol, ou, oh, of, od)
  local g = gpu.global_id(0)
  if g >= n then return end
  local c = 0
  for k = -3, math.max(-6.5, math.exp(256 + g)), -1 do c = c + 1 end
  for k = 5, s * 1e300, -2 do c = c + 10 end
  for k = 1, math.huge * s, -1 do c = c + 100 end
  for k = 2, -s * 1e300 do c = c + 1000 end
  for k = 0, 3.5 + g do c = c + 10000 end
  oi[g * 4] = c
end
]==],
}
