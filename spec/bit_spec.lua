-- bit.* in kernels, as LuaJIT computes them: arguments converted to 32 bits
-- as bit.tobit does (round to nearest, modulo 2^32), results int32_t; with
-- a C integer operand (int64_t/uint64_t element, scalar integer argument)
-- 64-bit, results int64_t/uint64_t, as LuaJIT 2.1.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Doubles that exercise the conversion: negatives, above 2^31, above 2^32,
-- fractions (round half to even), large values.
local V = { 0, 1, -1, 2, 3, 5, 255, 256, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000, 0x100000001,
  -0x80000000, -0x80000001, 2^40 + 7, -(2^40) - 9, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.7,
  12345678.9, 0x12345678, 0xdeadbeef, -0.0, 1e15 + 0.25, 2^50 + 0.5 }
-- Beyond 2^51 LuaJIT's bit.tobit (x + 2^52 + 2^51, the low 32 bits of the
-- double) is no longer "modulo 2^32"; inf and nan give 0.
local BIG = { 2^51 + 1, 2^52 + 3, 2^53 - 1, -(2^53) + 1, 2^60, 1e300, -1e300, math.huge, -math.huge, 0 / 0 }
local SH = { 0, 1, 4, 8, 16, 31, 32, 33, 63, -1, -4, 100, 1.5, 2^32 + 3 }

local pairs_of = H.pairs_of

local DV, DB = { { "double", V } }, { { "double", BIG } }
local va, vb = pairs_of(V, V)
local sa, sb = pairs_of(V, SH)

local binary = {
  band = function(a, b) return bit.band(a, b) end,
  bor = function(a, b) return bit.bor(a, b) end,
  bxor = function(a, b) return bit.bxor(a, b) end,
}
local shifts = {
  lshift = function(a, b) return bit.lshift(a, b) end,
  rshift = function(a, b) return bit.rshift(a, b) end,
  arshift = function(a, b) return bit.arshift(a, b) end,
  rol = function(a, b) return bit.rol(a, b) end,
  ror = function(a, b) return bit.ror(a, b) end,
}

