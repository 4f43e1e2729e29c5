-- The cost of cutting a large opencl launch into chunks (docs/reliability.md,
-- "Runaway kernels": more than 2^20 work items are enqueued as NDRanges of
-- ~2^20 each, one after the other, checked for a timeout or Ctrl-C between
-- them).  Prints "name ms" lines, the median of 9 launches each, for
-- bench/before_after.sh:  sh bench/before_after.sh <base> bench/opencl_chunks.lua 5
-- one: a 1-item launch (x1000, ms per launch); n20: 2^20 items, one NDRange
-- before and after; n22, n24: 2^22 and 2^24 items, 4 and 16 chunks after;
-- t22: n22 with `timeout` (each chunk's wait polls the event).
local gpu = require("gpujit")
local ffi = require("ffi")

ffi.cdef [[
  struct gj_b_ts { long tv_sec; long tv_nsec; };
  int gj_b_clock_gettime(int, struct gj_b_ts *) asm("clock_gettime");
]]
local ts = ffi.new("struct gj_b_ts")
local function now()
  ffi.C.gj_b_clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function saxpy(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end
local plain = gpu.kernel(saxpy, { backend = "opencl", cache = false })
local timed = gpu.kernel(saxpy, { backend = "opencl", cache = false, timeout = 100 })

local N = 2^24
local x, y = gpu.array("double", N, "opencl"), gpu.array("double", N, "opencl")
local function median(t)
  table.sort(t)
  return t[(#t + 1) / 2]
end

local function time(k, n, reps)
  k:launch(n, y, x, 2, n)
  local t = {}
  for r = 1, 9 do
    local c = now()
    for _ = 1, reps do k:launch(n, y, x, 2, n) end
    t[r] = (now() - c) / reps * 1e3
  end
  return median(t)
end

print(string.format("one %.5f", time(plain, 1, 1000)))
print(string.format("n20 %.4f", time(plain, 2^20, 5)))
print(string.format("n22 %.4f", time(plain, 2^22, 2)))
print(string.format("n24 %.4f", time(plain, 2^24, 1)))
print(string.format("t22 %.4f", time(timed, 2^22, 2)))
