-- Sizes as plain Lua numbers against sizes as int32_t cdata, on one backend:
-- the 3x3 convolution and the naive matrix multiply of bench/kernels.lua,
-- launched the two ways side by side in this process, interleaved, medians
-- (docs/typing.md, "Whole numbers": the numbers are typed as integers, so
-- the two launches should run the same code).
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/lnum.lua [backend] [runs]
--
-- backend: cpu (default) or opencl.  Data lives in host FFI arrays on cpu
-- and in device arrays (gpu.array) on opencl, so that the copies do not
-- hide the kernels.  Prints one line per kernel: ms each way and the ratio
-- Lua numbers / int32 (goal: <= 1.1).
local ffi = require("ffi")
local gpu = require("gpujit")
local here = (arg and arg[0] or "bench/lnum.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")
local T = dofile(here .. "timing.lua")

local BK = arg and arg[1] or "cpu"
local RUNS = tonumber(arg and arg[2]) or 9
gpu.use(BK)

local function data(ct, n, init)
  local a = ffi.new(ct .. "[?]", n)
  if init then for i = 0, n - 1 do a[i] = init(i) end end
  if BK == "cpu" then return a, a end
  return gpu.to_device(a, ct, BK), a
end

local function host(d)
  if BK == "cpu" then return d end
  return d:to_host()
end

local function same(a, b, n, what)
  local ha, hb = host(a), host(b)
  for i = 0, n - 1 do
    if ha[i] ~= hb[i] then error(what .. ": the two launches differ at " .. i, 0) end
  end
end

local rows = {}
local function case(name, f_num, f_i32, check)
  f_num(); f_i32(); check()
  local tn, ti = T.measure(f_num, f_i32, 1, RUNS)
  rows[#rows + 1] = ("%-26s %10.3f ms %10.3f ms %8.3f"):format(name, tn * 1e3, ti * 1e3, tn / ti)
end

do
  local W, H = 2048, 2048
  local inp = data("float", W * H, function(i) return (i * 37) % 101 end)
  local w = data("float", 9, function(i) return (i - 4) * 0.125 end)
  local o1, o2 = data("float", W * H), data("float", W * H)
  local k = gpu.kernel(K.conv3, { name = "conv3x3", precision = "single" })
  local Wi, Hi = ffi.new("int32_t", W), ffi.new("int32_t", H)
  local cfg = { global = { W, H } }
  case("conv3x3 2048x2048",
    function() k:launch(cfg, o1, inp, w, W, H) end,
    function() k:launch(cfg, o2, inp, w, Wi, Hi) end,
    function() same(o1, o2, W * H, "conv3x3") end)
end

do
  local N = 512
  local A = data("float", N * N, function(i) return (i % 17) - 8 end)
  local B = data("float", N * N, function(i) return (i % 13) - 6 end)
  local C1, C2 = data("float", N * N), data("float", N * N)
  local k = gpu.kernel(K.matmul, { name = "matmul", precision = "single" })
  local Ni = ffi.new("int32_t", N)
  local cfg = { global = { N, N } }
  case("naive matmul 512x512",
    function() k:launch(cfg, C1, A, B, N) end,
    function() k:launch(cfg, C2, A, B, Ni) end,
    function() same(C1, C2, N * N, "matmul") end)
end

print(("backend %s (%s), median of %d interleaved runs"):format(BK, gpu.backend(), RUNS))
print(("%-26s %13s %13s %8s"):format("kernel", "Lua numbers", "int32_t", "ratio"))
for _, r in ipairs(rows) do print(r) end
