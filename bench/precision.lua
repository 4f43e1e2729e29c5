-- The cost of precision = "lua" (docs/typing.md, "Precision"): float kernels
-- of bench/kernels.lua launched with precision = "double" (the default),
-- "lua" (float reads widened to double, every operation in double, a store
-- rounds: plain LuaJIT's bits) and "single" (the bench's usual), side by
-- side in this process, interleaved sample by sample, medians.
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/precision.lua [backend] [runs]
--
-- backend: cpu (default) or opencl (data in gpu.arrays there).  Prints per
-- kernel the three times and the ratio lua / double.
local ffi = require("ffi")
local gpu = require("gpujit")
local here = (arg and arg[0] or "bench/precision.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")
local T = dofile(here .. "timing.lua")

local BK = arg and arg[1] or "cpu"
local RUNS = tonumber(arg and arg[2]) or 9
gpu.use(BK)
local PRECS = { "double", "lua", "single" }

local function data(n, init)
  local a = ffi.new("float[?]", n)
  if init then for i = 0, n - 1 do a[i] = init(i) end end
  if BK == "cpu" then return a end
  return gpu.to_device(a, "float", BK)
end

-- fs[p](): one launch with precision p, synchronized.  Medians of RUNS
-- samples, the precisions alternating within each round.
local function measure(fs)
  for _, p in ipairs(PRECS) do fs[p]() end   -- compile, first-run costs
  local t = {}
  for _, p in ipairs(PRECS) do t[p] = {} end
  for r = 1, RUNS do
    for _, p in ipairs(PRECS) do
      local t0 = T.now()
      fs[p]()
      t[p][r] = T.now() - t0
    end
  end
  local m = {}
  for _, p in ipairs(PRECS) do m[p] = T.median(t[p]) end
  return m
end

local rows = {}
local function case(name, fn, cfg, make_args)
  local fs = {}
  for _, p in ipairs(PRECS) do
    local k = gpu.kernel(fn, { name = name, precision = p })
    local args = make_args()
    fs[p] = function()
      k:launch(cfg, unpack(args, 1, table.maxn(args)))
      gpu.synchronize()
    end
  end
  local m = measure(fs)
  rows[#rows + 1] = ("| %s | %.2f | %.2f | %.2f | %.2f |"):format(name, m.double * 1e3,
    m.lua * 1e3, m.single * 1e3, m.lua / m.double)
end

do
  local n = 16 * 1024 * 1024
  local x = data(n, function(i) return (i % 1000) * 0.001 - 0.25 end)
  case("saxpy 16M (a = 2.5)", K.saxpy, n, function()
    return { data(n, function(i) return (i % 777) * 0.5 end), x, 2.5, n }
  end)
end

do
  local W, H = 2048, 2048
  local inp = data(W * H, function(i) return (i * 37) % 101 * 0.1 end)
  local w = data(9, function(i) return (i - 4) * 0.13 end)
  case("conv3x3 2048x2048", K.conv3, { global = { W, H } }, function()
    return { data(W * H), inp, w, W, H }
  end)
end

do
  local nb = 4096
  local xs = data(nb, function(i) return math.sin(i) * 10 end)
  local ys = data(nb, function(i) return math.cos(i * 1.3) * 10 end)
  local zs = data(nb, function(i) return math.sin(i * 0.7) * 10 end)
  local ms = data(nb, function(i) return 1 + (i % 7) * 0.25 end)
  case("nbody 4096", K.nbody, nb, function()
    return { data(nb), data(nb), data(nb), xs, ys, zs, ms, nb, 0.01 }
  end)
end

print(("precision: %s backend (GPUJIT_THREADS=%s), medians of %d interleaved samples"):format(BK,
  os.getenv("GPUJIT_THREADS") or "", RUNS))
print("| kernel | double ms | lua ms | single ms | lua / double |")
print("|---|---|---|---|---|")
for _, r in ipairs(rows) do print(r) end
