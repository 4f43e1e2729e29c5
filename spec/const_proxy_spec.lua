-- FFI arrays of const elements and tables with __index/__newindex, alike
-- on every backend and sim (docs/api.md, "Kernel arguments"): a kernel may
-- read a const array and is refused, with the same message, when it writes
-- one (before, cpu wrote it, opencl raised an internal error and sim
-- refused with LuaJIT's own message); a table argument is read as t[j]
-- for j = 1..#t and written back as t[j] = v, and what the kernel stores
-- outside 1..#t is lost (before, sim wrote through to the proxy).
local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

for _, bk in ipairs(H.backends) do
  describe("const FFI arrays on " .. bk, function()
    it("are read", function()
      local k = H.kernel(bk, function(a, o)
        local i = gpu.global_id(0)
        o[i] = a[i] * 2
      end)
      local a = ffi.new("const float[4]", 1, 2, 3, 4)
      local o = ffi.new("float[4]")
      k:launch(4, a, o)
      assert.are.same({ 2, 4, 6, 8 }, { o[0], o[1], o[2], o[3] })
    end)

    it("are refused, with the same message, when the kernel writes them", function()
      local k = H.kernel(bk, function(o, a)
        local i = gpu.global_id(0)
        a[i] = 9
        o[i] = 1
      end, { name = "wconst" })
      local a = ffi.new("const double[4]", 1, 2, 3, 4)
      local o = ffi.new("double[4]")
      for _ = 1, 2 do
        local msg = H.error_of(function() k:launch(4, o, a) end)
        assert.matches("bad argument #2 'a' to kernel 'wconst': the FFI array's elements are "
          .. "const (const double [4]) and the kernel writes them; pass an array without const",
          msg, 1, true)
        assert.are.same({ 1, 2, 3, 4 }, { a[0], a[1], a[2], a[3] })
      end
      -- the same kernel with a plain array
      local b = ffi.new("double[4]")
      k:launch(4, o, b)
      assert.are.same({ 9, 9, 9, 9 }, { b[0], b[1], b[2], b[3] })
    end)
  end)

  describe("tables with __index and __newindex on " .. bk, function()
    it("are read with t[j] and written back with t[j] = v, for j in 1..#t", function()
      local k = H.kernel(bk, function(t)
        local i = gpu.global_id(0)
        t[i + 1] = t[i + 1] + 1
      end)
      local stored = {}
      local t = setmetatable({ 1, 2, 3, 4 }, {
        __index = function(_, j) return j * 10 end,
        __newindex = function(_, j, v) stored[j] = v end })
      t[2] = nil
      assert.are.equal(4, #t)
      k:launch(4, t)
      assert.are.same({ 2, 4, 5 }, { rawget(t, 1), rawget(t, 3), rawget(t, 4) })
      assert.is_nil(rawget(t, 2))
      assert.are.same({ [2] = 21 }, stored)
    end)

    it("lose what the kernel stores outside 1..#t, as any table does", function()
      local k = H.kernel(bk, function(t, o)
        o[1] = #t
        t[1] = 5
      end)
      local backing, stored = { 7, 7 }, {}
      local proxy = setmetatable({}, {
        __index = backing,
        __newindex = function(_, j, v) stored[j] = v end })
      local o = { -1 }
      k:launch(1, proxy, o)
      assert.are.equal(0, o[1])
      assert.are.same({}, stored)
      assert.is_nil(rawget(proxy, 1))
      assert.are.same({ 7, 7 }, backing)
    end)
  end)
end
