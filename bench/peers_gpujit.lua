-- gpujit's side of `make bench-peers` (bench/peers.py drives it): the kernels
-- of bench/kernels.lua on the cpu backend (precision = "single"), sizes passed
-- as plain Lua numbers, as users write them.
--
--   luajit bench/peers_gpujit.lua serve   -- reads "time KERNEL REPS" lines
--   luajit bench/peers_gpujit.lua first   -- the time to the first kernel
--
-- Speaks the protocol of bench/peers.py: one JSON object per line on stdout.
local T0_CLOCK
do
  local ffi = require("ffi")
  pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } gj_peers_ts;"
    .. "int gj_peers_clock_gettime(int clk, gj_peers_ts *ts) asm(\"clock_gettime\");")
  local ts = ffi.new("gj_peers_ts")
  -- clk 1: CLOCK_MONOTONIC (wall); 2: CLOCK_PROCESS_CPUTIME_ID (every thread)
  T0_CLOCK = function(clk)
    ffi.C.gj_peers_clock_gettime(clk, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
end
local clock = T0_CLOCK
local t_start = clock(1)

local ffi = require("ffi")
local gpu = require("gpujit")
gpu.use("cpu")
local here = (arg and arg[0] or "bench/peers_gpujit.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")
local mode = arg[1] or "serve"
-- "i32": sizes passed as int32_t cdata, as bench/bench.lua does, instead of
-- Lua numbers (which type as float with precision = "single": a size then
-- makes index arithmetic floating point).
local I = arg[2] == "i32" and function(v) return ffi.new("int32_t", v) end or function(v) return v end

local function reply(t)
  local parts = {}
  for k, v in pairs(t) do
    local s = type(v) == "string" and string.format("%q", v) or string.format("%.17g", v)
    parts[#parts + 1] = string.format("%q: %s", k, s)
  end
  io.write("{", table.concat(parts, ", "), "}\n")
  io.flush()
end

local function farray(n, init)
  local a = ffi.new("float[?]", n)
  if init then for i = 0, n - 1 do a[i] = init(i) end end
  return a
end

local function checksum(a, n)
  local s = 0
  for i = 0, n - 1 do s = s + tonumber(a[i]) end
  return s
end

if mode == "first" then
  local t_import = clock(1)
  local k = gpu.kernel(K.saxpy, { name = "saxpy", precision = "single" })
  local n = 1024
  local x, y = farray(n, function(i) return i end), farray(n)
  k:launch(n, y, x, 2.0, n)
  assert(y[10] == 20)
  local t_first = clock(1)
  local s = gpu.cache.stats()
  reply({ import_s = t_import - t_start, first_s = t_first - t_import, hits = s.hits,
          compiles = s.compiles })
  os.exit(0)
end

local function single(fn, name) return gpu.kernel(fn, { name = name, precision = "single" }) end
local cases = {}

do
  local n = 2 ^ 24
  local x, y = farray(n, function(i) return i % 1000 end), farray(n, function(i) return i % 7 end)
  local k = single(K.saxpy, "saxpy")
  local nn = I(n)
  cases.saxpy = { run = function() k:launch(n, y, x, 2.0, nn) end,
                  sum = function() return checksum(y, n) end }
end

do
  local W, H, MAXIT = 1024, 1024, 256
  local out = ffi.new("int32_t[?]", W * H)
  local k = single(K.mandel, "mandelbrot")
  local cfg = { global = { W, H } }
  -- the width and height as Lua numbers: as int32_t cdata, `3.0 * px / Wd` would be
  -- LuaJIT's cdata (integer) division (docs/typing.md, "C integers"), another image
  local Mi = I(MAXIT)
  cases.mandelbrot = { run = function() k:launch(cfg, out, W, H, Mi) end,
                       sum = function() return checksum(out, W * H) end }
end

do
  local W, H = 2048, 2048
  local inp = farray(W * H, function(i) return (i * 37) % 101 end)
  local w = farray(9, function(i) return (i - 4) * 0.125 end)
  local out = farray(W * H)
  local k = single(K.conv3, "conv3x3")
  local cfg = { global = { W, H } }
  local Wi, Hi = I(W), I(H)
  cases.conv3x3 = { run = function() k:launch(cfg, out, inp, w, Wi, Hi) end,
                    sum = function() return checksum(out, W * H) end }
end

do
  local n, EPS = 4096, 0.01
  local function coord(s) return farray(n, function(i) return ((i * s) % 1009) / 1009 - 0.5 end) end
  local px, py, pz = coord(37), coord(91), coord(53)
  local m = farray(n, function(i) return 1 + i % 3 end)
  local ax, ay, az = farray(n), farray(n), farray(n)
  local k = single(K.nbody, "nbody")
  local ni = I(n)
  cases.nbody = { run = function() k:launch(n, ax, ay, az, px, py, pz, m, ni, EPS) end,
                  sum = function() return checksum(ax, n) + checksum(ay, n) + checksum(az, n) end }
end

do
  local N = 512
  local A = farray(N * N, function(i) return (i % 17) - 8 end)
  local B = farray(N * N, function(i) return (i % 13) - 6 end)
  local C = farray(N * N)
  local k = single(K.matmul, "matmul")
  local cfg = { global = { N, N } }
  local Ni = I(N)
  cases.matmul = { run = function() k:launch(cfg, C, A, B, Ni) end,
                   sum = function() return checksum(C, N * N) end }
end

do -- launch overhead: one work item that writes one element
  local y = farray(1)
  local k = single(function(a, n)
    local i = gpu.global_id(0)
    if i < n then a[i] = a[i] + 1 end
  end, "one")
  local one = I(1)
  cases.launch = { run = function() k:launch(1, y, one) end, sum = function() return 0 end }
end

-- Each kernel once (compiles it), the results' checksums, then serve.
local sums = { threads = 0 }
for _, d in ipairs(gpu.devices()) do
  if d.backend == "cpu" then sums.threads = d.compute_units end
end
for name, c in pairs(cases) do
  c.run()
  sums[name] = c.sum()
end
reply(sums)

for line in io.lines() do
  local name, reps = line:match("^time (%S+) (%d+)$")
  if not name then break end
  local c = cases[name]
  reps = tonumber(reps)
  local w0, c0 = clock(1), clock(2)
  for _ = 1, reps do c.run() end
  local w1, c1 = clock(1), clock(2)
  reply({ wall = (w1 - w0) / reps, cpu = (c1 - c0) / reps })
end
