-- Control flow, booleans, nil and locals in kernels: each construct runs on
-- every backend of H.backends and is compared with the same Lua function run
-- by plain LuaJIT.

-- luacheck: ignore 581 (not (a < b) is meant: it differs from a >= b for nan)

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local D = H.concat(H.doubles, H.specials)             -- doubles incl. inf, nan
local small = { -3, -2.5, -1, -0.5, 0, 0.5, 1, 2, 3, 7, 10, 11.5, 20, 100, -100 }
local ints = { -7, -1, 0, 1, 2, 3, 5, 8, 27, 97, 1000, -2147483648, 2147483647 }

for _, bk in ipairs(H.backends) do
  describe("control flow [" .. bk .. "]", function()

    describe("if", function()
      it("if / elseif / else", function()
        local function classify(x)
          if x < 0 then
            return -1
          elseif x == 0 then
            return 0
          elseif x < 10 then
            return 1
          else
            return 2
          end
        end
        H.map(bk, classify, { name = "classify", ins = { { "double", D } } })
        H.map(bk, classify, { name = "classify_i", ins = { { "int32_t", ints } } })
      end)

      it("if without else, assignments in branches, nested ifs", function()
        local function f(x, y)
          local r = 0
          if x > y then r = x - y end
          if x > 0 then
            if y > 0 then r = r + 1 else r = r + 2 end
          else
            if y > 0 then r = r + 3 end
          end
          return r
        end
        local rev = H.seq(#small, function(k) return small[#small - k + 1] end)
        H.map(bk, f, { name = "nested", ins = { { "double", small }, { "double", rev } } })
      end)

      it("an early return from the kernel", function()
        local out = H.array("double", nil, 16)
        for j = 0, 15 do out[j] = -1 end
        local k = H.kernel(bk, function(o, n)
          local i = gpu.global_id(0)
          if i >= n then return end
          o[i] = i * 2
        end, { name = "early" })
        k:launch(16, out, 10)
        H.check("double", out, function(i) return i < 10 and i * 2 or -1 end, 16)
      end)
    end)

    describe("loops", function()
      it("while", function()
        local function collatz(n)
          local steps = 0
          while n ~= 1 and steps < 1000 do
            if n % 2 == 0 then n = n / 2 else n = 3 * n + 1 end
            steps = steps + 1
          end
          return steps
        end
        H.map(bk, collatz, {
          name = "collatz", ins = { { "double", { 1, 2, 3, 7, 27, 97, 871, 6171, 0.5 } } },
        })
        H.map(bk, collatz, { name = "collatz_i", ins = { { "int32_t", { 1, 2, 3, 7, 27, 97, 871 } } } })
      end)

      it("while over int32_t values carried around the loop (a >= b, gcd)", function()
        local function submod(a, b)
          while a >= b do a = a - b end
          return a
        end
        local function gcd(a, b)
          while b ~= 0 do a, b = b, a % b end
          return a
        end
        local ins = { { "int32_t", { 12, 7, 100, 3, 1000000 } }, { "int32_t", { 5, 3, 30, 7, 7 } } }
        H.map(bk, submod, { name = "submod", ins = ins })
        H.map(bk, gcd, { name = "gcd", ins = ins })
        H.map(bk, submod, { name = "submod16", ins = { { "int16_t", { 12, 7 } }, { "int16_t", { 5, 3 } } } })
      end)

      it("while with a compound condition and a condition false at entry", function()
        local function f(x, y)
          local i, s = 0, 0
          while i < x and s < y do
            s = s + i * 0.5
            i = i + 1
          end
          return s * 1000 + i
        end
        H.map(bk, f, {
          name = "while2", ins = { { "double", { 0, 10, 100, -1, 5 } }, { "double", { 5, 3, 1e9, 5, -1 } } },
        })
      end)

      it("repeat ... until, the condition reading a local of the body", function()
        local function f(x)
          local k = 0
          repeat
            local y = x * 2
            x = x + 1
            k = k + 1
          until y > 20 or k > 100
          return k
        end
        H.map(bk, f, { name = "repeat", ins = { { "double", small } } })
      end)

      it("numeric for: positive, negative and float steps, empty ranges", function()
        local function f(a, b)
          local s = 0
          for j = a, b do s = s + j end
          for j = b, a, -1 do s = s + 2 * j end
          for j = a, b, 2 do s = s - j end
          for x = a, b, 0.5 do s = s + x * x end
          for j = b, a, -3 do s = s + j * 0.25 end
          return s
        end
        H.map(bk, f, {
          name = "forsteps",
          ins = { { "double", { 1, 0, -5, 3, 2.5, 10, 7 } }, { "double", { 10, 0, 5, 1, 7.75, 10.5, -7 } } },
        })
        H.map(bk, f, {
          name = "forsteps_i",
          ins = { { "int32_t", { 1, 0, -5, 3, 10 } }, { "int32_t", { 10, 0, 5, 1, 100 } } },
        })
      end)

      it("numeric for with a step from an argument", function()
        local function f(a, b, c)
          local s, n = 0, 0
          for j = a, b, c do
            s = s + j
            n = n + 1
          end
          return s * 1000 + n
        end
        H.map(bk, f, {
          name = "forvarstep",
          ins = { { "double", { 0, 10, 0, 1, 5 } }, { "double", { 10, 0, 1, 1, 5 } },
                  { "double", { 3, -2, 0.125, -1, 1 } } },
        })
      end)

      it("assigning to the loop variable changes no iteration; an outer local of that name stays", function()
        local function f(n)
          local j = 100
          local s = 0
          for j = 1, n do -- luacheck: ignore 421
            s = s + j
            j = j * 10 -- luacheck: ignore 412
            s = s + j
          end
          return s * 1000 + j
        end
        H.map(bk, f, { name = "forcopy", ins = { { "double", { 0, 1, 5, 10 } } } })
      end)

      it("break out of while, for and repeat; an inner break leaves the outer loop running", function()
        local function f(n)
          local s = 0
          for j = 1, 1000 do
            if j > n then break end
            s = s + j
          end
          local k = 0
          while true do
            k = k + 1
            if k * k > n then break end
          end
          local r = 0
          repeat
            r = r + 1
            if r == 3 then break end
          until r > n
          local pairs_found = 0
          for a = 1, 10 do
            for b = 1, 10 do
              if a * b > n then break end
              pairs_found = pairs_found + 1
            end
          end
          return s * 1e6 + k * 1e4 + r * 100 + pairs_found
        end
        H.map(bk, f, { name = "break", ins = { { "double", { 0, 1, 2, 10, 50, 99 } } } })
      end)

      it("goto continue, a backward goto loop and a goto out of two loops", function()
        local function f(n)
          local s = 0
          for j = 1, n do
            if j % 3 == 0 then goto continue end
            s = s + j
            ::continue::
          end
          local k = 0
          ::again::
          k = k + 1
          if k < n then goto again end
          local found = -1
          for a = 1, 20 do
            for b = 1, 20 do
              if a * b == n then
                found = a * 100 + b
                goto done
              end
            end
          end
          ::done::
          return s * 1e6 + k * 1e3 + found
        end
        H.map(bk, f, { name = "goto", ins = { { "double", { 1, 2, 10, 17, 36, 400 } } } })
      end)

      it("a long loop inside one work item", function()
        local function f(n)
          local s = 0
          for j = 1, n do s = s + (j % 7) * 0.5 end
          return s
        end
        H.map(bk, f, { name = "long", ins = { { "double", { 1e6, 123457 } } } })
      end)

      it("loops that plain LuaJIT has already JIT-compiled (JFORL/JLOOP in the bytecode)", function()
        local function f(n)
          local s = 0
          for j = 1, n do s = s + j * 0.5 end
          local k = 0
          while k < n do k = k + 2 end
          return s + k
        end
        for _ = 1, 2000 do f(100) end      -- hot: the loops become traces
        H.map(bk, f, { name = "hot", ins = { { "double", { 0, 1, 10, 100, 1000 } } } })
      end)

      it("a function under jit.off (IFORL/ILOOP in the bytecode)", function()
        local function f(n)
          local s = 0
          for j = 1, n do s = s + j end
          local k = 0
          while k < n do k = k + 3 end
          return s + k
        end
        jit.off(f)
        for _ = 1, 2000 do f(100) end
        H.map(bk, f, { name = "nojit", ins = { { "double", { 0, 1, 10, 100 } } } })
      end)
    end)

    describe("and / or / not", function()
      it("0 is true; a and b or c; not", function()
        local function f(x)
          local a = 0 and 5 or 7                       -- 5: 0 is true
          local b = x > 0 and x or -x                  -- abs
          local c = x ~= x and 1 or 2                  -- nan test
          local d = (x > 1 and false) or 3             -- 3
          local e = not (x > 1) and 10 or 20
          local g = (not 0) and 1 or 2                 -- 2
          return a + b * 10 + c * 100 + (d == 3 and 1000 or 0) + e * 1e4 + g * 1e6
        end
        H.map(bk, f, { name = "andor", ins = { { "double", { -2, -0.5, 0, 0.5, 1, 2, 1e10, 0 / 0 } } } })
      end)

      it("and/or of booleans stored into a bool[]", function()
        local function f(x, y) return (x > 0 and y > 0) or (x < -10) end
        H.map(bk, f, { name = "boolandor", out = "bool",
          ins = { { "double", { 1, 1, -1, -11, 0 / 0, 5 } }, { "double", { 1, -1, 1, -1, 1, 0 / 0 } } } })
        local function g(x) return not (x == 0) end
        H.map(bk, g, { name = "not", out = "bool", ins = { { "int32_t", { 0, 1, -1 } } } })
      end)

      it("and/or with values of different types (a weak int and a float)", function()
        local function f(x) return x > 0 and 1 or 0.5 end
        H.map(bk, f, { name = "andormixed", ins = { { "double", { -1, 1, 0 } } } })
        local function g(x) return x > 0 and x or 0 end
        H.map(bk, g, { name = "relu", out = "float", ins = { { "float", { -1.5, 2.25, 0, 1e-30 } } } })
      end)

      it("and/or short-circuit: the right side is not evaluated", function()
        local function bump(o, i)
          o[i] = o[i] + 1
          return true
        end
        local out = ffi.new("double[8]")
        local x = H.array("double", { -1, 1, -2, 2, 0, 3, -3, 4 })
        local k = H.kernel(bk, function(o, a)
          local i = gpu.global_id(0)
          local r = a[i] > 0 or bump(o, i)     -- bumps when a[i] <= 0
          local s = a[i] > 2 and bump(o, i)    -- bumps when a[i] > 2
          if r and s then o[i] = o[i] + 100 end
        end, { name = "shortcircuit" })
        k:launch(8, out, x)
        H.check("double", out, function(i)
          local v = x[i]
          local n = (v <= 0 and 1 or 0) + (v > 2 and 1 or 0)
          if v > 2 then n = n + 100 end
          return n
        end, 8)
      end)
    end)

    describe("comparisons", function()
      it("all six operators on doubles, with nan, inf and -0", function()
        local function f(a, b)
          local r = 0
          if a < b then r = r + 1 end
          if a <= b then r = r + 2 end
          if a > b then r = r + 4 end
          if a >= b then r = r + 8 end
          if a == b then r = r + 16 end
          if a ~= b then r = r + 32 end
          if not (a < b) then r = r + 64 end
          if not (a >= b) then r = r + 128 end
          return r
        end
        local as = { 1, 2, 1, 0 / 0, 1, 0 / 0, -0.0, math.huge, -math.huge, 5 }
        local bs = { 2, 1, 1, 1, 0 / 0, 0 / 0, 0, math.huge, 1, -math.huge }
        H.map(bk, f, { name = "cmp6", ins = { { "double", as }, { "double", bs } } })
        H.map(bk, f, {
          name = "cmp6_i", ins = { { "int32_t", { 1, 2, 1, -5 } }, { "int32_t", { 2, 1, 1, -5 } } },
        })
        H.map(bk, f, { name = "cmp6_mixed",
          ins = { { "int32_t", { 1, 2, 1, 3, 0 } }, { "double", { 1.5, 1.5, 1, 0 / 0, -0.0 } } } })
      end)

      it("booleans compare with == and ~=", function()
        local function f(x, y)
          local a, b = x > 0, y > 0
          local r = 0
          if a == b then r = r + 1 end
          if a ~= b then r = r + 2 end
          if a == true then r = r + 4 end
          if b ~= false then r = r + 8 end
          return r
        end
        H.map(bk, f, {
          name = "boolcmp", ins = { { "double", { 1, 1, -1, -1 } }, { "double", { 1, -1, 1, -1 } } },
        })
      end)
    end)

    describe("booleans and nil", function()
      it("boolean arguments and constants", function()
        local out = ffi.new("double[4]")
        local k = H.kernel(bk, function(o, p, q)
          o[0] = p and 1 or 2
          o[1] = q and 1 or 2
          o[2] = (p == q) and 1 or 2
          local t = true
          if not q then t = false end
          o[3] = t and 3 or 4
        end, { name = "boolargs" })
        k:launch(1, out, true, false)
        H.check("double", out, { 1, 2, 2, 4 }, 4)
        k:launch(1, out, false, true)
        H.check("double", out, { 2, 1, 2, 3 }, 4)
      end)

      it("x == nil is false and x ~= nil is true for a value", function()
        local function f(x)
          local r = 0
          if x == nil then r = r + 1 end
          if x ~= nil then r = r + 2 end
          if nil == x then r = r + 4 end
          return r
        end
        H.map(bk, f, { name = "nil", ins = { { "double", { 1, 0, 0 / 0 } } } })
        H.map(bk, f, { name = "nil_b", ins = { { "bool", { true, false } } } })
        local out = ffi.new("double[2]")
        local a = H.array("float", { 1, 2 })
        local k = H.kernel(bk, function(o, arr)
          o[0] = (arr == nil) and 1 or 0
          o[1] = (arr[1] ~= nil) and 1 or 0
        end, { name = "nilarr" })
        k:launch(1, out, a)
        H.check("double", out, { 0, 1 }, 2)
      end)

      it("a missing value equals nil: a local without a value, an undefined global, a nil upvalue", function()
        local nothing = nil
        local function one(x) return x + 1 end
        local out = ffi.new("double[5]")
        local k = H.kernel(bk, function(o, x)
          local v -- luacheck: ignore 221
          o[0] = (v == nil) and 1 or 0
          o[1] = (gpujit_spec_undefined_global == nil) and 1 or 0 -- luacheck: ignore 113
          o[2] = (nothing == nil) and 1 or 0
          o[3] = (nothing ~= nil) and 1 or 0
          local a, b = one(x)
          o[4] = (b == nil) and a or -1
        end, { name = "missing" })
        k:launch(1, out, 2)
        H.check("double", out, { 1, 1, 1, 0, 3 }, 5)
      end)
    end)

    describe("locals and numbers", function()
      it("many locals, shadowing in blocks, swaps and multiple assignment", function()
        local function f(x, y)
          local a, b, c = x, y, x + y
          a, b = b, a
          do
            local a = a * 2 -- luacheck: ignore 421
            c = c + a
          end
          local d, e = c - a, nil
          if e == nil then d = d + 1 end
          local u1, u2, u3, u4, u5, u6, u7, u8 = 1, 2, 3, 4, 5, 6, 7, 8
          local sum = u1 + u2 + u3 + u4 + u5 + u6 + u7 + u8
          return a * 1e6 + b * 1e4 + c * 100 + d + sum
        end
        H.map(bk, f, { name = "locals", ins = { { "double", { 1, 2, -3 } }, { "double", { 5, 0.5, 7 } } } })
      end)

      it("the literal -0.0 is negative zero, as in Lua", function()
        -- LuaJIT's parser does not fold -0.0: it is a unary minus of 0.0
        local out = ffi.new("double[2]")
        local k = H.kernel(bk, function(o)
          o[0] = -0.0
          o[1] = 1 / -0.0
        end, { name = "negzero" })
        k:launch(1, out)
        H.check("double", out, { -0.0, -math.huge }, 2)
      end)

      it("number literals: hex, exponents, huge and tiny", function()
        local out = ffi.new("double[10]")
        local k = H.kernel(bk, function(o)
          o[0] = 0xff
          o[1] = 1e-3
          o[2] = -0.5
          o[3] = 1e300 * 1e10
          o[4] = 2.5e-320
          o[5] = 0x7fffffff + 1
          o[6] = 9007199254740993
          o[7] = -(2^63)
          o[8] = 1e300          -- integer-valued, but no int64_t holds it
          o[9] = 2^64 + 2^12    -- the same, just above the int64_t range
        end, { name = "literals" })
        k:launch(1, out)
        H.check("double", out, { 0xff, 1e-3, -0.5, math.huge, 2.5e-320, 2147483648, 9007199254740993, -(2^63),
          1e300, 2^64 + 2^12 }, 10)
      end)
    end)
  end)
end
