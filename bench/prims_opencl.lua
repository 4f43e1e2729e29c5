-- The parallel primitives (issue 21) on the opencl backend against the same
-- algorithms written by hand in OpenCL C, on the same device through the
-- same OpenCL library (bench/clref.lua), in one process:
-- gpu.reduce of 16M floats, gpu.scan of 4M int32, gpu.sort of 4M int32,
-- gpu.fill and gpu.copy of 16M floats.  Run by `make bench` when an OpenCL
-- device is present, or alone:
--
--   luajit bench/prims_opencl.lua [runs]
--
-- Both sides keep their data in device buffers (gpu.array on the gpujit
-- side, so the primitives never copy to the host; reduce reads back its one
-- value, as the OpenCL C side does) and wait for their kernels.  The OpenCL
-- C side runs gpujit's algorithm with gpujit's item counts for the device
-- (prims.lua's n_items and sort_items): the same float sum in the same
-- order (compared bit for bit), one work item per chunk as prims.lua's
-- items; fill and copy are one work item per element, the shape a hand-
-- written OpenCL C kernel takes.  Every side runs once and the outputs are
-- compared, then `runs` rounds, the sides alternating; medians.  Sort
-- samples start from the same unsorted keys (the copy is not timed).
local ffi = require("ffi")
local gpu = require("gpujit")
local P = require("gpujit.prims")
local here = (arg and arg[0] or "bench/prims_opencl.lua"):gsub("[^/]*$", "")
local T = dofile(here .. "timing.lua")
local now, median = T.now, T.median

local RUNS = tonumber(arg and arg[1]) or tonumber(os.getenv("BENCH_RUNS")) or 7

local entry
for _, d in ipairs(gpu.devices()) do
  if d.backend == "opencl" then entry = d break end
end
if not entry then
  print("Parallel primitives on opencl: no OpenCL device, not run.")
  return
end
local CLR = dofile(here .. "clref.lua")
local tgt = { backend = "opencl", entry = entry }
local LANES = P.LANES

local SOURCE = [[
#define LANES ]] .. LANES .. [[

#pragma OPENCL FP_CONTRACT OFF
/* item j folds [j*C, min(n, (j+1)*C)) in LANES lanes (prims.lua's order) */
kernel void reduce_items(global const float *a, long n, long C, global float *part) {
  long j = get_global_id(0), lo = j * C, hi = min(n, lo + C);
  float s;
  if (lo >= hi) return;
  if (hi - lo >= LANES) {
    float acc[LANES];
    for (int l = 0; l < LANES; l++) acc[l] = a[lo + l];
    long full = hi - (hi - lo) % LANES;
    for (long i = lo + LANES; i < full; i += LANES)
      for (int l = 0; l < LANES; l++) acc[l] = acc[l] + a[i + l];
    for (long l = 0; l < hi - full; l++) acc[l] = acc[l] + a[full + l];
    s = acc[0];
    for (int l = 1; l < LANES; l++) s = s + acc[l];
  } else {
    s = a[lo];
    for (long i = lo + 1; i < hi; i++) s = s + a[i];
  }
  part[j] = s;
}
kernel void reduce_last(global float *part, long g) {
  float s = 0.0f;
  for (long j = 0; j < g; j++) s = s + part[j];
  part[0] = s;
}
kernel void scan_sums(global const int *a, long n, long C, global long *part) {
  long j = get_global_id(0), lo = j * C, hi = min(n, lo + C), s = 0;
  for (long i = lo; i < hi; i++) s += a[i];
  part[j] = s;
}
kernel void exclusive(global long *part, long g) {
  long c = 0;
  for (long j = 0; j < g; j++) {
    long t = part[j];
    part[j] = c;
    c += t;
  }
}
kernel void scan_items(global const int *a, global int *out, long n, long C, global const long *part) {
  long j = get_global_id(0), lo = j * C, hi = min(n, lo + C), s = part[j];
  for (long i = lo; i < hi; i++) {
    s += a[i];
    out[i] = (int)s;
  }
}
kernel void flip(global uint *u) { size_t i = get_global_id(0); u[i] ^= 0x80000000u; }
kernel void sort_hist(global const uint *src, long n, long C, long G, int shift, global long *hist) {
  long j = get_global_id(0), lo = j * C, hi = min(n, lo + C);
  long cnt[256];
  for (int d = 0; d < 256; d++) cnt[d] = 0;
  for (long i = lo; i < hi; i++) cnt[(src[i] >> shift) & 255]++;
  for (int d = 0; d < 256; d++) hist[d * G + j] = cnt[d];
}
kernel void sort_scatter(global const uint *src, global uint *dst, long n, long C, long G,
                         int shift, global const long *hist) {
  long j = get_global_id(0), lo = j * C, hi = min(n, lo + C);
  long off[256];
  for (int d = 0; d < 256; d++) off[d] = hist[d * G + j];
  for (long i = lo; i < hi; i++) {
    uint v = src[i];
    dst[off[(v >> shift) & 255]++] = v;
  }
}
kernel void fill(global float *a, float v) { a[get_global_id(0)] = v; }
kernel void copy(global float *d, global const float *s) {
  size_t i = get_global_id(0);
  d[i] = s[i];
}
]]

local prog = CLR.build(SOURCE)
local function K(name, args) return CLR.kernel(prog, name, args) end
local function L(v) return ffi.new("int64_t[1]", v) end
local function I(v) return ffi.new("int32_t[1]", v) end

local rand_i32 = T.rand_i32

-- C of n elements over G items, as prims.lua chunks a reduce or scan
local function chunk(n, G) return math.ceil(n / (G * LANES)) * LANES end

local function same(ct, n, got, want, what)
  for i = 0, n - 1 do
    if got[i] ~= want[i] then
      error(("%s: element %d: gpujit %s, OpenCL C %s"):format(what, i, tostring(got[i]),
        tostring(want[i])), 0)
    end
  end
  return ct
end

local cases = {}

do -- reduce: 16M floats
  local n = 2 ^ 24
  local x = ffi.new("float[?]", n)
  for i = 0, n - 1 do x[i] = (i % 1000) / 1000 end
  local G = P.n_items(tgt, n)
  local C = chunk(n, G)
  local g = math.ceil(n / C)
  local xd, xm, part = gpu.to_device(x, "float", "opencl"), CLR.buffer("float", n, x), CLR.buffer("float", G)
  local k1 = K("reduce_items", { xm, L(n), L(C), part })
  local k2 = K("reduce_last", { part, L(g) })
  local r = {}
  cases[#cases + 1] = {
    name = "gpu.reduce(x, \"+\")", what = "16M floats",
    gj = function() r.gj = gpu.reduce(xd, "+") end,
    cl = function()
      CLR.run(k1, { g })
      CLR.run(k2, { 1 })
      r.cl = CLR.read(part, "float", 1)[0]
    end,
    check = function()
      assert(r.gj == r.cl, ("reduce: gpujit %.9g, OpenCL C %.9g"):format(r.gj, r.cl))
    end,
  }
end

do -- scan: 4M int32
  local n = 2 ^ 22
  local a = rand_i32(n, 7)
  for i = 0, n - 1 do a[i] = a[i] % 2001 - 1000 end
  local G = P.n_items(tgt, n)
  local C = chunk(n, G)
  local g = math.ceil(n / C)
  local ad, od = gpu.to_device(a, "int32_t", "opencl"), gpu.array("int32_t", n, "opencl")
  local am, om, part = CLR.buffer("int32_t", n, a), CLR.buffer("int32_t", n), CLR.buffer("int64_t", G)
  local k1 = K("scan_sums", { am, L(n), L(C), part })
  local k2 = K("exclusive", { part, L(g) })
  local k3 = K("scan_items", { am, om, L(n), L(C), part })
  cases[#cases + 1] = {
    name = "gpu.scan(a, \"+\", out)", what = "4M int32",
    gj = function() gpu.scan(ad, "+", od) end,
    cl = function()
      CLR.run(k1, { g })
      CLR.run(k2, { 1 })
      CLR.run(k3, { g })
    end,
    check = function() same("int32_t", n, od:to_host(), CLR.read(om, "int32_t", n), "scan") end,
  }
end

do -- sort: 4M int32 keys (LSD radix, 8 bits a pass, as prims_sort.lua)
  local n = 2 ^ 22
  local src = rand_i32(n, 12345)
  local G = P.sort_items(tgt, n)
  local C = math.ceil(n / G)
  local srcd, kd = gpu.to_device(src, "int32_t", "opencl"), gpu.array("int32_t", n, "opencl")
  local km, tmp = CLR.buffer("int32_t", n, src), CLR.buffer("uint32_t", n)
  local hist = CLR.buffer("int64_t", 256 * G)
  local kflip = K("flip", { km })
  local kex = K("exclusive", { hist, L(256 * G) })
  local passes = {}
  for p = 0, 3 do
    local from, to = p % 2 == 0 and km or tmp, p % 2 == 0 and tmp or km
    passes[p + 1] = {
      K("sort_hist", { from, L(n), L(C), L(G), I(8 * p), hist }),
      K("sort_scatter", { from, to, L(n), L(C), L(G), I(8 * p), hist }),
    }
  end
  cases[#cases + 1] = {
    name = "gpu.sort(keys)", what = "4M int32",
    prep = { gj = function() gpu.copy(kd, srcd) end,
             cl = function() CLR.write(km, src, "int32_t", n) end },
    gj = function() gpu.sort(kd) end,
    cl = function()
      CLR.run(kflip, { n })
      for _, ks in ipairs(passes) do
        CLR.run(ks[1], { G })
        CLR.run(kex, { 1 })
        CLR.run(ks[2], { G })
      end
      CLR.run(kflip, { n })
    end,
    check = function()
      local want = CLR.read(km, "int32_t", n)
      for i = 1, n - 1 do assert(want[i - 1] <= want[i], "sort: the OpenCL C result is not sorted") end
      same("int32_t", n, kd:to_host(), want, "sort")
    end,
  }
end

do -- fill and copy: 16M floats
  local n = 2 ^ 24
  local x = ffi.new("float[?]", n)
  for i = 0, n - 1 do x[i] = i % 977 end
  local fd, fm = gpu.array("float", n, "opencl"), CLR.buffer("float", n)
  local kf = K("fill", { fm, ffi.new("float[1]", 1.5) })
  cases[#cases + 1] = {
    name = "gpu.fill(a, 1.5)", what = "16M floats",
    gj = function() gpu.fill(fd, 1.5) end,
    cl = function() CLR.run(kf, { n }, { 256 }) end,
    check = function() same("float", n, fd:to_host(), CLR.read(fm, "float", n), "fill") end,
  }
  local sd, dd = gpu.to_device(x, "float", "opencl"), gpu.array("float", n, "opencl")
  local sm, dm = CLR.buffer("float", n, x), CLR.buffer("float", n)
  local kc = K("copy", { dm, sm })
  cases[#cases + 1] = {
    name = "gpu.copy(dst, src)", what = "16M floats",
    gj = function() gpu.copy(dd, sd) end,
    cl = function() CLR.run(kc, { n }, { 256 }) end,
    check = function() same("float", n, dd:to_host(), CLR.read(dm, "float", n), "copy") end,
  }
end

local rows = {}
for _, cs in ipairs(cases) do
  io.stderr:write("bench: ", cs.name, " on opencl ...\n")
  local prep = cs.prep or {}
  local sides = { "gj", "cl" }
  for _, side in ipairs(sides) do
    if prep[side] then prep[side]() end
    cs[side]()
  end
  cs.check()
  local t = { gj = {}, cl = {} }
  for r = 1, RUNS do
    for s = 0, 1 do
      local side = sides[(r + s - 1) % 2 + 1]
      if prep[side] then prep[side]() end
      local t0 = now()
      cs[side]()
      t[side][r] = now() - t0
    end
  end
  local mg, mc = median(t.gj), median(t.cl)
  rows[#rows + 1] = ("| %s | %s | %.2f | %.2f | %.3fx |"):format(cs.name, cs.what, mg * 1e3, mc * 1e3,
    mc / mg)
end

print(("Parallel primitives on opencl (%s; `luajit bench/prims_opencl.lua %d`; medians of %d"
  .. " rounds, sides alternating; the OpenCL C side runs gpujit's algorithm):"):format(entry.name,
  RUNS, RUNS))
print("")
print("| primitive | size | gpujit opencl ms | OpenCL C ms | gpujit vs OpenCL C |")
print("|---|---|---|---|---|")
for _, r in ipairs(rows) do print(r) end
