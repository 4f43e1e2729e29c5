-- Time to first kernel, cold and from the disk cache, for every present backend.
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/cache.lua [ROUNDS]
--
-- Each measurement is a process of its own (what a user sees when a script
-- starts): the module is loaded and the backend opened first, then the first
-- launch of saxpy (1e5 floats) is timed (wall clock), which compiles it:
--   cold   an empty cache directory: the whole pipeline;
--   disk   the same directory again: a disk-cache hit;
--   memory the second launch in the same process: an in-memory hit.
-- Medians of ROUNDS (default 7) processes per backend, each with a cold and
-- a warm process side by side.  "(cpu ms)" is the cold process's CPU time
-- over the same span (all its threads), which a loaded machine inflates less.
-- Goals (issue 6): disk >= 20x faster than cold; cold < 50 ms on the cpu backend.
-- "opencl SPIR-V" (GPUJIT_OPENCL_FORMAT=spirv) shows what the translator adds.
local CHILD = [[
local ffi = require("ffi")
local now = require("gpujit.util").now   -- the monotonic clock
local gpu = require("gpujit")
gpu.use(arg[1])
gpu.synchronize()                      -- the backend is open before the clock starts
local n = 1000
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do x[i] = i; y[i] = 1 end
local t0, c0 = now(), os.clock()
local k = gpu.kernel(function(a, xs, ys, m)
  local i = gpu.global_id(0)
  if i < m then ys[i] = a * xs[i] + ys[i] end
end)
k:launch(n, 2.0, x, y, n)
local t1, c1 = now(), os.clock()
k:launch(n, 2.0, x, y, n)
local t2 = now()
assert(y[10] == 41, "wrong result")
local s = gpu.cache.stats()
io.write(string.format("%.6f %.6f %d %d %.6f\n", t1 - t0, t2 - t1, s.hits, s.compiles, c1 - c0))
]]

local rounds = tonumber(arg and arg[1]) or 7
local script = os.tmpname()
local f = assert(io.open(script, "w"))
f:write(CHILD)
f:close()

local function q(v) return "'" .. v:gsub("'", "'\\''") .. "'" end

local function run(bk, dir, env)
  local p = io.popen(env .. " GPUJIT_CACHE_DIR=" .. q(dir) .. " LUA_PATH=" .. q(package.path) .. " LUA_CPATH="
    .. q(package.cpath) .. " luajit " .. script .. " " .. bk .. " 2>&1")
  local out = p:read("*a")
  p:close()
  local first, second, hits, compiles, cpu = out:match("^(%S+) (%S+) (%d+) (%d+) (%S+)")
  if not first then error("benchmark process failed on " .. bk .. ":\n" .. out) end
  return tonumber(first), tonumber(second), tonumber(hits), tonumber(compiles), tonumber(cpu)
end

local median = dofile((arg and arg[0] or "bench/cache.lua"):gsub("[^/]*$", "") .. "timing.lua").median

-- PoCL keeps a kernel cache of its own (~/.cache/pocl), on by default:
-- the opencl backend is measured as users get it, and with that cache off,
-- where "cold" is cold for PoCL too.
local gpu = require("gpujit")
local configs = {}
for _, b in ipairs(gpu.backends()) do
  if b.available and b.name ~= "sim" then
    configs[#configs + 1] = { bk = b.name, label = b.name, env = "" }
    if b.name == "opencl" then
      configs[#configs + 1] = { bk = b.name, label = "opencl, POCL_KERNEL_CACHE=0",
        env = "POCL_KERNEL_CACHE=0" }
      -- SPIR-V: the translator and spirv-val per cold compile, and on PoCL
      -- the translation back to SPIR (docs/backends.md)
      configs[#configs + 1] = { bk = b.name, label = "opencl SPIR-V, no PoCL cache",
        env = "POCL_KERNEL_CACHE=0 GPUJIT_OPENCL_FORMAT=spirv" }
    end
  end
end

print(string.format("%-28s %10s %10s %10s %10s %10s", "backend", "cold ms", "(cpu ms)", "disk ms",
  "memory us", "cold/disk"))
for _, cfg in ipairs(configs) do
  local bk = cfg.bk
  local cold, disk, mem, ccpu = {}, {}, {}, {}
  for r = 1, rounds do
    local dir = os.tmpname()
    os.remove(dir)
    local c, m1, h1, n1, cc = run(bk, dir, cfg.env)
    local d, m2, h2, n2 = run(bk, dir, cfg.env)
    assert(h1 == 0 and n1 == 1, "the cold run must compile")
    assert(h2 == 1 and n2 == 0, "the warm run must hit the disk cache")
    cold[r], disk[r], mem[#mem + 1], mem[#mem + 2], ccpu[r] = c, d, m1, m2, cc
    os.execute("rm -rf " .. q(dir))
  end
  local mc, md, mm = median(cold), median(disk), median(mem)
  print(string.format("%-28s %10.2f %10.2f %10.3f %10.1f %10.1f", cfg.label, mc * 1e3,
    median(ccpu) * 1e3, md * 1e3, mm * 1e6, mc / md))
end
os.remove(script)
