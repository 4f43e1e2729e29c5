-- saxpy: y = a * x + y over n = 1e6 floats, on the default backend.
--
--   make run        (or: luajit examples/saxpy.lua [n] [launches])
--
-- Prints the backend, checks every element against plain LuaJIT (float
-- rounding), prints the median time per launch, and raises an error (exit
-- status 1) when a result is wrong.

local ffi = require("ffi")
local gpu = require("gpujit")

pcall(ffi.cdef, [[
  struct gj_example_timespec { long tv_sec; long tv_nsec; };
  int clock_gettime(int clk, struct gj_example_timespec *ts);
]])
local ts = ffi.new("struct gj_example_timespec")
local function now()  -- wall-clock seconds (CLOCK_MONOTONIC)
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local N = tonumber(arg and arg[1]) or 1000000
local launches = tonumber(arg and arg[2]) or 11

local saxpy = gpu.kernel(function(a, x, y, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end, { name = "saxpy" })

print("gpujit saxpy: backend " .. gpu.backend() .. ", n = " .. N)

local x = ffi.new("float[?]", N)
local y = ffi.new("float[?]", N)
local y0 = ffi.new("float[?]", N)
for i = 0, N - 1 do
  x[i] = (i % 1000) * 0.001 - 0.25
  y0[i] = (i % 777) * 0.5 - 100
end
local a = 2.5

-- One checked launch.
ffi.copy(y, y0, ffi.sizeof(y))
saxpy:launch(N, a, x, y, N)

-- Every element against plain LuaJIT: the expression in double, rounded to
-- float, within 1 ulp of the kernel's float result (the kernel computes in
-- float).
local fu = ffi.new("union { float f; int32_t i; }")
local function bits(v)
  fu.f = v
  local b = fu.i
  if b < 0 then b = -2147483648 - b end
  return b
end
local want = ffi.new("float[1]")
local bad = 0
for i = 0, N - 1 do
  want[0] = a * x[i] + y0[i]
  local w, g = want[0], y[i]
  if g ~= g or math.abs(bits(g) - bits(w)) > 1 then
    bad = bad + 1
    if bad <= 10 then
      io.stderr:write(string.format("saxpy: y[%d] = %.9g, expected %.9g\n", i, g, w))
    end
  end
end
if bad > 0 then
  error(string.format("saxpy: %d of %d elements wrong", bad, N))
end
print("saxpy: all " .. N .. " elements agree with plain LuaJIT")

-- Timing: the median of several launches (the first one above compiled).
local times = {}
for t = 1, launches do
  local t0 = now()
  saxpy:launch(N, a, x, y, N)
  gpu.synchronize()
  times[t] = now() - t0
end
table.sort(times)
local median = times[math.floor((#times + 1) / 2)]
print(string.format("saxpy: median %.3f ms per launch over %d launches (%.2f GB/s)",
  median * 1e3, launches, 3 * 4 * N / median / 1e9))
