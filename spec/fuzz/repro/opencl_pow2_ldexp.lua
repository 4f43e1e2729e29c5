-- gpujit fuzz reproducer (docs/fuzzing.md)
-- seed 40267, backend opencl, precision double (cut down by hand)
-- opencl (PoCL, the host-libm SPIR path): LLVM turned math.pow(2, ri[k] / 1), that is
-- pow(2.0, sitofp n), into ldexp(1.0, n), which PoCL's kernel library lacks: clBuildProgram
-- failed ("Cannot find symbol ldexp").  pow now goes through the host libm table
-- (targets/spir.c).
return {
  precision = "double", N = 3, M = 4,
  data = {
    s = 0.5,
    ri = { 3, -2, 10, 1074 },
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
  od[g * 4] = math.pow((2 / 1), (ri[g % 4] / 1))
  od[g * 4 + 1] = 2 ^ ri[(g + 1) % 4]
end
]==],
}
