-- Lua numbers that hold whole values (docs/typing.md, "Whole numbers"):
-- the launch classes them, the kernel computes in integers where that gives
-- exactly what LuaJIT's doubles give, and in doubles where it cannot prove
-- it.  Every result here is compared bit for bit with plain LuaJIT.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu
local types = require("gpujit.types")

local function sigs_of(k)
  local t = {}
  for i, s in ipairs(k:signatures()) do t[i] = table.concat(s, ",") end
  return t
end

describe("whole-number classes", function()
  it("types.numtag classes each value", function()
    local cases = {
      { 1, "lua_pos20" }, { 2 ^ 20, "lua_pos20" }, { 2 ^ 20 + 1, "lua_pos31" },
      { 2 ^ 31 - 1, "lua_pos31" }, { 2 ^ 31, "number" }, { 0, "lua_zero" }, { -0.0, "number" },
      { -1, "lua_neg20" }, { -2 ^ 20, "lua_neg20" }, { -2 ^ 20 - 1, "lua_neg31" },
      { -2 ^ 31, "lua_neg31" }, { -2 ^ 31 - 1, "number" }, { 0.5, "number" }, { -2.5, "number" },
      { 0 / 0, "number" }, { math.huge, "number" }, { -math.huge, "number" }, { 2 ^ 53, "number" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], types.numtag(c[1]), "numtag(" .. H.fmt(c[1]) .. ")")
    end
    -- a launch with a dimension of 2^31 or more has no classes
    assert.are.equal("number", types.numtag(5, true))
  end)

  it("set_dims says when a launch is huge", function()
    local D = require("gpujit.dispatch")
    local k = { name = "t" }
    local d = ffi.new("gj_dims")
    assert.is_false((select(3, D.set_dims(k, d, 2 ^ 31 - 1))))
    assert.is_true((select(3, D.set_dims(k, d, 2 ^ 31))))
    assert.is_true((select(3, D.set_dims(k, d, { global = { 4, 2 ^ 31 } }))))
    assert.is_false((select(3, D.set_dims(k, d, { global = { 4, 2 ^ 30 }, group = { 2, 2 } }))))
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("whole numbers [" .. bk .. "]", function()
    local function check(f, ...) return H.check_call(bk, "double", f, ...) end

    it("a launch picks the overload of its classes, or one that covers them", function()
      local k = H.kernel(bk, function(o, a, b)
        o[0] = a * b + 1
      end, { name = "classes" })
      local o = ffi.new("double[1]")
      local function run(a, b)
        k:launch(1, o, a, b)
        assert.are.equal(a * b + 1, o[0])
      end
      run(3, 4)
      run(3, 0.5)
      run(3, 4)         -- (lua_pos20, double) runs it: no compile
      run(2 ^ 21, -7)   -- covered by none: the join (gpujit.lattice)
      run(3, 4)
      run(-5, 2 ^ 30)   -- covered by the join
      assert.are.same({ "double[],lua_pos20,lua_pos20", "double[],lua_pos20,double",
                        "double[],lua_int,double" }, sigs_of(k))
      assert.are.equal(bk == "sim" and 0 or 3, k.ncompiles)
    end)

    it("each launcher's guard lets a number of another class fall to its overload", function()
      -- precision = "single": the float overload rounds 2^24 + 1 and keeps -0,
      -- the integer ones do neither, so the result shows which overload ran
      local k = H.kernel(bk, function(o, a) o[0] = a * 1 end, { name = "lnguard", precision = "single" })
      local o = ffi.new("double[1]")
      local function run(a) k:launch(1, o, a); return o[0] end
      assert.are.equal(16777217, run(2 ^ 24 + 1))
      assert.are.equal(0.5, run(0.5))
      assert.are.equal(16777217, run(2 ^ 24 + 1))   -- not the float launcher's 16777216
      assert.are.equal(math.huge, 1 / run(0))
      assert.are.equal(-math.huge, 1 / run(-0.0))    -- not lua_zero's +0
      assert.are.equal(math.huge, 1 / run(0))
      assert.are.equal(16777218, run(2 ^ 24 + 1.5))   -- a float: rounds
      assert.are.equal(16777217, run(2 ^ 24 + 1))
    end)

    it("products that leave the exact range round as in LuaJIT", function()
      local w = 2 ^ 31 - 1
      check(function(a) return a * a end, w)
      check(function(a, b) return a * b * a * b end, w, w)
      check(function(a, b) return a * b * a * b end, 2 ^ 20, 2 ^ 20)      -- 2^80: past int64
      check(function(a, b, c) return a * b * c + 1 end, w, w - 6, 3)
      check(function(a, b) return (a * b + 1) - a * b end, 2 ^ 27, 2 ^ 27 - 1)
      check(function(a) return a * a * a * a - 1 end, 2 ^ 14)             -- 2^56 - 1 rounds
      check(function(a, b) return a + b + 2 ^ 52 + 2 ^ 52 end, w, 1)
    end)

    it("-0 wherever LuaJIT gives it", function()
      assert.are.equal(-math.huge, 1 / check(function(a) return -a end, 0))
      assert.are.equal(-math.huge, 1 / check(function(a, b) return a * b end, 0, -3))
      assert.are.equal(-math.huge, 1 / check(function(a, b) return b * a end, 0, -3))
      assert.are.equal(-math.huge, 1 / check(function(a) return a * -1 end, 0))
      assert.are.equal(-math.huge, 1 / check(function(a, b) return (a - a) * b end, 5, -2))
      assert.are.equal(math.huge, 1 / check(function(a, b) return a * b end, 0, 3))
      assert.are.equal(math.huge, 1 / check(function(a, b) return a % b end, 0, -5))
      assert.are.equal(math.huge, 1 / check(function(a, b) return a % b end, -5, 5))
      check(function(a) return -a end, -0.0)
    end)

    it("%: floored, NaN for a zero divisor, exact for large operands", function()
      for _, p in ipairs({ { 7, 3 }, { -7, 3 }, { 7, -3 }, { -7, -3 }, { 5, 0 }, { 0, 0 },
                           { 2 ^ 31 - 1, 2 ^ 20 + 3 }, { -(2 ^ 31), 7 } }) do
        check(function(a, b) return a % b end, p[1], p[2])
      end
      check(function(a, b) return (a * b * a) % (b + 1) end, 2 ^ 31 - 1, 2 ^ 31 - 5)
    end)

    it("/ and ^ stay float; math keeps LuaJIT's values", function()
      check(function(a, b) return a / b end, 7, 2)
      check(function(a, b) return a / b end, 7, 0)
      check(function(a, b) return a ^ b end, 3, 4)
      check(function(a, b) return math.floor(a / b) + math.abs(-a) end, -7, 2)
      check(function(a, b) return math.min(a, b) * math.max(a, b) end, -2 ^ 31, 2 ^ 31 - 1)
      check(function(a) return math.sqrt(a) + math.abs(a) * 3 end, 2 ^ 30)
      check(function(a, b) return bit.tobit(a * b) + bit.band(a, b) end, 2 ^ 31 - 1, 2 ^ 31 - 3)
    end)

    it("meets floats, weak literals and comparisons as the double it stands for", function()
      check(function(a, b) return a * 0.1 + b end, 3, 4)
      check(function(a, b) return (a < b and 1 or 0) + (a == b and 2 or 0) end, 2 ^ 31 - 1, 2 ^ 31 - 1)
      local o = ffi.new("float[4]")
      local x = H.array("float", { 0.1, 1 / 3, 16777217, -2.5 })
      local k = H.kernel(bk, function(out, xs, w)
        local i = gpu.global_id(0)
        out[i] = xs[i] * w + w * w
      end, { name = "lnstorefloat" })
      k:launch(4, o, x, 2 ^ 31 - 1)
      local w = 2 ^ 31 - 1
      H.check("float", o, function(i) return x[i] * w + w * w end, 4)
    end)

    it("loop counters and accumulators", function()
      check(function(n, w)
        local s = 0
        for j = 1, n do s = s + j * w end
        return s
      end, 1000, 2 ^ 31 - 1)
      check(function(n, w)
        local s, j = 0, 0
        while j < n do s = s * 3 + w; j = j + 1 end
        return s
      end, 60, 5)
      check(function(n)
        local s = 0
        for j = n, 1, -1 do s = s + j % 7 end
        return s
      end, 200)
    end)

    it("device functions take and return whole numbers", function()
      local function lin(y, w, x) return y * w + x end
      check(function(a, b) return lin(a, b, 3) + lin(b, a, -3) end, 2 ^ 31 - 1, 2 ^ 30)
      check(function(a, b) return lin(a, b, 0) end, 0, -4)
    end)

    it("index math of Lua-number sizes compiles to integers", function()
      local k = H.kernel(bk, function(src, dst, w, h)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        if x < w and y < h then dst[y * w + x] = src[(y + 1) * w + x] end
      end, { name = "lnidx" })
      local ir = k:inspect_llvm({ "float[]", "float[]", "lua_pos20", "lua_pos20" })
      assert.is_nil(ir:find("sitofp"), "integer index math: no int -> double conversion")
      assert.is_nil(ir:find("fmul double"), "no double multiply")
      local irf = k:inspect_llvm({ "float[]", "float[]", "double", "double" })
      assert.truthy(irf:find("double"))
      local w, h = 37, 5
      local src, dst = H.array("float", nil, w * (h + 1)), H.array("float", nil, w * h)
      for i = 0, w * (h + 1) - 1 do src[i] = i end
      k:launch({ global = { w, h } }, src, dst, w, h)
      H.check("float", dst, function(i) return src[i + w] end, w * h)
    end)

    it("precision = single: whole sizes index past 2^24 exactly (a float index would not)", function()
      local k = H.kernel(bk, function(o, w, h)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        if x < w and y < h then o[y * w + x] = o[y * w + x] + 1 end
      end, { name = "lnsingle", precision = "single" })
      local W, Hh = 4099, 4099          -- 16.8M elements: past float's 2^24
      local o = ffi.new("uint8_t[?]", W * Hh)
      k:launch({ global = { W, Hh } }, o, W, Hh)
      local bad = 0
      for i = 0, W * Hh - 1 do if o[i] ~= 1 then bad = bad + 1 end end
      assert.are.equal(0, bad)
      assert.are.same({ "uint8_t[],lua_pos20,lua_pos20" }, sigs_of(k))
    end)

    it("a weak-int counter compares with a whole number as integers", function()
      local k = H.kernel(bk, function(o, n)
        local it = 0
        while it < n and it ~= n + 5 do it = it + 1 end
        o[gpu.global_id(0)] = it
      end, { name = "lncount" })
      local ir = k:inspect_llvm({ "int32_t[]", "lua_pos20" })
      assert.is_nil(ir:find("sitofp"), "the counter is compared as an integer")
      local o = ffi.new("int32_t[2]")
      k:launch(2, o, 1000)
      H.check("int32_t", o, { 1000, 1000 }, 2)
    end)

    it("eager signatures name the classes; lua_int holds them all", function()
      local k = H.kernel(bk, function(o, n) o[0] = n * n end, { name = "lneager" },
        { "double[]", "lua_int" })
      local o = ffi.new("double[1]")
      for _, v in ipairs({ 5, -2 ^ 31, 2 ^ 31 - 1, 0 }) do
        k:launch(1, o, v)
        assert.are.equal(v * v, o[0])
      end
      local err = H.error_of(function() k:launch(1, o, 0.5) end)
      assert.truthy(err:find("expected lua_int", 1, true), err)
      k:launch(1, o, 0)
      -- -0 is not whole in this sense: the launcher of the 0 just before
      -- must not pass it on as the integer 0
      err = H.error_of(function() k:launch(1, o, -0.0) end)
      assert.truthy(err:find("expected lua_int", 1, true), err)
      assert.are.same({ "double[],lua_int" }, sigs_of(k))
    end)
  end)
end
