-- Arithmetic operators with Lua's meaning and every math.* function of the
-- kernel subset, compared with plain LuaJIT (its interpreter: H.map).
--
-- double results: bitwise (precision = "double" keeps LuaJIT's arithmetic
-- exactly; the cpu backend calls the same libm).  float results: the value
-- computed in double, rounded to float, within FLOAT_ULPS (1 for + - * / sqrt,
-- which are then exact, FLOAT_TRANS_ULPS for transcendental functions).

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local LIBM_DOUBLE_ULPS = 0   -- transcendental math on doubles: bitwise (the host's libm)

-- Note: LuaJIT's interpreter gives math.ceil(-0.5) = +0, its JIT (and C)
-- -0.  The reference here, as everywhere, is the interpreter (H.interp).
local LIBM_FLOAT_ULPS = 2

local D = H.concat(H.doubles, H.specials)

local pairs_of = H.pairs_of

local PA = { 0, -0.0, 1, -1, 0.5, -2.5, 3, 7.25, -7.25, 1e-300, 1e300, 1 / 3, 2^53, 0.1,
  math.huge, -math.huge, 0 / 0 }
local pa, pb = pairs_of(PA, PA)

local F = { 0, -0.0, 1, -1, 0.5, -2.5, 3, 7.25, 0.1, 1 / 3, 1e-3, 100.5, 16777215, -1e30, 1e-40 }
local fa, fb = pairs_of(F, { 1, -1, 0.1, 3, 1e-3, 7.25, -0.5, 2 })

local I = { 0, 1, -1, 2, -2, 3, 7, -7, 100, -100, 12345, -30000, 46340, -46340 }   -- no product overflows
local ia, ib = pairs_of(I, I)
local PP = { { "double", pa }, { "double", pb } }
local II = { { "int32_t", ia }, { "int32_t", ib } }
local FF = { { "float", fa }, { "float", fb } }

local unary = {
  { "abs", math.abs }, { "ceil", math.ceil }, { "floor", math.floor }, { "sqrt", math.sqrt },
  { "exp", math.exp }, { "log", math.log }, { "log10", math.log10 }, { "sin", math.sin },
  { "cos", math.cos }, { "tan", math.tan }, { "asin", math.asin }, { "acos", math.acos },
  { "atan", math.atan }, { "sinh", math.sinh }, { "cosh", math.cosh }, { "tanh", math.tanh },
}
-- Each as a device function that calls math.NAME (a global lookup in the kernel).
local unary_fn = {
  abs = function(x) return math.abs(x) end,
  ceil = function(x) return math.ceil(x) end,
  floor = function(x) return math.floor(x) end,
  sqrt = function(x) return math.sqrt(x) end,
  exp = function(x) return math.exp(x) end,
  log = function(x) return math.log(x) end,
  log10 = function(x) return math.log10(x) end,
  sin = function(x) return math.sin(x) end,
  cos = function(x) return math.cos(x) end,
  tan = function(x) return math.tan(x) end,
  asin = function(x) return math.asin(x) end,
  acos = function(x) return math.acos(x) end,
  atan = function(x) return math.atan(x) end,
  sinh = function(x) return math.sinh(x) end,
  cosh = function(x) return math.cosh(x) end,
  tanh = function(x) return math.tanh(x) end,
}
local exact = { abs = true, ceil = true, floor = true, sqrt = true }

local DIN = H.concat(D, { 0.25, -0.75, 0.999, -0.999, 709.5, -745.5, 710, 1e-10, 88, 3e38, 1e5 + 0.5 })

for _, bk in ipairs(H.backends) do
  -- bitwise where the backend calls LuaJIT's libm; a GPU's library is not it
  local DOUBLE_TRANS_ULPS, FLOAT_TRANS_ULPS = H.math_ulps(bk, LIBM_DOUBLE_ULPS, LIBM_FLOAT_ULPS)
  describe("arithmetic [" .. bk .. "]", function()
    it("+ - * / on doubles, bitwise", function()
      H.map(bk, function(a, b) return a + b end, { name = "add", ins = PP })
      H.map(bk, function(a, b) return a - b end, { name = "sub", ins = PP })
      H.map(bk, function(a, b) return a * b end, { name = "mul", ins = PP })
      H.map(bk, function(a, b) return a / b end, { name = "div", ins = PP })
    end)

    it("% on doubles: floored, a - floor(a/b)*b, with negative operands, inf and nan", function()
      H.map(bk, function(a, b) return a % b end, { name = "mod", ins = PP })
      H.map(bk, function(a) return a % 1 end, { name = "mod1", ins = { { "double", D } } })
      H.map(bk, function(a) return a % -2.5 end, { name = "modneg", ins = { { "double", D } } })
      H.map(bk, function(a) return 5.5 % a end, { name = "modk", ins = { { "double", D } } })
    end)

    it("^ on doubles, with fractional and negative exponents", function()
      H.map(bk, function(a, b) return a ^ b end, {
        name = "pow", ins = PP, ulps = DOUBLE_TRANS_ULPS,
      })
      for _, e in ipairs({ 0.5, -1, 3, 2, 1 / 3, -0.5, 10, 0 }) do
        local f = loadstring("return function(a) return a ^ " .. string.format("%.17g", e) .. " end")()
        H.map(bk, f, { name = "powk", ins = { { "double", D } }, ulps = DOUBLE_TRANS_ULPS })
      end
      H.map(bk, function(a) return 2 ^ a end, {
        name = "pow2x", ins = { { "double", D } }, ulps = DOUBLE_TRANS_ULPS,
      })
    end)

    it("unary minus on doubles (including -0, nan) and on integers", function()
      H.map(bk, function(a) return -a end, { name = "unm", ins = { { "double", D } } })
      H.map(bk, function(a) return -a end, { name = "unm_i", ins = { { "int32_t", I } } })
      H.map(bk, function(a) return -a end, { name = "unm_f", out = "float", ins = { { "float", F } } })
      H.map(bk, function(a) return -(-a) end, { name = "unm2", ins = { { "double", D } } })
    end)

    it("+ - * % on int32_t, as LuaJIT where nothing overflows, -0 included", function()
      local ins = II
      H.map(bk, function(a, b) return a + b end, { name = "iadd", ins = ins })
      H.map(bk, function(a, b) return a - b end, { name = "isub", ins = ins })
      H.map(bk, function(a, b) return a * b end, { name = "imul", ins = ins })
      H.map(bk, function(a, b) return a % b end, {
        name = "imod", ins = II,
        expect = function(a, b) return b == 0 and 0 or a % b end,   -- typing.md: integer x % 0 is 0
      })
    end)

    it("division of integers gives a float; of C integers, LuaJIT's integer division", function()
      H.map(bk, function(a, b) return a / b end, { name = "idiv", ins = II })
      -- an int64_t element is cdata: 7LL / 2 is 3LL (typing.md, "C integers")
      H.map(bk, function(a) return a / 2 end, {
        name = "idiv2", out = "double", ins = { { "int64_t", I } },
      })
    end)

    it("+ - * / % on floats, exactly rounded", function()
      for op, f in pairs({
        add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
        mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
      }) do
        H.map(bk, f, { name = "f" .. op, out = "float", ins = FF, ulps = 0 })
      end
      -- float %: typing.md computes a - floor(a/b)*b in double for float
      -- operands, as LuaJIT does before storing (1 % 0.1f would be 0 in float
      -- steps, 0.0999... this way)
      H.map(bk, function(a, b) return a % b end, { name = "fmod", out = "float", ins = FF, ulps = 0 })
    end)

    it("float ^ float within float rounding", function()
      H.map(bk, function(a, b) return a ^ b end, {
        name = "fpow", out = "float",
        ins = { { "float", { 2, 0.5, 3, 10, 1.5 } }, { "float", { 0.5, 3, -1, 2.5, 7 } } },
        ulps = FLOAT_TRANS_ULPS,
      })
    end)

    it("mixed expressions: precedence and associativity", function()
      local function f(a, b, c)
        return a + b * c - a / b ^ 2 % 3 + -a ^ 2 - (a - b - c) + 2 ^ 3 ^ 0.5
      end
      H.map(bk, f, {
        name = "expr",
        ins = { { "double", { 1, 2, -3, 0.5 } }, { "double", { 3, -1, 4, 0.25 } },
                { "double", { 5, 6, -7, 8 } } },
        ulps = DOUBLE_TRANS_ULPS,
      })
    end)
  end)

  describe("math.* [" .. bk .. "]", function()
    for _, u in ipairs(unary) do
      local name, ref = u[1], u[2]
      local f = unary_fn[name]
      it("math." .. name .. " on doubles", function()
        H.map(bk, f, {
          name = name, ins = { { "double", DIN } }, expect = ref,
          ulps = exact[name] and 0 or DOUBLE_TRANS_ULPS,
        })
      end)
      it("math." .. name .. " on floats gives float", function()
        H.map(bk, f, {
          name = name .. "_f", out = "float",
          ins = { { "float", H.concat(F, { 0.25, -0.75, 88, -87.5, 1e5 }) } },
          expect = ref, ulps = exact[name] and 0 or FLOAT_TRANS_ULPS,
        })
      end)
      it("math." .. name .. " on integers", function()
        H.map(bk, f, {
          name = name .. "_i", ins = { { "int32_t", I } }, expect = ref,
          ulps = exact[name] and 0 or DOUBLE_TRANS_ULPS,
        })
      end)
    end

    it("math.atan2", function()
      H.map(bk, function(y, x) return math.atan2(y, x) end, {
        name = "atan2", ins = PP, ulps = DOUBLE_TRANS_ULPS,
      })
      H.map(bk, function(y, x) return math.atan2(y, x) end, {
        name = "atan2_f", out = "float", ins = FF, ulps = FLOAT_TRANS_ULPS,
      })
    end)

    it("math.pow", function()
      H.map(bk, function(x, y) return math.pow(x, y) end, {
        name = "mpow", ins = PP, ulps = DOUBLE_TRANS_ULPS,
      })
      H.map(bk, function(x) return math.pow(x, 0.5) end, {
        name = "mpowh", ins = { { "double", D } }, ulps = DOUBLE_TRANS_ULPS,
      })
    end)

    it("math.fmod (C fmod: the sign of the dividend)", function()
      H.map(bk, function(x, y) return math.fmod(x, y) end, {
        name = "mfmod", ins = PP,
      })
      H.map(bk, function(x, y) return math.fmod(x, y) end, {
        name = "mfmod_i", ins = { { "int32_t", { -7, 7, -7, 100, 5 } }, { "int32_t", { 3, -3, -3, 7, 5 } } },
      })
      H.map(bk, function(x, y) return math.fmod(x, y) end, {
        name = "mfmod_f", out = "float", ins = FF, ulps = 0,
      })
    end)

    it("math.min and math.max, two and three arguments", function()
      local xs, ys = pairs_of({ 1, -1, 0.5, 3, -7.25, 1e300, -math.huge, math.huge },
        { 2, -2, 0.5, -3, 7.25, 1e-300 })
      local ins2 = { { "double", xs }, { "double", ys } }
      local zs = H.seq(#xs, function(k) return k - 20 end)
      local ins3 = { { "double", xs }, { "double", ys }, { "double", zs } }
      H.map(bk, function(a, b) return math.min(a, b) end, { name = "min", ins = ins2 })
      H.map(bk, function(a, b) return math.max(a, b) end, { name = "max", ins = ins2 })
      H.map(bk, function(a, b, c) return math.max(a, b, c) end, { name = "max3", ins = ins3 })
      H.map(bk, function(a, b, c) return math.min(a, b, c) end, { name = "min3", ins = ins3 })
      H.map(bk, function(a, b) return math.min(a, b) end, {
        name = "min_i", out = "int32_t", ins = II,
      })
      H.map(bk, function(a, b) return math.max(a, b) end, {
        name = "max_f", out = "float", ins = FF, ulps = 0,
      })
    end)

    it("math.min and math.max with nan and signed zeros give one of the operands", function()
      -- LuaJIT's interpreter and JIT disagree here (max(1, nan), min(0, -0)),
      -- so the result must only be one of the operands, bit for bit.
      local xs, ys = pairs_of({ 1, 0 / 0, 0, -0.0 }, { 1, 0 / 0, 0, -0.0 })
      local n = #xs
      local a, b = H.array("double", xs), H.array("double", ys)
      local lo, hi = ffi.new("double[?]", n), ffi.new("double[?]", n)
      local k = H.kernel(bk, function(o1, o2, x, y)
        local i = gpu.global_id(0)
        o1[i] = math.min(x[i], y[i])
        o2[i] = math.max(x[i], y[i])
      end, { name = "minmax_nan" })
      k:launch(n, lo, hi, a, b)
      for i = 0, n - 1 do
        for _, r in ipairs({ lo[i], hi[i] }) do
          assert.is_true(H.same("double", r, a[i]) or H.same("double", r, b[i]),
            "min/max(" .. H.fmt(a[i]) .. ", " .. H.fmt(b[i]) .. ") gave " .. H.fmt(r))
        end
      end
    end)

    it("math.modf returns two values", function()
      local function intpart(x) local a = math.modf(x); return a end
      local function frac(x) local _, b = math.modf(x); return b end
      H.map(bk, intpart, { name = "modf1", ins = { { "double", D } } })
      H.map(bk, frac, { name = "modf2", ins = { { "double", D } } })
      H.map(bk, frac, { name = "modf_f", out = "float", ins = { { "float", F } }, ulps = 0 })
      local function both(x)
        local a, b = math.modf(x)
        return a * 1000 + b
      end
      H.map(bk, both, { name = "modf3", ins = { { "double", { 1.25, -3.5, 100.125, 0 } } } })
    end)

    it("math.log(x, base)", function()
      local xs, bs = pairs_of({ 8, 100, 1000, 2, 0.5, 1e-5, 3, 1e300, 0, -1, math.huge },
        { 2, 10, 3, 0.5, math.exp(1), 16, 1 })
      H.map(bk, function(x, b) return math.log(x, b) end, {
        name = "logb", ins = { { "double", xs }, { "double", bs } }, ulps = DOUBLE_TRANS_ULPS,
      })
      local ins = { { "double", DIN } }
      local u = DOUBLE_TRANS_ULPS
      H.map(bk, function(x) return math.log(x, 2) end, { name = "log2", ins = ins, ulps = u })
      H.map(bk, function(x) return math.log(x, 10) end, { name = "logk10", ins = ins, ulps = u })
    end)

    it("math.huge and math.pi", function()
      local out = ffi.new("double[4]")
      local fout = ffi.new("float[2]")
      local k = H.kernel(bk, function(o, fo)
        o[0] = math.huge
        o[1] = -math.huge
        o[2] = math.pi
        o[3] = math.pi * 2
        fo[0] = math.pi
        fo[1] = math.huge
      end, { name = "consts" })
      k:launch(1, out, fout)
      H.check("double", out, { math.huge, -math.huge, math.pi, math.pi * 2 }, 4)
      H.check("float", fout, { math.pi, math.huge }, 2, { ulps = 0 })
    end)

    it("math functions through local aliases (upvalues)", function()
      local sqrt, floor, sin, max, huge = math.sqrt, math.floor, math.sin, math.max, math.huge
      local function f(x)
        if x ~= x then return -1 end
        return floor(sqrt(math.abs(x)) * 1000) + sin(x) + max(x, 0.5) + (x == huge and 1 or 0)
      end
      H.map(bk, f, {
        name = "aliases", ins = { { "double", { 0, 1, 2, 10, -3, 0.25, 1e10 } } }, ulps = DOUBLE_TRANS_ULPS,
      })
    end)

    it("math.* inside a kernel body (not a device function)", function()
      local x = H.array("double", DIN)
      local n = #DIN
      local out = ffi.new("double[?]", n)
      local k = H.kernel(bk, function(o, a, m)
        local i = gpu.global_id(0)
        if i < m then o[i] = math.exp(math.sin(a[i])) + math.floor(a[i] * 0.5) end
      end, { name = "inline" })
      k:launch(n, out, x, n)
      local want = H.interp(function()
        local t = {}
        for j = 0, n - 1 do t[j + 1] = math.exp(math.sin(x[j])) + math.floor(x[j] * 0.5) end
        return t
      end)
      H.check("double", out, want, n, { ulps = DOUBLE_TRANS_ULPS })
    end)
  end)
end