for _, bk in ipairs(H.backends) do
  describe("bit.* [" .. bk .. "]", function()
    it("bit.tobit of doubles: round to nearest even, modulo 2^32", function()
      local tobit = function(a) return bit.tobit(a) end
      H.map(bk, tobit, { name = "tobit", out = "double", ins = DV })
      H.map(bk, tobit, { name = "tobit32", out = "int32_t", ins = DV })
    end)

    it("bit.tobit, bit.band and bit.lshift of doubles beyond 2^51, inf and nan, as LuaJIT", function()
      local tobit = function(a) return bit.tobit(a) end
      local band = function(a) return bit.band(a, -1) end
      local lsh = function(a) return bit.lshift(1, a) end
      H.map(bk, tobit, { name = "tobit_big", out = "double", ins = DB })
      H.map(bk, band, { name = "band_big", out = "double", ins = DB })
      H.map(bk, lsh, { name = "lsh_big", out = "double", ins = DB })
    end)

    it("integers in [2^51, 2^53) convert as the doubles LuaJIT holds (issue 23 item 2)", function()
      -- m is an integer (a weak int, computed at run time); m * m is 4.5e15:
      -- LuaJIT's tobit adds 2^52 + 2^51, which rounds at that size
      local o = ffi.new("double[4]")
      local k = H.kernel(bk, function(out, a)
        local m = 1 % -67108864
        out[0] = bit.tobit(-(m * m))
        out[1] = bit.band(m * m, -1)
        local big = a[0] * a[0] * 3       -- an int64 product of int32 elements
        out[2] = bit.tobit(big)
        out[3] = bit.bxor(big + 1, 5)
      end, { name = "tobit_wide_int" })
      local a = ffi.new("int32_t[1]", 45000000)
      k:launch(1, o, a)
      local m = 1 % -67108864
      local big = 45000000 * 45000000 * 3
      H.check("double", o, { bit.tobit(-(m * m)), bit.band(m * m, -1), bit.tobit(big),
                             bit.bxor(big + 1, 5) }, 4)
    end)

    it("bit.bnot", function()
      H.map(bk, function(a) return bit.bnot(a) end, { name = "bnot", out = "double", ins = DV })
    end)

    for name, f in pairs(binary) do
      it("bit." .. name .. " of doubles", function()
        H.map(bk, f, { name = name, out = "double", ins = { { "double", va }, { "double", vb } } })
      end)
    end

    for name, f in pairs(shifts) do
      it("bit." .. name .. ": the count modulo 32, negative counts", function()
        H.map(bk, f, { name = name, out = "double", ins = { { "double", sa }, { "double", sb } } })
      end)
    end

    it("three and more arguments to band/bor/bxor", function()
      local function f(a, b, c)
        return bit.band(a, b, c) + bit.bor(a, b, c) * 3 + bit.bxor(a, b, c, 0x5555)
      end
      H.map(bk, f, {
        name = "varbit", out = "double",
        ins = { { "double", { 0xff, -1, 0xf0f0, 2^33 + 5 } }, { "double", { 0x0f, 0x7f, -2, 3 } },
                { "double", { 0x3c, 0xffffffff, 12345, -7 } } },
      })
    end)

    it("on integer elements: uint32_t above 2^31, int8_t negatives, int64_t", function()
      H.map(bk, function(a, b) return bit.band(a, b) end, {
        name = "band_u32", out = "double",
        ins = { { "uint32_t", { 0xffffffff, 0x80000000, 0xdeadbeef } }, { "int32_t", { -1, -1, 0xffff } } },
      })
      H.map(bk, function(a) return bit.rshift(a, 1) end, {
        name = "rshift_i8", out = "double", ins = { { "int8_t", { -1, -128, 127 } } },
      })
      H.map(bk, function(a) return bit.bxor(a, 0x0f) end, {
        name = "bxor_i64", out = "double", ins = { { "int64_t", { 5, -1, 0x7fffffff } } },
      })
    end)

    -- LuaJIT 2.1 (lib_bit.c): a C integer operand -- an int64_t/uint64_t
    -- element, a scalar integer argument -- makes the operation 64-bit, on
    -- uint64_t if one is a uint64_t, and the result cdata.  Shifts take
    -- their count modulo 64; bit.tobit keeps the low 32 bits.
    it("64-bit when an operand is a C integer, as LuaJIT 2.1", function()
      local I64 = { 0, 1, -1, 5, 0x7fffffff, -0x80000000, 0xffffffff, 2^40 + 3, -(2^40) - 5,
        0x7ffffffffffLL, 0x123456789abcdefLL, -0x123456789abcdefLL, 0x7fffffffffffffffLL,
        -0x7fffffffffffffffLL - 1 }
      local U64 = {}
      for j, v in ipairs(I64) do U64[j] = ffi.cast("uint64_t", v) end
      local NUM = { 0, -1, 3, 0xff, 2^40 + 0.5, -(2^33) - 1.5, 0xffffffff, 2^62, -2^62, 1e300, 0.75, -0.0 }
      local CNT = { 0, 1, 31, 32, 33, 63, 64, 65, -1, 100, 1.5, 2^32 + 3 }
      local a64, an = pairs_of(I64, NUM)
      local c64, cc = pairs_of(I64, CNT)
      local u64, un = pairs_of(U64, NUM)
      local ui, ii = pairs_of(U64, I64)
      local function map2(f, name, out, ta, xa, tb, xb)
        H.map(bk, f, { name = name, out = out, ins = { { ta, xa }, { tb, xb } } })
      end
      for _, name in ipairs({ "band", "bor", "bxor" }) do
        local f = binary[name]
        map2(f, name .. "_i64n", "int64_t", "int64_t", a64, "double", an)
        map2(f, name .. "_ni64", "int64_t", "double", an, "int64_t", a64)
        map2(f, name .. "_u64n", "uint64_t", "uint64_t", u64, "double", un)
        map2(f, name .. "_u64i64", "uint64_t", "uint64_t", ui, "int64_t", ii)
      end
      H.map(bk, function(a, b, c) return bit.band(a, b, c) + bit.bxor(c, a, b, 0x5555) end, {
        name = "bit3_64", out = "int64_t", ins = { { "double", an }, { "int64_t", a64 }, { "double", an } },
      })
      for name, f in pairs(shifts) do
        map2(f, name .. "_i64", "int64_t", "int64_t", c64, "double", cc)
        map2(f, name .. "_u64", "uint64_t", "uint64_t", c64, "double", cc)
        -- a C integer count of a number: a 32-bit shift by its low 32 bits
        map2(f, name .. "_cnt64", "double", "double", cc, "int64_t", c64)
      end
      local bnot, tobit = function(a) return bit.bnot(a) end, function(a) return bit.tobit(a) end
      H.map(bk, bnot, { name = "bnot_i64", out = "int64_t", ins = { { "int64_t", I64 } } })
      H.map(bk, bnot, { name = "bnot_u64", out = "uint64_t", ins = { { "uint64_t", U64 } } })
      H.map(bk, tobit, { name = "tobit_i64", out = "double", ins = { { "int64_t", I64 } } })
      H.map(bk, tobit, { name = "tobit_u64", out = "double", ins = { { "uint64_t", U64 } } })
      -- the 64-bit result is cdata: arithmetic on it stays integer
      H.map(bk, function(a, b) return bit.band(a, b) * 3 + 1 end, {
        name = "band64_arith", out = "int64_t", ins = { { "int64_t", a64 }, { "double", an } },
      })
    end)

    it("64-bit on a scalar int32_t argument (cdata), as LuaJIT 2.1", function()
      if bk == "sim" then
        -- sim makes scalar arguments Lua numbers (typing.md): 32-bit there
        assert.equals(1280, tonumber(H.call(bk, "int64_t", function(x) return bit.lshift(x, 40) end,
          ffi.new("int32_t", 5))))
        return
      end
      for _, w in ipairs({ 5, -7, 0x7fffffff }) do
        local cw = ffi.new("int32_t", w)
        H.check_call(bk, "int64_t", function(x) return bit.lshift(x, 40) end, cw)
        H.check_call(bk, "int64_t", function(x) return bit.band(x, 2^40 + 0xff) end, cw)
        H.check_call(bk, "int64_t", function(x) return bit.arshift(bit.bnot(x), 36) end, cw)
        H.check_call(bk, "uint64_t", function(x, u) return bit.bor(x, u) end, cw, ffi.new("uint32_t", 3))
      end
    end)

    it("on float elements (converted as tobit does)", function()
      H.map(bk, function(a) return bit.bor(a, 0) end, {
        name = "bor_f", out = "double", ins = { { "float", { 1.5, 2.5, -2.5, 3e9, 16777216, -0.75 } } },
      })
    end)

    it("results are int32_t and mix with arithmetic (xorshift hash)", function()
      local function hash(x)
        local h = bit.tobit(x)
        for _ = 1, 8 do
          h = bit.bxor(h, bit.lshift(h, 13))
          h = bit.bxor(h, bit.rshift(h, 17))
          h = bit.bxor(h, bit.lshift(h, 5))
        end
        return h
      end
      H.map(bk, hash, {
        name = "xorshift", out = "int32_t",
        ins = { { "double", H.seq(64, function(k) return k * 2654435761 end) } },
      })
      local function mix(x) return bit.band(x, 0xff) * 0.5 + bit.rshift(x, 24) end
      H.map(bk, mix, { name = "bitmix", out = "double", ins = DV })
    end)

    it("bit functions through a local alias", function()
      local band, lshift = bit.band, bit.lshift
      local function f(x) return band(lshift(x, 4), 0xfff0) end
      H.map(bk, f, { name = "bitalias", out = "double", ins = DV })
    end)

    it("bit.* on ids inside a kernel body", function()
      local out = ffi.new("int32_t[64]")
      local k = H.kernel(bk, function(o)
        local i = gpu.global_id(0)
        o[i] = bit.bor(bit.lshift(i, 26), bit.band(bit.bnot(i), 7))
      end, { name = "bitids" })
      k:launch(64, out)
      H.check("int32_t", out, function(i)
        return bit.bor(bit.lshift(i, 26), bit.band(bit.bnot(i), 7))
      end, 64)
    end)
  end)
