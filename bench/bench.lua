-- `make bench`: gpujit's cpu backend against the same kernels in C with
-- OpenMP (bench/ref.c, built with both gcc and clang: the faster of the two
-- is the anchor) and as plain LuaJIT loops, measured side by side in this
-- one process, plus the launch overhead of an empty kernel against a bare
-- FFI call.  Mandelbrot, matmul and n-body also run hand-vectorized
-- (bench/ref_simd.c: AVX2 and AVX-512 intrinsics, gcc and clang, the
-- faster the anchor), checked bit for bit against the scalar C.  gpujit
-- is timed called the way Lua code calls it, sizes as plain Lua numbers,
-- and beside it with the sizes as int32_t cdata.  Prints the table, writes
-- it into bench/RESULTS.md (between the "make bench" markers) and the data
-- for bench/plot.gp.
--
--   make bench                      (builds everything, then runs this)
--   luajit bench/bench.lua [runs]   (GJ_BENCH_REF_GCC, GJ_BENCH_REF_CLANG:
--                                    the C references' .so, one per compiler;
--                                    GJ_BENCH_SIMD_GCC, GJ_BENCH_SIMD_CLANG:
--                                    the hand-vectorized ones)
--   BENCH_KERNELS=mandelbrot,nbody  only these kernels' rows: the table is
--                                    printed, RESULTS.md is left alone
--   BENCH_SIMD=avx2                 the SIMD C with this set only (default:
--                                    per kernel, the faster the CPU has)
--
-- Method.  Every kernel is first run once by each side on the same inputs
-- and the results are compared (a wrong kernel is not timed).  Then `runs`
-- rounds: in each round each side runs once (the order rotates from round
-- to round, so that a burst of load on the shared machine does not always
-- hit the same side), timed with the monotonic wall clock.  The figures are
-- medians over the rounds; the ratios are ratios of medians, given as
-- speed-ups of gpujit (> 1: gpujit is faster).  The load average (1 min)
-- when a row finished is printed next to it: figures taken under load from
-- other processes are noisy, and the lead re-runs this on a quiet machine.
local ffi = require("ffi")
local gpu = require("gpujit")
local here = (arg and arg[0] or "bench/bench.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")

local RUNS = tonumber(arg and arg[1]) or tonumber(os.getenv("BENCH_RUNS")) or 7
local REFS = {
  { name = "gcc", path = os.getenv("GJ_BENCH_REF_GCC") or "build/bench/libgjref-gcc.so" },
  { name = "clang", path = os.getenv("GJ_BENCH_REF_CLANG") or "build/bench/libgjref-clang.so" },
}
local RESULTS = os.getenv("GJ_BENCH_RESULTS") or "bench/RESULTS.md"
local DAT = os.getenv("GJ_BENCH_DAT") or "build/bench/results.dat"
local CFLAGS = os.getenv("GJ_BENCH_CFLAGS") or "(see the Makefile's BENCH_CFLAGS)"
local SIMD_REFS = {
  { name = "gcc", path = os.getenv("GJ_BENCH_SIMD_GCC") or "build/bench/libgjsimd-gcc.so" },
  { name = "clang", path = os.getenv("GJ_BENCH_SIMD_CLANG") or "build/bench/libgjsimd-clang.so" },
}
-- BENCH_KERNELS: a comma-separated list of the kernels to run (nil: all).
local ONLY = os.getenv("BENCH_KERNELS")
local PARTIAL = ONLY ~= nil and ONLY ~= ""
local function selected(name)
  return not PARTIAL or ("," .. ONLY .. ","):find("," .. name .. ",", 1, true) ~= nil
end

