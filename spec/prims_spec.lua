-- The parallel primitives (docs/api.md, "Parallel primitives"): gpu.reduce,
-- gpu.scan, gpu.sort, gpu.fill, gpu.copy against plain Lua, on sizes 0, 1,
-- odd, 2^k +- 1 and a large one, every element type, FFI arrays, Lua tables
-- and gpu.arrays, on every backend of GPUJIT_SPEC_BACKENDS; and the errors.

local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

local INTS = H.int_types
local ALL = { "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
  "uint64_t", "float", "double" }
local is64 = { int64_t = true, uint64_t = true }
local unsigned = { uint8_t = true, uint16_t = true, uint32_t = true, uint64_t = true }

-- Sizes per backend: sim runs kernels item by item in Lua, so the small
-- sizes stop at 257 there; the large size, 10M, runs everywhere.
local SIZES = { 0, 1, 7, 255, 257, 4095, 4097 }
local function sizes(bk)
  if bk == "sim" then return { 0, 1, 7, 255, 257 } end
  return SIZES
end
local function large() return 10000000 end

-- gen(n, lo, hi, seed): deterministic small integers in [lo, hi];
-- make(kind, ct, vals [, n]): an array of kind "ffi", "table" or "garray"
-- holding vals (spec/prims_lib.lua, shared with the library's other specs).
local gen, make = L.gen, L.make

-- Element i (0-based) of any kind of array, as the host sees it.
local function host(kind, a)
  if kind == "garray" then return a:to_host() end
  return a
end
local function get(kind, h, i)
  if kind == "table" then return h[i + 1] end
  return h[i]
end

local function bits_eq(ct, x, y)
  if ct == "float" or ct == "double" then
    if x ~= x then return y ~= y end
    return x == y and (x ~= 0 or 1 / x == 1 / y)
  end
  return x == y
end

-- The values of type ct for tests of sums and sorts (small, with signs).
local function vals_for(ct, n, seed)
  if unsigned[ct] then return gen(n, 0, 9, seed) end
  return gen(n, -9, 9, seed)
end

local function fmt(v) return tostring(v) end

---------------------------------------------------------------------------
-- The documented order of a float sum, emulated in Lua: G items of
-- 16-lane chunks (docs/api.md).

local function n_items(bk, n)
  local max
  if bk == "sim" then
    max = 16
  else
    local cu = 1
    for _, d in ipairs(gpu.devices()) do
      if d.backend == bk then cu = d.compute_units break end
    end
    max = math.max(4096, 64 * cu)
  end
  return math.max(1, math.min(max, math.ceil(n / 256)))
end

local f1 = ffi.new("float[1]")
local function fround(x) f1[0] = x return f1[0] end

local function documented_sum(bk, ct, vals, init)
  local n = #vals
  local add = ct == "float" and function(x, y) return fround(x + y) end
    or function(x, y) return x + y end
  local G = n_items(bk, n)
  local C = math.ceil(n / (G * 16)) * 16
  local s = init
  for lo = 0, n - 1, C do
    local hi = math.min(n, lo + C)
    local lanes = {}
    for i = lo, hi - 1 do
      local l = (i - lo) % 16
      if lanes[l] == nil then lanes[l] = vals[i + 1] else lanes[l] = add(lanes[l], vals[i + 1]) end
    end
    local p = lanes[0]
    for l = 1, 15 do if lanes[l] ~= nil then p = add(p, lanes[l]) end end
    s = add(s, p)
  end
  return s
end

---------------------------------------------------------------------------

for _, bk in ipairs(H.backends) do
  describe("parallel primitives [" .. bk .. "]", function()
    it("launch shapes come from the device's facts (parallel_items), not its backend's name", function()
      local P = require("gpujit.prims")
      local entry
      for _, d in ipairs(gpu.devices()) do
        if d.backend == bk then entry = d break end
      end
      assert.is_number(entry.parallel_items)
      if bk == "cpu" then assert.is_true(entry.parallel_items > 1) end
      for _, G in ipairs({ 1, 7, 100, 5000 }) do
        local cfg = P.items_cfg({ backend = bk, entry = entry }, G)
        local S = cfg.global[1]
        assert.equals(G, cfg.global[2])
        if G >= entry.parallel_items then assert.equals(1, S) end
        if G < entry.parallel_items then assert.is_true(S * G >= entry.parallel_items) end
        -- a made-up device with the same facts gets the same shape, whatever its name
        local other = P.items_cfg({ backend = "made-up", entry = entry }, G)
        assert.same(cfg, other)
      end
    end)

    H.use_in_block(bk)

    describe("gpu.reduce", function()
      for _, ct in ipairs(ALL) do
        it(ct .. ": + over every size, FFI arrays and gpu.arrays", function()
          for _, n in ipairs(sizes(bk)) do
            local vals = vals_for(ct, n, n + 3)
            local exact = 0
            for i = 1, n do exact = exact + vals[i] end
            for _, kind in ipairs({ "ffi", "garray" }) do
              local a = make(kind, ct, vals, n)
              local got = gpu.reduce(a, "+")
              if is64[ct] then
                assert.equals("cdata", type(got), ct)
                assert.is_true(got == ffi.new(ct, exact), ct .. " n=" .. n .. ": " .. fmt(got))
              else
                assert.equals("number", type(got))
                assert.equals(exact, got, ct .. " " .. kind .. " n=" .. n)
              end
            end
          end
        end)
      end

      it("+ on a Lua table (doubles) and with init", function()
        for _, n in ipairs(sizes(bk)) do
          local vals = gen(n, -1000, 1000, n)
          local exact = 0
          for i = 1, n do exact = exact + vals[i] end
          local t = make("table", "double", vals)
          assert.equals(exact, gpu.reduce(t, "+"))
          assert.equals(exact + 5, gpu.reduce(t, "+", 5))
          assert.same(vals, t)   -- not written
        end
      end)

      it("float and double sums: the documented order, bit for bit, near a sequential loop",
        function()
          for _, ct in ipairs({ "float", "double" }) do
            for _, n in ipairs({ 1, 7, 257, 4097, bk == "sim" and 1000 or 100001 }) do
              local vals = {}
              local raw = gen(n, 1, 1000000, n)
              local seq = 0
              for i = 1, n do
                vals[i] = raw[i] / 7
                if ct == "float" then vals[i] = fround(vals[i]) end
                seq = seq + vals[i]
              end
              local a = make("ffi", ct, vals)
              local got = gpu.reduce(a, "+", 0.5)
              local want = documented_sum(bk, ct, vals, 0.5)
              assert.is_true(bits_eq(ct, got, want), ct .. " n=" .. n .. ": got " .. got
                .. ", the documented order gives " .. want)
              assert.is_true(math.abs(got - (seq + 0.5)) <= 1e-5 * math.abs(seq + 0.5))
              assert.equals(got, gpu.reduce(a, "+", 0.5))  -- deterministic
            end
          end
        end)

      for _, ct in ipairs({ "int8_t", "uint16_t", "int32_t", "int64_t", "uint64_t", "float", "double" }) do
        it(ct .. ": min, max, *, and, or, a function op, and empty arrays", function()
          local isint = not (ct == "float" or ct == "double")
          for _, n in ipairs(sizes(bk)) do
            local vals = vals_for(ct, n, 2 * n + 1)
            -- products: ones with a few -1 and 2 (exact)
            local pv = {}
            for i = 1, n do pv[i] = 1 end
            if n > 0 then pv[math.floor(n / 2) + 1] = unsigned[ct] and 3 or -1 end
            if n > 2 then pv[n] = 2 end
            local mn, mx, prod, band, bor = math.huge, -math.huge, 1, -1, 0
            for i = 1, n do
              mn, mx, prod = math.min(mn, vals[i]), math.max(mx, vals[i]), prod * pv[i]
              band, bor = bit.band(band, vals[i]), bit.bor(bor, vals[i])
            end
            local a, p = make("ffi", ct, vals), make("ffi", ct, pv)
            local function num(v) return tonumber(v) end
            if n == 0 then
              local lim = { int8_t = { -128, 127 }, uint16_t = { 0, 65535 },
                int32_t = { -2 ^ 31, 2 ^ 31 - 1 } }
              if lim[ct] then
                assert.equals(lim[ct][2], gpu.reduce(a, "min"))
                assert.equals(lim[ct][1], gpu.reduce(a, "max"))
              elseif not isint then
                assert.equals(math.huge, gpu.reduce(a, "min"))
                assert.equals(-math.huge, gpu.reduce(a, "max"))
              end
              assert.equals(1, num(gpu.reduce(a, "*")))
              assert.equals(0, num(gpu.reduce(a, "+")))
              assert.equals(42, num(gpu.reduce(a, "max", 42)))
            else
              assert.equals(mn, num(gpu.reduce(a, "min")), ct .. " min n=" .. n)
              assert.equals(mx, num(gpu.reduce(a, "max")), ct .. " max n=" .. n)
              assert.equals(prod, num(gpu.reduce(p, "*")), ct .. " * n=" .. n)
              assert.equals(math.min(mn, -20), num(gpu.reduce(a, "min", unsigned[ct] and 0 or -20))
                + (unsigned[ct] and math.min(mn, -20) or 0))
            end
            if isint then
              local function c(v) return ffi.cast(ct, ffi.new("int64_t", v)) end
              assert.is_true(c(gpu.reduce(a, "and")) == c(band), ct .. " and n=" .. n)
              assert.is_true(c(gpu.reduce(a, "or")) == c(bor), ct .. " or n=" .. n)
            end
            -- a function op (the larger), with and without init
            local function larger(x, y) if x > y then return x end return y end
            if n > 0 then
              assert.equals(mx, num(gpu.reduce(a, larger)))
              assert.equals(math.max(mx, 8), num(gpu.reduce(a, larger, 8)))
            else
              assert.equals(8, num(gpu.reduce(a, larger, 8)))
            end
          end
        end)
      end

      it("a large array: " .. large(bk) .. " int32 and float elements", function()
        local n = large(bk)
        local a = ffi.new("int32_t[?]", n)
        local f = ffi.new("float[?]", n)
        local s, mx = 0, -math.huge
        for i = 0, n - 1 do
          local v = (i * 7919) % 2001 - 1000
          a[i], f[i] = v, v / 4
          s = s + v
          if v > mx then mx = v end
        end
        assert.equals(s, gpu.reduce(a, "+"))
        assert.equals(mx, gpu.reduce(a, "max"))
        local fs = gpu.reduce(f, "+")
        assert.is_true(math.abs(fs - s / 4) <= 1e-6 * n, "float sum " .. fs .. " vs " .. s / 4)
        local d = gpu.to_device(a)
        assert.equals(s, gpu.reduce(d, "+"))
      end)
    end)

    describe("gpu.scan", function()
      for _, ct in ipairs(ALL) do
        it(ct .. ": inclusive and exclusive +, FFI arrays and gpu.arrays, into a wider out", function()
          local wide = ({ int8_t = "int32_t", uint8_t = "uint16_t", int16_t = "int64_t",
            uint16_t = "double", int32_t = "int64_t", uint32_t = "uint64_t", int64_t = "int64_t",
            uint64_t = "uint64_t", float = "double", double = "double" })[ct]
          for _, n in ipairs(sizes(bk)) do
            local vals = vals_for(ct, n, n + 11)
            for _, kind in ipairs({ "ffi", "garray" }) do
              local a = make(kind, ct, vals, n)
              local out = make(kind, wide, {}, n)
              local incl = gpu.scan(a, "+", out)
              assert.equals(out, incl)
              local h = host(kind, out)
              local s = 0
              for i = 0, n - 1 do
                s = s + vals[i + 1]
                assert.is_true(get(kind, h, i) == ffi.new(wide, s),
                  ct .. "->" .. wide .. " " .. kind .. " n=" .. n .. " out[" .. i .. "]")
              end
              gpu.scan(a, "+", out, true)
              h = host(kind, out)
              s = 0
              for i = 0, n - 1 do
                assert.is_true(get(kind, h, i) == ffi.new(wide, s), "exclusive out[" .. i .. "]")
                s = s + vals[i + 1]
              end
            end
          end
        end)
      end

      it("same-type out wraps as a store does; max; a function op; in place; tables", function()
        for _, n in ipairs(sizes(bk)) do
          local vals = gen(n, -100, 100, n + 5)
          local a = make("ffi", "int8_t", vals)
          local out = ffi.new("int8_t[?]", n)
          gpu.scan(a, "+", out)
          local s, mx = 0, -math.huge
          for i = 0, n - 1 do
            s = s + vals[i + 1]
            assert.equals(tonumber(ffi.cast("int8_t", s)), out[i], "wrapped out[" .. i .. "]")
          end
          gpu.scan(a, "max", out)
          for i = 0, n - 1 do
            mx = math.max(mx, vals[i + 1])
            assert.equals(mx, out[i])
          end
          local t = make("table", "double", vals)
          gpu.scan(t, function(x, y) return x + y end, t)   -- in place, a table
          s = 0
          for i = 1, n do
            s = s + vals[i]
            assert.equals(s, t[i], "table t[" .. i .. "]")
          end
        end
      end)

      it("every builtin op, inclusive and exclusive", function()
        local ops = {
          ["*"] = function(x, y) return x * y end, min = math.min, max = math.max,
          ["and"] = bit.band, ["or"] = bit.bor,
        }
        local ident = { ["*"] = 1, ["and"] = -1, ["or"] = 0 }
        for _, pair in ipairs({ { "int32_t", "int64_t" }, { "uint8_t", "uint8_t" },
          { "int64_t", "int64_t" }, { "double", "double" } }) do
          local ct, ot = pair[1], pair[2]
          for _, n in ipairs({ 1, 7, 257 }) do
            local vals = {}
            for i = 1, n do vals[i] = (i % 5 == 0) and 2 or ((i % 3 == 0) and 5 or 1) end
            if not unsigned[ct] then vals[2] = -1 end
            local pv = {}   -- products that stay small
            for i = 1, n do pv[i] = (i % 50 == 0) and 2 or 1 end
            if not unsigned[ct] then pv[2] = -1 end
            for _, op in ipairs({ "*", "min", "max", "and", "or" }) do
              local v = op == "*" and pv or vals
              local a = make("ffi", ct, v, n)
              if not ((op == "and" or op == "or") and ct == "double") then
                for _, excl in ipairs({ false, true }) do
                  local out = ffi.new(ot .. "[?]", n)
                  gpu.scan(a, op, out, excl)
                  local s = ident[op] or (op == "min" and math.huge or -math.huge)
                  for i = 0, n - 1 do
                    local before = s
                    s = ops[op](s, v[i + 1])
                    local want = excl and before or s
                    if ot ~= "double" and math.abs(want) == math.huge then
                      want = want > 0 and (ot == "uint8_t" and 255 or 2 ^ 63 - 1) or -2 ^ 63
                    end
                    local w = ffi.cast(ot, ffi.new("int64_t", want))
                    if ot == "double" then w = want end
                    if ot == "int64_t" and math.abs(want) >= 2 ^ 62 then
                      -- the identities of min and max: the type's extremes
                      w = want > 0 and bit.bnot(ffi.new("int64_t", 1) * 2 ^ 62 * 2) or
                        ffi.new("int64_t", -2 ^ 62) * 2
                    end
                    assert.is_true(out[i] == w, ("%s %s->%s n=%d %s out[%d] = %s, expected %s")
                      :format(op, ct, ot, n, excl and "exclusive" or "inclusive", i,
                        tostring(out[i]), tostring(w)))
                  end
                end
              end
            end
          end
        end
      end)

      it("a large array: " .. large(bk) .. " int32 elements", function()
        local n = large(bk)
        local a = ffi.new("int32_t[?]", n)
        for i = 0, n - 1 do a[i] = (i * 7919) % 2001 - 1000 end
        local out = ffi.new("int64_t[?]", n)
        gpu.scan(a, "+", out)
        local s = 0
        for i = 0, n - 1 do
          s = s + a[i]
          if out[i] ~= s then error("out[" .. i .. "] is " .. tostring(out[i]) .. ", expected " .. s) end
        end
      end)
    end)

    describe("gpu.sort", function()
      -- Expected: a stable sort of (key, index) in Lua, NaNs last, -0 = +0.
      local function expect(keys)
        local idx = {}
        for i = 1, #keys do idx[i] = i end
        table.sort(idx, function(p, q)
          local x, y = keys[p], keys[q]
          local xn, yn = x ~= x, y ~= y
          if xn or yn then
            if xn and yn then return p < q end
            return yn
          end
          if x ~= y then return x < y end
          return p < q
        end)
        return idx
      end

      local function check_sort(kind, ct, keys, label)
        local n = #keys
        local k = make(kind, ct, keys)
        local stored = {}
        local hk = host(kind, k)
        for i = 0, n - 1 do stored[i + 1] = get(kind, hk, i) end
        local v = make(kind == "table" and "table" or "ffi", "int32_t", {}, n)
        for i = 1, n do if kind == "table" then v[i] = i else v[i - 1] = i end end
        local rk, rv = gpu.sort(k, v)
        assert.equals(k, rk)
        assert.equals(v, rv)
        local want = expect(stored)
        local h = host(kind, k)
        for i = 0, n - 1 do
          local w = want[i + 1]
          local got_v = kind == "table" and v[i + 1] or v[i]
          if got_v ~= w or not bits_eq(ct, get(kind, h, i), stored[w]) then
            error(("%s: %s %s n=%d: position %d holds key %s value %s, expected key %s value %d")
              :format(label, kind, ct, n, i, fmt(get(kind, h, i)), fmt(got_v), fmt(stored[w]), w))
          end
        end
      end

      for _, ct in ipairs(ALL) do
        it(ct .. ": keys with values, stable, every size, FFI arrays and gpu.arrays", function()
          for _, n in ipairs(sizes(bk)) do
            local keys = vals_for(ct, n, 3 * n + 1)
            for _, kind in ipairs({ "ffi", "garray" }) do check_sort(kind, ct, keys, "small keys") end
          end
        end)
      end

      it("the extremes of every integer type, and keys without values", function()
        local ext = {
          int8_t = { -128, 127, 0, -1, 1 }, uint8_t = { 255, 0, 128, 127 },
          int16_t = { -32768, 32767, 0, -1, 256, -256 }, uint16_t = { 65535, 0, 32768, 255, 256 },
          int32_t = { -2 ^ 31, 2 ^ 31 - 1, 0, -1, 65536, -65536, 16777216 },
          uint32_t = { 2 ^ 32 - 1, 0, 2 ^ 31, 2 ^ 31 - 1, 65536 },
          int64_t = { -2 ^ 63, 2 ^ 62, 0, -1, 2 ^ 40, -2 ^ 40, 2 ^ 32, -2 ^ 32 },
          uint64_t = { 0, 2 ^ 63, 2 ^ 40, 2 ^ 32, 1, 2 ^ 32 - 1 },
        }
        for _, ct in ipairs(INTS) do
          local keys = {}
          local e = ext[ct]
          for i = 1, 301 do keys[i] = e[(i * 7) % #e + 1] end
          check_sort("ffi", ct, keys, "extremes")
          local k = make("ffi", ct, keys)
          gpu.sort(k)
          for i = 1, #keys - 1 do assert.is_true(k[i - 1] <= k[i], ct .. " keys only") end
        end
      end)

      it("floats: NaNs last, infinities, -0 and +0 keep their order, denormals", function()
        for _, ct in ipairs({ "float", "double" }) do
          local special = { 0 / 0, math.huge, -math.huge, 0, -0.0, 1e-45, -1e-45, 5e-324, 1.5,
            -1.5, -(0 / 0), 3.25, -0.0, 0 }
          for _, n in ipairs({ 14, 257, 4097 }) do
            local keys = {}
            for i = 1, n do keys[i] = special[(i * 5) % #special + 1] end
            if ct == "float" then for i = 1, n do keys[i] = fround(keys[i]) end end
            check_sort("ffi", ct, keys, "special")
            check_sort("garray", ct, keys, "special")
          end
        end
      end)

      it("Lua tables", function()
        for _, n in ipairs(sizes(bk)) do
          local keys = gen(n, -1000, 1000, n)
          for i = 1, n, 3 do keys[i] = keys[i] + 0.5 end
          check_sort("table", "double", keys, "table")
        end
      end)

      it("a large array: " .. large(bk) .. " int32 keys, and uint64 keys with float values", function()
        local n = large(bk)
        local k = ffi.new("int32_t[?]", n)
        local s = 12345
        for i = 0, n - 1 do
          s = (s * 1103515245 + 12345) % 2147483648
          k[i] = s - 2 ^ 30
        end
        local sum = gpu.reduce(k, "+")
        gpu.sort(k)
        for i = 1, n - 1 do
          if k[i - 1] > k[i] then error("not sorted at " .. i .. ": " .. k[i - 1] .. " > " .. k[i]) end
        end
        assert.equals(sum, gpu.reduce(k, "+"))
        local m = math.min(n, 1000003)
        local u, f = ffi.new("uint64_t[?]", m), ffi.new("float[?]", m)
        for i = 0, m - 1 do
          u[i] = ffi.new("uint64_t", (i * 2654435761) % 4294967296) * 4294967296 + i % 7
          f[i] = i
        end
        gpu.sort(u, f)
        for i = 1, m - 1 do
          if u[i - 1] > u[i] then error("uint64 not sorted at " .. i) end
          local j = f[i]
          assert(u[i] == ffi.new("uint64_t", (j * 2654435761) % 4294967296) * 4294967296 + j % 7)
        end
      end)
    end)

    describe("gpu.fill and gpu.copy", function()
      it("every element type and bool, every kind of array", function()
        for _, ct in ipairs(ALL) do
          for _, n in ipairs({ 0, 1, 7, 4097 }) do
            for _, kind in ipairs({ "ffi", "garray", "table" }) do
              local et = kind == "table" and "double" or ct
              local a = make(kind, et, {}, n)
              local v = unsigned[ct] and 200 or -7
              assert.equals(a, gpu.fill(a, v))
              local h = host(kind, a)
              for i = 0, n - 1 do assert.is_true(get(kind, h, i) == ffi.new(et, v), et .. " fill") end
              local src = make(kind, et, vals_for(et, n, n), n)
              assert.equals(a, gpu.copy(a, src))
              h = host(kind, a)
              local hs = host(kind, src)
              for i = 0, n - 1 do assert.is_true(get(kind, h, i) == get(kind, hs, i), et .. " copy") end
            end
          end
        end
        -- fractions and values out of range convert as a store converts them
        for _, ct in ipairs(ALL) do
          for _, v in ipairs({ 2.75, -1.5, 3e9, -0.0 }) do
            local a = ffi.new(ct .. "[5]")
            gpu.fill(a, v)
            for i = 0, 4 do assert.is_true(a[i] == ffi.new(ct, v), ct .. " fill " .. v) end
          end
        end
        local b = ffi.new("bool[5]")
        gpu.fill(b, true)
        for i = 0, 4 do assert.is_true(b[i]) end
      end)

      it("copy converts between element types and kinds; a shorter src fills the front", function()
        local src = make("ffi", "int16_t", { -3, 5, 300, 7 })
        local dst = gpu.zeros("double", 6)
        gpu.copy(dst, src)
        assert.same({ -3, 5, 300, 7, 0, 0 }, dst:to_host({}))
        local t = { 1.5, 2.5 }
        local f = ffi.new("float[2]")
        gpu.copy(f, t)
        assert.equals(1.5, f[0])
        assert.equals(2.5, f[1])
        gpu.copy(t, make("ffi", "uint8_t", { 9, 10 }))
        assert.same({ 9, 10 }, t)
      end)
    end)

    it("the examples of docs/api.md", function()
      local n = 1000
      local x = ffi.new("float[?]", n)
      local s, mx, ma = 0, -math.huge, 0
      for i = 0, n - 1 do
        x[i] = (i % 37) - 18.5
        s, mx, ma = s + x[i], math.max(mx, x[i]), math.max(ma, math.abs(x[i]))
      end
      assert.equals(s, gpu.reduce(x, "+"))
      assert.equals(mx, gpu.reduce(x, "max"))
      assert.equals(ma, gpu.reduce(x, function(a, b) return math.max(math.abs(a), math.abs(b)) end, 0))
      local counts, offsets = gpu.to_device({ 3, 0, 2, 5 }, "int32_t"), gpu.zeros("int32_t", 4)
      gpu.scan(counts, "+", offsets, true)
      assert.same({ 0, 3, 3, 5 }, offsets:to_host({}))
      local keys, values = { 3, 1, 2, 1 }, { 10, 20, 30, 40 }
      local rk, rv = gpu.sort(keys, values)
      assert.same({ 1, 1, 2, 3 }, rk)
      assert.same({ 20, 40, 30, 10 }, rv)
      local d = gpu.array("double", 5)
      gpu.fill(d, 0)
      local dst = ffi.new("double[5]", 7)
      gpu.copy(dst, d)
      for i = 0, 4 do assert.equals(0, dst[i]) end
    end)

    describe("errors", function()
      local function err(fn, ...)
        local ok, e = pcall(fn, ...)
        assert.is_false(ok)
        return tostring(e)
      end
      local a = ffi.new("int32_t[4]")

      it("name the argument, the function and the problem, at the caller's line", function()
        local e = err(function() local r = gpu.reduce(a, "foo") return r end)
        assert.matches("prims_spec.lua:%d+: bad argument #2 to 'reduce' %(unknown op 'foo': "
          .. "expected %+ %* min max and or or a function%)", e)
        assert.matches("bad argument #1 to 'reduce' %(array expected", err(gpu.reduce, "x", "+"))
        assert.matches("bad argument #2 to 'reduce' %(op 'and' needs integer elements, got float%)",
          err(gpu.reduce, ffi.new("float[3]"), "and"))
        assert.matches("bad argument #3 to 'reduce' %(the array is empty",
          err(gpu.reduce, ffi.new("int32_t[0]"), function(x, y) return x + y end))
        assert.matches("bad argument #3 to 'reduce' %(number expected, got Lua string",
          err(gpu.reduce, a, "+", "1"))
        assert.matches("bad argument #1 to 'reduce' %(elements of type bool are not supported",
          err(gpu.reduce, ffi.new("bool[2]"), "+"))
        assert.matches("bad argument #3 to 'scan' %(out has 3 elements, a has 4%)",
          err(gpu.scan, a, "+", ffi.new("int32_t[3]")))
        assert.matches("bad argument #3 to 'scan' %(out must have the element type of a or a wider "
          .. "one, got int32_t into int16_t%)", err(gpu.scan, a, "+", ffi.new("int16_t[4]")))
        assert.matches("bad argument #3 to 'scan' %(out must have", err(gpu.scan,
          ffi.new("double[4]"), "+", ffi.new("float[4]")))
        assert.matches("bad argument #4 to 'scan' %(boolean expected",
          err(gpu.scan, a, "+", ffi.new("int32_t[4]"), 1))
        assert.matches("bad argument #4 to 'scan' %(an exclusive scan starts from the op's identity",
          err(gpu.scan, a, function(x, _) return x end, ffi.new("int32_t[4]"), true))
        assert.matches("bad argument #1 to 'sort' %(keys of type bool cannot be sorted",
          err(gpu.sort, ffi.new("bool[3]")))
        assert.matches("bad argument #2 to 'sort' %(values has 3 elements, keys has 4%)",
          err(gpu.sort, a, ffi.new("float[3]")))
        assert.matches("bad argument #1 to 'sort' %(an FFI pointer has no length",
          err(gpu.sort, ffi.cast("int32_t *", a)))
        assert.matches("bad argument #2 to 'fill' %(number expected, got Lua string",
          err(gpu.fill, a, "x"))
        assert.matches("bad argument #1 to 'copy' %(dst has 4 elements, src has 5%)",
          err(gpu.copy, a, ffi.new("int32_t[5]")))
        assert.matches("prims_spec.lua:%d+: bad argument #1 to 'reduce' %(table element %[2%] is Lua string",
          err(function() local r = gpu.reduce({ 1, "x" }, "+") return r end))
        if bk ~= "sim" then
          local here, there = gpu.zeros("double", 2, bk), gpu.zeros("double", 2, "sim")
          assert.matches("bad argument #2 to 'copy' %(the gpu.array lives on sim, argument #1 on "
            .. bk .. ":0: use one device%)", err(gpu.copy, here, there))
        end
        local d = gpu.to_device({ 1, 2 })
        d:free()
        assert.matches("bad argument #1 to 'reduce' %(the gpu.array has been freed%)",
          err(gpu.reduce, d, "+"))
      end)

      local it_compiled = bk == "sim" and pending or it
      it_compiled("a function op outside the kernel subset is a compile error, and nothing breaks",
        function()
          local e = err(gpu.reduce, a, function(x, y) return tostring(x) .. y end)
          assert.matches("in kernel gpu%.reduce", e)
          assert.equals(0, gpu.reduce(a, "+"))
        end)
    end)
  end)
end
