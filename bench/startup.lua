-- What a process pays before its first kernel runs, from the disk cache
-- (issue 35: the goal is <= 10 ms for require + the first launch, every
-- kernel on disk).
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     nice luajit bench/startup.lua [ROUNDS] [BACKENDS]
--
-- Each sample is a fresh luajit process (the interpreter's own start is not
-- counted: the clock starts at the child's first line).  Columns, medians of
-- ROUNDS (default 20) processes per backend:
--   core      loading the compiled core alone (package.loadlib of
--             gpujit.core: the dynamic loader maps it and what it links)
--   require   require("gpujit")
--   open      gpu.use(backend) and gpu.synchronize(): the backend opened
--   launch    the first launch of saxpy, a disk-cache hit (checked)
--   first     require + open + launch: the warm time to first kernel
-- BACKENDS: a comma list (default: every present one but sim).
local CHILD = [[
local ffi = require("ffi")
ffi.cdef("typedef struct { long s, ns; } gjst_ts; int clock_gettime(int, gjst_ts *);")
local ts = ffi.new("gjst_ts")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.s) + tonumber(ts.ns) * 1e-9 end
local t0 = now()
if arg[2] == "core" then
  local path = package.searchpath("gpujit.core", package.cpath)
  assert(package.loadlib(path, "luaopen_gpujit_core"))
  io.write(string.format("%.6f\n", now() - t0))
  return
end
local gpu = require("gpujit")
local t1 = now()
gpu.use(arg[1])
gpu.synchronize()
local t2 = now()
local n = 1000
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do x[i] = i; y[i] = 1 end
local k = gpu.kernel(function(a, xs, ys, m)
  local i = gpu.global_id(0)
  if i < m then ys[i] = a * xs[i] + ys[i] end
end)
k:launch(n, 2.0, x, y, n)
local t3 = now()
assert(y[10] == 21, "wrong result")
local s = gpu.cache.stats()
io.write(string.format("%.6f %.6f %.6f %d %d\n", t1 - t0, t2 - t1, t3 - t2, s.hits, s.compiles))
]]

local rounds = tonumber(arg and arg[1]) or 20
local script = os.tmpname()
local f = assert(io.open(script, "w"))
f:write(CHILD)
f:close()

local function q(v) return "'" .. v:gsub("'", "'\\''") .. "'" end

local function run(bk, dir, what)
  local p = io.popen("GPUJIT_CACHE_DIR=" .. q(dir) .. " LUA_PATH=" .. q(package.path) .. " LUA_CPATH="
    .. q(package.cpath) .. " luajit " .. script .. " " .. bk .. " " .. (what or "") .. " 2>&1")
  local out = p:read("*a")
  p:close()
  return out
end

local median = dofile((arg and arg[0] or "bench/startup.lua"):gsub("[^/]*$", "") .. "timing.lua").median

local list = {}
if arg and arg[2] then
  for b in arg[2]:gmatch("[^,]+") do list[#list + 1] = b end
else
  for _, b in ipairs(require("gpujit").backends()) do
    if b.available and b.name ~= "sim" then list[#list + 1] = b.name end
  end
end

print(string.format("%-10s %9s %9s %9s %9s %9s", "backend", "core ms", "require", "open",
  "launch", "first"))
for _, bk in ipairs(list) do
  local dir = os.tmpname()
  os.remove(dir)
  run(bk, dir)   -- fills the cache
  local core, req, open, launch, first = {}, {}, {}, {}, {}
  for r = 1, rounds do
    core[r] = tonumber(run(bk, dir, "core"):match("^(%S+)\n"))
    local out = run(bk, dir)
    local a, b, c, hits, compiles = out:match("^(%S+) (%S+) (%S+) (%d+) (%d+)")
    if not a then error("benchmark process failed on " .. bk .. ":\n" .. out) end
    assert(tonumber(hits) == 1 and tonumber(compiles) == 0, "the warm run must hit the disk cache")
    req[r], open[r], launch[r] = tonumber(a), tonumber(b), tonumber(c)
    first[r] = req[r] + open[r] + launch[r]
  end
  print(string.format("%-10s %9.2f %9.2f %9.2f %9.2f %9.2f", bk, median(core) * 1e3, median(req) * 1e3,
    median(open) * 1e3, median(launch) * 1e3, median(first) * 1e3))
  os.execute("rm -rf " .. q(dir))
end
os.remove(script)