ffi.cdef [[
void ref_init(int nthreads);
int ref_threads(void);
void ref_empty(void);
void ref_saxpy(float *y, const float *x, float a, int n);
void ref_mandel(int32_t *out, int W, int H, int maxit);
void ref_conv3(float *out, const float *in, const float *w, int W, int H);
void ref_nbody(float *ax, float *ay, float *az, const float *px, const float *py,
               const float *pz, const float *m, int n, float eps);
void ref_matmul(float *C, const float *A, const float *B, int N);
void ref_simd_init(int nthreads);
int ref_simd_select(const char *name);
const char *ref_simd_isa(void);
void ref_simd_supported(char *buf, size_t n);
void ref_simd_mandel(int32_t *out, int W, int H, int maxit);
void ref_simd_matmul(float *C, const float *A, const float *B, int N);
void ref_simd_nbody(float *ax, float *ay, float *az, const float *px, const float *py,
                    const float *pz, const float *m, int n, float eps);
int memcmp(const void *a, const void *b, size_t n);
]]
-- Three thread pools share this process's two cores: gpujit's, libgomp's
-- (gcc's C) and libomp's (clang's C).  After a parallel region an OpenMP
-- runtime's workers spin before they sleep: libgomp about 300,000 polls,
-- libomp 200 ms (KMP_BLOCKTIME), where gpujit's pool spins 4,096 polls
-- (about 50 us).  A side timed right after another then shares the cores
-- with its spinning threads (conv3x3 took 1.85-2.06 ms after gcc's loop and
-- 1.1-1.2 ms in a process of its own).  So the OpenMP runtimes are passive
-- (their workers sleep at once), set here before the libraries load unless
-- the caller set OMP_WAIT_POLICY: ref_init's setenv came after libgomp's
-- constructor had read the environment, so gcc's side kept spinning (libomp
-- reads it at its first call and was passive).  And each sample starts after SETTLE_US
-- without work, more than gpujit's spin: every side starts with its threads
-- asleep and the cores free.
ffi.cdef [[
int setenv(const char *name, const char *value, int overwrite);
int usleep(unsigned int us);
]]
ffi.C.setenv("OMP_WAIT_POLICY", "passive", 0)
local SETTLE_US = tonumber(os.getenv("GJ_BENCH_SETTLE_US")) or 2000
for _, ref in ipairs(REFS) do
  local ok, lib = pcall(ffi.load, ref.path)
  if not ok then
    error("cannot load the C references " .. ref.path .. " (run `make bench`, which builds them): "
      .. lib, 0)
  end
  ref.lib = lib
end
local R = REFS[1].lib    -- ref_init and the empty function: either will do
for _, ref in ipairs(SIMD_REFS) do
  local ok, lib = pcall(ffi.load, ref.path)
  if not ok then
    error("cannot load the SIMD C references " .. ref.path .. " (run `make bench`, which builds"
      .. " them): " .. lib, 0)
  end
  ref.lib = lib
end

gpu.use("cpu")
local THREADS
for _, d in ipairs(gpu.devices()) do
  if d.backend == "cpu" then THREADS = d.compute_units end
end
for _, ref in ipairs(REFS) do
  ref.lib.ref_init(THREADS)
  assert(ref.lib.ref_threads() == THREADS, "OpenMP does not run the requested number of threads ("
    .. ref.name .. ")")
end
-- The instruction sets of the SIMD C that this CPU has (widest first), or
-- BENCH_SIMD's; none: the SIMD column says so.
local SIMD_ISAS = {}
do
  local buf = ffi.new("char[64]")
  for _, ref in ipairs(SIMD_REFS) do ref.lib.ref_simd_init(THREADS) end
  SIMD_REFS[1].lib.ref_simd_supported(buf, 64)
  for isa in ffi.string(buf):gmatch("%S+") do SIMD_ISAS[#SIMD_ISAS + 1] = isa end
  local force = os.getenv("BENCH_SIMD")
  if force and force ~= "" then
    if not ffi.string(buf):find("%f[%w]" .. force .. "%f[%W]") then
      error("BENCH_SIMD=" .. force .. ": this CPU's sets are: " .. ffi.string(buf), 0)
    end
    SIMD_ISAS = { force }
  end
end
local SIMD_NOTE = #SIMD_ISAS == 0 and "no AVX2 on this CPU" or nil

local T = dofile(here .. "timing.lua")
local now, median = T.now, T.median

local function loadavg()
  local f = io.open("/proc/loadavg")
  if not f then return "?" end
  local l = f:read("*l")
  f:close()
  return l:match("^(%S+)")
end

local LOAD0 = loadavg()


-- Results --------------------------------------------------------------------

local function farray(n, init)
  local a = ffi.new("float[?]", n)
  if init then for i = 0, n - 1 do a[i] = init(i) end end
  return a
end

-- Is `got` close to `want` (n elements)?  tol = 0: bit for bit; else the
-- largest difference relative to the largest |want|; maxbad: how many
-- elements may differ at all (mandelbrot in double vs float).
local function compare(what, got, want, n, tol, maxbad)
  local worst, scale, bad = 0, 0, 0
  for i = 0, n - 1 do
    local g, w = tonumber(got[i]), tonumber(want[i])
    if g ~= w then bad = bad + 1 end
    local d = math.abs(g - w)
    if d > worst then worst = d end
    if math.abs(w) > scale then scale = math.abs(w) end
  end
  if maxbad then
    if bad > maxbad then
      error(what .. ": " .. bad .. " of " .. n .. " elements differ (at most " .. maxbad .. " may)", 0)
    end
  elseif worst > tol * scale then
    error(what .. ": results differ by up to " .. worst .. " (scale " .. scale .. ")", 0)
  end
end

-- The hand-vectorized C must give the scalar C's bytes exactly.
local function same_bits(what, got, want_, n)
  local es = ffi.sizeof(got) / n
  assert(ffi.sizeof(want_) == n * es, what)
  if ffi.C.memcmp(got, want_, n * es) == 0 then return end
  for i = 0, n - 1 do
    if ffi.C.memcmp(got + i, want_ + i, es) ~= 0 then
      error(("%s: not bit for bit: element %d is %.9g, the scalar C's %.9g"):format(what, i,
        tonumber(got[i]), tonumber(want_[i])), 0)
    end
  end
end

-- The cases --------------------------------------------------------------------
-- Each: name, what (the size), bound ("memory" or "compute": the goal against
-- LuaJIT is 2x or 4x), gj, c, lua (one run of each side), check (compares the
-- outputs after one run of each side on the same inputs), reps (runs per
-- timed sample, for short kernels); simd, check_simd (where there is a
-- hand-vectorized C: one run of it, and its outputs against the C's, given
-- the name of the pair).

local i32 = function(v) return ffi.new("int32_t", v) end
local cases = {}

if selected("saxpy") then -- saxpy: y = a x + y
  local n = 2 ^ 24
  local x = farray(n, function(i) return i % 1000 end)
  local function fresh() return farray(n, function(i) return i % 7 end) end
  local yg, yc, yl = fresh(), fresh(), fresh()
  local k = gpu.kernel(K.saxpy, { name = "saxpy", precision = "single" })
  local nn = i32(n)
  cases[#cases + 1] = {
    name = "saxpy", what = "16M floats", bound = "memory", reps = 1,
    gj = function() k:launch(n, yg, x, 2.0, n) end,
    gji = function() k:launch(n, yg, x, 2.0, nn) end,
    c = function(L) L.ref_saxpy(yc, x, 2.0, n) end,
    lua = function()
      for i = 0, n - 1 do yl[i] = 2.0 * x[i] + yl[i] end
    end,
    check = function()
      compare("saxpy gpujit vs C", yg, yc, n, 0)
      compare("saxpy LuaJIT vs C", yl, yc, n, 1e-6)
    end,
  }
end

if selected("mandelbrot") then -- mandelbrot: iterations until escape
  local W, Hh, MAXIT = 1024, 1024, 256
  local og, oc, ol = ffi.new("int32_t[?]", W * Hh), ffi.new("int32_t[?]", W * Hh),
    ffi.new("int32_t[?]", W * Hh)
  local ov = ffi.new("int32_t[?]", W * Hh)
  local k = gpu.kernel(K.mandel, { name = "mandelbrot", precision = "single" })
  local Mi = i32(MAXIT)
  local cfg = { global = { W, Hh } }
  cases[#cases + 1] = {
    name = "mandelbrot", what = "1024x1024, 256 iterations", bound = "compute", reps = 1,
    gj = function() k:launch(cfg, og, W, Hh, MAXIT) end,
    -- maxit as int32_t, the width and height as Lua numbers: as int32_t cdata
    -- `3.0 * px / Wd` would be LuaJIT's cdata (integer) division (docs/typing.md,
    -- "C integers"), another image
    gji = function() k:launch(cfg, og, W, Hh, Mi) end,
    c = function(L) L.ref_mandel(oc, W, Hh, MAXIT) end,
    simd = function(L) L.ref_simd_mandel(ov, W, Hh, MAXIT) end,
    check_simd = function(what) same_bits("mandelbrot " .. what, ov, oc, W * Hh) end,
    lua = function()
      for py = 0, Hh - 1 do
        for px = 0, W - 1 do
          local cr, ci = -2.0 + 3.0 * px / W, -1.5 + 3.0 * py / Hh
          local zr, zi, it = 0.0, 0.0, 0
          while it < MAXIT and zr * zr + zi * zi <= 4.0 do
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            it = it + 1
          end
          ol[py * W + px] = it
        end
      end
    end,
    check = function()
      compare("mandelbrot gpujit vs C", og, oc, W * Hh, 0)
      -- LuaJIT computes in double: a few pixels on the set's edge escape later.
      compare("mandelbrot LuaJIT vs C", ol, oc, W * Hh, nil, W * Hh / 100)
    end,
  }
end

if selected("conv3x3") then -- 3x3 convolution (exact: weights are multiples of 1/8, inputs integers)
  local W, Hh = 2048, 2048
  local inp = farray(W * Hh, function(i) return (i * 37) % 101 end)
  local w = farray(9, function(i) return (i - 4) * 0.125 end)
  local og, oc, ol = farray(W * Hh), farray(W * Hh), farray(W * Hh)
  local k = gpu.kernel(K.conv3, { name = "conv3x3", precision = "single" })
  local Wi, Hi = i32(W), i32(Hh)
  local cfg = { global = { W, Hh } }
  cases[#cases + 1] = {
    name = "conv3x3", what = "2048x2048 floats", bound = "memory", reps = 2,
    gj = function() k:launch(cfg, og, inp, w, W, Hh) end,
    gji = function() k:launch(cfg, og, inp, w, Wi, Hi) end,
    c = function(L) L.ref_conv3(oc, inp, w, W, Hh) end,
    lua = function()
      -- The 9 taps spelled out, in the kernel's order: with the kernel's two
      -- 3-step loops LuaJIT's trace formation is random (aborted traces get
      -- random penalties) and this loop took 17 ms or 240 ms from run to run.
      local w0, w1, w2, w3, w4, w5, w6, w7, w8 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
      for y = 1, Hh - 2 do
        local r0, r1, r2 = (y - 1) * W, y * W, (y + 1) * W
        for x = 1, W - 2 do
          local s = 0.0
          s = s + w0 * inp[r0 + x - 1]; s = s + w1 * inp[r0 + x]; s = s + w2 * inp[r0 + x + 1]
          s = s + w3 * inp[r1 + x - 1]; s = s + w4 * inp[r1 + x]; s = s + w5 * inp[r1 + x + 1]
          s = s + w6 * inp[r2 + x - 1]; s = s + w7 * inp[r2 + x]; s = s + w8 * inp[r2 + x + 1]
          ol[r1 + x] = s
        end
      end
    end,
    check = function()
      compare("conv3x3 gpujit vs C", og, oc, W * Hh, 0)
      compare("conv3x3 LuaJIT vs C", ol, oc, W * Hh, 0)
    end,
  }
