-- The sort family beyond gpu.sort's ascending radix sort (docs/api.md,
-- "Parallel primitives"): descending order, gpu.argsort, several value
-- arrays, a comparison function (the merge sort), on every backend of
-- GPUJIT_SPEC_BACKENDS against a stable sort in plain Lua: every key type,
-- every kind of array, empty, one, odd sizes, NaNs and signed zeros,
-- stability, and the errors for unknown options.
local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

-- The stable order of keys (a Lua list): 1-based indices; NaN is the
-- largest key (last ascending, first descending), -0 == +0.
local function order(keys, desc, less)
  local idx = {}
  for i = 1, #keys do idx[i] = i end
  less = less or function(x, y) return x < y end
  table.sort(idx, function(p, q)
    local x, y = keys[p], keys[q]
    local xn, yn = x ~= x, y ~= y
    if xn or yn then
      if xn and yn then return p < q end
      if desc then return xn end
      return yn
    end
    if desc then x, y = y, x end
    if less(x, y) then return true end
    if less(y, x) then return false end
    return p < q
  end)
  return idx
end

local function check_perm(want, got, label)
  for i = 1, #want do
    if got[i] ~= want[i] - 1 then
      error(("%s: position %d holds index %s, expected %d"):format(label, i - 1,
        tostring(got[i]), want[i] - 1), 2)
    end
  end
end

