-- The cpu target's work-item vectorizer (targets/native_vec.c) on against
-- off, and against the C references (bench/ref.c, the better of gcc and
-- clang), interleaved: each round runs every side once, the order rotating
-- from round to round; the figures are medians over the rounds.  Every
-- gpujit result is first compared bit for bit between vectorize on and off
-- (and with the C reference where it computes the same thing).  Sizes are
-- plain Lua numbers.
--
--   make all build/bench/libgjref-gcc.so build/bench/libgjref-clang.so
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/vectorize.lua [rounds]
local ffi = require("ffi")
local gpu = require("gpujit")
local here = (arg and arg[0] or "bench/vectorize.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")
local T = dofile(here .. "timing.lua")
local now, median = T.now, T.median

local ROUNDS = tonumber(arg and arg[1]) or 7
local ONLY = arg and arg[2]    -- a Lua pattern: only the kernels it matches

ffi.cdef [[
void ref_init(int nthreads);
void ref_saxpy(float *y, const float *x, float a, int n);
void ref_mandel(int32_t *out, int W, int H, int maxit);
void ref_conv3(float *out, const float *in, const float *w, int W, int H);
void ref_nbody(float *ax, float *ay, float *az, const float *px, const float *py,
               const float *pz, const float *m, int n, float eps);
void ref_matmul(float *C, const float *A, const float *B, int N);
]]
gpu.use("cpu")
local THREADS
for _, d in ipairs(gpu.devices()) do
  if d.backend == "cpu" then THREADS = d.compute_units end
end
local REFS = {}
for _, name in ipairs({ "gcc", "clang" }) do
  local ok, lib = pcall(ffi.load, "build/bench/libgjref-" .. name .. ".so")
  if ok then
    lib.ref_init(THREADS)
    REFS[#REFS + 1] = { name = name, lib = lib }
  end
end

local function farray(n, init)
  local a = ffi.new("float[?]", n)
  if init then for i = 0, n - 1 do a[i] = init(i) end end
  return a
end

local function same(what, a, b, n)
  for i = 0, n - 1 do
    if a[i] ~= b[i] and not (a[i] ~= a[i] and b[i] ~= b[i]) then
      error(("%s: element %d differs: %s vs %s"):format(what, i, tostring(a[i]), tostring(b[i])), 0)
    end
  end
end

-- Black-Scholes in double (spec/differential_spec.lua's, with erf's
-- approximation inlined); no C reference.
local function erf_approx(x)
  local s = 1
  if x < 0 then s = -1; x = -x end
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
    + 0.254829592) * t * math.exp(-x * x)
  return s * y
