-- The disk cache's compile lock across processes (src/gj_cache.c,
-- gj_cache_lock): processes that start compiling the same kernel at the
-- same moment on one fresh directory compile it once; the others wait for
-- the entry and load it.  (An MPI job's ranks are such processes:
-- spec/mpi/cache.lua.)  No lock file stays behind.
local H = require("spec.helpers")

local N = 3

local CODE = [[
local gpu, ffi = require("gpujit"), require("ffi")
gpu.use(arg[1])
local go = arg[2]
local k = gpu.kernel(function(a, s)
  local i = gpu.global_id(0)
  a[i] = a[i] * s + i
end, { name = "lock_spec" })
local a = ffi.new("double[64]")
for i = 0, 63 do a[i] = i end
-- wait for the go file, so that every process compiles at once
local t0 = os.clock()
while not io.open(go) do
  if os.clock() - t0 > 120 then error("no go file") end
end
k:launch(64, a, 2)
assert(a[63] == 63 * 3, "wrong result")
local s = gpu.cache.stats()
print(string.format("STATS compiles=%d hits=%d rejected=%d", s.compiles, s.hits, s.rejected))
]]

for _, bk in ipairs(H.compilers) do
  describe("the disk cache's compile lock on " .. bk, function()
    it(N .. " processes compiling one kernel at once compile it once", function()
      H.need(bk)
      local dir = H.tmpdir()
      local script, go = dir .. "/child.lua", dir .. "/go"
      local f = assert(io.open(script, "w"))
      f:write(CODE)
      f:close()
      local cmd = {}
      for i = 1, N do
        cmd[i] = "(timeout 180 env " .. H.luajit_cmd({ GPUJIT_CACHE_DIR = dir .. "/cache" }) .. " "
          .. script .. " " .. bk .. " " .. go .. " > " .. dir .. "/out" .. i .. " 2>&1; echo \"rc=$?\" >> "
          .. dir .. "/out" .. i .. ")"
      end
      -- start them, let them load gpujit and make the kernel, then go
      local p = assert(io.popen("{ " .. table.concat(cmd, " & ") .. " & sleep 1; touch " .. go
        .. "; wait; }"))
      p:read("*a")
      p:close()
      local compiles, hits = 0, 0
      for i = 1, N do
        local fh = assert(io.open(dir .. "/out" .. i))
        local out = fh:read("*a")
        fh:close()
        local c, h, r = out:match("STATS compiles=(%d+) hits=(%d+) rejected=(%d+)")
        assert(c and out:match("rc=0"), "process " .. i .. ":\n" .. out)
        assert.are.equal("0", r)
        compiles, hits = compiles + tonumber(c), hits + tonumber(h)
      end
      assert.are.same({ 1, N - 1 }, { compiles, hits })
      local ls = io.popen("ls -A '" .. dir .. "/cache'")
      local names = ls:read("*a")
      ls:close()
      assert.is_nil(names:find(".lock-", 1, true), names)
      assert.is_truthy(names:find("%.gjc"), names)
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end)
end
