-- Bounded FFI type use (docs/reliability.md, "Limits"): LuaJIT never frees
-- a ctype id (65,536 per state), and argument blocks were a new struct type
-- per compiled overload (4 ids for a kernel of two arguments), so a
-- program that kept making kernels failed after ~16,000 of them with
-- "table overflow", in gpujit and in its own ffi.typeof.  Argument blocks
-- now share one ctype per layout: making and launching many kernels (each
-- a new kernel object that compiles its overload, through the compile
-- cache: cheap) spends a bounded number of ids.  On cpu the count is past
-- where the ids ran out before; the full 100,000 was measured by hand
-- (docs/reliability.md).
local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- the next free ctype id (spends one)
local function next_id()
  return tonumber(ffi.typeof("struct { int x; }"))
end

local fns = {
  function(a, x) local i = gpu.global_id(0); a[i] = a[i] + x end,
  function(a, x, y) local i = gpu.global_id(0); a[i] = a[i] + x + y end,
}

for _, bk in ipairs(H.backends) do
  describe("FFI type use on " .. bk, function()
    it("stays bounded over many kernels made and launched", function()
      H.need(bk)
      local n = bk == "cpu" and 20000 or 600
      local layouts = {
        { fns[1], function() return ffi.new("double[1]") end, { 1 } },
        { fns[1], function() return ffi.new("float[1]") end, { 1 } },
        { fns[2], function() return ffi.new("int32_t[1]") end, { 1, 1 } },
      }
      local outs, want = {}, {}
      for l = 1, #layouts do outs[l], want[l] = layouts[l][2](), 0 end
      local first = next_id()
      for j = 1, n do
        local l = j % #layouts + 1
        local L = layouts[l]
        local k = H.kernel(bk, L[1], { cache = true, name = "budget" .. j })
        k:launch(1, outs[l], unpack(L[3]))
        want[l] = want[l] + #L[3]
      end
      local spent = next_id() - first - 1
      assert.is_true(spent < 64, "ctype ids spent by " .. n .. " kernels: " .. spent)
      -- every kernel ran
      for l = 1, #layouts do assert.are.equal(want[l], outs[l][0]) end
      -- the program's own types still work
      assert.are.equal(8, ffi.sizeof(ffi.typeof("struct { int32_t a, b; }")))
    end)
  end)
end
