-- The type rules of docs/typing.md, checked through what a kernel computes
-- and through the LLVM IR that k:inspect_llvm(types) shows.
--
-- Where the rules give a result that plain LuaJIT (all doubles) would not give
-- (float arithmetic, integers beyond 2^53, x % 0, comparisons in the join),
-- the expected value is written out and the rule quoted; elsewhere it is
-- computed by plain LuaJIT.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local function f32(v) return H.to_ct("float", v) end

-- Flatten whatever k:signatures() returns into one string.
local function flat(v)
  if type(v) == "table" then
    local t = {}
    for i = 1, #v do t[i] = flat(v[i]) end
    return "{" .. table.concat(t, ",") .. "}"
  end
  return tostring(v)
end

for _, bk in ipairs(H.backends) do
  describe("typing [" .. bk .. "]", function()

    describe("weak literals", function()
      it("a weak float meeting a float element is float: x[i] + 0.1 on float[]", function()
        -- typing.md: `x[i] + 0.5`, x float[]: float (Numba would give float64)
        local xs = { 1, 0.1, 3.3, -2.7, 1e6 + 0.5, 123.456 }
        H.map(bk, function(x) return x + 0.1 end, {
          name = "weakf", out = "double", ins = { { "float", xs } },
          expect = function(x) return f32(x + f32(0.1)) end,
        })
      end)

      it("a weak int meeting a float element is float: 3 * x[i] rounds to float", function()
        local xs = { 0.1, 1 / 3, 7.7, -1e-3, 16777215 }
        H.map(bk, function(x) return 3 * x end, {
          name = "weaki", out = "double", ins = { { "float", xs } },
          expect = function(x) return f32(3 * x) end,
        })
      end)

      it("n[i] + 1 on int32_t[] is computed in 64 bits: no wrap at 2^31", function()
        local out = H.map(bk, function(a) return a + 1 end, {
          name = "i32p1", out = "double", ins = { { "int32_t", { 1, -5, 2147483646, 2147483647 } } },
        })
        assert.are.equal(2147483648, out[3])
      end)

      it("a[i] * b[i] on int32_t[] is LuaJIT's double product: -0, and rounded beyond 2^53", function()
        -- x[i] may be 0 and negative, so the product may be -0: it is computed
        -- in double (typing.md, "Negative zero"), which also rounds as LuaJIT
        -- does where the exact product passes 2^53.
        local a = H.array("int32_t", { 65536, 2147483647, -2147483648, -3, 0 })
        local out = ffi.new("int64_t[5]")
        local neg = ffi.new("double[5]")
        local k = H.kernel(bk, function(o, d, x)
          local i = gpu.global_id(0)
          o[i] = x[i] * x[i]
          d[i] = x[i] * -1
        end, { name = "i32sq" })
        k:launch(5, out, neg, a)
        H.check("int64_t", out, { 4294967296LL, 4611686014132420608LL, 4611686018427387904LL, 9LL, 0LL }, 5)
        H.check("double", neg, { -65536, -2147483647, 2147483648, 3, -0.0 }, 5)
        assert.are.equal(-math.huge, 1 / neg[4])
      end)

      it("a product of a C integer (an int32_t cdata argument) stays in 64 bits", function()
        local out = ffi.new("int64_t[1]")
        local d = ffi.new("double[1]")
        local k = H.kernel(bk, function(o, dd, x)
          o[0] = x * x
          dd[0] = x * 0
        end, { name = "cintsq" })
        k:launch(1, out, d, ffi.new("int32_t", -2147483647))
        H.check("int64_t", out, { 2147483647LL * 2147483647LL }, 1)
        assert.are.equal(math.huge, 1 / d[0])   -- LuaJIT: int64 cdata arithmetic, no -0
      end)

      it("64-bit integer overflow wraps", function()
        local a = ffi.new("int64_t[2]", 9223372036854775807LL, -9223372036854775807LL - 1)
        local out = ffi.new("int64_t[2]")
        local k = H.kernel(bk, function(o, x)
          o[0] = x[0] + 1
          o[1] = x[1] - 1
        end, { name = "i64wrap" })
        k:launch(1, out, a)
        H.check("int64_t", out, { -9223372036854775807LL - 1, 9223372036854775807LL }, 2)
      end)

      it("an integer-valued literal like 1e3 is a weak int", function()
        H.map(bk, function(a) return a + 1e3 end, {
          name = "i32p1e3", out = "double", ins = { { "int32_t", { 1, 2147483000, -1000 } } },
        })
      end)

      it("i * 0.1 with an int64_t id is double", function()
        local out = ffi.new("double[8]")
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id(0)
          o[i] = i * 0.1
        end, { name = "idmul" })
        k:launch(8, out)
        H.check("double", out, function(i) return i * 0.1 end, 8)
      end)

      it("a weak float meeting an integer element is the default float (double)", function()
        H.map(bk, function(a) return a + 0.1 end, {
          name = "i32pf", out = "double", ins = { { "int32_t", { 1, -3, 1000000 } } },
        })
      end)

      it("1 + 2 folded by the parser is a weak int that joins an int32_t", function()
        H.map(bk, function(a) return a + (1 + 2) end, {
          name = "fold", out = "double", ins = { { "int32_t", { 1, 2147483645 } } },
        })
      end)

      it("a weak int that is materialized alone is int64_t (passed to a device function)", function()
        local function inc(x) return x + 1 end
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o)
          o[0] = inc(2147483647)   -- int64_t: does not wrap at 2^31
          o[1] = inc(0.5)          -- weak float: double
        end, { name = "weakarg" })
        k:launch(1, out)
        assert.are.equal(2147483648, out[0])
        assert.are.equal(1.5, out[1])
      end)

      it("a weak int stored into a float[] element is converted as any number", function()
        local out = ffi.new("float[2]")
        local k = H.kernel(bk, function(o)
          o[0] = 16777217
          o[1] = 3
        end, { name = "weakstore" })
        k:launch(1, out)
        assert.are.equal(16777216, out[0])
        assert.are.equal(3, out[1])
      end)
    end)

    describe("negative zero", function()
      it("-x and 0 * -k of Lua-number integers are -0, as in LuaJIT (issue 23 item 3)", function()
        local a = H.array("int32_t", { 0, -3 })
        local fs = {
          function() return -math.abs(0.0) end,
          function() return -math.abs(0 / 1) end,
          function(x) return -x[0] end,
          function(x) return x[0] * -1 end,
          function(x) return x[1] * x[0] end,
          function(x) return math.sqrt(-x[0]) end,
          function(x) return math.max(-x[0], -1) end,
          function(x) local s = 0 for j = 0, 2 do s = s + x[j % 2] * -1 end return s end,
          function(x) return -bit.band(x[0], 7) end,
          function(x) return (-x[0]) / 1 end,
          function() return -(gpu.global_id(0) * 2) end,
          function(x) return -x[0] + 0 end,          -- +0: -0 + 0
          function(x) return x[0] % -3 end,          -- +0: never -0
        }
        for j, f in ipairs(fs) do
          local got = H.call(bk, "double", f, a)
          local want = j == 11 and -0.0 or H.interp(f, a)
          assert.are.equal(1 / want, 1 / got, "case " .. j)
        end
      end)
    end)

    describe("joins", function()
      it("narrow integers are promoted: u8[i] + 1 does not wrap at 256", function()
        H.map(bk, function(a) return a + 1 end, {
          name = "u8p1", out = "double", ins = { { "uint8_t", { 0, 1, 200, 255 } } },
        })
        H.map(bk, function(a, b) return a * b end, {
          name = "u8mul", out = "int32_t", ins = { { "uint8_t", { 255, 16 } }, { "uint8_t", { 255, 16 } } },
        })
        H.map(bk, function(a) return a * -1 end, {
          name = "i8neg", out = "double", ins = { { "int8_t", { -128, 127, 0 } } },
        })
        H.map(bk, function(a) return a + 1 end, {
          name = "u16p1", out = "double", ins = { { "uint16_t", { 65535, 0 } } },
        })
        H.map(bk, function(a) return -a end, {
          name = "i16neg", out = "double", ins = { { "int16_t", { -32768, 5, 0 } } },
        })
      end)

      it("int32_t and uint32_t join as int64_t", function()
        -- as int64: (-1) - 1 = -2 (not 4294967294: not uint32); 2^31-1 + 1 = 2^31 (not int32)
        H.map(bk, function(a, b) return a - b end, {
          name = "i32u32sub", out = "double",
          ins = { { "int32_t", { -1, 0, 2147483647 } }, { "uint32_t", { 1, 4294967295, 0 } } },
        })
        H.map(bk, function(a, b) return a + b end, {
          name = "i32u32add", out = "double",
          ins = { { "int32_t", { 2147483647, -1, -2147483648 } },
                  { "uint32_t", { 1, 4294967295, 4294967295 } } },
        })
      end)

      it("uint32_t + uint32_t is computed in 64 bits: no wrap at 2^32", function()
        H.map(bk, function(a, b) return a + b end, {
          name = "u32add", out = "double",
          ins = { { "uint32_t", { 4294967295, 1, 3000000000 } }, { "uint32_t", { 1, 2, 3000000000 } } },
        })
        H.map(bk, function(a, b) return a - b end, {
          name = "u32sub", out = "double",
          ins = { { "uint32_t", { 1, 0 } }, { "uint32_t", { 2, 4294967295 } } },
        })
      end)

      -- int64_t/uint64_t elements are cdata in LuaJIT: their arithmetic is
      -- LuaJIT's cdata arithmetic (docs/typing.md, "C integers"; every case
      -- in spec/carith_spec.lua)
      it("int64_t with uint64_t: uint64_t arithmetic, as LuaJIT's cdata", function()
        local a = ffi.new("int64_t[2]", -1, 5)
        local b = ffi.new("uint64_t[2]", 1, 7)
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o, x, y)
          local i = gpu.global_id(0)
          o[i] = x[i] - y[i]
        end, { name = "i64u64" })
        k:launch(2, out, a, b)
        assert.are.equal(2^64, out[0])    -- 2^64 - 2 (uint64_t) as a double, as LuaJIT
        assert.are.equal(2^64, out[1])
      end)

      it("int64_t with a float element: the float converted to int64_t, as LuaJIT's cdata", function()
        local a = ffi.new("int64_t[2]", 16777217, 3)
        local b = ffi.new("float[2]", 0, 0.1)
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o, x, y)
          local i = gpu.global_id(0)
          o[i] = x[i] + y[i]
        end, { name = "i64f" })
        k:launch(2, out, a, b)
        assert.are.equal(16777217, out[0])
        assert.are.equal(3, out[1])                 -- 0.1 is 0
        assert.are.equal(tonumber(a[1] + b[1]), out[1])
      end)

      it("float and double join as double", function()
        H.map(bk, function(f, d) return f + d end, {
          name = "fd", out = "double",
          ins = { { "float", { 0.1, 1 / 3, 1e20 } }, { "double", { 0, 0.1, 1 } } },
        })
        H.map(bk, function(f, d) return f * d end, {
          name = "fdmul", out = "double", ins = { { "float", { 0.1, 1 / 3 } }, { "double", { 0.1, 3 } } },
        })
      end)

      it("weak int and weak float merge as weak float, which then takes float", function()
        local function f(x, c)
          local v = 1
          if c > 0 then v = 0.1 end
          return x * v
        end
        H.map(bk, f, {
          name = "weakmerge", out = "double",
          ins = { { "float", { 0.3, 0.3, 7 } }, { "int32_t", { 1, 0, 1 } } },
          expect = function(x, c) return c > 0 and f32(x * f32(0.1)) or x end,
        })
      end)

      it("an int32_t and a double merging at an if are a double afterwards", function()
        local function f(a, d, c)
          local v = a
          if c > 0 then v = d end
          return v * 0.5
        end
        H.map(bk, f, {
          name = "merge", out = "double",
          ins = { { "int32_t", { 3, 3, -7 } }, { "double", { 2.25, 2.25, 0.1 } },
                  { "int32_t", { 0, 1, 1 } } },
        })
      end)
    end)

    describe("operators", function()
      it("/ is always a float division: integers give double", function()
        H.map(bk, function(a, b) return a / b end, {
          name = "idiv", out = "double",
          ins = { { "int32_t", { 7, -7, 1, 0, 5, 0 } }, { "int32_t", { 2, 2, 3, 0, 0, -1 } } },
        })
        H.map(bk, function(a, b) return a / b end, {
          name = "u8div", out = "double", ins = { { "uint8_t", { 1, 255 } }, { "uint8_t", { 3, 7 } } },
        })
      end)

      it("/ of two floats is float", function()
        H.map(bk, function(a, b) return a / b end, {
          name = "fdiv", out = "double", ins = { { "float", { 1, 2, 10 } }, { "float", { 3, 7, 0.1 } } },
          expect = function(a, b) return f32(a / b) end,
        })
      end)

      it("% on integers is floored, the sign of the divisor; x % 0 is 0; on C integers C's", function()
        local as = { -7, 7, -7, 7, 0, -6, 5, -5, 2147483647, -2147483648 }
        local bs = { 3, -3, -3, 3, 5, 3, 0, 0, 2, 7 }
        for _, ct in ipairs({ "int32_t", "int64_t", "int16_t" }) do
          local a2, b2 = {}, {}
          for j = 1, #as do
            if ct ~= "int16_t" or math.abs(as[j]) < 32768 then a2[#a2 + 1], b2[#b2 + 1] = as[j], bs[j] end
          end
          H.map(bk, function(a, b) return a % b end, {
            name = "imod_" .. ct, out = "double", ins = { { ct, a2 }, { ct, b2 } },
            -- int64_t elements are cdata: C's remainder, as LuaJIT's (f itself)
            expect = ct ~= "int64_t" and function(a, b)
              a, b = tonumber(a), tonumber(b)
              if b == 0 then return 0 end   -- typing.md: integer x % 0 is 0
              return a % b
            end or nil,
          })
        end
      end)

      it("% on doubles is a - floor(a/b)*b, bitwise as LuaJIT", function()
        local as = { -7.5, 7.5, 5.3, -0.0, 1, 5, -5, 1e300, 0.3, 7, 5, 0 / 0, math.huge, 2 }
        local bs = { 2, -2, 1, 1, -0.5, math.huge, math.huge, 3, 0.1, 0, -math.huge, 1, 2, 0 / 0 }
        H.map(bk, function(a, b) return a % b end, {
          name = "dmod", out = "double", ins = { { "double", as }, { "double", bs } },
        })
      end)

      it("% on floats is float", function()
        H.map(bk, function(a, b) return a % b end, {
          name = "fmod", out = "double",
          ins = { { "float", { -7.5, 7.25, 5.5 } }, { "float", { 2, -2, 0.25 } } },
          expect = function(a, b) return f32(a % b) end,
        })
      end)

      it("^ of integers is a double pow", function()
        H.map(bk, function(a, b) return a ^ b end, {
          name = "ipow", out = "double",
          ins = { { "int32_t", { 2, 3, 10, -2, 0, 7 } }, { "int32_t", { 10, 2, -2, 3, 0, 1 } } },
        })
        H.map(bk, function(a) return a ^ 0.5 end, {
          name = "ipowh", out = "double", ins = { { "int32_t", { 2, 9, 10 } } },
          ulps = H.math_ulps(bk, 0, 0),
        })
      end)

      it("^ of a float element and a weak int is float", function()
        H.map(bk, function(a) return a ^ 2 end, {
          name = "fpow", out = "double", ins = { { "float", { 1.1, 3, 0.1 } } },
          -- in double ulps: 1, or the float ulps math_ulps allows (2^29 each)
          expect = function(a) return f32(a ^ 2) end,
          ulps = math.max(1, select(2, H.math_ulps(bk, 0, 0)) * 2 ^ 29),
        })
      end)

      it("comparisons with a C integer are in its 64-bit kind: int64_t 2^24+1 ~= float 2^24", function()
        local a = ffi.new("int64_t[1]", 16777217)
        local b = ffi.new("float[1]", 16777216)
        local out = ffi.new("bool[2]")
        local k = H.kernel(bk, function(o, x, y)
          o[0] = x[0] == y[0]
          o[1] = x[0] > y[0]
        end, { name = "cmpjoin" })
        k:launch(1, out, a, b)
        assert.are.equal(a[0] == b[0], out[0])
        assert.are.equal(a[0] > b[0], out[1])
        assert.is_false(out[0])
        assert.is_true(out[1])
      end)

      it("uint32_t and int32_t compare as int64_t (not as unsigned C does)", function()
        H.map(bk, function(a, b) return a > b end, {
          name = "cmpsign", out = "bool",
          ins = { { "uint32_t", { 4294967295, 0, 2147483648 } }, { "int32_t", { -1, -1, 2147483647 } } },
        })
        H.map(bk, function(a, b) return a < b end, {
          name = "cmp8", out = "bool", ins = { { "int8_t", { -1, 5 } }, { "uint8_t", { 255, 4 } } },
        })
      end)

      it("an integer and a double compare in double", function()
        H.map(bk, function(a, d) return a < d end, {
          name = "cmpid", out = "bool",
          ins = { { "int32_t", { 3, 3, -1, 2 } }, { "double", { 3.5, 2.5, -0.5, 2 } } },
        })
      end)

      it("#a is an int64_t", function()
        local t = { 1, 2, 3, 4, 5 }
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o, a)
          o[0] = #a / 2
          o[1] = #a + 2147483647
        end, { name = "len64" })
        k:launch(1, out, t)
        assert.are.equal(2.5, out[0])
        assert.are.equal(2147483652, out[1])
      end)
    end)

    describe("ids and calls", function()
      it("ids are int64_t: global_id + 2147483647 does not wrap", function()
        local out = ffi.new("double[4]")
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id(0)
          o[i] = i + 2147483647
        end, { name = "id64" })
        k:launch(4, out)
        H.check("double", out, function(i) return i + 2147483647 end, 4)
      end)

      it("math.floor and math.sqrt on a float give float, on an integer double", function()
        H.map(bk, function(x) return math.floor(x) / 3 end, {
          name = "floorf", out = "double", ins = { { "float", { 7.5, -1.5 } } },
          expect = function(x) return f32(math.floor(x) / 3) end,
        })
        H.map(bk, function(x) return math.floor(x) / 3 end, {
          name = "floori", out = "double", ins = { { "int32_t", { 7, -1 } } },
        })
        H.map(bk, function(x) return math.sqrt(x) end, {
          name = "sqrtf", out = "double", ins = { { "float", { 2, 3, 0.1 } } },
          expect = function(x) return f32(math.sqrt(x)) end,
        })
        H.map(bk, function(x) return math.sqrt(x) end, {
          name = "sqrti", out = "double", ins = { { "int32_t", { 2, 3, 10 } } },
        })
      end)

      it("math.abs, math.min and math.max keep integer types", function()
        -- typing.md: they keep integer types, so % 0 is 0 (an integer), not nan
        H.map(bk, function(a) return math.abs(a) % 0 end, {
          name = "absi", out = "double", ins = { { "int32_t", { -1, 0, 7 } } },
          expect = function() return 0 end,
        })
        H.map(bk, function(a, b) return math.max(a, b) % 0 end, {
          name = "maxi", out = "double", ins = { { "int32_t", { -5, 0 } }, { "int32_t", { 1, -3 } } },
          expect = function() return 0 end,
        })
        H.map(bk, function(a) return math.abs(a) % 0 end, {
          name = "absd", out = "double", ins = { { "double", { -1, 2 } } },
        })
        H.map(bk, function(a, b) return math.min(a, b) end, {
          name = "minid", out = "double", ins = { { "int32_t", { 3, -2 } }, { "double", { 2.5, 0.5 } } },
        })
      end)

      it("bit.* give int32_t", function()
        H.map(bk, function(a) return bit.bor(a, 0) % 0 end, {
          name = "bitint", out = "double", ins = { { "double", { 1, 0, 4294967296 + 1, 2.5 } } },
          expect = function() return 0 end,                 -- an integer: % 0 is 0
        })
        H.map(bk, function(a) return bit.bor(a, 0) + 2147483647 end, {
          name = "bit32", out = "double", ins = { { "double", { 1, 0, 4294967296 + 1, -1 } } },
        })
        H.map(bk, function(a) return bit.tobit(a) * 1.5 end, {
          name = "tobitmul", out = "double", ins = { { "double", { 4294967295, 3, 2^31 } } },
        })
      end)

      it("a device function is specialized per argument types", function()
        local function twice(x) return x + x end
        local out = ffi.new("double[3]")
        local a8 = ffi.new("int8_t[1]", 127)
        local a32 = ffi.new("int32_t[1]", 2147483647)
        local k = H.kernel(bk, function(o, p, q, d)
          o[0] = twice(p[0])   -- int8_t is promoted: 254
          o[1] = twice(q[0])   -- 64-bit arithmetic: 4294967294
          o[2] = twice(d)      -- double
        end, { name = "spec" })
        k:launch(1, out, a8, a32, 0.1)
        assert.are.equal(254, out[0])
        assert.are.equal(4294967294, out[1])
        assert.are.equal(0.2, out[2])
      end)
    end)

    describe("loops", function()
      it("for j = 1, n with a Lua-number n counts in integers, floor(n) once", function()
        local function sum(n)
          local s = 0
          for j = 1, n do s = s + j end
          return s
        end
        H.map(bk, sum, {
          name = "forlimit", out = "int64_t", ins = { { "double", { 3.7, 1000.5, -1, 1, 0.99, 10 } } },
        })
      end)

      it("a negative step with a float limit rounds the limit up", function()
        local function sum(n)
          local s = 0
          for j = 10, n, -3 do s = s + j end
          return s
        end
        H.map(bk, sum, {
          name = "forneg", out = "int64_t", ins = { { "double", { 1.5, 1, -0.5, 10, 10.5 } } },
        })
      end)

      it("a float step makes a float loop variable", function()
        local function sum(n)
          local s = 0
          for x = 0, n, 0.25 do s = s + x end
          return s
        end
        H.map(bk, sum, {
          name = "forfloat", out = "double", ins = { { "double", { 1, 2.1, 0, -1 } } },
        })
      end)

      it("a float start makes a float loop variable", function()
        local function sum(n)
          local s = 0
          for x = 0.5, n do s = s + x end
          return s
        end
        H.map(bk, sum, { name = "forfstart", out = "double", ins = { { "double", { 3, 3.5, 0 } } } })
      end)
    end)

    describe("control-flow merges", function()
      it("a slot that may be a number or a boolean and is not read compiles", function()
        local out = ffi.new("double[4]")
        local x = H.array("double", { 1, -1, 2, -2 })
        local k = H.kernel(bk, function(o, a)
          local i = gpu.global_id(0)
          local v = 1 -- luacheck: ignore
          if a[i] > 0 then v = true end -- luacheck: ignore
          o[i] = a[i] * 2
        end, { name = "unread" })
        k:launch(4, out, x)
        H.check("double", out, { 2, -2, 4, -4 }, 4)
      end)
    end)

    describe("precision = 'single'", function()
      it("makes a Lua-number argument float", function()
        local out = ffi.new("double[1]")
        local k = H.kernel(bk, function(o, a) o[0] = a end, { name = "single1", precision = "single" })
        k:launch(1, out, 0.1)
        assert.are.equal(f32(0.1), out[0])
        local k2 = H.kernel(bk, function(o, a) o[0] = a end, { name = "double1" })
        k2:launch(1, out, 0.1)
        assert.are.equal(0.1, out[0])
      end)

      it("makes the default float float: i * 0.1 and integer / integer", function()
        local out = ffi.new("double[8]")
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id(0)
          o[i] = i * 0.1
        end, { name = "single2", precision = "single" })
        k:launch(8, out)
        H.check("double", out, function(i) return f32(i * f32(0.1)) end, 8)
        local a = H.array("int32_t", { 1, 2, 10 })
        local k2 = H.kernel(bk, function(o, x)
          local i = gpu.global_id(0)
          o[i] = x[i] / 3
        end, { name = "single3", precision = "single" })
        k2:launch(3, out, a)
        H.check("double", out, function(i) return f32(a[i] / 3) end, 3)
      end)
    end)
  end)
