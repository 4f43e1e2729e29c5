-- Hand-written OpenCL C through the OpenCL library (libOpenCL.so.1 via the
-- FFI), on the first device of the first platform -- the device gpujit's
-- opencl backend lists first -- for the benchmarks that compare gpujit with
-- OpenCL C on the same device (opencl_vs_c.lua, prims_opencl.lua):
--
--   local CLR = dofile(here .. "clref.lua")
--   local prog = CLR.build(source)              -- errors with the build log
--   local m = CLR.buffer("float", n, host)      -- a device buffer, host copied in
--   local k = CLR.kernel(prog, "name", { m_or_table_with_mem, ffi.new("int[1]", n) })
--   CLR.run(k, { global... }, { group... } or nil)   -- enqueue and clFinish
--   CLR.write(m, host, "float", n)             -- host into the buffer
--   local h = CLR.read(m, "float", n)           -- a new FFI array
local ffi = require("ffi")

ffi.cdef [[
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
int clGetPlatformIDs(uint32_t n, cl_platform_id *p, uint32_t *np);
int clGetDeviceIDs(cl_platform_id p, uint64_t type, uint32_t n, cl_device_id *d, uint32_t *nd);
cl_context clCreateContext(const intptr_t *props, uint32_t n, const cl_device_id *d,
                           void *notify, void *user, int *err);
cl_command_queue clCreateCommandQueue(cl_context c, cl_device_id d, uint64_t props, int *err);
cl_mem clCreateBuffer(cl_context c, uint64_t flags, size_t size, void *host, int *err);
int clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, uint32_t blocking, size_t off, size_t n,
                         const void *p, uint32_t ne, const void *ev, void *out);
int clEnqueueReadBuffer(cl_command_queue q, cl_mem m, uint32_t blocking, size_t off, size_t n,
                        void *p, uint32_t ne, const void *ev, void *out);
cl_program clCreateProgramWithSource(cl_context c, uint32_t n, const char **src, const size_t *len,
                                     int *err);
int clBuildProgram(cl_program p, uint32_t n, const cl_device_id *d, const char *opts, void *f,
                   void *u);
int clGetProgramBuildInfo(cl_program p, cl_device_id d, uint32_t what, size_t n, void *v,
                          size_t *ret);
cl_kernel clCreateKernel(cl_program p, const char *name, int *err);
int clSetKernelArg(cl_kernel k, uint32_t i, size_t size, const void *v);
int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, uint32_t dim, const size_t *off,
                           const size_t *global, const size_t *local, uint32_t ne, const void *ev,
                           void *out);
int clFinish(cl_command_queue q);
int clReleaseMemObject(cl_mem m);
]]
local CL = ffi.load("libOpenCL.so.1")

local function check(rc, what)
  if rc ~= 0 then error(what .. " failed: " .. tonumber(rc), 2) end
end

-- The OpenCL device gpujit lists first, found again through the raw API
-- (the first device of the first platform, as the backend numbers them).
local plat, dev = ffi.new("cl_platform_id[1]"), ffi.new("cl_device_id[1]")
check(CL.clGetPlatformIDs(1, plat, nil), "clGetPlatformIDs")
check(CL.clGetDeviceIDs(plat[0], 0xFFFFFFFF, 1, dev, nil), "clGetDeviceIDs")
local err = ffi.new("int[1]")
local ctx = CL.clCreateContext(nil, 1, dev, nil, nil, err)
check(err[0], "clCreateContext")
local queue = CL.clCreateCommandQueue(ctx, dev[0], 0, err)
check(err[0], "clCreateCommandQueue")


local R = { CL = CL, ctx = ctx, queue = queue, device = dev[0] }

function R.build(source, opts)
  local srcs = ffi.new("const char *[1]", { source })
  local prog = CL.clCreateProgramWithSource(ctx, 1, srcs, nil, err)
  check(err[0], "clCreateProgramWithSource")
  if CL.clBuildProgram(prog, 1, dev, opts or "", nil, nil) ~= 0 then
    local log = ffi.new("char[65536]")
    CL.clGetProgramBuildInfo(prog, dev[0], 0x1183, 65536, log, nil)
    error("OpenCL C build failed:\n" .. ffi.string(log))
  end
  return prog
end

-- A READ_WRITE buffer of n elements of ct; host (optional) copied in.
function R.buffer(ct, n, host)
  local bytes = math.max(1, n) * ffi.sizeof(ct)
  local m = CL.clCreateBuffer(ctx, 1, bytes, nil, err)
  check(err[0], "clCreateBuffer")
  if host then R.write(m, host, ct, n) end
  return m
end

function R.write(m, host, ct, n)
  check(CL.clEnqueueWriteBuffer(queue, m, 1, 0, n * ffi.sizeof(ct), host, 0, nil, nil),
    "clEnqueueWriteBuffer")
end

function R.read(m, ct, n)
  local h = ffi.new(ct .. "[?]", n)
  check(CL.clEnqueueReadBuffer(queue, m, 1, 0, n * ffi.sizeof(ct), h, 0, nil, nil),
    "clEnqueueReadBuffer")
  return h
end

-- args: cl_mem values (or tables with a .mem), or FFI one-element arrays
-- holding a scalar argument.
function R.kernel(prog, name, args)
  local k = CL.clCreateKernel(prog, name, err)
  check(err[0], "clCreateKernel " .. name)
  for i, a in ipairs(args) do R.arg(k, i - 1, a) end
  return k
end

function R.arg(k, i, a)
  if type(a) == "table" then a = a.mem end
  if ffi.istype("cl_mem", a) then
    check(CL.clSetKernelArg(k, i, ffi.sizeof("cl_mem"), ffi.new("cl_mem[1]", a)), "clSetKernelArg")
  else
    check(CL.clSetKernelArg(k, i, ffi.sizeof(a), a), "clSetKernelArg")
  end
end

-- Enqueue k over global (a list of sizes) in groups of group (a list, or
-- nil: the implementation chooses), and wait for it.
function R.run(k, global, group)
  local g = ffi.new("size_t[3]", global)
  local l = group and ffi.new("size_t[3]", group) or nil
  check(CL.clEnqueueNDRangeKernel(queue, k, #global, nil, g, l, 0, nil, nil), "clEnqueueNDRangeKernel")
  check(CL.clFinish(queue), "clFinish")
end

return R
