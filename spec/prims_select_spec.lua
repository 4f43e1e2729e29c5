-- gpu.compact / gpu.filter, gpu.partition and gpu.unique (docs/api.md,
-- "Parallel primitives") against plain Lua on every backend of
-- GPUJIT_SPEC_BACKENDS: every element type, every kind of array, empty,
-- one element and odd sizes, stability (the kept elements in their
-- order), a given dst, and the errors.
local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

local function every3(x) return x % 3 == 0 end

-- Plain Lua: the kept elements in order, then (partition) the others.
local function select_ref(vals, keep, partition)
  local a, b = {}, {}
  for i = 1, #vals do
    if keep(vals[i], i) then a[#a + 1] = vals[i] else b[#b + 1] = vals[i] end
  end
  local count = #a
  if partition then for _, v in ipairs(b) do a[#a + 1] = v end end
  return count, a
end

for _, bk in ipairs(H.backends) do
  describe("selection [" .. bk .. "]", function()
    H.use_in_block(bk)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": compact, filter and partition, every size and kind, stable", function()
        for _, n in ipairs(L.sizes(bk)) do
          local vals = L.vals(ct, n, n + 11, 50)
          for _, kind in ipairs(L.KINDS) do
            local et = L.elem(kind, ct)
            local label = ("%s %s n=%d"):format(kind, ct, n)
            local want_c, want = select_ref(vals, every3)
            local src = L.make(kind, ct, vals)
            local c, out = gpu.compact(src, every3)
            assert.equals(want_c, c, label)
            for i = 1, #want do want[i] = L.as(et, want[i]) end
            L.assert_list(want, L.list(out, c), "compact " .. label)
            if kind == "garray" then assert.equals(c, #out) end
            local c2, out2 = gpu.filter(src, every3)
            assert.equals(want_c, c2)
            L.assert_list(want, L.list(out2, c2), "filter " .. label)
            local pc, pwant = select_ref(vals, every3, true)
            for i = 1, #pwant do pwant[i] = L.as(et, pwant[i]) end
            local c3, out3 = gpu.partition(src, every3)
            assert.equals(pc, c3)
            L.assert_list(pwant, L.list(out3, n), "partition " .. label)
            -- the source is not written
            local back = L.list(src, n)
            for i = 1, n do assert.is_true(L.same(L.as(et, vals[i]), back[i]), label) end
          end
        end
      end)
    end

    it("stability: equal keys keep their order (a struct's tag rides along)", function()
      ffi.cdef("typedef struct { int32_t key, tag; } sel_item;")
      local n = bk == "sim" and 200 or 5000
      local src = ffi.new("sel_item[?]", n)
      local keys = L.gen(n, 0, 4, 5)
      for i = 0, n - 1 do src[i].key, src[i].tag = keys[i + 1], i end
      local c, out = gpu.compact(src, function(p) return p.key < 2 end)
      local k = 0
      for i = 0, n - 1 do
        if src[i].key < 2 then
          assert.equals(src[i].tag, out[k].tag)
          k = k + 1
        end
      end
      assert.equals(k, c)
      local pc, part = gpu.partition(src, function(p) return p.key < 2 end)
      assert.equals(c, pc)
      local last_in, last_out = -1, -1
      for i = 0, n - 1 do
        local kept = i < pc
        assert.equals(kept, part[i].key < 2)
        if kept then
          assert.is_true(part[i].tag > last_in)
          last_in = part[i].tag
        else
          assert.is_true(part[i].tag > last_out)
          last_out = part[i].tag
        end
      end
    end)

    it("into a given dst (at least as long as src): the front is written, the rest kept", function()
      for _, kind in ipairs(L.KINDS) do
        local vals = { 3, 1, 6, 9, 4 }
        local dst = L.make(kind, "int32_t", { 7, 7, 7, 7, 7, 7, 7 })
        local c, d = gpu.compact(L.make(kind, "int32_t", vals), every3, dst)
        assert.equals(3, c)
        assert.equals(dst, d)
        assert.same({ 3, 6, 9, 7, 7, 7, 7 }, L.list(dst, 7))
      end
    end)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": unique on sorted data, every size and kind", function()
        for _, n in ipairs(L.sizes(bk)) do
          local vals = L.vals(ct, n, n + 3, 20)
          table.sort(vals)
          for _, kind in ipairs(L.KINDS) do
            local et = L.elem(kind, ct)
            local want = {}
            for i = 1, n do
              if i == 1 or vals[i] ~= vals[i - 1] then want[#want + 1] = L.as(et, vals[i]) end
            end
            local c, out = gpu.unique(L.make(kind, ct, vals))
            assert.equals(#want, c, kind .. " " .. ct .. " n=" .. n)
            L.assert_list(want, L.list(out, c), "unique " .. kind .. " " .. ct .. " n=" .. n)
          end
        end
      end)
    end

    it("unique: -0 and +0 are one value (the first kept), every NaN is its own", function()
      local nan = 0 / 0
      local c, out = gpu.unique(ffi.new("double[6]", { -0.0, 0.0, 1, 1, nan, nan }))
      assert.equals(4, c)
      assert.equals(-math.huge, 1 / out[0])
      assert.equals(1, out[1])
      assert.is_true(out[2] ~= out[2] and out[3] ~= out[3])
    end)

    it("errors name the argument and the problem", function()
      local a = ffi.new("int32_t[4]")
      assert.has_error(function() gpu.compact(a, 3) end,
        "bad argument #2 to 'compact' (predicate expected (a Lua function of an element "
          .. "returning a boolean), got Lua number)")
      assert.has_error(function() gpu.compact(a, every3, ffi.new("int32_t[3]")) end,
        "bad argument #3 to 'compact' (dst has 3 elements, src has 4)")
      assert.has_error(function() gpu.partition(a, every3, ffi.new("float[4]")) end,
        "bad argument #3 to 'partition' (dst must have src's element type int32_t, got float)")
      assert.has_error(function() gpu.unique(a, a) end,
        "bad argument #2 to 'unique' (dst must be another array than src)")
      assert.has_error(function() gpu.filter("x", every3) end)
      if bk ~= "sim" then   -- sim runs the predicate as Lua: a table is true there
        local ok, err = pcall(gpu.compact, a, function() return {} end)
        assert.is_false(ok)
        assert.matches("gpu.select_count_fn%d+_int32_t", err)
      end
    end)
  end)
end
