-- gpujit on the cuda backend vs the same kernels written by hand in CUDA C
-- (bench/cuda_ref.cu, built with nvcc -O3 by `make bench-cuda`), both run
-- through the Driver API in one process: the reference module is loaded and
-- launched with libcuda.so.1 through the FFI.  Prints a markdown report for
-- bench/RESULTS.md:
--   * per kernel (saxpy, 3x3 convolution, mandelbrot, tiled matmul: those
--     of bench/opencl_vs_c.lua) the median times and time(gpujit) /
--     time(CUDA C) (issue 5's goal: <= 1.05);
--   * saxpy's achieved bandwidth as a fraction of the device's peak, both
--     the theoretical one (memory clock * bus width * 2, cuDeviceGetAttribute)
--     and the practical one (a device-to-device cuMemcpy) (goal: >= 0.9);
--   * the host time of a gpujit launch minus that of a bare cuLaunchKernel
--     of the same one-item kernel, both followed by cuCtxSynchronize as a
--     gpujit launch is synchronous (goal: <= 1 us).
--
--   make bench-cuda        (or: luajit bench/cuda_vs_c.lua [runs] [ref])
--
-- ref: the reference module, a cubin or PTX file (default: $GJ_CUDA_REF,
-- else build/bench/cuda_ref.cubin, else build/bench/cuda_ref.ptx).  Without
-- a driver, a device or the reference the script says why and exits 0.
local ffi = require("ffi")

local RUNS = tonumber(arg and arg[1]) or 7
local here = (arg and arg[0] or "bench/cuda_vs_c.lua"):gsub("[^/]*$", "")
local T = dofile(here .. "timing.lua")

local function cannot_run(why)
  print("cuda benchmark: cannot run: " .. why)
  os.exit(0)
end

ffi.cdef [[
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *v);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice d);
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(CUmodule *m, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, void *stream, void **params,
                        void **extra);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuGetErrorName(CUresult r, const char **s);
]]

local okl, CU = pcall(ffi.load, "libcuda.so.1")
if not okl then cannot_run("no NVIDIA driver (libcuda.so.1: " .. tostring(CU) .. ")") end

-- Codes named before cuGetErrorName works (the toolkit's stub library
-- answers every call with 34).
local early = { [34] = "CUDA_ERROR_STUB_LIBRARY (the toolkit's stub, not a driver)",
  [100] = "CUDA_ERROR_NO_DEVICE" }
local function errname(r)
  local s = ffi.new("const char *[1]")
  if CU.cuGetErrorName(r, s) == 0 and s[0] ~= nil then return ffi.string(s[0]) end
  return early[tonumber(r)] or "CUDA error " .. tonumber(r)
end
local function check(r, what)
  if r ~= 0 then error(what .. " failed: " .. errname(r), 2) end
end

do
  local r = CU.cuInit(0)
  if r ~= 0 then cannot_run("cuInit: " .. errname(r)) end
  local n = ffi.new("int[1]")
  if CU.cuDeviceGetCount(n) ~= 0 or n[0] < 1 then cannot_run("no CUDA device") end
end

local gpu = require("gpujit")
local K = dofile(here .. "kernels.lua")
local gdev
for _, d in ipairs(gpu.devices()) do
  if d.backend == "cuda" and d.index == 0 then gdev = d end
end
if not gdev then cannot_run("gpujit lists no cuda device (gpu.backends() says why)") end

-- Device 0's primary context, current on this thread: gpujit's backend uses
-- the same one and finds it current (no push/pop per launch).
local dev, ctx = ffi.new("CUdevice[1]"), ffi.new("CUcontext[1]")
check(CU.cuDeviceGet(dev, 0), "cuDeviceGet")
check(CU.cuDevicePrimaryCtxRetain(ctx, dev[0]), "cuDevicePrimaryCtxRetain")
check(CU.cuCtxSetCurrent(ctx[0]), "cuCtxSetCurrent")

