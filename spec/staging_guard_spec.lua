-- Writes just outside a Lua table without boundscheck (docs/reliability.md,
-- "Without boundscheck"): t[0] and t[#t+1] land in guard elements around
-- the table's staging buffer, so they may read or write a wrong value but
-- never corrupt the heap; the launch completes and later launches work.
-- Each case runs in a child process under `timeout`: before the guards, the
-- first launch hung (a write before the staging buffer corrupted malloc's
-- heap), and a regression must fail the spec, not hang or kill the suite.
local H = require("spec.helpers")

local CHILD = [[
local elem = %q
-- item 0 writes one element before and one after the table, every item
-- increments its own element; nothing else is out of range
local k = gpu.kernel({ elem .. "[]", "int32_t" }, function(t, n)
  local i = gpu.global_id()
  if i == 0 then
    t[0] = t[0] + 99
    t[n + 1] = 98
  end
  t[i + 1] = t[i + 1] + 1
end, { name = "offbyone" })
for round = 1, 3 do
  for _, n in ipairs({ 1, 3, 15, 16, 17, 100, 1000, 4099 }) do
    local t = {}
    for j = 1, n do t[j] = j %% 100 end
    k:launch(n, t, n)
    assert(#t == n and t[0] == nil and t[n + 1] == nil, "the table grew")
    for j = 1, n do
      assert(t[j] == j %% 100 + 1, "round " .. round .. ", n " .. n .. ": t[" .. j .. "] = " .. t[j])
    end
  end
end
-- the module goes on: an FFI array kernel and a table kernel
local s = gpu.kernel(function(y, x, a) local i = gpu.global_id(); y[i] = a * x[i] + y[i] end)
local y, x = ffi.new("float[4]", 1, 1, 1, 1), ffi.new("float[4]", 0, 1, 2, 3)
s:launch(4, y, x, 2)
assert(y[3] == 7)
local t = { 1, 2, 3 }
k:launch(3, t, 3)
assert(t[3] == 4)
collectgarbage()
collectgarbage()
print("DONE")
]]

local cases = {}
for _, bk in ipairs(H.compilers) do
  cases[#cases + 1] = { bk = bk, label = bk, pre = "" }
  if bk == "opencl" then cases[#cases + 1] = { bk = bk, label = "opencl (staged)", pre = H.OPENCL_STAGED } end
end

for _, c in ipairs(cases) do
  local bk = c.bk
  describe("tables indexed out of range without boundscheck on " .. c.label, function()
    for _, elem in ipairs({ "float", "double", "int32_t", "int8_t" }) do
      it("write t[0] and t[#t+1] of " .. elem .. " tables without harm", function()
        H.need(bk)
        local path = os.tmpname()
        local f = assert(io.open(path, "w"))
        f:write(c.pre, "local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use(",
          ("%q"):format(bk),
          ")\nassert(#gpu.devices() > 0)\n", CHILD:format(elem))
        f:close()
        -- MALLOC_CHECK_/MALLOC_PERTURB_: glibc notices a damaged heap sooner
        local p = io.popen("timeout 60 env MALLOC_CHECK_=3 MALLOC_PERTURB_=165 " .. H.luajit_cmd()
          .. " " .. path .. " 2>&1; echo \"exit status $?\"")
        local out = p:read("*a")
        p:close()
        os.remove(path)
        assert.truthy(out:find("DONE\nexit status 0", 1, true), out)
      end)
    end
  end)
end
