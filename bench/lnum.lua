-- Sizes as plain Lua numbers against sizes as int32_t cdata, on one backend:
-- the 3x3 convolution and the naive matrix multiply of bench/kernels.lua, an
-- RGBA invert and a 5-tap separable blur of a 1920x1080 uint8_t image,
-- launched the two ways side by side in this process, interleaved, medians
-- (docs/typing.md, "Whole numbers": the numbers are typed as integers, so
-- the two launches should run the same code).
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/lnum.lua [backend] [runs] [narrow]
--
-- narrow: 0 or 1 sets every kernel's job.narrow_ints (docs/typing.md,
-- "32-bit integers"); default: the backend's (on for opencl, off for cpu).
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
local NARROW = arg and arg[3]
gpu.use(BK)
do   -- every kernel of this file with the job's narrow_ints as asked
  local kernel = gpu.kernel
  function gpu.kernel(f, o) -- luacheck: ignore 122
    o = o or {}
    if NARROW then o.job = function(j) j.narrow_ints = NARROW == "1" end end
    return kernel(f, o)
  end
end

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

-- A 1920x1080 RGBA image (uint8_t) written the way a new user writes it:
-- the natural guard and index form (issue 34); the guard bounds the ids,
-- so the index math is integer (docs/typing.md, "Guards").
local IW, IH = 1920, 1080

local function rgba_invert(src, dst, w, h)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x < w and y < h then
    for c = 0, 2 do dst[(y * w + x) * 4 + c] = 255 - src[(y * w + x) * 4 + c] end
    dst[(y * w + x) * 4 + 3] = src[(y * w + x) * 4 + 3]
  end
end

-- 5-tap binomial blur (1 4 6 4 1) / 16 of each channel, clamped at the
-- borders: a horizontal and a vertical pass.
local function blur_h(src, dst, w, h)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x < w and y < h then
    local x0, x1 = math.max(x - 2, 0), math.max(x - 1, 0)
    local x3, x4 = math.min(x + 1, w - 1), math.min(x + 2, w - 1)
    for c = 0, 3 do
      local s = src[(y * w + x0) * 4 + c] + 4 * src[(y * w + x1) * 4 + c] + 6 * src[(y * w + x) * 4 + c]
        + 4 * src[(y * w + x3) * 4 + c] + src[(y * w + x4) * 4 + c]
      dst[(y * w + x) * 4 + c] = math.floor(s / 16)
    end
  end
end

local function blur_v(src, dst, w, h)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x < w and y < h then
    local y0, y1 = math.max(y - 2, 0), math.max(y - 1, 0)
    local y3, y4 = math.min(y + 1, h - 1), math.min(y + 2, h - 1)
    for c = 0, 3 do
      local s = src[(y0 * w + x) * 4 + c] + 4 * src[(y1 * w + x) * 4 + c] + 6 * src[(y * w + x) * 4 + c]
        + 4 * src[(y3 * w + x) * 4 + c] + src[(y4 * w + x) * 4 + c]
      dst[(y * w + x) * 4 + c] = math.floor(s / 16)
    end
  end
end

do
  local n = IW * IH * 4
  local src = data("uint8_t", n, function(i) return (i * 37) % 256 end)
  local d1, d2 = data("uint8_t", n), data("uint8_t", n)
  local k = gpu.kernel(rgba_invert, { name = "rgba_invert" })
  local Wi, Hi = ffi.new("int32_t", IW), ffi.new("int32_t", IH)
  local cfg = { global = { IW, IH } }
  case("RGBA invert 1920x1080",
    function() k:launch(cfg, src, d1, IW, IH) end,
    function() k:launch(cfg, src, d2, Wi, Hi) end,
    function() same(d1, d2, n, "rgba_invert") end)
end

do
  local n = IW * IH * 4
  local src = data("uint8_t", n, function(i) return (i * 37) % 256 end)
  local t1, t2, d1, d2 = data("uint8_t", n), data("uint8_t", n), data("uint8_t", n), data("uint8_t", n)
  local kh, kv = gpu.kernel(blur_h, { name = "blur_h" }), gpu.kernel(blur_v, { name = "blur_v" })
  local Wi, Hi = ffi.new("int32_t", IW), ffi.new("int32_t", IH)
  local cfg = { global = { IW, IH } }
  case("5-tap blur 1920x1080",
    function() kh:launch(cfg, src, t1, IW, IH); kv:launch(cfg, t1, d1, IW, IH) end,
    function() kh:launch(cfg, src, t2, Wi, Hi); kv:launch(cfg, t2, d2, Wi, Hi) end,
    function() same(d1, d2, n, "blur") end)
end

print(("backend %s (%s), median of %d interleaved runs"):format(BK, gpu.backend(), RUNS))
print(("%-26s %13s %13s %8s"):format("kernel", "Lua numbers", "int32_t", "ratio"))
for _, r in ipairs(rows) do print(r) end
