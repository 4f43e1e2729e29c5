-- saxpy: y = a * x + y over n = 1e6 floats, on the default backend.
--
--   make run        (or: luajit examples/saxpy.lua [n] [launches])
--
-- Prints the backend, checks every element against plain LuaJIT (float
-- rounding), prints the median time per launch, and raises an error (exit
-- status 1) when a result is wrong.

local ffi = require("ffi")
local gpu = require("gpujit")
local util = require("gpujit.util")   -- clock, median timing, array checks

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
local ok, why = util.compare("float", y, function(i) return a * x[i] + y0[i] end, N,
  { ulps = 1, label = "saxpy: y" })
if not ok then error(why) end
print("saxpy: all " .. N .. " elements agree with plain LuaJIT")

-- Timing: the median of several launches (the first one above compiled).
local median = util.time(function()
  saxpy:launch(N, a, x, y, N)
  gpu.synchronize()
end, launches, 0)
print(string.format("saxpy: median %.3f ms per launch over %d launches (%.2f GB/s)",
  median * 1e3, launches, 3 * 4 * N / median / 1e9))
