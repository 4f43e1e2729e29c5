-- Is pinned staging worth it for the copies of FFI arrays and tables on
-- cuda (issue 5)?  The backend copies from the caller's (pageable) memory
-- with cuMemcpyHtoD/DtoH.  This measures, for a few sizes, host to device
-- and back: (a) what the backend does now, through gpujit (an FFI array
-- given to a kernel that reads and writes it, minus the kernel's launch),
-- (b) cuMemcpy from pageable memory, (c) a memcpy into a pinned buffer
-- (cuMemHostAlloc) plus cuMemcpy from it: what a staging buffer would
-- cost, and (d) cuMemcpy from pinned memory alone (the bound).
--
--   luajit bench/cuda_copies.lua      (spec/gpu_session.sh runs it)
--
-- Without a driver or a device it says so and exits 0.
local ffi = require("ffi")

local function cannot_run(why)
  print("cuda copies benchmark: cannot run: " .. why)
  os.exit(0)
end

ffi.cdef [[
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, int d);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags);
CUresult cuMemFreeHost(void *p);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
void *memcpy(void *d, const void *s, size_t n);
]]

local okl, CU = pcall(ffi.load, "libcuda.so.1")
if not okl then cannot_run("no NVIDIA driver (libcuda.so.1)") end
if CU.cuInit(0) ~= 0 then cannot_run("cuInit failed (no device, or the toolkit's stub)") end
local gpu = require("gpujit")
local has = false
for _, d in ipairs(gpu.devices()) do has = has or d.backend == "cuda" end
if not has then cannot_run("gpujit lists no cuda device") end

local function check(r, what)
  if r ~= 0 then error(what .. " failed: CUDA error " .. tonumber(r), 2) end
end
local ctx = ffi.new("CUcontext[1]")
check(CU.cuDevicePrimaryCtxRetain(ctx, 0), "cuDevicePrimaryCtxRetain")
check(CU.cuCtxSetCurrent(ctx[0]), "cuCtxSetCurrent")

local median_time = dofile((arg and arg[0] or "bench/cuda_copies.lua"):gsub("[^/]*$", "")
  .. "timing.lua").time

local touch = gpu.kernel(function(a) local i = gpu.global_id(0); a[i] = a[i] + 1 end,
  { backend = "cuda", precision = "single" })
local empty = gpu.kernel(function(a, n) if gpu.global_id(0) < n then a[0] = 1 end end,
  { backend = "cuda" })

print(string.format("%-10s %12s %12s %12s %12s   (GB/s, host->device + device->host)", "size",
  "gpujit FFI", "pageable", "staged", "pinned"))
for _, mib in ipairs({ 1, 16, 256 }) do
  local bytes = mib * 2 ^ 20
  local n = bytes / 4
  local host = ffi.new("float[?]", n)
  local pinned = ffi.new("void *[1]")
  check(CU.cuMemHostAlloc(pinned, bytes, 0), "cuMemHostAlloc")
  local dptr = ffi.new("CUdeviceptr[1]")
  check(CU.cuMemAlloc_v2(dptr, bytes), "cuMemAlloc")
  local d = dptr[0]
  local runs = mib >= 256 and 5 or 11
  local one = ffi.new("int32_t", 1)
  local dummy = gpu.array("double", 1, "cuda")
  local t_launch = median_time(function() empty:launch(1, dummy, one) end, runs)
  local t_gj = median_time(function() touch:launch(n, host) end, runs) - t_launch
  local t_page = median_time(function()
    check(CU.cuMemcpyHtoD_v2(d, host, bytes), "HtoD")
    check(CU.cuMemcpyDtoH_v2(host, d, bytes), "DtoH")
  end, runs)
  local t_staged = median_time(function()
    ffi.C.memcpy(pinned[0], host, bytes)
    check(CU.cuMemcpyHtoD_v2(d, pinned[0], bytes), "HtoD")
    check(CU.cuMemcpyDtoH_v2(pinned[0], d, bytes), "DtoH")
    ffi.C.memcpy(host, pinned[0], bytes)
  end, runs)
  local t_pinned = median_time(function()
    check(CU.cuMemcpyHtoD_v2(d, pinned[0], bytes), "HtoD")
    check(CU.cuMemcpyDtoH_v2(pinned[0], d, bytes), "DtoH")
  end, runs)
  local gbs = function(t) return 2 * bytes / t / 1e9 end
  print(string.format("%-10s %12.2f %12.2f %12.2f %12.2f", mib .. " MiB", gbs(t_gj), gbs(t_page),
    gbs(t_staged), gbs(t_pinned)))
  CU.cuMemFree_v2(d)
  CU.cuMemFreeHost(pinned[0])
end
