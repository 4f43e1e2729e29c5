-- The disk cache against a hostile environment (issue 23): things in the
-- cache directory that are not entries, and GPUJIT_CACHE_MAX values that
-- are not sizes.  Everything runs in child processes under `timeout`, so
-- that a regression (a process blocked in open()) fails the spec instead of
-- hanging the suite.
local H = require("spec.helpers")

local made = {}
local function fresh_dir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p '" .. d .. "'") == 0)
  made[#made + 1] = d
  return d
end
after_each(function()
  for i = #made, 1, -1 do
    os.execute("rm -rf '" .. made[i] .. "'")
    made[i] = nil
  end
end)

local SAXPY = [[
local k = gpu.kernel(function(a, x, y, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end, { name = "saxpy" })
local n = 100
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do x[i] = i; y[i] = 1 end
k:launch(n, 2.0, x, y, n)
for i = 0, n - 1 do assert(y[i] == 2 * i + 1, "wrong result at " .. i) end
local s = gpu.cache.stats()
print(string.format("STATS hits=%d misses=%d rejected=%d writes=%d compiles=%d max=%d",
  s.hits, s.misses, s.rejected, s.writes, s.compiles, s.max_bytes))
]]

-- Run code in a new luajit process (bk selected) with env, killed after
-- `secs` seconds.  Returns ok, output, the STATS counters (or nil).
local function child(bk, code, env, secs)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use(", string.format("%q", bk),
    ")\n", code, "\n")
  f:close()
  local p = io.popen("timeout " .. (secs or 60) .. " env " .. H.luajit_cmd(env) .. " " .. path
    .. " 2>&1; echo \"exit status $?\"")
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local status = tonumber(out:match("exit status (%d+)%s*$"))
  local s
  local line = out:match("STATS ([^\n]*)")
  if line then
    s = {}
    for k, v in line:gmatch("(%w+)=(%d+)") do s[k] = tonumber(v) end
  end
  return status == 0, out, s, status
end

local function ftype(path)
  local p = io.popen("stat -c %F '" .. path .. "' 2>/dev/null")
  local t = p:read("*l")
  p:close()
  return t
end

for _, bk in ipairs(H.compilers) do
  describe("disk cache on " .. bk .. " with a hostile directory", function()
    it("treats a FIFO where an entry would be as a miss, never blocking in open()", function()
      H.need(bk)
      local dir = fresh_dir()
      local ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir })
      assert(ok and s, out)
      local files = H.ls("'" .. dir .. "'/*.gjc")
      assert.are.equal(1, #files)
      -- the entry's own name (the key's hex): what every process looks up
      assert(os.execute("rm -f '" .. files[1] .. "' && mkfifo '" .. files[1] .. "'") == 0)
      assert.are.equal("fifo", ftype(files[1]))
      ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir }, 20)
      assert(ok and s, "the launch did not complete (status 124: blocked):\n" .. out)
      assert.are.same({ 0, 1, 1, 1 }, { s.hits, s.misses, s.rejected, s.compiles })
      -- the write replaced the FIFO (a rename: nothing was written into it)
      assert.are.equal("regular file", ftype(files[1]))
      ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir }, 20)
      assert(ok and s, out)
      assert.are.same({ 1, 0 }, { s.hits, s.compiles })
    end)

    it("treats a directory where an entry would be as a miss", function()
      H.need(bk)
      local dir = fresh_dir()
      local ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir })
      assert(ok and s, out)
      local files = H.ls("'" .. dir .. "'/*.gjc")
      assert(os.execute("rm -f '" .. files[1] .. "' && mkdir '" .. files[1] .. "'") == 0)
      ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir }, 20)
      assert(ok and s, out)
      assert.are.same({ 0, 1, 1 }, { s.hits, s.rejected, s.compiles })
      assert.are.equal("directory", ftype(files[1]))
    end)
  end)
end
