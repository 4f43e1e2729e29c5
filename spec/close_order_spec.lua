-- Finalizers at lua_close (docs/reliability.md, "Finalizers and
-- lua_close"): LuaJIT runs every cdata finalizer first, the handles of
-- streams and events among them, whatever still refers to them.  A
-- program's own finalizer (a cdata's or a userdata's) that runs later and
-- launches on a stream, synchronizes it, records or waits for an event,
-- or launches with a gpu.array, finds each object alive or gets a Lua error
-- saying it is closed (or freed), never freed memory.  Before, a launch on
-- a stream there was a heap-use-after-free in gj_stream_launch.  Each case
-- runs in a child process (the state must really close); under make check
-- that child runs under ASan too.
local H = require("spec.helpers")

local CHILD = [[
local how = %q
local k = gpu.kernel(function(a) local i = gpu.global_id(0); a[i] = a[i] + 1 end, { cache = false })
local s = gpu.stream()
local arr = gpu.array("double", 16)
local host = ffi.new("double[16]")
k:launch({ global = 16, stream = s }, host)
local ev = s:record()
s:synchronize()
local uses = {
  function() k:launch({ global = 16, stream = s }, host); s:synchronize() end,
  function() s:synchronize() end,
  function() return s:record() end,
  function() ev:synchronize() end,
  function() return ev:query() end,
  function() s:wait(ev) end,
  function() k:launch(16, arr) end,
  function() k:launch(16, host) end,
}
local function finalizer()
  local out = {}
  for i, use in ipairs(uses) do
    local ok, err = pcall(use)
    err = tostring(err)
    if ok then
      out[i] = "ok"
    elseif err:find("is closed", 1, true) or err:find("has been freed", 1, true) then
      out[i] = "closed"
    else
      out[i] = "unexpected: " .. err
    end
  end
  io.stdout:write("FINALIZER ", table.concat(out, ","), "\n")
  io.stdout:flush()
end
if how == "cdata" then
  KEEP = ffi.gc(ffi.new("int[1]"), finalizer)
else
  KEEP = newproxy(true)
  getmetatable(KEEP).__gc = finalizer
end
-- more objects whose finalizers run around it
for _ = 1, 20 do
  local s2 = gpu.stream()
  k:launch({ global = 16, stream = s2 }, ffi.new("double[16]"))
  OTHERS = OTHERS or {}
  OTHERS[#OTHERS + 1] = { s2, s2:record(), gpu.array("float", 4) }
end
print("DONE")
]]

for _, bk in ipairs(H.backends) do
  describe("finalizers at lua_close on " .. bk, function()
    for _, how in ipairs({ "cdata", "userdata" }) do
      it("a " .. how .. " finalizer that uses streams, events and arrays", function()
        H.need(bk)
        local ok, out = H.run_isolated(bk, CHILD:format(how))
        assert.is_true(ok, out)
        assert.matches("DONE", out, 1, true)
        local line = out:match("FINALIZER ([^\n]*)")
        assert.is_not_nil(line, out)
        for word in line:gmatch("[^,]+") do
          assert.is_true(word == "ok" or word == "closed", out)
        end
      end)
    end
  end)
end