end

---------------------------------------------------------------------------
-- Compile-time checks: LLVM IR and type errors (compiling backends only)
---------------------------------------------------------------------------

local function ir_of(bk, fn, sig, opts)
  local k = H.kernel(bk, fn, opts or { name = "ir" })
  local ir = k:inspect_llvm(sig)
  assert.is_string(ir)
  assert.is_truthy(ir:find("define", 1, true), "no function definition in the IR")
  return H.ir_bodies(ir), ir
end

local function has(body, pat, why)
  if not body:find(pat) then error((why or "") .. ": the IR has no '" .. pat .. "':\n" .. body, 2) end
end
local function hasnt(body, pat, why)
  local s, e = body:find(pat)
  if s then
    error((why or "") .. ": the IR has '" .. body:sub(s, e) .. "' (pattern '" .. pat .. "'):\n" .. body, 2)
  end
end

if #H.compilers == 0 then
  describe("typing in LLVM IR", function()
    pending("needs a compiling backend (GPUJIT_SPEC_BACKENDS lists only sim)")
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("typing in LLVM IR [" .. bk .. "]", function()
    it("2 * x[i] on float[] is a float multiply and there is no double", function()
      local body = ir_of(bk, function(y, x, n)
        local i = gpu.global_id(0)
        if i < n then y[i] = 2 * x[i] end
      end, { "float[]", "float[]", "int32_t" })
      -- LLVM may rewrite x * 2 as x + x
      if not body:find("fadd[^\n]*float") then has(body, "fmul[^\n]*float", "2 * x[i]") end
      hasnt(body, "double", "2 * x[i]")
    end)

    it("x[i] + 0.5 on float[] is a float add and there is no double", function()
      local body = ir_of(bk, function(y, x, n)
        local i = gpu.global_id(0)
        if i < n then y[i] = x[i] + 0.5 end
      end, { "float[]", "float[]", "int32_t" })
      has(body, "fadd[^\n]*float", "x[i] + 0.5")
      hasnt(body, "double", "x[i] + 0.5")
    end)

    it("n[i] + 1 on int32_t[] is a 64-bit integer add", function()
      local body = ir_of(bk, function(y, x, n)
        local i = gpu.global_id(0)
        if i < n then y[i] = x[i] + 1 end
      end, { "double[]", "int32_t[]", "int32_t" })
      has(body, "add[^\n]*i64", "n[i] + 1")
      has(body, "sitofp[^\n]*i64", "n[i] + 1 stored into a double")
      hasnt(body, "fadd", "n[i] + 1")
    end)

    it("% on float elements is computed in double", function()
      local body = ir_of(bk, function(y, a, b)
        local i = gpu.global_id(0)
        y[i] = a[i] % b[i]
      end, { "float[]", "float[]", "float[]" })
      has(body, "fdiv[^\n]*double", "float % float")
    end)

    it("ids are i64: global_id stored into double[] is a signed i64 conversion", function()
      local body = ir_of(bk, function(y)
        local i = gpu.global_id(0)
        y[i] = i
      end, { "double[]" })
      has(body, "itofp[^\n]*i64[^\n]*double", "ids")
    end)

    it("a Lua-number argument is double by default", function()
      local body = ir_of(bk, function(y, x, a)
        local i = gpu.global_id(0)
        y[i] = a * x[i]
      end, { "float[]", "float[]", "double" })
      has(body, "fmul[^\n]*double", "a * x[i], a double")
    end)

    it("precision = 'single': a Lua-number argument is float and there is no double", function()
      local k = H.kernel(bk, function(y, x, a)
        local i = gpu.global_id(0)
        y[i] = a * x[i] + i * 0.5
      end, { name = "single_ir", precision = "single" })
      local y, x = ffi.new("float[4]"), H.array("float", { 1, 2, 3, 4 })
      k:launch(4, y, x, 0.1)
      H.check("float", y, function(i) return f32(f32(0.1) * x[i]) + i * 0.5 end, 4)
      local sigs = k:signatures()
      assert.are.equal(1, #sigs)
      local s = flat(sigs[1])
      assert.is_truthy(s:find("float"), s)
      assert.is_falsy(s:find("double"), "precision = 'single' signature has a double: " .. s)
      local body = H.ir_bodies(k:inspect_llvm(sigs[1]))
      has(body, "fmul[^\n]*float", "a * x[i]")
      hasnt(body, "double", "precision = 'single'")
    end)

    it("for j = 1, n with a double n has an integer loop variable", function()
      local body = ir_of(bk, function(out, n)
        local s = 0
        for j = 1, n do s = s + j end
        out[0] = s
      end, { "int64_t[]", "double" })
      hasnt(body, "sitofp", "integer loop variable")
      hasnt(body, "phi double", "integer loop variable")
      hasnt(body, "fadd", "integer loop variable")
    end)

    it("a float step has a double loop variable", function()
      local body = ir_of(bk, function(out, n)
        local s = 0
        for x = 0, n, 0.5 do s = s + x end
        out[0] = s
      end, { "double[]", "double" })
      has(body, "fadd[^\n]*double", "float loop variable")
    end)

    it("i * 0.5 is a double multiply by default", function()
      local body = ir_of(bk, function(out)
        local i = gpu.global_id(0)
        out[i] = i * 0.5
      end, { "float[]" })
      has(body, "double", "i * 0.5 in double")
    end)

    it("a value that may be a number or a boolean, then read, is an error naming the line", function()
      local file = H.this_file()
      local line = H.line_of("--@conflict-read")
      local k = H.kernel(bk, function(o, a)
        local i = gpu.global_id(0)
        local v = 1
        if a[i] > 0 then v = true end
        o[i] = v  --@conflict-read
      end, { name = "conflict" })
      local msg = H.error_of(function() k:launch(1, ffi.new("double[1]"), ffi.new("double[1]")) end)
      local what = H.check_compile_error(msg, file, line, "conflict", { "may be" })
      assert.is_truthy(H.lower_find(what, { "bool" }), msg)
      H.sanity(bk)
    end)

    it("a value that may be two different arrays, then read, is an error naming the line", function()
      local file = H.this_file()
      local line = H.line_of("--@conflict-arrays")
      local k = H.kernel(bk, function(o, a, b, c)
        local i = gpu.global_id(0)
        local src = a
        if c > 0 then src = b end
        o[i] = src[i]  --@conflict-arrays
      end, { name = "conflict2" })
      local msg = H.error_of(function()
        k:launch(1, ffi.new("double[1]"), ffi.new("float[1]"), ffi.new("int32_t[1]"), 1)
      end)
      H.check_compile_error(msg, file, line, "conflict2", { "may be" })
      H.sanity(bk)
    end)

    it("eager gpu.kernel(sig, fn) types from the signature", function()
      local k = H.kernel(bk, function(y, x)
        local i = gpu.global_id(0)
        y[i] = x[i] * 3
      end, { name = "eager" }, { "double[]", "float[]" })
      local body = H.ir_bodies(k:inspect_llvm({ "double[]", "float[]" }))
      has(body, "fmul[^\n]*float", "x[i] * 3 in float")
      local y, x = ffi.new("double[2]"), H.array("float", { 0.1, 1 / 3 })
      k:launch(2, y, x)
      H.check("double", y, function(i) return f32(x[i] * 3) end, 2)
    end)
  end)
end