end

if selected("nbody") then -- n-body: accelerations, all pairs
  local n, EPS = 4096, 0.01
  local function coord(s) return farray(n, function(i) return ((i * s) % 1009) / 1009 - 0.5 end) end
  local px, py, pz = coord(37), coord(91), coord(53)
  local m = farray(n, function(i) return 1 + i % 3 end)
  local function out3() return farray(n), farray(n), farray(n) end
  local gx, gy, gz = out3()
  local cx, cy, cz = out3()
  local lx, ly, lz = out3()
  local vx, vy, vz = out3()
  local k = gpu.kernel(K.nbody, { name = "nbody", precision = "single" })
  local ni = i32(n)
  local sqrt = math.sqrt
  cases[#cases + 1] = {
    name = "nbody", what = "4096 bodies", bound = "compute", reps = 1,
    gj = function() k:launch(n, gx, gy, gz, px, py, pz, m, n, EPS) end,
    gji = function() k:launch(n, gx, gy, gz, px, py, pz, m, ni, EPS) end,
    c = function(L) L.ref_nbody(cx, cy, cz, px, py, pz, m, n, EPS) end,
    simd = function(L) L.ref_simd_nbody(vx, vy, vz, px, py, pz, m, n, EPS) end,
    check_simd = function(what)
      same_bits("nbody " .. what .. " (x)", vx, cx, n)
      same_bits("nbody " .. what .. " (y)", vy, cy, n)
      same_bits("nbody " .. what .. " (z)", vz, cz, n)
    end,
    lua = function()
      for i = 0, n - 1 do
        local xi, yi, zi = px[i], py[i], pz[i]
        local sx, sy, sz = 0.0, 0.0, 0.0
        for j = 0, n - 1 do
          local dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
          local d2 = dx * dx + dy * dy + dz * dz + EPS
          local f = m[j] / (d2 * sqrt(d2))
          sx, sy, sz = sx + f * dx, sy + f * dy, sz + f * dz
        end
        lx[i], ly[i], lz[i] = sx, sy, sz
      end
    end,
    check = function()
      for _, t in ipairs({ { gx, cx, "x" }, { gy, cy, "y" }, { gz, cz, "z" } }) do
        compare("nbody gpujit vs C (" .. t[3] .. ")", t[1], t[2], n, 1e-6)
      end
      for _, t in ipairs({ { lx, cx, "x" }, { ly, cy, "y" }, { lz, cz, "z" } }) do
        compare("nbody LuaJIT vs C (" .. t[3] .. ")", t[1], t[2], n, 1e-4)
      end
    end,
  }
