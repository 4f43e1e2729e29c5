-- Arithmetic and comparisons on C integers as LuaJIT's cdata arithmetic
-- (lj_carith.c): an operand that is a C integer -- an int64_t/uint64_t
-- element, a scalar integer argument (cdata in LuaJIT) -- makes the
-- operation 64-bit: both operands converted to uint64_t if a C integer
-- operand is one, else int64_t (a number converted as a store into such an
-- element: 1.5 -> 1, -3 -> 2^63 for uint64_t), the result wrapping, / and %
-- C's with a zero divisor giving 2^63's bits, ^ lj_carith_powi64/powu64,
-- comparisons in that kind (docs/typing.md, "C integers").

local H = require("spec.helpers")
local ffi = require("ffi")

local I64 = { 0, 1, -1, 2, 3, -7, 7, 100, 0x7fffffff, -0x80000000, 2^40 + 3, -(2^40) - 5,
  0x7fffffffffffffffLL, -0x7fffffffffffffffLL - 1, 63, -2 }
local U64 = {}
for j, v in ipairs(I64) do U64[j] = ffi.cast("uint64_t", v) end
-- Numbers: fractions both ways, negatives, -0, beyond 2^53 and 2^63, NaN, inf.
local NUM = { 0, 1, -1, 2, 3, -3, 0.5, -0.5, 1.5, -1.5, 2.5, 7.9, -7.9, -0.0, 2^53 + 2, 2^63,
  -(2^63), 2^64 + 2^40, 1e300, -1e300, 0 / 0, math.huge, -math.huge, 64, -64 }

local ops = {
  add = function(a, b) return a + b end,
  sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end,
  div = function(a, b) return a / b end,
  mod = function(a, b) return a % b end,
  pow = function(a, b) return a ^ b end,
}
local cmps = {
  lt = function(a, b) return (a < b) and 1 or 0 end,
  le = function(a, b) return (a <= b) and 1 or 0 end,
  eq = function(a, b) return (a == b) and 1 or 0 end,
  gt = function(a, b) return (a > b) and 1 or 0 end,
}

for _, bk in ipairs(H.backends) do
  describe("C integer arithmetic as LuaJIT's cdata arithmetic [" .. bk .. "]", function()
    local function map2(f, name, out, ta, xa, tb, xb)
      H.map(bk, f, { name = name, out = out, ins = { { ta, xa }, { tb, xb } } })
    end

    it("int64_t and uint64_t elements with numbers, both orders: + - * / % ^", function()
      local a64, an = H.pairs_of(I64, NUM)
      local u64, un = H.pairs_of(U64, NUM)
      for name, f in pairs(ops) do
        map2(f, name .. "_i64n", "int64_t", "int64_t", a64, "double", an)
        map2(f, name .. "_ni64", "int64_t", "double", an, "int64_t", a64)
        map2(f, name .. "_u64n", "uint64_t", "uint64_t", u64, "double", un)
        map2(f, name .. "_nu64", "uint64_t", "double", un, "uint64_t", u64)
      end
    end)

    it("two C integers: int64_t with int64_t and with uint64_t", function()
      local a, b = H.pairs_of(I64, I64)
      local ua, ib = H.pairs_of(U64, I64)
      for name, f in pairs(ops) do
        map2(f, name .. "_i64i64", "int64_t", "int64_t", a, "int64_t", b)
        map2(f, name .. "_u64i64", "uint64_t", "uint64_t", ua, "int64_t", ib)
      end
    end)

    it("comparisons of C integers with numbers in the 64-bit kind", function()
      local a64, an = H.pairs_of(I64, NUM)
      local u64, un = H.pairs_of(U64, NUM)
      for name, f in pairs(cmps) do
        map2(f, name .. "_i64n", "int32_t", "int64_t", a64, "double", an)
        map2(f, name .. "_nu64", "int32_t", "double", un, "uint64_t", u64)
      end
    end)

    it("unary minus keeps the C integer's kind", function()
      local neg = function(a) return -a end
      H.map(bk, neg, { name = "unm_i64", out = "int64_t", ins = { { "int64_t", I64 } } })
      H.map(bk, neg, { name = "unm_u64", out = "uint64_t", ins = { { "uint64_t", U64 } } })
    end)

    it("a literal operand: int64_t element + 1.5, * 0.5, / 2, % -3, < 7.5", function()
      local I = { { "int64_t", I64 } }
      H.map(bk, function(a) return a + 1.5 end, { name = "lit_add", out = "int64_t", ins = I })
      H.map(bk, function(a) return a * 0.5 end, { name = "lit_mul", out = "int64_t", ins = I })
      H.map(bk, function(a) return a / 2 end, { name = "lit_div", out = "int64_t", ins = I })
      H.map(bk, function(a) return a % -3 end, { name = "lit_mod", out = "int64_t", ins = I })
      H.map(bk, function(a) return (a < 7.5) and 1 or 0 end,
        { name = "lit_lt", out = "int32_t", ins = { { "int64_t", I64 } } })
    end)

    -- sim passes scalar arguments as Lua numbers (docs/typing.md)
    if bk ~= "sim" then
      it("scalar integer arguments (ffi.new(\"int32_t\", w)) are C integers: w / 4, w * 0.5", function()
        for _, ct in ipairs({ "int32_t", "uint8_t", "int64_t", "uint64_t" }) do
          for _, w in ipairs({ 0, 1, 10, 127 }) do
            local c = ffi.new(ct, w)
            for _, f in pairs(ops) do
              H.check_call(bk, ct == "uint64_t" and "uint64_t" or "int64_t", f, c, 4)
              H.check_call(bk, "int64_t", f, c, 0.5)
            end
            for _, f in pairs(cmps) do H.check_call(bk, "int32_t", f, c, 10.5) end
          end
        end
      end)
    end
  end)
end
