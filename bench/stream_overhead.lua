-- Host time per launch of a one-item kernel, in microseconds, on the opencl
-- backend (issue 22): gpujit's k:launch without a stream (enqueue + finish)
-- and on a stream (the enqueue; synchronize once per round), against the
-- bare OpenCL calls from LuaJIT's FFI on the same device (bench/clref.lua):
-- clSetKernelArg + clEnqueueNDRangeKernel (+ clFinish for the synchronous
-- case).  And the cpu backend's two paths.  Rounds interleaved, medians of 7.
-- Run: make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;"
--      luajit bench/stream_overhead.lua [launches per round, default 2000]
local gpu = require("gpujit")
local ffi = require("ffi")
local now = require("gpujit.util").now
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local N = tonumber(arg and arg[1]) or 2000

local function fn(o, n)
  local i = gpu.global_id(0)
  if i < n then o[i] = i end
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

local out = {}
local function gj_paths(bk)
  local k = gpu.kernel(fn, { backend = bk })
  local o = gpu.zeros("double", 1, bk)
  local s = gpu.stream(bk)
  local cfg, cfgs = { global = 1 }, { global = 1, stream = s }
  k:launch(cfg, o, 1); k:launch(cfgs, o, 1); s:synchronize()
  return {
    [bk .. " sync"] = function() for _ = 1, N do k:launch(cfg, o, 1) end end,
    [bk .. " stream enqueue"] = function() for _ = 1, N do k:launch(cfgs, o, 1) end end,
    [bk .. " stream synchronize"] = function() s:synchronize() end,
  }
end

local cases = gj_paths("cpu")
local have_ocl = pcall(function() for k, v in pairs(gj_paths("opencl")) do cases[k] = v end end)
if have_ocl then
  local CLR = dofile(here .. "clref.lua")
  local CL, q = CLR.CL, CLR.queue
  local prog = CLR.build([[
    __kernel void one(__global double *o, int n) {
      int i = get_global_id(0);
      if (i < n) o[i] = i;
    }]])
  local m = CLR.buffer("double", 1)
  local k = CLR.kernel(prog, "one", { m, ffi.new("int[1]", 1) })
  local g, mem, n1 = ffi.new("size_t[1]", 1), ffi.new("cl_mem[1]", m), ffi.new("int[1]", 1)
  local function one()
    CL.clSetKernelArg(k, 0, ffi.sizeof("cl_mem"), mem)
    CL.clSetKernelArg(k, 1, 4, n1)
    CL.clEnqueueNDRangeKernel(q, k, 1, nil, g, nil, 0, nil, nil)
  end
  cases["C opencl enqueue + finish"] = function() for _ = 1, N do one(); CL.clFinish(q) end end
  cases["C opencl enqueue"] = function() for _ = 1, N do one() end end
  cases["C opencl finish"] = function() CL.clFinish(q) end
end

-- each enqueue-only path is followed by its drain, before the next path
local names = {}
for _, name in ipairs({ "cpu sync", "cpu stream enqueue", "cpu stream synchronize",
  "opencl sync", "opencl stream enqueue", "opencl stream synchronize",
  "C opencl enqueue + finish", "C opencl enqueue", "C opencl finish" }) do
  if cases[name] then names[#names + 1] = name end
end
for _, name in ipairs(names) do out[name] = {} end
for _ = 1, 7 do
  for _, name in ipairs(names) do
    local t0 = now()
    cases[name]()
    out[name][#out[name] + 1] = (now() - t0) / N * 1e6
  end
end
print(("%-28s %12s"):format("path (" .. N .. " launches)", "us / launch"))
for _, name in ipairs(names) do print(("%-28s %12.2f"):format(name, median(out[name]))) end