end

if selected("matmul") then -- matrix multiply, the plain triple loop (exact: small integers)
  local N = 512
  local A = farray(N * N, function(i) return (i % 17) - 8 end)
  local B = farray(N * N, function(i) return (i % 13) - 6 end)
  local Cg, Cc, Cl, Cv = farray(N * N), farray(N * N), farray(N * N), farray(N * N)
  local k = gpu.kernel(K.matmul, { name = "matmul", precision = "single" })
  local Ni = i32(N)
  local cfg = { global = { N, N } }
  cases[#cases + 1] = {
    name = "matmul", what = "512x512 floats", bound = "compute", reps = 1,
    gj = function() k:launch(cfg, Cg, A, B, N) end,
    gji = function() k:launch(cfg, Cg, A, B, Ni) end,
    c = function(L) L.ref_matmul(Cc, A, B, N) end,
    simd = function(L) L.ref_simd_matmul(Cv, A, B, N) end,
    check_simd = function(what) same_bits("matmul " .. what, Cv, Cc, N * N) end,
    lua = function()
      for row = 0, N - 1 do
        for col = 0, N - 1 do
          local acc = 0.0
          for kk = 0, N - 1 do acc = acc + A[row * N + kk] * B[kk * N + col] end
          Cl[row * N + col] = acc
        end
      end
    end,
    check = function()
      compare("matmul gpujit vs C", Cg, Cc, N * N, 0)
      compare("matmul LuaJIT vs C", Cl, Cc, N * N, 0)
    end,
  }
