-- Device functions (other Lua functions a kernel calls, found as upvalues,
-- globals or fields of upvalue tables) and constants captured from upvalues,
-- globals and fields of upvalue tables.

-- luacheck: globals gj_spec_gtwice gj_spec_gscale gj_spec_gflag gj_spec_gconf gj_spec_gsquare gj_spec_rawg

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Globals of this spec file's environment (what a kernel here sees).
function gj_spec_gtwice(x) return 2 * x end
function gj_spec_gsquare(x) return x * x end
gj_spec_gscale = 7
gj_spec_gflag = true
gj_spec_gconf = { k = 3, sub = { m = 0.5 }, on = false }
-- A global set in _G itself (seen through the environment's __index).
rawset(_G, "gj_spec_rawg", function(x) return x + 1000 end)

-- Device functions as upvalues, calling each other.
local function h(x) return x * 3 + 1 end
local function g(x) return h(x) - h(x - 1) + x end            -- calls h twice
local function f(x) return g(x) * 2 + h(0.5) end              -- two deep: f -> g -> h
local function divmod(a, b) return math.floor(a / b), a % b end
local function three(x) return x, x * 2, x * 3 end
local function sign(x)
  if x > 0 then return 1 elseif x < 0 then return -1 end
  return 0
end
local function tail(x) return h(x) end                        -- a tail call: CALLT
local function tail2(x)
  if x > 0 then return divmod(x, 3) end                       -- tail call with two results
  return -1, -1
end
local function store(a, i, v) a[i] = v end                   -- no return value
local function sum_to(a, n)                                   -- an array argument and a loop
  local s = 0
  for j = 0, n - 1 do s = s + a[j] end
  return s
end
local function is_even(x) return x % 2 == 0 end               -- returns a bool

local lib = {
  scale = 2.5, on = true, off = false,
  sq = function(x) return x * x end,
  nested = { k = 10, fn = function(x) return x - 1 end },
}
function lib.cube(x) return x * x * x end

local SCALE = 4
local DEBUG = false
local ENABLED = true

local xs = { -3, -1.5, -1, 0, 0.5, 1, 2, 3.25, 10, 100 }

for _, bk in ipairs(H.backends) do
  describe("device functions [" .. bk .. "]", function()
    it("upvalue functions calling each other, two and three deep", function()
      H.map(bk, h, { name = "h", ins = { { "double", xs } } })
      H.map(bk, g, { name = "g", ins = { { "double", xs } } })
      H.map(bk, f, { name = "f", ins = { { "double", xs } } })
      H.map(bk, function(x) return f(g(h(x))) end, { name = "fgh", ins = { { "double", xs } } })
    end)

    it("global functions of the kernel's environment, and one in _G", function()
      H.map(bk, function(x) return gj_spec_gtwice(x) + gj_spec_gsquare(x) end, {
        name = "globalfn", ins = { { "double", xs } },
      })
      H.map(bk, function(x) return gj_spec_rawg(x) end, { name = "rawg", ins = { { "double", xs } } })
    end)

    it("a global function calling an upvalue function", function()
      H.map(bk, function(x) return gj_spec_gtwice(h(x)) end, { name = "mixcall", ins = { { "double", xs } } })
    end)

    it("functions in fields of an upvalue table", function()
      H.map(bk, function(x) return lib.sq(x) + lib.cube(x) + lib.nested.fn(x) end, {
        name = "fieldfn", ins = { { "double", xs } },
      })
    end)

    it("multiple return values: all, some, and the first in an expression", function()
      local function all(x)
        local a, b, c = three(x)
        return a + b * 10 + c * 100
      end
      local function some(x)
        local a, b = three(x)      -- the third is dropped
        return a - b
      end
      local function first(x) return three(x) + 1 end
      local function dm(a, b)
        local q, r = divmod(a, b)
        return q * 1000 + r
      end
      H.map(bk, all, { name = "mret_all", ins = { { "double", xs } } })
      H.map(bk, some, { name = "mret_some", ins = { { "double", xs } } })
      H.map(bk, first, { name = "mret_first", ins = { { "double", xs } } })
      H.map(bk, dm, {
        name = "divmod", ins = { { "double", { 7, -7, 7.5, 100, 0 } }, { "double", { 2, 2, -2, 7, 3 } } },
      })
    end)

    it("results of one call passed as the arguments of another: g(f(x))", function()
      local function add3(a, b, c) return a + b + c end
      local function f2(x) return add3(three(x)) end
      H.map(bk, f2, { name = "callm", ins = { { "double", xs } } })
      local function f3(x) return add3(x, three(x)) end     -- the last call expands: x, x, 2x
      H.map(bk, f3, { name = "callm2", ins = { { "double", xs } } })
    end)

    it("several returns in branches with the same count", function()
      H.map(bk, sign, { name = "sign", ins = { { "double", xs } } })
      H.map(bk, sign, { name = "sign_i", ins = { { "int32_t", { -5, 0, 5 } } } })
    end)

    it("return f(x) tail calls, with one and with two results", function()
      H.map(bk, tail, { name = "tail", ins = { { "double", xs } } })
      local function t2(x)
        local a, b = tail2(x)
        return a * 100 + b
      end
      H.map(bk, t2, { name = "tail2", ins = { { "double", xs } } })
      local function deep(x) return tail(tail(x)) end
      H.map(bk, deep, { name = "taildeep", ins = { { "double", xs } } })
    end)

    it("a device function returning a bool", function()
      H.map(bk, is_even, { name = "iseven", out = "bool", ins = { { "int32_t", { 0, 1, 2, -3, -4, 7 } } } })
      H.map(bk, function(x) return is_even(x) and 1 or 2 end, {
        name = "iseven2", ins = { { "int32_t", { 0, 1, -4 } } },
      })
    end)

    it("a device function with no result that writes an array, and one that reads an array", function()
      local n = 16
      local a = ffi.new("double[?]", n)
      local s = ffi.new("double[?]", n)
      local k = H.kernel(bk, function(o, p, m)
        local i = gpu.global_id(0)
        if i < m then
          store(o, i, i * 1.5)
          p[i] = sum_to(o, i)     -- only this work item's own earlier writes are certain
        end
      end, { name = "storefn" })
      k:launch(1, a, s, n)        -- one work item: i = 0
      assert.are.equal(0, a[0])
      assert.are.equal(0, s[0])
      local k2 = H.kernel(bk, function(o, m)
        for j = 0, m - 1 do store(o, j, j * 1.5) end
        o[m - 1] = sum_to(o, m - 1)
      end, { name = "storefn2" })
      k2:launch(1, a, n)
      H.check("double", a, function(i)
        if i < n - 1 then return i * 1.5 end
        local t = 0
        for j = 0, n - 2 do t = t + j * 1.5 end
        return t
      end, n)
    end)

    it("a device function used with different argument types is compiled for each", function()
      local function half(x) return x / 2 end
      local function k_body(o, a, b, c)
        o[0] = half(a[0])
        o[1] = half(b[0])
        o[2] = half(c)
        o[3] = half(3)
      end
      local out = ffi.new("double[4]")
      local k = H.kernel(bk, k_body, { name = "multisig" })
      k:launch(1, out, ffi.new("int32_t[1]", 7), ffi.new("float[1]", 0.1), 5.5)
      H.check("double", out, { 3.5, H.to_ct("float", H.to_ct("float", 0.1) / 2), 2.75, 1.5 }, 4)
    end)

    it("the same device function in two kernels", function()
      H.map(bk, function(x) return g(x) end, { name = "shared1", ins = { { "double", xs } } })
      H.map(bk, function(x) return g(x) + f(x) end, { name = "shared2", ins = { { "double", xs } } })
    end)

    it("device functions using math.* and bit.*", function()
      local function poly(x) return math.sqrt(math.abs(x)) + bit.band(x, 7) end
      H.map(bk, function(x) return poly(x) * 2 end, { name = "mathbit", ins = { { "double", xs } } })
    end)
  end)

  describe("constants [" .. bk .. "]", function()
    it("numbers and booleans from upvalues", function()
      H.map(bk, function(x)
        local r = x * SCALE
        if DEBUG then r = -1 end
        if ENABLED then r = r + 1 end
        return r
      end, { name = "upconst", ins = { { "double", xs } } })
    end)

    it("numbers and booleans from globals", function()
      H.map(bk, function(x)
        local r = x * gj_spec_gscale
        if gj_spec_gflag then r = r + 0.5 end
        return r
      end, { name = "globconst", ins = { { "double", xs } } })
    end)

    it("fields of upvalue tables and global tables, nested", function()
      H.map(bk, function(x)
        local r = x * lib.scale + lib.nested.k
        if lib.on then r = r + 1 end
        if lib.off then r = r + 1000 end
        r = r + gj_spec_gconf.k * gj_spec_gconf.sub.m
        if gj_spec_gconf.on then r = -r end
        return r
      end, { name = "fieldconst", ins = { { "double", xs } } })
    end)

    it("a constant used as a float element's partner keeps float arithmetic", function()
      H.map(bk, function(x) return x * lib.scale end, {
        name = "constf", out = "double", ins = { { "float", { 0.1, 1 / 3 } } },
        expect = function(x) return H.to_ct("float", x * 2.5) end,
      })
    end)

    it("are read once, when the kernel is compiled", function()
      if bk == "sim" then return end      -- sim runs the Lua function itself
      local factor = 2
      local out = ffi.new("double[1]")
      local body = function(o, x) o[0] = x * factor end
      local k = H.kernel(bk, body, { name = "once" })
      k:launch(1, out, 10)
      assert.are.equal(20, out[0])
      factor = 3          -- luacheck: ignore 311
      k:launch(1, out, 10)
      assert.are.equal(20, out[0])
      local k2 = H.kernel(bk, body, { name = "once2" })     -- a new kernel reads it again
      k2:launch(1, out, 10)
      assert.are.equal(30, out[0])
    end)

    it("a constant in a device function", function()
      local OFFSET = 0.25
      local function off(x) return x + OFFSET end
      H.map(bk, function(x) return off(x) * SCALE end, { name = "devconst", ins = { { "double", xs } } })
    end)
  end)
end
