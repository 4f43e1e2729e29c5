-- gpujit fuzz reproducer (docs/fuzzing.md)
-- seed 19 (`make fuzz N=100 SEED=1`), backend cpu, precision single
-- `c and u8[i] or -5` joined uint8_t and the literal -5 at the merge as uint8_t, so
-- -5 became 251; the join is now int64_t unless the constant fits the narrow kind.
-- mismatch:od: od[0] (double): expected -5, got 251
return {
  precision = "single", N = 1, M = 34,
  data = {
    s = 47.375,
    ri = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
    },
    rl = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
    },
    ru = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
    },
    rf = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
    },
    rd = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
    },
    oi = { 0, 0, 0, 0 },
    ol = { 0, 0, 0, 0 },
    ou = { 0, 0, 0, 0 },
    oh = { 0, 0, 0, 0 },
    of = { 0, 0, 0, 0 },
    od = { 0, 0, 0, 0 },
  },
  source = [==[
local gpu = ...
local bit, math = bit, math
return function(n, s, ri, rl, ru, rf, rd, oi, ol, ou, oh, of, od)
  local g = gpu.global_id(0)
  if g >= n then return end
  od[0] = (((1 < 0) and ru[0] or (-5)) + 0)
end
]==],
}
