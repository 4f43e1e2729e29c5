-- gpu.reduce_by_key, gpu.scan_by_key and gpu.histogram (docs/api.md,
-- "Parallel primitives") against plain Lua on every backend of
-- GPUJIT_SPEC_BACKENDS: key and value types, every kind of array, empty,
-- one element, odd sizes, segments that span items' chunks, given
-- outputs, and the errors (unknown options among them).
local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

-- Keys in runs: run lengths from 1 to maxrun, values of the runs small.
local function runs(n, maxrun, seed)
  local keys, lens = {}, L.gen(n, 1, maxrun, seed)
  local k, i, r = 0, 1, 1
  while i <= n do
    k = (k * 7 + 3) % 5
    for _ = 1, lens[r] do
      if i > n then break end
      keys[i] = k
      i = i + 1
    end
    r = r + 1
  end
  return keys
end

local OPS = {
  ["+"] = function(x, y) return x + y end,
  min = function(x, y) return math.min(x, y) end,
  max = function(x, y) return math.max(x, y) end,
}

local function rbk_ref(keys, vals, op)
  local ko, vo = {}, {}
  for i = 1, #keys do
    if i == 1 or keys[i] ~= keys[i - 1] then
      ko[#ko + 1], vo[#vo + 1] = keys[i], vals[i]
    else
      vo[#vo] = op(vo[#vo], vals[i])
    end
  end
  return ko, vo
end

local function sbk_ref(keys, vals, op, id)
  local out, acc = {}, nil
  for i = 1, #keys do
    local head = i == 1 or keys[i] ~= keys[i - 1]
    if id ~= nil then
      if head then acc = id end
      out[i] = acc
      acc = op(acc, vals[i])
    else
      if head then acc = vals[i] else acc = op(acc, vals[i]) end
      out[i] = acc
    end
  end
  return out
end

-- Every element type as keys and as values.
local PAIRS = { { "int32_t", "int32_t" }, { "uint8_t", "double" }, { "int64_t", "int64_t" },
  { "float", "float" }, { "double", "int16_t" }, { "uint32_t", "uint64_t" },
  { "int16_t", "uint8_t" }, { "uint64_t", "int8_t" }, { "int8_t", "uint16_t" },
  { "uint16_t", "uint32_t" } }

for _, bk in ipairs(H.backends) do
  describe("work by keys [" .. bk .. "]", function()
    H.use_in_block(bk)

    for _, kv in ipairs(PAIRS) do
      local kt, vt = kv[1], kv[2]
      -- min and max on two pairs (each op and type is a kernel to compile)
      local ops = (kt == vt and (kt == "int32_t" or kt == "float")) and { "+", "min", "max" }
        or { "+" }
      it(kt .. " keys, " .. vt .. " values: reduce_by_key " .. table.concat(ops, " ")
        .. ", every size and kind", function()
        for _, n in ipairs(L.sizes(bk)) do
          for _, maxrun in ipairs({ 3, 1000 }) do
            local keys = runs(n, maxrun, n + maxrun)
            local vals = L.vals(vt, n, n + 1)
            for _, kind in ipairs(L.KINDS) do
              local ket, vet = L.elem(kind, kt), L.elem(kind, vt)
              for _, op in ipairs(ops) do
                local label = ("%s %s/%s %s n=%d maxrun=%d"):format(kind, kt, vt, op, n, maxrun)
                local wk, wv = rbk_ref(keys, vals, OPS[op])
                for i = 1, #wk do wk[i], wv[i] = L.as(ket, wk[i]), L.as(vet, wv[i]) end
                local c, ko, vo = gpu.reduce_by_key(L.make(kind, kt, keys), L.make(kind, vt, vals), op)
                assert.equals(#wk, c, label)
                L.assert_list(wk, L.list(ko, c), "keys " .. label)
                L.assert_list(wv, L.list(vo, c), "values " .. label)
              end
            end
          end
        end
      end)
    end

    it("reduce_by_key: a function op, given outputs, a wider values_out", function()
      local n = bk == "sim" and 300 or 10000
      local keys = runs(n, 50, 9)
      local vals = L.vals("int32_t", n, 4)
      local f = function(x, y) return x * 2 + y end   -- not associative: the order shows
      local ko, vo = ffi.new("int32_t[?]", n), ffi.new("int64_t[?]", n)
      local c, rk, rv = gpu.reduce_by_key(L.make("ffi", "int32_t", keys),
        L.make("ffi", "int32_t", vals), function(x, y) return x + y end,
        { keys_out = ko, values_out = vo })
      assert.equals(ko, rk)
      assert.equals(vo, rv)
      local wk, wv = rbk_ref(keys, vals, OPS["+"])
      assert.equals(#wk, c)
      for i = 1, c do
        assert.equals(wk[i], ko[i - 1])
        assert.is_true(vo[i - 1] == wv[i])
      end
      -- a segment inside one item's chunk folds left to right
      local c2, _, v2 = gpu.reduce_by_key({ 1, 1, 1, 2 }, { 1, 2, 3, 4 }, f)
      assert.equals(2, c2)
      assert.same({ 11, 4 }, v2)
    end)

    for _, kv in ipairs(PAIRS) do
      local kt, vt = kv[1], kv[2]
      it(kt .. " keys, " .. vt .. " values: scan_by_key inclusive and exclusive", function()
        for _, n in ipairs(L.sizes(bk)) do
          local keys = runs(n, n > 1000 and 700 or 4, n + 5)
          local vals = L.vals(vt, n, n + 2)
          for _, kind in ipairs(L.KINDS) do
            local vet = L.elem(kind, vt)
            local label = ("%s %s/%s n=%d"):format(kind, kt, vt, n)
            local out = L.make(kind, vt, {}, n)
            assert.equals(out, gpu.scan_by_key(L.make(kind, kt, keys), L.make(kind, vt, vals), "+", out))
            local want = sbk_ref(keys, vals, OPS["+"])
            for i = 1, n do want[i] = L.as(vet, want[i]) end
            L.assert_list(want, L.list(out, n), "inclusive " .. label)
            gpu.scan_by_key(L.make(kind, kt, keys), L.make(kind, vt, vals), "max", out,
              { exclusive = true })
            local id = -2 ^ (8 * ffi.sizeof(vt) - 1)
            if vet == "float" or vet == "double" then
              id = -math.huge
            elseif L.unsigned[vt] then
              id = 0
            end
            want = sbk_ref(keys, vals, OPS.max, id)
            for i = 1, n do want[i] = L.as(vet, want[i]) end
            L.assert_list(want, L.list(out, n), "exclusive max " .. label)
          end
        end
      end)
    end

    it("scan_by_key in place (out is values)", function()
      local v = { 1, 2, 3, 4, 5 }
      gpu.scan_by_key({ 7, 7, 8, 8, 8 }, v, "+", v)
      assert.same({ 1, 3, 3, 7, 12 }, v)
    end)

    for _, ct in ipairs(L.ALL) do
      it(ct .. ": histogram of values as bins, and of a range", function()
        for _, n in ipairs(L.sizes(bk)) do
          local vals = L.vals(ct, n, n + 8, 12)
          for _, kind in ipairs(L.KINDS) do
            local label = ("%s %s n=%d"):format(kind, ct, n)
            local a = L.make(kind, ct, vals)
            local want, want2 = {}, {}
            for b = 1, 10 do want[b], want2[b] = 0, 0 end
            for i = 1, n do
              local x = vals[i]
              if x >= 0 and x < 10 then want[x + 1] = want[x + 1] + 1 end
              x = tonumber(L.as(L.elem(kind, ct), x))
              if x >= -5 and x <= 7.5 then
                local b = math.min(9, math.floor((x + 5) * (10 / 12.5)))
                want2[b + 1] = want2[b + 1] + 1
              end
            end
            if kind ~= "table" and ct ~= "float" and ct ~= "double" then
              local h = gpu.histogram(a, 10)
              local got = L.list(h, 10)
              for b = 1, 10 do assert.is_true(got[b] == want[b], label .. " bin " .. (b - 1)) end
            end
            local h2 = gpu.histogram(a, 10, { lo = -5, hi = 7.5 })
            local got2 = L.list(h2, 10)
            for b = 1, 10 do assert.is_true(got2[b] == want2[b], label .. " range bin " .. (b - 1)) end
          end
        end
      end)
    end

    it("histogram: NaN and out-of-range values are not counted, hi is in the last bin; out", function()
      local out = ffi.new("int32_t[4]", { 9, 9, 9, 9 })
      local r = gpu.histogram(ffi.new("double[7]", { 0 / 0, -1, 0, 0.25, 1, 1.5, math.huge }), 4,
        { lo = 0, hi = 1, out = out })
      assert.equals(out, r)
      assert.same({ 1, 1, 0, 1 }, L.list(out, 4))
    end)

    it("errors: unknown options, ops, lengths, types", function()
      local k, v = ffi.new("int32_t[4]"), ffi.new("float[4]")
      assert.has_error(function() gpu.reduce_by_key(k, v, "+", { key_out = k }) end,
        "bad argument #4 to 'reduce_by_key' (unknown option 'key_out' (expected keys_out, values_out))")
      assert.has_error(function() gpu.reduce_by_key(k, v, "and") end,
        "bad argument #3 to 'reduce_by_key' (unknown op 'and': expected + * min max or a function)")
      assert.has_error(function() gpu.reduce_by_key(k, ffi.new("float[3]"), "+") end,
        "bad argument #2 to 'reduce_by_key' (values has 3 elements, keys has 4)")
      assert.has_error(function() gpu.scan_by_key(k, v, "+", v, { exclusive = true, total = 1 }) end,
        "bad argument #5 to 'scan_by_key' (unknown option 'total' (expected exclusive))")
      assert.has_error(function() gpu.scan_by_key(k, v, function(x, y) return x + y end, v,
        { exclusive = true }) end)
      assert.has_error(function() gpu.histogram(v, 4) end,
        "bad argument #3 to 'histogram' (float elements need the options lo and hi (the range of the bins))")
      assert.has_error(function() gpu.histogram(k, 4, { low = 0 }) end,
        "bad argument #3 to 'histogram' (unknown option 'low' (expected hi, lo, out))")
      assert.has_error(function() gpu.histogram(k, 0) end)
      assert.has_error(function() gpu.histogram(k, 4, { lo = 1, hi = 1 }) end,
        "bad argument #3 to 'histogram' (options lo and hi must be numbers with lo < hi)")
    end)
  end)
end
