-- gpujit on the opencl backend vs the same kernels written by hand in
-- OpenCL C, run through the same OpenCL library (libOpenCL.so.1 via the
-- FFI) on the same device, in one process.  Prints, per kernel, the median
-- time of each and the ratio gpujit / OpenCL C (goal: <= 1.05).
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/opencl_vs_c.lua [runs]
--
-- With BENCH_LINES=1 it prints one "name value" line per figure instead
-- (<kernel>_ms: gpujit's time, <kernel>_ratio), the form that
-- bench/before_after.sh reads:
--   BENCH_LINES=1 sh bench/before_after.sh <commit> bench/opencl_vs_c.lua 5
--
-- Both sides keep their data in device buffers (gpu.array on the gpujit
-- side), launch with the same global and group sizes and wait for the
-- kernel (gpujit launches are synchronous; the OpenCL C side calls
-- clFinish), so what is timed is the kernel plus the launch path.  The
-- float kernels use precision = "single", the arithmetic OpenCL C does.
local ffi = require("ffi")
local gpu = require("gpujit")
local here = (arg and arg[0] or "bench/opencl_vs_c.lua"):gsub("[^/]*$", "")
local K = dofile(here .. "kernels.lua")
local T = dofile(here .. "timing.lua")

local RUNS = tonumber(arg and arg[1]) or 7

local CLR = dofile(here .. "clref.lua")

local TILE = K.TILE
-- FP_CONTRACT OFF: no fused multiply-adds, as gpujit (LuaJIT's arithmetic)
-- computes, so both sides produce the same bits.
local SOURCE = [[
#pragma OPENCL FP_CONTRACT OFF
kernel void saxpy(global float *y, global const float *x, float a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
kernel void conv3(global float *out, global const float *in, global const float *w,
                  int W, int H) {
  int x = get_global_id(0), y = get_global_id(1);
  if (x >= 1 && y >= 1 && x < W - 1 && y < H - 1) {
    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++)
        s += w[(dy + 1) * 3 + dx + 1] * in[(y + dy) * W + x + dx];
    out[y * W + x] = s;
  }
}
kernel void mandel(global int *out, int W, int H, int maxit) {
  int px = get_global_id(0), py = get_global_id(1);
  if (px < W && py < H) {
    float cr = -2.0f + 3.0f * px / W, ci = -1.5f + 3.0f * py / H;
    float zr = 0.0f, zi = 0.0f;
    int it = 0;
    while (it < maxit && zr * zr + zi * zi <= 4.0f) {
      float t = zr * zr - zi * zi + cr;
      zi = 2.0f * zr * zi + ci;
      zr = t;
      it++;
    }
    out[py * W + px] = it;
  }
}
#define TILE 16
kernel void matmul(global float *C, global const float *A, global const float *B, int N, int K) {
  local float tA[TILE * TILE], tB[TILE * TILE];
  int tx = get_local_id(0), ty = get_local_id(1);
  int col = get_global_id(0), row = get_global_id(1);
  float acc = 0.0f;
  for (int t = 0; t < K / TILE; t++) {
    tA[ty * TILE + tx] = A[row * K + t * TILE + tx];
    tB[ty * TILE + tx] = B[(t * TILE + ty) * N + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; k++) acc += tA[ty * TILE + k] * tB[k * TILE + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  C[row * N + col] = acc;
}
kernel void rounds(global float *o, global const float *x, int R) {
  local float s[128];
  int lid = get_local_id(0), gid = get_global_id(0);
  float v = x[gid];
  for (int r = 1; r <= R; r++) {
    s[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc = 0.0f;
    for (int j = 0; j <= 7; j++) acc += s[(lid + j) % 128] * (float)(j + 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    v = acc * 0.125f;
  }
  o[gid] = v;
}
]]

local prog = CLR.build(SOURCE)

local function buffer(ct, n, init)
  local host = ffi.new(ct .. "[?]", n)
  if init then for i = 0, n - 1 do host[i] = init(i) end end
  return { mem = CLR.buffer(ct, n, host), host = host, n = n, ct = ct,
    dev = gpu.to_device(host, ct, "opencl") }   -- the same data for gpujit
end

local function clkernel(name, args) return CLR.kernel(prog, name, args) end
local run_cl = CLR.run

-- Runs each side `reps` times per sample; samples alternate.
local function measure(fg, fc, reps)
  return T.measure(fg, fc, reps, RUNS)
end

local function same(a, b, what)
  local ha, hb = a.dev:to_host(), CLR.read(b.mem, b.ct, b.n)
  for i = 0, a.n - 1 do
    if ha[i] ~= hb[i] then
      error(what .. ": results differ at " .. i .. ": " .. tostring(ha[i]) .. " vs " .. tostring(hb[i]))
    end
  end
end

local LINES = os.getenv("BENCH_LINES") == "1"
local results = {}
local function report(key, name, tg, tc)
  if LINES then
    results[#results + 1] = string.format("%s_ms %.3f\n%s_ratio %.3f", key, tg * 1e3, key, tg / tc)
  else
    results[#results + 1] = string.format("%-28s %10.3f ms %10.3f ms %8.3f", name, tg * 1e3, tc * 1e3,
      tg / tc)
  end
end

local single = { precision = "single", backend = "opencl" }

-- saxpy ----------------------------------------------------------------
do
  local n = 2 ^ 24
  local x = buffer("float", n, function(i) return i % 1000 end)
  local yg, yc = buffer("float", n, function(i) return i % 7 end), buffer("float", n,
    function(i) return i % 7 end)
  local k = gpu.kernel(K.saxpy, single)
  local a, ni = ffi.new("float", 0.5), ffi.new("int32_t", n)
  local kc = clkernel("saxpy", { yc, x, ffi.new("float[1]", 0.5), ffi.new("int[1]", n) })
  local cfg = { global = n, group = 256 }
  local tg, tc = measure(function() k:launch(cfg, yg.dev, x.dev, a, ni) end,
    function() run_cl(kc, { n }, { 256 }) end, 5)
  same(yg, yc, "saxpy")
  report("saxpy", "saxpy 16M floats", tg, tc)
end

-- 3x3 convolution ---------------------------------------------------------
do
  local W, Hh = 2048, 2048
  local inp = buffer("float", W * Hh, function(i) return (i * 37) % 101 end)
  local w = buffer("float", 9, function(i) return (i - 4) * 0.125 end)
  local og, oc = buffer("float", W * Hh), buffer("float", W * Hh)
  local k = gpu.kernel(K.conv3, single)
  local Wi, Hi = ffi.new("int32_t", W), ffi.new("int32_t", Hh)
  local kc = clkernel("conv3", { oc, inp, w, ffi.new("int[1]", W), ffi.new("int[1]", Hh) })
  local cfg = { global = { W, Hh }, group = { 64, 4 } }
  local tg, tc = measure(function() k:launch(cfg, og.dev, inp.dev, w.dev, Wi, Hi) end,
    function() run_cl(kc, { W, Hh }, { 64, 4 }) end, 3)
  same(og, oc, "conv3")
  report("conv", "conv 3x3 2048x2048", tg, tc)
end

-- mandelbrot ------------------------------------------------------------
do
  local W, Hh, MAXIT = 1024, 1024, 256
  local og, oc = buffer("int32_t", W * Hh), buffer("int32_t", W * Hh)
  local k = gpu.kernel(K.mandel, single)
  -- the width and height as Lua numbers: as int32_t cdata, `3.0 * px / Wd` would be
  -- LuaJIT's cdata (integer) division (docs/typing.md, "C integers"), another image
  local Mi = ffi.new("int32_t", MAXIT)
  local kc = clkernel("mandel", { oc, ffi.new("int[1]", W), ffi.new("int[1]", Hh),
    ffi.new("int[1]", MAXIT) })
  local cfg = { global = { W, Hh }, group = { 64, 4 } }
  local tg, tc = measure(function() k:launch(cfg, og.dev, W, Hh, Mi) end,
    function() run_cl(kc, { W, Hh }, { 64, 4 }) end, 2)
  same(og, oc, "mandelbrot")
  report("mandelbrot", "mandelbrot 1024x1024 x256", tg, tc)
end

-- tiled matrix multiply ---------------------------------------------------
do
  local N = 512
  local A = buffer("float", N * N, function(i) return (i % 17) - 8 end)
  local B = buffer("float", N * N, function(i) return (i % 13) - 6 end)
  local Cg, Cc = buffer("float", N * N), buffer("float", N * N)
  local k = gpu.kernel(K.matmul_tiled, single)
  local Ni = ffi.new("int32_t", N)
  local kc = clkernel("matmul", { Cc, A, B, ffi.new("int[1]", N), ffi.new("int[1]", N) })
  local cfg = { global = { N, N }, group = { TILE, TILE } }
  local tg, tc = measure(function() k:launch(cfg, Cg.dev, A.dev, B.dev, Ni, Ni) end,
    function() run_cl(kc, { N, N }, { TILE, TILE }) end, 2)
  same(Cg, Cc, "matmul")
  report("matmul", "tiled matmul 512 (16x16)", tg, tc)
end

-- rounds of an 8-step stencil between barriers (not among the goal's
-- kernels: the shape where unrolling the inner loop paid, docs/backends.md)
do
  local n, G, R = 2 ^ 20, 128, 8
  local x = buffer("float", n, function(i) return i % 9 - 4 end)
  local og, oc = buffer("float", n), buffer("float", n)
  local k = gpu.kernel(function(o, xx, rounds)
    local s = gpu.shared("float", 128)
    local lid, gid = gpu.local_id(0), gpu.global_id(0)
    local v = xx[gid]
    for _ = 1, rounds do
      s[lid] = v
      gpu.barrier()
      local acc = 0.0
      for j = 0, 7 do acc = acc + s[(lid + j) % 128] * (j + 1) end
      gpu.barrier()
      v = acc * 0.125
    end
    o[gid] = v
  end, single)
  local Ri = ffi.new("int32_t", R)
  local kc = clkernel("rounds", { oc, x, ffi.new("int[1]", R) })
  local cfg = { global = n, group = G }
  local tg, tc = measure(function() k:launch(cfg, og.dev, x.dev, Ri) end,
    function() run_cl(kc, { n }, { G }) end, 2)
  same(og, oc, "rounds")
  report("rounds", "stencil rounds 1M (barriers)", tg, tc)
end

if not LINES then
  print(string.format("gpujit (opencl backend) vs OpenCL C on %s, median of %d runs",
    gpu.devices()[1].name, RUNS))
  print(string.format("%-28s %13s %13s %8s", "kernel", "gpujit", "OpenCL C", "ratio"))
end
for _, l in ipairs(results) do print(l) end
