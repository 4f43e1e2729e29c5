-- gpu.map, gpu.iota, gpu.arange and the scan's total (docs/api.md,
-- "Parallel primitives") against plain Lua on every backend of
-- GPUJIT_SPEC_BACKENDS: every element type, every kind of array, scalars
-- among the inputs, in place, empty and one element, and the errors.
local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

for _, bk in ipairs(H.backends) do
  describe("elementwise [" .. bk .. "]", function()
    H.use_in_block(bk)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": map of two arrays and a scalar, every size and kind, converted as stored", function()
        local f = function(x, y, s) return x * s - y end
        for _, n in ipairs(L.sizes(bk)) do
          local a, b = L.vals(ct, n, n + 1), L.vals(ct, n, n + 2)
          for _, kind in ipairs(L.KINDS) do
            local et = L.elem(kind, ct)
            local out = L.make(kind, ct, {}, n)
            local xa, xb = L.make(kind, ct, a), L.make(kind, ct, b)
            assert.equals(out, gpu.map(f, out, xa, xb, 3))
            local la, lb = L.list(xa, n), L.list(xb, n)
            local want = {}
            for i = 1, n do want[i] = L.as(et, f(la[i], lb[i], 3)) end
            L.assert_list(want, L.list(out, n), ("map %s %s n=%d"):format(kind, ct, n))
          end
        end
      end)
    end

    it("map: in place, mixed types, one input, many inputs, math, a boolean out", function()
      local n = bk == "sim" and 50 or 1001
      local x = ffi.new("double[?]", n)   -- (float math is float in kernels: docs/typing.md)
      for i = 0, n - 1 do x[i] = i * 0.25 end
      gpu.map(function(v) return math.sqrt(v) + 1 end, x, x)
      for i = 0, n - 1 do assert.equals(math.sqrt(i * 0.25) + 1, x[i]) end
      local d = gpu.array("double", n)
      local i32 = gpu.arange(n)
      gpu.map(function(a, b, c, e, g) return a + b * 2 + c * 3 + e * 4 + g * 5 end, d, i32, x, i32,
        1, x)
      local h = d:to_host()
      for i = 0, n - 1 do assert.equals(i + x[i] * 2 + i * 3 + 4 + x[i] * 5, h[i]) end
      local flags = ffi.new("bool[?]", n)
      gpu.map(function(v) return v > 10 end, flags, x)
      for i = 0, n - 1 do assert.equals(x[i] > 10, flags[i]) end
      local t = {}
      assert.equals(t, gpu.map(function(v) return v end, t))  -- empty out: nothing to do
    end)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": iota and arange", function()
        for _, n in ipairs(L.sizes(bk)) do
          for _, kind in ipairs(L.KINDS) do
            local et = L.elem(kind, ct)
            local a = L.make(kind, ct, {}, n)
            assert.equals(a, gpu.iota(a, 5, -2))
            local want = {}
            for i = 1, n do want[i] = L.as(et, 5 + (i - 1) * -2) end
            L.assert_list(want, L.list(a, n), ("iota %s %s n=%d"):format(kind, ct, n))
          end
          local r = gpu.arange(n, ct)
          assert.equals(n, #r)
          assert.equals(ct, r.ctype)
          local want = {}
          for i = 1, n do want[i] = L.as(ct, i - 1) end
          L.assert_list(want, L.list(r, n), "arange " .. ct)
        end
      end)
    end

    it("scan's total: into a 1-element device array, nothing read back; every op", function()
      for _, n in ipairs({ 0, 1, 7, bk == "sim" and 300 or 100001 }) do
        local vals = L.vals("int32_t", n, n + 9)
        for _, op in ipairs({ "+", "max", "min" }) do
          for _, excl in ipairs({ false, true }) do
            local a = L.make("garray", "int32_t", vals)
            local out = gpu.array("int64_t", n)
            local tot = gpu.array("int64_t", 1)
            gpu.scan(a, op, out, { exclusive = excl, total = tot })
            -- the op's identity in int64_t, the out's type, when empty
            local want = ({ ["+"] = 0LL, max = -0x7fffffffffffffffLL - 1,
              min = 0x7fffffffffffffffLL })[op]
            for i = 1, n do
              local v = vals[i]
              if i == 1 and op ~= "+" then want = v
              elseif op == "+" then want = want + v
              elseif op == "max" then want = math.max(want, v)
              else want = math.min(want, v) end
            end
            assert.is_true(tot:to_host()[0] == want, op .. " n=" .. n)
          end
        end
      end
      local t = ffi.new("double[1]")
      gpu.scan({ 1.5, 2, 3 }, function(x, y) return x + y end, { 0, 0, 0 }, { total = t })
      assert.equals(6.5, t[0])
    end)

    it("errors", function()
      local a = ffi.new("int32_t[4]")
      assert.has_error(function() gpu.map("f", a, a) end,
        "bad argument #1 to 'map' (a Lua function of scalars expected, got Lua string)")
      assert.has_error(function() gpu.map(function(x) return x end, a, ffi.new("int32_t[5]")) end,
        "bad argument #3 to 'map' (the array has 5 elements, out has 4)")
      assert.has_error(function() gpu.iota(a, "x") end,
        "bad argument #2 to 'iota' (start: number expected, got Lua string)")
      assert.has_error(function() gpu.arange(-1) end)
      assert.has_error(function() gpu.arange(3, "bool") end,
        "bad argument #2 to 'arange' (an integer or float element type expected, got bool)")
      assert.has_error(function() gpu.scan(a, "+", a, { exclusive = true, totl = a }) end,
        "bad argument #4 to 'scan' (unknown option 'totl' (expected exclusive, total))")
      assert.has_error(function() gpu.scan(a, "+", a, { total = a }) end,
        "bad argument #4 to 'scan' (total must be a 1-element array, got 4 elements)")
      if bk ~= "sim" then
        local ok, err = pcall(gpu.map, function(x) return { x } end, a, a)
        assert.is_false(ok)
        assert.matches("gpu.map_fn%d+_a", err)
      end
    end)
  end)
end
