-- Do launches on a cpu stream and an opencl stream run at the same time?
-- (moved here from streams_spec: a speed property, which a loaded machine
-- can hide, so it is measured, not asserted).  Two launches of about the
-- same length (~300 ms each), one per device, the host polling their
-- events: one after the other, the first finishes at about half the time
-- the second does (ratio ~0.5); at the same time (two cores, or taking
-- turns on one), both finish near the end (ratio near 1).
--
--   GPUJIT_THREADS=1 POCL_MAX_PTHREAD_COUNT=1 \
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/two_devices.lua [rounds]
local ffi = require("ffi")
local gpu = require("gpujit")
local util = require("gpujit.util")
local now = util.now
pcall(ffi.cdef, "int gj_bench_usleep(unsigned us) asm(\"usleep\");")

local rounds = tonumber(arg and arg[1]) or 5
local function long_fn(x, n, reps)
  local i = gpu.global_id(0)
  if i < n then local v = x[i]; for _ = 1, reps do v = v * 1.0 + 1.0 end; x[i] = v end
end
local kc = gpu.kernel(long_fn, { backend = "cpu", cache = false })
local ko = gpu.kernel(long_fn, { backend = "opencl", cache = false })
local n = 200000
local xc, xo = ffi.new("double[?]", n), ffi.new("double[?]", n)
local function reps_for(k, x)
  k:launch(n, x, n, 1)
  local reps = 100
  while true do
    local t0 = now(); k:launch(n, x, n, reps); local dt = now() - t0
    if dt > 0.1 then return math.ceil(reps * 0.3 / dt) end
    reps = reps * 4
  end
end
local rc, ro = reps_for(kc, xc), reps_for(ko, xo)
local sc, so = gpu.stream("cpu"), gpu.stream("opencl")
local ratios = {}
for r = 1, rounds do
  local t0 = now()
  kc:launch({ global = n, stream = sc }, xc, n, rc)
  ko:launch({ global = n, stream = so }, xo, n, ro)
  local ec, eo = sc:record(), so:record()
  local tc, to
  while not (tc and to) do
    if not tc and ec:query() then tc = now() - t0 end
    if not to and eo:query() then to = now() - t0 end
    ffi.C.gj_bench_usleep(2000)
  end
  sc:synchronize(); so:synchronize()
  ratios[r] = math.min(tc, to) / math.max(tc, to)
  print(("round %d: cpu done after %.0f ms, opencl after %.0f ms, ratio %.3f")
    :format(r, tc * 1e3, to * 1e3, ratios[r]))
end
print(("median ratio %.3f (one after the other ~0.5, at the same time ~1)"):format(util.median(ratios)))
