-- Bounded FFI type use (docs/reliability.md, "Limits"): LuaJIT never frees
-- a ctype id (65,536 per state), and argument blocks were a new struct type
-- per compiled overload (4 ids for a kernel of two arguments), so a
-- program that kept making kernels failed after ~16,000 of them with
-- "table overflow", in gpujit and in its own ffi.typeof.  Argument blocks
-- now share one ctype per layout: making and launching many kernels (each
-- a new kernel object that compiles its overload, through the compile
-- cache: cheap) spends a bounded number of ids.  On cpu the count is past
-- where the ids ran out before; the full 100,000 was measured by hand
-- (docs/reliability.md).  The count runs in a child process: under busted
-- the same declarations did not spend new ids, before the fix too, so only
-- a plain process shows the leak.
local H = require("spec.helpers")

local CHILD = [[
local n = %d
-- the next free ctype id (spends two: a new struct and its field)
local nids = 0
local function next_id()
  nids = nids + 1
  return tonumber(ffi.typeof("struct { int budget_probe_" .. nids .. "; }"))
end
local fns = {
  function(a, x) local i = gpu.global_id(0); a[i] = a[i] + x end,
  function(a, x, y) local i = gpu.global_id(0); a[i] = a[i] + x + y end,
}
local layouts = {
  { fns[1], ffi.new("double[1]"), { 1 } },
  { fns[1], ffi.new("float[1]"), { 1 } },
  { fns[2], ffi.new("int32_t[1]"), { 1, 1 } },
}
local want = { 0, 0, 0 }
local first = next_id()
for j = 1, n do
  local l = j %% #layouts + 1
  local L = layouts[l]
  local k = gpu.kernel(L[1], { name = "budget" .. j })
  k:launch(1, L[2], unpack(L[3]))
  want[l] = want[l] + #L[3]
end
local spent = next_id() - first - 2
assert(spent < 64, "ctype ids spent by " .. n .. " kernels: " .. spent)
for l = 1, #layouts do
  assert(layouts[l][2][0] == want[l], "layout " .. l .. ": " .. tostring(layouts[l][2][0]))
end
-- the program's own types still work
assert(ffi.sizeof(ffi.typeof("struct { int32_t a, b; }")) == 8)
print("DONE", spent)
]]

for _, bk in ipairs(H.backends) do
  describe("FFI type use on " .. bk, function()
    it("stays bounded over many kernels made and launched", function()
      H.need(bk)
      local n = bk == "cpu" and 20000 or 600
      local ok, out = H.run_isolated(bk, CHILD:format(n))
      assert.is_true(ok and out:find("DONE") ~= nil, out)
    end)
  end)
end