end
local function blackscholes(call, put, s, k, t, r, v, n)
  local i = gpu.global_id(0)
  if i < n then
    local sq = v * math.sqrt(t[i])
    local d1 = (math.log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / sq
    local d2 = d1 - sq
    local cnd1 = 0.5 * (1 + erf_approx(d1 / math.sqrt(2)))
    local cnd2 = 0.5 * (1 + erf_approx(d2 / math.sqrt(2)))
    local disc = k[i] * math.exp(-r * t[i])
    call[i] = s[i] * cnd1 - disc * cnd2
    put[i] = disc * (1 - cnd2) - s[i] * (1 - cnd1)
  end
end

local notes = {}
gpu.on_compile(function(e)
  if e.phase == "done" and e.note then notes[e.kernel] = e.note end
end)

-- A case: kernel fn, options, a function making the launch arguments (the
-- output first, fresh for each side), the config, and a C call.
local cases = {}
local function case(name, what, fn, opts, cfg, mkargs, nout, c)
  cases[#cases + 1] = { name = name, what = what, fn = fn, opts = opts, cfg = cfg,
                        mkargs = mkargs, nout = nout, c = c }
end

do
  local n = 2 ^ 24
  local x = farray(n, function(i) return i % 1000 end)
  case("saxpy", "16M floats", K.saxpy, { precision = "single" }, n,
    function() return { farray(n, function(i) return i % 7 end), x, 2.0, n } end, n,
    function(L, a) L.ref_saxpy(a[1], x, 2.0, n) end)
end
do
  local N = 512
  local A = farray(N * N, function(i) return (i % 17) * 0.25 - 2 end)
  local B = farray(N * N, function(i) return (i % 13) * 0.5 - 3 end)
  case("matmul", "512x512 floats", K.matmul, { precision = "single" }, { global = { N, N } },
    function() return { farray(N * N), A, B, N } end, N * N,
    function(L, a) L.ref_matmul(a[1], A, B, N) end)
end
do
  local n, EPS = 4096, 0.01
  local function coord(s) return farray(n, function(i) return ((i * s) % 1009) / 1009 - 0.5 end) end
  local px, py, pz = coord(37), coord(91), coord(53)
  local m = farray(n, function(i) return 1 + i % 3 end)
  case("nbody", "4096 bodies", K.nbody, { precision = "single" }, n,
    function() return { farray(n), farray(n), farray(n), px, py, pz, m, n, EPS } end, n,
    function(L, a) L.ref_nbody(a[1], a[2], a[3], px, py, pz, m, n, EPS) end)
end
do
  local W, H = 2048, 2048
  local inp = farray(W * H, function(i) return (i * 37) % 101 end)
  local w = farray(9, function(i) return (i - 4) * 0.125 end)
  case("conv3x3", "2048x2048 floats", K.conv3, { precision = "single" }, { global = { W, H } },
    function() return { farray(W * H), inp, w, W, H } end, W * H,
    function(L, a) L.ref_conv3(a[1], inp, w, W, H) end)
end
do
  local W, H, MAXIT = 1024, 1024, 256
  case("mandelbrot", "1024x1024, 256 iterations", K.mandel, { precision = "single" },
    { global = { W, H } },
    function() return { ffi.new("int32_t[?]", W * H), W, H, MAXIT } end, W * H,
    function(L, a) L.ref_mandel(a[1], W, H, MAXIT) end)
end
do
  local n = 2 ^ 20
  local function rnd(lo, hi, seed)
    local a = ffi.new("double[?]", n)
    local st = seed
    for i = 0, n - 1 do
      st = (st * 1103515245 + 12345) % 2147483648
      a[i] = lo + (hi - lo) * st / 2147483648
    end
    return a
  end
  local s, k, t = rnd(5, 30, 1), rnd(1, 100, 2), rnd(0.25, 10, 3)
  case("blackscholes", "1M options, double", blackscholes, {}, n,
    function() return { ffi.new("double[?]", n), ffi.new("double[?]", n), s, k, t, 0.02, 0.3, n } end,
    n, nil)
end

-- Kernels with barriers (groups run as lanes between their barriers): the
-- tree reduction of 16M floats, each work item adding up per of them first
-- (64: 1024 groups; 256: 256 groups), against a plain LuaJIT loop.
local RX = farray(2 ^ 24, function(i) return (i * 37) % 1001 * 0.125 end)
for _, per in ipairs({ 64, 256 }) do
  local n, x = 2 ^ 24, RX
  local width = n / per
  local ng = width / K.RGROUP
  local function lua_sum()
    local s = 0
    for i = 0, n - 1 do s = s + x[i] end
    return s
  end
  case("reduce_tree" .. per, "16M floats, " .. per .. " per item", K.reduce_tree,
    { precision = "single" }, { global = width, group = K.RGROUP },
    function() return { farray(ng), x, per } end, ng, nil)
  cases[#cases].lua = lua_sum
  -- the group sums added up on the host, in the timed side
  cases[#cases].post = function(a)
    local s = 0
    for g = 0, ng - 1 do s = s + a[1][g] end
    return s
  end
end
do
  local N = 512
  local A = farray(N * N, function(i) return (i % 17) * 0.25 - 2 end)
  local B = farray(N * N, function(i) return (i % 13) * 0.5 - 3 end)
  case("matmul_tiled", "512x512 floats, 16x16 tiles", K.matmul_tiled, { precision = "single" },
    { global = { N, N }, group = { K.TILE, K.TILE } },
    function() return { farray(N * N), A, B, N, N } end, N * N,
    function(L, a) L.ref_matmul(a[1], A, B, N) end)
end

local function load1()
  local f = io.open("/proc/loadavg")
  local l = f and f:read("*l") or "?"
  if f then f:close() end
  return l:match("^(%S+)")
end

print(("%-13s %-28s %10s %10s %10s %8s %8s  %s"):format("kernel", "size", "vec ms", "scalar ms",
  "C ms", "vec/sc", "C/vec", "load; note"))
for _, cs in ipairs(cases) do
  if ONLY and not cs.name:match(ONLY) then goto continue end
  local function mk(vec)
    local o = { name = cs.name .. (vec and "_vec" or "_scalar"), vectorize = vec }
    for k, v in pairs(cs.opts) do o[k] = v end
    return gpu.kernel(cs.fn, o)
  end
  local kv, ks = mk(true), mk(false)
  local av, as, ac = cs.mkargs(), cs.mkargs(), cs.mkargs()
  local function launch(k, a)
    k:launch(cs.cfg, unpack(a))
    if cs.post then cs.post(a) end
  end
  launch(kv, av)
  launch(ks, as)
  same(cs.name .. " vectorize on vs off", av[1], as[1], cs.nout)
  if cs.name == "blackscholes" then same(cs.name .. " (put)", av[2], as[2], cs.nout) end
  local sides = {
    { "vec", function() launch(kv, av) end },
    { "scalar", function() launch(ks, as) end },
  }
  for _, r in ipairs(REFS) do
    sides[#sides + 1] = { r.name, function() cs.c(r.lib, ac) end }
    if not cs.c then sides[#sides] = nil end
  end
  if cs.lua then sides[#sides + 1] = { "lua", cs.lua } end
  local t = {}
  for _, sd in ipairs(sides) do t[sd[1]] = {} end
  for round = 1, ROUNDS do
    for j = 0, #sides - 1 do
      local sd = sides[(round + j - 1) % #sides + 1]
      local t0 = now()
      sd[2]()
      t[sd[1]][round] = (now() - t0) * 1e3
    end
  end
  local mv, ms = median(t.vec), median(t.scalar)
  local mc
  for _, r in ipairs(REFS) do
    if t[r.name] and (not mc or median(t[r.name]) < mc) then mc = median(t[r.name]) end
  end
  print(("%-13s %-28s %10.2f %10.2f %10s %8.2f %8s  %s; %s"):format(cs.name, cs.what, mv, ms,
    mc and ("%.2f"):format(mc) or "-", ms / mv, mc and ("%.2f"):format(mc / mv) or "-", load1(),
    notes[cs.name .. "_vec"] or "?"))
  if t.lua then
    print(("%-13s %-28s %10s %10s %10.2f %8s %8.2f  (a plain LuaJIT loop; lua/vec)"):format("",
      "", "", "", median(t.lua), "", median(t.lua) / mv))
  end
  ::continue::
end

-- Leave without closing the Lua state (as bench/prims.lua): closing it
-- dlcloses the C references while their OpenMP threads may still run in
-- them (a crash at exit, seen once here with the gcc build).
io.stdout:flush()
os.exit(0)