-- The reference module: the first of the candidates that the driver loads
-- (a cubin for another architecture, or PTX newer than the driver, is not).
local mod, ref = ffi.new("CUmodule[1]"), nil
do
  local given = (arg and arg[2]) or os.getenv("GJ_CUDA_REF")
  local cands = given and { given } or { "build/bench/cuda_ref.cubin", "build/bench/cuda_ref.ptx" }
  local why = {}
  for _, path in ipairs(cands) do
    local f = io.open(path, "rb")
    if f then
      local image = f:read("*a") .. "\0"      -- PTX is read as a C string
      f:close()
      local r = CU.cuModuleLoadData(mod, image)
      if r == 0 then ref = path; break end
      why[#why + 1] = path .. ": " .. errname(r)
    else
      why[#why + 1] = path .. ": missing"
    end
  end
  if not ref then
    cannot_run("no CUDA C reference that this driver loads (" .. table.concat(why, "; ")
      .. "): build it with this machine's nvcc: make bench-cuda")
  end
end
local function cufunc(name)
  local f = ffi.new("CUfunction[1]")
  check(CU.cuModuleGetFunction(f, mod[0], name), "cuModuleGetFunction " .. name)
  return f[0]
end

-- Runs each side `reps` times per sample; samples alternate.
local function measure(fg, fc, reps)
  return T.measure(fg, fc, reps, RUNS)
end

-- A buffer on both sides with the same contents: gpujit's gpu.array and a
-- cuMemAlloc'ed one for the reference kernels.
local function buffer(ct, n, init)
  local host = ffi.new(ct .. "[?]", n)
  if init then for i = 0, n - 1 do host[i] = init(i) end end
  local p = ffi.new("CUdeviceptr[1]")
  local bytes = n * ffi.sizeof(ct)
  check(CU.cuMemAlloc_v2(p, bytes), "cuMemAlloc")
  check(CU.cuMemcpyHtoD_v2(p[0], host, bytes), "cuMemcpyHtoD")
  return { ptr = p, n = n, ct = ct, bytes = bytes, dev = gpu.to_device(host, ct, "cuda") }
end

-- kernelParams for cuLaunchKernel: buffers by their device pointer, the
-- rest as given (cdata of the parameter's C type).
local function params(args)
  local keep, pp = {}, ffi.new("void *[?]", #args)
  for i, a in ipairs(args) do
    keep[i] = type(a) == "table" and a.ptr or a
    pp[i - 1] = keep[i]
  end
  return { pp = pp, keep = keep }
end

local function run_c(f, grid, block, pa)
  check(CU.cuLaunchKernel(f, grid[1], grid[2] or 1, 1, block[1], block[2] or 1, 1, 0, nil,
    pa.pp, nil), "cuLaunchKernel")
  check(CU.cuCtxSynchronize(), "cuCtxSynchronize")
end

-- Do both sides' results agree bit for bit?  A note for the report either way.
local function agree(a, b)
  local ha, hb = a.dev:to_host(), ffi.new(b.ct .. "[?]", b.n)
  check(CU.cuMemcpyDtoH_v2(hb, b.ptr[0], b.bytes), "cuMemcpyDtoH")
  for i = 0, a.n - 1 do
    if ha[i] ~= hb[i] then
      return string.format("differ at %d: %s vs %s", i, tostring(ha[i]), tostring(hb[i]))
    end
  end
  return "identical"
end

local rows = {}
local function report(name, tg, tc, same)
  rows[#rows + 1] = string.format("| %s | %.3f | %.3f | %.3f | %s |", name, tg * 1e3, tc * 1e3,
    tg / tc, same)
end

local single = { precision = "single", backend = "cuda" }
local TILE = K.TILE
local saxpy_time, saxpy_bytes

-- saxpy ----------------------------------------------------------------
do
  local n = 2 ^ 26                            -- 256 MiB per array
  local x = buffer("float", n, function(i) return i % 1000 end)
  local yg = buffer("float", n, function(i) return i % 7 end)
  local yc = buffer("float", n, function(i) return i % 7 end)
  local k = gpu.kernel(K.saxpy, single)
  local a, ni = ffi.new("float", 0.5), ffi.new("int32_t", n)
  local pa = params({ yc, x, ffi.new("float[1]", 0.5), ffi.new("int[1]", n) })
  local f = cufunc("saxpy")
  local tg, tc = measure(function() k:launch({ global = n, group = 256 }, yg.dev, x.dev, a, ni) end,
    function() run_c(f, { n / 256 }, { 256 }, pa) end, 10)
  -- both ran the same number of times: y is the same
  report("saxpy 64M floats", tg, tc, agree(yg, yc))
  saxpy_time, saxpy_bytes = tg, 3 * 4 * n    -- read x and y, write y
end

-- 3x3 convolution ---------------------------------------------------------
do
  local W, Hh = 4096, 4096
  local inp = buffer("float", W * Hh, function(i) return (i * 37) % 101 end)
  local w = buffer("float", 9, function(i) return (i - 4) * 0.125 end)
  local og, oc = buffer("float", W * Hh), buffer("float", W * Hh)
  local k = gpu.kernel(K.conv3, single)
  local Wi, Hi = ffi.new("int32_t", W), ffi.new("int32_t", Hh)
  local pa = params({ oc, inp, w, ffi.new("int[1]", W), ffi.new("int[1]", Hh) })
  local f = cufunc("conv3")
  local tg, tc = measure(function() k:launch({ global = { W, Hh }, group = { 64, 4 } }, og.dev, inp.dev,
    w.dev, Wi, Hi) end, function() run_c(f, { W / 64, Hh / 4 }, { 64, 4 }, pa) end, 10)
  report("conv 3x3 4096x4096", tg, tc, agree(og, oc))
end

-- mandelbrot ------------------------------------------------------------
do
  local W, Hh, MAXIT = 2048, 2048, 256
  local og, oc = buffer("int32_t", W * Hh), buffer("int32_t", W * Hh)
  local k = gpu.kernel(K.mandel, single)
  -- the width and height as Lua numbers: as int32_t cdata, `3.0 * px / Wd` would be
  -- LuaJIT's cdata (integer) division (docs/typing.md, "C integers"), another image
  local Mi = ffi.new("int32_t", MAXIT)
  local pa = params({ oc, ffi.new("int[1]", W), ffi.new("int[1]", Hh), ffi.new("int[1]", MAXIT) })
  local f = cufunc("mandel")
  local tg, tc = measure(function() k:launch({ global = { W, Hh }, group = { 64, 4 } }, og.dev, W, Hh,
    Mi) end, function() run_c(f, { W / 64, Hh / 4 }, { 64, 4 }, pa) end, 10)
  report("mandelbrot 2048x2048 x256", tg, tc, agree(og, oc))
end

-- tiled matrix multiply ---------------------------------------------------
do
  local N = 2048
  local A = buffer("float", N * N, function(i) return (i % 17) - 8 end)
  local B = buffer("float", N * N, function(i) return (i % 13) - 6 end)
  local Cg, Cc = buffer("float", N * N), buffer("float", N * N)
  local k = gpu.kernel(K.matmul_tiled, single)
  local Ni = ffi.new("int32_t", N)
  local pa = params({ Cc, A, B, ffi.new("int[1]", N), ffi.new("int[1]", N) })
  local f = cufunc("matmul")
  local tg, tc = measure(function() k:launch({ global = { N, N }, group = { TILE, TILE } }, Cg.dev, A.dev,
    B.dev, Ni, Ni) end, function() run_c(f, { N / TILE, N / TILE }, { TILE, TILE }, pa) end, 3)
  report("tiled matmul 2048 (16x16)", tg, tc, agree(Cg, Cc))
end

-- bandwidth -------------------------------------------------------------
local bw_lines = {}
do
  local attr = function(id)
    local v = ffi.new("int[1]")
    if CU.cuDeviceGetAttribute(v, id, dev[0]) ~= 0 then return nil end
    return v[0]
  end
  local clock_khz, bus_bits = attr(36), attr(37)   -- MEMORY_CLOCK_RATE, GLOBAL_MEMORY_BUS_WIDTH
  local achieved = saxpy_bytes / saxpy_time
  local theo = clock_khz and bus_bits and clock_khz > 0 and bus_bits > 0
    and clock_khz * 1e3 * 2 * bus_bits / 8 or nil
  -- practical peak: a device-to-device copy of 1 GiB (reads and writes it)
  local bytes = 2 ^ 30
  local s, d = ffi.new("CUdeviceptr[1]"), ffi.new("CUdeviceptr[1]")
  check(CU.cuMemAlloc_v2(s, bytes), "cuMemAlloc")
  check(CU.cuMemAlloc_v2(d, bytes), "cuMemAlloc")
  local copy = function()
    check(CU.cuMemcpyDtoD_v2(d[0], s[0], bytes), "cuMemcpyDtoD")
    check(CU.cuCtxSynchronize(), "cuCtxSynchronize")
  end
  local tcopy = measure(copy, copy, 5)
  CU.cuMemFree_v2(s[0])
  CU.cuMemFree_v2(d[0])
  local practical = 2 * bytes / tcopy
  bw_lines[#bw_lines + 1] = string.format("- saxpy (gpujit) achieved %.0f GB/s", achieved / 1e9)
  if theo then
    bw_lines[#bw_lines + 1] = string.format("- theoretical peak %.0f GB/s (memory clock %d kHz x bus %d bits"
      .. " x 2): saxpy at %.3f of it", theo / 1e9, clock_khz, bus_bits, achieved / theo)
  else
    bw_lines[#bw_lines + 1] = "- theoretical peak: n/a (the driver gives no memory clock or bus width)"
  end
  bw_lines[#bw_lines + 1] = string.format("- practical peak %.0f GB/s (cuMemcpyDtoD of 1 GiB, read + write):"
    .. " saxpy at %.3f of it", practical / 1e9, achieved / practical)
end

-- launch overhead ---------------------------------------------------------
local launch_lines = {}
do
  local o = buffer("double", 1)
  local k = gpu.kernel(function(out, n)
    local i = gpu.global_id(0)
    if i < n then out[i] = i end
  end, { backend = "cuda" })
  local n1 = ffi.new("int32_t", 1)
  local pa = params({ o, ffi.new("int[1]", 1) })
  local f = cufunc("touch")
  local reps = 20000
  local tg, tc = measure(function() k:launch(1, o.dev, n1) end, function() run_c(f, { 1 }, { 1 }, pa) end,
    reps)
  launch_lines[1] = string.format("- one-item kernel, launch + cuCtxSynchronize, median of %d x %d: "
    .. "gpujit k:launch %.2f us, bare cuLaunchKernel (LuaJIT FFI) %.2f us: gpujit adds %.2f us", RUNS, reps,
    tg * 1e6, tc * 1e6, (tg - tc) * 1e6)
end

local ver = ffi.new("int[1]")
CU.cuDriverGetVersion(ver)
local p = io.popen("git rev-parse --short HEAD 2>/dev/null")
local rev = p and p:read("*l") or "?"
if p then p:close() end
print(string.format("### cuda backend vs CUDA C on %s (%s, driver %d.%d), gpujit %s, %s", gdev.name,
  gdev.arch, math.floor(ver[0] / 1000), math.floor(ver[0] % 1000 / 10), rev, os.date("!%Y-%m-%d")))
print("")
print(string.format("Reference: %s (nvcc -O3 -fmad=false); median of %d runs; both sides in one process, "
  .. "launch then cuCtxSynchronize.", ref, RUNS))
print("")
print("| kernel | gpujit ms | CUDA C ms | ratio | results |")
print("|---|---|---|---|---|")
for _, l in ipairs(rows) do print(l) end
print("")
print("Bandwidth:")
for _, l in ipairs(bw_lines) do print(l) end
print("")
print("Launch overhead:")
for _, l in ipairs(launch_lines) do print(l) end