end

-- Measurement -----------------------------------------------------------------

-- gj: sizes as Lua numbers; gji: as int32_t cdata; gcc, clang: the C
-- reference built by each compiler; lua: the plain LuaJIT loop; sgcc,
-- sclang (the kernels with a hand-vectorized C, where the CPU has AVX2):
-- the SIMD C built by each compiler.
local SIDES = { "gj", "gji", "gcc", "clang", "lua" }
-- BENCH_LINES=1: time gpujit only (both calls; the C references still check
-- its results) and print one "name value" line per figure, then stop: for
-- comparing two builds, `BENCH_LINES=1 sh bench/before_after.sh <commit>
-- bench/bench.lua 5` (with GJ_BENCH_REF_GCC/CLANG as absolute paths).
local LINES = os.getenv("BENCH_LINES") == "1"
if LINES then SIDES = { "gj", "gji" } end

-- The spread of the per-round ratios a[r] / b[r] (the sides of a round ran
-- back to back): "min-max", a hint of how noisy the median ratio is.
local function range(a, b)
  local lo, hi = math.huge, 0
  for r = 1, #a do
    local q = a[r] / b[r]
    if q < lo then lo = q end
    if q > hi then hi = q end
  end
  return ("%.2f-%.2f"):format(lo, hi)
end

local function sample(f, reps)
  ffi.C.usleep(SETTLE_US)
  local t0 = now()
  for _ = 1, reps do f() end
  return (now() - t0) / reps
end

-- The SIMD C of case cs: every build with every set checked bit for bit
-- against each compiler's scalar C (an error stops the bench); then, per
-- build, the set that ran fastest in 3 samples.  Returns the sides' run
-- functions and the sets chosen (by side).
local function simd_sides(cs)
  for _, ref in ipairs(REFS) do
    cs.c(ref.lib)
    for _, sref in ipairs(SIMD_REFS) do
      for _, isa in ipairs(SIMD_ISAS) do
        assert(sref.lib.ref_simd_select(isa) == 1, isa)
        cs.simd(sref.lib)
        cs.check_simd(("SIMD C (%s, %s) vs C (%s)"):format(sref.name, isa, ref.name))
      end
    end
  end
  local run, isas = {}, {}
  for _, sref in ipairs(SIMD_REFS) do
    local best, bt = nil, math.huge
    for _, isa in ipairs(SIMD_ISAS) do
      local f = function() sref.lib.ref_simd_select(isa); cs.simd(sref.lib) end
      for _ = 1, 3 do
        local dt = sample(f, cs.reps)
        if dt < bt then best, bt = isa, dt end
      end
    end
    run["s" .. sref.name] = function() sref.lib.ref_simd_select(best); cs.simd(sref.lib) end
    isas["s" .. sref.name] = best
  end
  return run, isas
