-- Milliseconds per launch of saxpy on the opencl backend with FFI arrays,
-- Lua tables and gpu.to_device arrays, over sizes from 2^10 to 2^24: what a
-- launch on host arrays costs against one on device arrays (docs/backends.md,
-- opencl, "Host arrays"; results in bench/RESULTS.md).  Prints one
-- "<case> <ms>" line per case (median of `runs` launches after a warm-up),
-- the format bench/before_after.sh reads:
--   sh bench/before_after.sh <base-commit> bench/opencl_hostptr.lua 5
-- Run alone: LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;"
--   luajit bench/opencl_hostptr.lua [runs]
local T = dofile((arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "") .. "timing.lua")
local gpu = require("gpujit")
local ffi = require("ffi")

local runs = tonumber(arg and arg[1]) or 9
gpu.use("opencl")

local saxpy = gpu.kernel(function(y, x, a)
  local i = gpu.global_id(0)
  y[i] = a * x[i] + y[i]
end, { name = "saxpy" })
-- Lua tables index from 1.
local saxpy1 = gpu.kernel(function(y, x, a)
  local i = gpu.global_id(0) + 1
  y[i] = a * x[i] + y[i]
end, { name = "saxpy1" })

local function case(name, n, y, x, k)
  k = k or saxpy
  local s = T.time(function() k:launch(n, y, x, 2) end, runs)
  print(string.format("%s %.3f", name, s * 1e3))
end

for _, lg in ipairs({ 10, 16, 20, 24 }) do
  local n = 2 ^ lg
  local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
  for i = 0, n - 1 do x[i], y[i] = i, 1 end
  case("ffi_2^" .. lg, n, y, x)
  local dx, dy = gpu.to_device(x), gpu.to_device(y)
  case("device_2^" .. lg, n, dy, dx)
  dx:free()
  dy:free()
  if lg <= 20 then   -- a table launch is dominated by the Lua loops that fill it
    local tx, ty = {}, {}
    for i = 1, n do tx[i], ty[i] = i, 1 end
    case("table_2^" .. lg, n, ty, tx, saxpy1)
  end
end