for _, bk in ipairs(H.backends) do
  describe("the sort family [" .. bk .. "]", function()
    H.use_in_block(bk)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": descending with values, argsort both ways, every size and kind", function()
        for _, n in ipairs(L.sizes(bk)) do
          local keys = L.vals(ct, n, 2 * n + 1, n > 300 and 1000 or 9)
          for _, kind in ipairs(L.KINDS) do
            local et = L.elem(kind, ct)
            local stored = {}
            for i = 1, n do stored[i] = L.as(et, keys[i]) end
            local label = ("%s %s n=%d"):format(kind, ct, n)
            for _, desc in ipairs({ false, true }) do
              local want = order(stored, desc)
              local perm = gpu.argsort(L.make(kind, ct, keys), { descending = desc })
              check_perm(want, L.list(perm, n), "argsort " .. tostring(desc) .. " " .. label)
            end
            local want = order(stored, true)
            local k = L.make(kind, ct, keys)
            local v = L.make(kind == "table" and "table" or "ffi", "int32_t", {}, n)
            for i = 1, n do if kind == "table" then v[i] = i - 1 else v[i - 1] = i - 1 end end
            local rk, rv = gpu.sort(k, v, { descending = true })
            assert.equals(k, rk)
            assert.equals(v, rv)
            check_perm(want, L.list(v, n), "sort descending values " .. label)
            local gk = L.list(k, n)
            for i = 1, n do assert.is_true(L.same(stored[want[i]], gk[i]), label) end
          end
        end
      end)
    end

    it("floats: descending puts NaNs first, keeps -0/+0 and equal keys in order", function()
      for _, ct in ipairs({ "float", "double" }) do
        local nan = 0 / 0
        local keys = { 1, nan, -0.0, 0.0, -math.huge, 2.5, nan, math.huge, -0.0, 1 }
        local a = L.make("ffi", ct, keys)
        local v = ffi.new("int32_t[10]", { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 })
        gpu.sort(a, v, { descending = true })
        assert.same({ 1, 6, 7, 5, 0, 9, 2, 3, 8, 4 }, L.list(v, 10))
        assert.equals(-math.huge, 1 / a[6])   -- -0 (index 2) before +0 (index 3)
        assert.equals(math.huge, 1 / a[7])
      end
    end)

    it("several value arrays of different types follow the keys", function()
      for _, kind in ipairs(L.KINDS) do
        local n = bk == "sim" and 100 or 3001
        local keys = L.vals("int32_t", n, 17, 40)
        local bv, cv = {}, {}
        for i = 1, n do bv[i], cv[i] = (i - 1) * 0.5, (i - 1) % 256 end
        local a, b, c = L.make(kind, "int32_t", keys), L.make(kind, "double", bv),
          L.make(kind, "uint8_t", cv)
        for _, desc in ipairs({ false, true }) do
          local want = order(L.list(a, n), desc)
          local bw, cw = L.list(b, n), L.list(c, n)
          gpu.sort(a, { b, c }, { descending = desc })
          local gb, gc = L.list(b, n), L.list(c, n)
          for i = 1, n do
            assert.equals(bw[want[i]], gb[i], kind)
            assert.equals(cw[want[i]], gc[i], kind)
          end
        end
      end
    end)

    for _, ct in ipairs({ "int8_t", "uint16_t", "int32_t", "int64_t", "uint64_t", "float", "double" }) do
      it(ct .. ": a comparison function (merge sort), stable, both ways, every size", function()
        -- by the key's tens only: many equal keys, so stability shows (64-bit
        -- integers divide as integers in LuaJIT, and math.floor takes no cdata)
        local less = function(x, y) return math.floor(x / 10) < math.floor(y / 10) end
        if ct == "int64_t" or ct == "uint64_t" then
          less = function(x, y) return x / 10 < y / 10 end
        end
        for _, n in ipairs(L.sizes(bk)) do
          local keys = L.vals(ct, n, n + 29, 99)
          for _, kind in ipairs({ "ffi", "garray" }) do
            local stored = {}
            for i = 1, n do stored[i] = L.as(ct, keys[i]) end
            for _, desc in ipairs({ false, true }) do
              local label = ("%s %s n=%d desc=%s"):format(kind, ct, n, tostring(desc))
              local want = order(stored, desc, less)
              local perm = gpu.argsort(L.make(kind, ct, keys), { cmp = less, descending = desc })
              check_perm(want, L.list(perm, n), "argsort cmp " .. label)
              local k = L.make(kind, ct, keys)
              local v = ffi.new("int16_t[?]", n)
              for i = 0, n - 1 do v[i] = i end
              gpu.sort(k, v, { cmp = less, descending = desc })
              check_perm(want, L.list(v, n), "sort cmp " .. label)
              local gk = L.list(k, n)
              for i = 1, n do assert.is_true(stored[want[i]] == gk[i], label) end
            end
          end
        end
      end)
    end

    it("argsort into a given out, 32- or 64-bit; keys are not written", function()
      local keys = { 5, 3, 9, 3, 1 }
      local k = L.make("ffi", "float", keys)
      local out = ffi.new("int64_t[5]")
      assert.equals(out, gpu.argsort(k, { out = out }))
      assert.same({ 4, 1, 3, 0, 2 }, L.list(ffi.new("double[5]", { out[0], out[1], out[2],
        out[3], out[4] }), 5))
      assert.same(keys, L.list(k, 5))
      local t = gpu.argsort(keys, { descending = true })
      assert.same({ 2, 0, 1, 3, 4 }, t)
    end)

    it("errors: options are explicit, unknown ones are named", function()
      local k = ffi.new("int32_t[4]")
      assert.has_error(function() gpu.sort(k, nil, true) end,
        "bad argument #3 to 'sort' (options table expected, got Lua boolean)")
      assert.has_error(function() gpu.sort(k, nil, { descend = true }) end,
        "bad argument #3 to 'sort' (unknown option 'descend' (expected cmp, descending))")
      assert.has_error(function() gpu.sort(k, nil, { descending = 1 }) end,
        "bad argument #3 to 'sort' (option descending: boolean expected, got Lua number)")
      assert.has_error(function() gpu.argsort(k, { cmp = "<" }) end,
        "bad argument #2 to 'argsort' (option cmp: a Lua function cmp(a, b) (a before b) "
          .. "expected, got Lua string)")
      assert.has_error(function() gpu.argsort(k, { out = ffi.new("int16_t[4]") }) end,
        "bad argument #2 to 'argsort' (option out: an array of 32- or 64-bit integers "
          .. "expected, got int16_t elements)")
      assert.has_error(function() gpu.argsort(k, { order = "desc" }) end,
        "bad argument #2 to 'argsort' (unknown option 'order' (expected cmp, descending, out))")
      assert.has_error(function() gpu.sort(k, { ffi.new("int32_t[4]"), ffi.new("int32_t[3]") }) end,
        "bad argument #2 to 'sort' (values[2] has 3 elements, keys has 4)")
    end)
  end)
end
