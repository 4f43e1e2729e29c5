-- The disk cache against a hostile environment (issue 23): things in the
-- cache directory that are not entries, and GPUJIT_CACHE_MAX values that
-- are not sizes (an error of require("gpujit"): lua/gpujit/env.lua).
-- Everything runs in child processes under `timeout`, so that a regression
-- (a process blocked in open()) fails the spec instead of hanging the suite.
local H = require("spec.helpers")

local fresh_dir = H.scratch_dirs(after_each)   -- a fresh directory, removed after the test

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

describe("GPUJIT_CACHE_MAX", function()
  local bk = H.compilers[1]
  local good = {
    ["1000000"] = 1000000, ["0"] = 0, ["2K"] = 2048, ["512m"] = 512 * 2 ^ 20, ["2G"] = 2 * 2 ^ 30,
    ["1e9"] = 1e9, ["1.5M"] = 1.5 * 2 ^ 20, ["2.5e6"] = 2.5e6, ["8589934591K"] = (2 ^ 33 - 1) * 1024,
  }
  for text, bytes in pairs(good) do
    it("accepts " .. text .. " as " .. string.format("%.0f", bytes) .. " bytes", function()
      H.need(bk)
      local dir = fresh_dir()
      local ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir, GPUJIT_CACHE_MAX = text })
      assert(ok and s, out)
      assert.are.equal(string.format("%.0f", bytes), out:match("max=(%d+)"))
      assert.is_nil(out:find("GPUJIT_CACHE_MAX", 1, true), out)
    end)
  end
  it("takes '' (empty) as the default limit, silently", function()
    H.need(bk)
    local dir = fresh_dir()
    local ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir, GPUJIT_CACHE_MAX = "" })
    assert(ok and s, out)
    assert.are.equal(tostring(256 * 2 ^ 20), out:match("max=(%d+)"))
    assert.are.equal(1, s.writes)
    assert.is_nil(out:find("GPUJIT_CACHE_MAX", 1, true), out)
  end)
  -- each of these once disabled or shrank the cache without a word; now
  -- require("gpujit") refuses them, as every invalid GPUJIT_* (gpujit.env)
  local bad = { "12Q", "-5", "1e", "0.5", "1.5", "K", " 5M", "5 M", "5MB", "1e30",
    "99999999999999999999", "18014398509481984K", "0x10", "nan", "inf" }
  for _, text in ipairs(bad) do
    it("refuses '" .. text .. "' with an error naming it, before any compile", function()
      H.need(bk)
      local dir = fresh_dir()
      local ok, out, s = child(bk, SAXPY, { GPUJIT_CACHE_DIR = dir, GPUJIT_CACHE_MAX = text })
      assert.is_false(ok, out)
      assert.is_nil(s, out)
      local w = "require('gpujit'): GPUJIT_CACHE_MAX='" .. text .. "' is not valid: it takes a size"
      assert.truthy(out:find(w, 1, true), out)
      assert.are.equal(0, #H.ls("'" .. dir .. "'/*.gjc"), "an entry was written")
    end)
  end
end)