end

local rows = {}
for _, cs in ipairs(cases) do
  io.stderr:write("bench: ", cs.name, " ...\n")
  local run = {
    gj = cs.gj, gji = cs.gji, lua = cs.lua,
    gcc = function() cs.c(REFS[1].lib) end, clang = function() cs.c(REFS[2].lib) end,
  }
  -- compile, warm up, and one run each to compare, twice: int32 sizes and gcc's
  -- C, then Lua-number sizes and clang's (each side runs as often: saxpy
  -- updates its arrays in place)
  run.gji(); run.gcc(); run.lua(); cs.check()
  run.gj(); run.clang(); run.lua(); cs.check()
  local sides, isas = SIDES, {}
  if cs.simd and not SIMD_NOTE then
    local srun
    srun, isas = simd_sides(cs)
    run.sgcc, run.sclang = srun.sgcc, srun.sclang
    if not LINES then sides = { "gj", "gji", "gcc", "clang", "lua", "sgcc", "sclang" } end
  end
  local t = {}
  for _, side in ipairs(sides) do t[side] = {} end
  for r = 1, RUNS do
    for s = 0, #sides - 1 do
      local side = sides[(r + s - 1) % #sides + 1]
      t[side][r] = sample(run[side], cs.reps)
    end
  end
  local m = {}
  for _, side in ipairs(sides) do m[side] = median(t[side]) end
  if LINES then
    rows[#rows + 1] = { name = cs.name, gj = m.gj, gji = m.gji }
    goto next_case
  end
  local best = m.gcc <= m.clang and "gcc" or "clang"
  rows[#rows + 1] = {
    name = cs.name, what = cs.what, bound = cs.bound, gj = m.gj, gji = m.gji, gcc = m.gcc,
    clang = m.clang, c = m[best], best = best, lua = m.lua,
    vs_c = m[best] / m.gj, vs_i32 = m.gji / m.gj, vs_lua = m.lua / m.gj,
    goal_lua = cs.bound == "memory" and 2 or 4,
    range_c = range(t[best], t.gj), range_i32 = range(t.gji, t.gj), range_lua = range(t.lua, t.gj),
    load = loadavg(),
  }
  if m.sgcc then
    -- the SIMD C: the faster build is the anchor; gpujit's time over its time
    local sbest = m.sgcc <= m.sclang and "sgcc" or "sclang"
    local r = rows[#rows]
    r.simd, r.simd_by = m[sbest], sbest:sub(2) .. ", " .. isas[sbest]
    r.simd_gcc, r.simd_clang = m.sgcc, m.sclang
    r.vs_simd, r.range_simd = m.gj / m[sbest], range(t.gj, t[sbest])
  end
  ::next_case::
end

-- Report ----------------------------------------------------------------------

local function sh(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return "" end
  local s = p:read("*a") or ""
  p:close()
  return (s:gsub("%s+$", ""))
end

local function cpuinfo()
  local model, n = "?", 0
  for l in io.lines("/proc/cpuinfo") do
    local m = l:match("^model name%s*:%s*(.-)%s*$")
    if m then model = m; n = n + 1 end
  end
  local flags = sh("grep -m1 '^flags' /proc/cpuinfo")
  local vec = flags:find(" avx512f") and "AVX-512" or flags:find(" avx2") and "AVX2" or "no AVX2"
  return ("%s, %d logical CPUs, %s"):format(model, n, vec)
end

local commit = sh("git rev-parse --short HEAD")
local dirty = sh("git status --porcelain --untracked-files=no -- . "
  .. "':!bench/RESULTS.md' ':!bench/results.png'")
if dirty ~= "" then commit = commit .. " + uncommitted changes" end

local md = {}
local function p(s, ...) md[#md + 1] = s:format(...) end
p("Date: %s. Machine: %s; gpujit's pool and OpenMP: %d threads. Commit: %s.",
  os.date("!%Y-%m-%d %H:%M UTC"), cpuinfo(), THREADS, commit)
p("Command: `make bench` (BENCH_RUNS=%d: medians of %d rounds, sides interleaved); C: `%s`,"
  .. " built with gcc and with clang-15; the faster of the two is the anchor.", RUNS, RUNS, CFLAGS)
p("gpujit is called as Lua code calls it, sizes as Lua numbers; the int32 column passes them as"
  .. " `ffi.new(\"int32_t\", n)`.")
p("OMP_WAIT_POLICY=%s; each sample starts after %d us without work (no side's idle threads spin"
  .. " into another's time: bench/bench.lua).", os.getenv("OMP_WAIT_POLICY") or "?", SETTLE_US)
p("SIMD C: bench/ref_simd.c (intrinsics; sets this CPU has: %s), built like the C; per kernel"
  .. " and compiler the set that ran fastest in 3 samples; checked bit for bit against the C.",
  #SIMD_ISAS > 0 and table.concat(SIMD_ISAS, ", ") or "none")
p("Load average (1 min) at start %s; per row below, when the row finished.", LOAD0)
p("")
p("| kernel | size | gpujit cpu ms | gpujit, int32 sizes ms | C gcc ms | C clang ms "
  .. "| LuaJIT loop ms | gpujit vs best C (goal >= 0.9) | Lua numbers vs int32 | gpujit vs LuaJIT (goal) "
  .. "| per-round ratios vs C; vs int32; vs LuaJIT | SIMD C gcc ms; clang ms (anchor: compiler, set) "
  .. "| gpujit time / SIMD C time (goal <= 1.1); per-round | load |")
p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for _, r in ipairs(rows) do
  local simd, vs_simd = "-", "-"
  if r.simd then
    simd = ("%.2f; %.2f (%s)"):format(r.simd_gcc * 1e3, r.simd_clang * 1e3, r.simd_by)
    vs_simd = ("%.3f %s; %s"):format(r.vs_simd, r.vs_simd <= 1.1 and "ok" or "**miss**",
      r.range_simd)
  elseif SIMD_NOTE and (r.name == "mandelbrot" or r.name == "matmul" or r.name == "nbody") then
    simd = SIMD_NOTE
  end
  p("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.3fx (%s) %s | %.3fx | %.2fx (>= %dx, %s bound) %s "
    .. "| %s; %s; %s | %s | %s | %s |", r.name, r.what, r.gj * 1e3, r.gji * 1e3, r.gcc * 1e3,
    r.clang * 1e3, r.lua * 1e3, r.vs_c, r.best, r.vs_c >= 0.9 and "ok" or "**miss**", r.vs_i32,
    r.vs_lua, r.goal_lua, r.bound, r.vs_lua >= r.goal_lua and "ok" or "**miss**", r.range_c,
    r.range_i32, r.range_lua, simd, vs_simd, r.load)
end

-- BENCH_KERNELS: only these kernels' table, printed; RESULTS.md keeps the
-- last full run's.
if PARTIAL then
  print(table.concat(md, "\n"))
  io.stdout:flush()
  os.exit(0)
end

-- Launch overhead: an empty kernel over one work item, k:launch from a Lua
-- loop, against a bare FFI call of an empty C function; and a kernel with
-- two arguments that writes one element.
io.stderr:write("bench: launch overhead ...\n")
local empty = gpu.kernel(function() end, { name = "empty" })
local one = gpu.kernel(function(o, n)
  local i = gpu.global_id(0)
  if i < n then o[i] = i end
end, { name = "one" })
local o1 = ffi.new("double[1]")
local LAUNCHES = 200000
local launch = {
  { "empty kernel, k:launch(1)", function()
    for _ = 1, LAUNCHES do empty:launch(1) end
  end },
  { "2-argument kernel, k:launch(1, o, 1)", function()
    for _ = 1, LAUNCHES do one:launch(1, o1, 1) end
  end },
  { "FFI call of an empty C function", function()
    local f = R.ref_empty
    for _ = 1, LAUNCHES do f() end
  end },
}
local lt = {}
for i, l in ipairs(launch) do l[2](); lt[i] = {} end
for r = 1, RUNS * 3 do
  for i, l in ipairs(launch) do lt[i][r] = sample(l[2], 1) / LAUNCHES end
end
local lrows = {}
for i, l in ipairs(launch) do lrows[i] = { name = l[1], ns = median(lt[i]) * 1e9, load = loadavg() } end

if LINES then
  for _, r in ipairs(rows) do
    io.write(("%s_ms %.4f\n%s_i32_ms %.4f\n"):format(r.name, r.gj * 1e3, r.name, r.gji * 1e3))
  end
  io.write(("launch_empty_ns %.2f\nlaunch_2arg_ns %.2f\n"):format(lrows[1].ns, lrows[2].ns))
  io.stdout:flush()
  os.exit(0)
end

-- Compile time (issue 23, items 9 and 10): time to first kernel, cold and
-- from the disk cache (bench/cache.lua), and the cold compile of long
-- kernels (bench/compile_time.lua), each in processes of their own.
io.stderr:write("bench: time to first kernel and compile time ...\n")
local function child(script, args)
  local cmd = ("LUA_PATH=%q LUA_CPATH=%q luajit %s %s 2>&1"):format(package.path, package.cpath,
    here .. script, args)
  local f = assert(io.popen(cmd))
  local out = f:read("*a")
  f:close()
  return out
end
local first_kernel = child("cache.lua", "5")
local compile_time = child("compile_time.lua", "cpu 500 1000 2000")

-- The parallel primitives (issue 21): gpu.reduce, gpu.scan, gpu.sort
-- against the same algorithms in C (bench/prims.lua), in a process of its own.
io.stderr:write("bench: parallel primitives ...\n")
local prims = child("prims.lua", tostring(RUNS)):gsub("bench: [^\n]*\n", "")
-- ... and on the opencl backend against the same algorithms in OpenCL C
-- (bench/prims_opencl.lua; one line saying so where there is no OpenCL device)
local prims_opencl = child("prims_opencl.lua", tostring(RUNS)):gsub("bench: [^\n]*\n", "")

p("")
p("| launch (1 work item, %d launches per sample) | median ns per launch | load |", LAUNCHES)
p("|---|---|---|")
for _, r in ipairs(lrows) do p("| %s | %.0f | %s |", r.name, r.ns, r.load) end
p("")
p("Empty-kernel launch overhead over a bare FFI call: %.0f ns (goal: launch <= 1000 ns: %s).",
  lrows[1].ns - lrows[3].ns, lrows[1].ns <= 1000 and "ok" or "**miss**")
p("")
p("Time to first kernel (`luajit bench/cache.lua 5`: saxpy's first launch in a fresh process,"
  .. " medians of 5; goal on cpu: cold < 50 ms):")
p("")
p("```")
p("%s", (first_kernel:gsub("%s+$", "")))
p("```")
p("")
p("Cold compile of long kernels (`luajit bench/compile_time.lua cpu 500 1000 2000`; goal: 2000"
  .. " lines < 2 s):")
p("")
p("```")
p("%s", (compile_time:gsub("%s+$", "")))
p("```")
p("")
p("%s", (prims:gsub("%s+$", "")))
p("")
p("%s", (prims_opencl:gsub("%s+$", "")))
local text = table.concat(md, "\n")
print(text)

-- Into RESULTS.md, between the markers (kept by hand-written sections).
local BEGIN, END = "<!-- make bench: begin -->", "<!-- make bench: end -->"
local f = assert(io.open(RESULTS))
local old = f:read("*a")
f:close()
local a, b = old:find(BEGIN, 1, true), old:find(END, 1, true)
if not (a and b) then error(RESULTS .. " lacks the markers " .. BEGIN .. " / " .. END, 0) end
f = assert(io.open(RESULTS, "w"))
f:write(old:sub(1, a + #BEGIN - 1), "\n", text, "\n", old:sub(b))
f:close()

-- Data for bench/plot.gp: kernel, speed-up vs C, vs LuaJIT, LuaJIT goal.
os.execute("mkdir -p \"$(dirname '" .. DAT .. "')\"")
f = assert(io.open(DAT, "w"))
f:write(("# empty-kernel launch %.0f ns, FFI call %.0f ns, %s\n"):format(lrows[1].ns, lrows[3].ns,
  os.date("!%Y-%m-%d")))
for _, r in ipairs(rows) do
  f:write(("%s %.4f %.4f %d\n"):format(r.name, r.vs_c, r.vs_lua, r.goal_lua))
end
f:close()
f = assert(io.open(DAT .. ".title", "w"))
f:write(("gpujit cpu backend, %s, %d threads, %s, load %s; empty-kernel launch %.0f ns\n"):format(
  cpuinfo():match("^[^,]+"), THREADS, os.date("!%Y-%m-%d"), LOAD0, lrows[1].ns))
f:close()

-- As bench/prims.lua: exit before the Lua state closes and dlcloses the C
-- references under their OpenMP threads.
io.stdout:flush()
os.exit(0)