end

-- Ranges through bit.* and loops (typing.md, "Negative zero", "Loops"): a
-- value that a loop keeps in bounds keeps an integer range, so bit.* take it
-- without the conversion through double that integers of unknown range
-- need (the 2^52 + 2^51 rounding constant), and 16-bit limb products stay
-- integer.  The results are checked against LuaJIT as well.
for _, bk in ipairs(H.compilers) do
  describe("integer ranges through bit.* and loops [" .. bk .. "]", function()
    it("(k + w) % 2^32 in a loop stays an integer of known range", function()
      local f = function(o, c)
        local k = bit.tobit(c) % 4294967296
        for r = 1, 10 do
          o[r - 1] = bit.bxor(k, r)
          k = (k + 0x9E3779B9) % 4294967296
        end
        local lo, hi = bit.band(k, 0xFFFF), bit.rshift(k, 16)
        o[10] = lo * hi * -1 + lo * hi   -- lo * hi * -1 may be -0 only if lo or hi is 0
      end
      local k = H.kernel(bk, f, { name = "kloop" })
      local ir = k:inspect_llvm({ "double[]", "lua_pos20" })
      assert.is_falsy(ir:find("4338000000000000", 1, true), "bxor through double")
      local o, want = ffi.new("double[11]"), ffi.new("double[11]")
      k:launch(1, o, 12345)
      H.interp(f, want, 12345)
      for i = 0, 10 do assert.are.equal(want[i], o[i]) end
    end)
  end)
end
