-- Host time per launch of a one-item kernel, in microseconds, on the opencl
-- backend (issue 22): gpujit's k:launch without a stream (enqueue + finish)
-- and on a stream (the enqueue; synchronize once per round), against the
-- bare OpenCL calls from LuaJIT's FFI on the same device (bench/clref.lua):
-- clSetKernelArg + clEnqueueNDRangeKernel (+ clFinish for the synchronous
-- case).  And the cpu backend's two paths.  Rounds interleaved, medians of
-- 21.  Two clocks: the wall clock (what the caller waits), and the calling
-- thread's CPU time (what it spends: on this 2-core machine PoCL's two
-- workers preempt the caller while they run the kernels, which the wall
-- clock counts and which varied the enqueue's wall time 1.5x between runs).
-- Run: make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;"
--      luajit bench/stream_overhead.lua [launches per round, default 2000]
local gpu = require("gpujit")
local ffi = require("ffi")
local now = require("gpujit.util").now
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local N = tonumber(arg and arg[1]) or 2000
local ROUNDS = 21

-- a private name for clock_gettime (asm label): a program's own declaration
-- of the standard form must keep working beside this one
pcall(ffi.cdef, [[
  struct gj_so_timespec { long tv_sec; long tv_nsec; };
  int gj_so_clock_gettime(int clk, struct gj_so_timespec *ts) asm("clock_gettime");
]])
local tsp = ffi.new("struct gj_so_timespec")
local function cpu_now()   -- CLOCK_THREAD_CPUTIME_ID
  ffi.C.gj_so_clock_gettime(3, tsp)
  return tonumber(tsp.tv_sec) + tonumber(tsp.tv_nsec) * 1e-9
end

local function fn(o, n)
  local i = gpu.global_id(0)
  if i < n then o[i] = i end
end

local function median(list)   -- list stays in its order (ratio pairs rounds)
  local t = {}
  for i = 1, #list do t[i] = list[i] end
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

-- Each round runs every unit once; a unit is a path, or an enqueue-only
-- path and its drain.  The units that are compared (gpujit's and the bare
-- C's) run next to each other, in turns first and second: odd rounds
-- gpujit first, even rounds the C first.
local units = {
  { "cpu sync" }, { "cpu stream enqueue", "cpu stream synchronize" },
  { "opencl sync" }, { "C opencl enqueue + finish" },
  { "opencl stream enqueue", "opencl stream synchronize" }, { "C opencl enqueue", "C opencl finish" },
}
local names = {}
for _, u in ipairs(units) do
  for _, name in ipairs(u) do
    if cases[name] then names[#names + 1] = name end
  end
end
local cpu = {}
for _, name in ipairs(names) do out[name], cpu[name] = {}, {} end
local function run(name)
  if not cases[name] then return end
  local t0, c0 = now(), cpu_now()
  cases[name]()
  local t1, c1 = now(), cpu_now()
  out[name][#out[name] + 1] = (t1 - t0) / N * 1e6
  cpu[name][#cpu[name] + 1] = (c1 - c0) / N * 1e6
end
for r = 1, ROUNDS do
  for i = 1, #units, 2 do
    local a, b = units[i], units[i + 1]
    if r % 2 == 0 and i > 1 then a, b = b, a end
    for _, name in ipairs(a) do run(name) end
    for _, name in ipairs(b) do run(name) end
  end
end
print(("%-28s %12s %12s"):format("path (" .. N .. " launches)", "us / launch", "cpu us"))
for _, name in ipairs(names) do
  print(("%-28s %12.2f %12.2f"):format(name, median(out[name]), median(cpu[name])))
end
-- gpujit over the bare C: the ratio of the medians, and the median of each
-- round's ratio (the two paths run next to each other in every round)
local function ratios(a, b, t)
  if not (t[a] and t[b]) then return nil end
  local r = {}
  for i = 1, #t[a] do r[i] = t[a][i] / t[b][i] end
  return median(t[a]) / median(t[b]), median(r)
end
local function line(what, a, b)
  local w1, w2 = ratios(a, b, out)
  if not w1 then return end
  local c1, c2 = ratios(a, b, cpu)
  print(("opencl / bare C, %-15s %.2fx (rounds' ratios %.2fx; cpu time %.2fx, %.2fx)")
    :format(what .. ":", w1, w2, c1, c2))
end
line("synchronous", "opencl sync", "C opencl enqueue + finish")
line("stream enqueue", "opencl stream enqueue", "C opencl enqueue")
