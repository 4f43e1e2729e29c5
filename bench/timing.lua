-- Timing shared by the benchmarks (bench/README.md):
--   local T = dofile((arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "") .. "timing.lua")
-- loaded beside the script that uses it, so bench/before_after.sh can run a
-- script of the working tree in an older commit's tree.
local ffi = require("ffi")

local T = {}

-- Wall-clock time (CLOCK_MONOTONIC; os.clock() would add up the CPU time
-- of every pool thread) and the median: gpujit.util's (docs/api.md).  An
-- older tree without it (bench/before_after.sh runs this file in one) gets
-- the same two functions here.
local has_util, util = pcall(require, "gpujit.util")
if has_util then
  T.now, T.median = util.now, util.median
else
  pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } gj_bench_ts;"
    .. "int gj_bench_clock_gettime(int clk, gj_bench_ts *ts) asm(\"clock_gettime\");")
  local ts = ffi.new("gj_bench_ts")
  function T.now()
    ffi.C.gj_bench_clock_gettime(1, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
  function T.median(t)
    local c = {}
    for i = 1, #t do c[i] = t[i] end
    table.sort(c)
    return c[math.floor((#c + 1) / 2)]
  end
end
local now = T.now

-- Seconds per call of f: one call to warm up, then the median of `runs`.
function T.time(f, runs)
  f()
  local t = {}
  for r = 1, runs do
    local t0 = now()
    f()
    t[r] = now() - t0
  end
  return T.median(t)
end

-- Seconds per call of fg and of fc, each run `reps` times per sample,
-- samples alternating between the two sides; medians of `runs` samples.
function T.measure(fg, fc, reps, runs)
  fg(); fc()                                  -- compile, first-run costs
  local tg, tc = {}, {}
  for r = 1, runs do
    local t0 = now()
    for _ = 1, reps do fg() end
    tg[r] = (now() - t0) / reps
    t0 = now()
    for _ = 1, reps do fc() end
    tc[r] = (now() - t0) / reps
  end
  return T.median(tg), T.median(tc)
end

-- n pseudo-random int32_t in [-2^30, 2^30) from seed (an LCG, the same on
-- every machine): the keys and values of the primitives' benchmarks.
function T.rand_i32(n, seed)
  local a = require("ffi").new("int32_t[?]", n)
  local s = seed
  for i = 0, n - 1 do
    s = (s * 1103515245 + 12345) % 2147483648
    a[i] = s - 2 ^ 30
  end
  return a
end

return T
