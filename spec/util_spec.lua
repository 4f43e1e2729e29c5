-- gpujit.util (docs/api.md): the clock, median timing and array checks that
-- the examples and benchmarks use.

local ffi = require("ffi")
local util = require("gpujit.util")

describe("gpujit.util", function()
  it("now() is a monotonic clock in seconds", function()
    local t0 = util.now()
    local t1 = util.now()
    assert.is_true(t1 >= t0)
    -- busy-wait about 20 ms of wall time: the clock advances by about that
    local c0 = os.clock()
    while os.clock() - c0 < 0.02 do end
    local d = util.now() - t1
    assert.is_true(d >= 0.015 and d < 5, tostring(d))
  end)

  it("median() of odd and even lists, leaving the list as it was", function()
    local l = { 5, 1, 4, 2, 3 }
    assert.are.equal(3, util.median(l))
    assert.are.same({ 5, 1, 4, 2, 3 }, l)
    assert.are.equal(2, util.median({ 4, 1, 2, 3 }))
    assert.has_error(function() util.median({}) end)
  end)

  it("time() warms up, then takes the median of the runs", function()
    local calls = 0
    local med, samples = util.time(function() calls = calls + 1 end, 7, 2)
    assert.are.equal(9, calls)
    assert.are.equal(7, #samples)
    assert.are.equal(util.median(samples), med)
    assert.is_true(med >= 0)
    local msg = select(2, pcall(util.time, 42))
    assert.is_truthy(msg:find("bad argument #1 to 'time' (function expected, got number)", 1, true))
  end)

  it("ulps() between floats and between doubles", function()
    assert.are.equal(0, util.ulps(1.5, 1.5))
    assert.are.equal(1, util.ulps(1, 1 + 2 ^ -52))
    assert.are.equal(1, util.ulps(1, 1 + 2 ^ -23, "float"))
    assert.are.equal(1, util.ulps(0, -0.0))
    assert.are.equal(0, util.ulps(0 / 0, 0 / 0))
    assert.are.equal(math.huge, util.ulps(0 / 0, 1))
  end)

  it("compare() is bitwise by default and names the first difference", function()
    local got = ffi.new("double[4]", { 1, 2, 3, 4 })
    assert.is_true(util.compare("double", got, { 1, 2, 3, 4 }))
    local ok, msg = util.compare("double", got, { 1, 2, 3 + 2 ^ -51, 5 }, 4, { label = "out" })
    assert.is_false(ok)
    assert.are.equal("out[2] is 3, expected 3.0000000000000004, 1 ulps apart "
      .. "(2 of 4 double elements differ, 0 ulps allowed)", msg)
    assert.is_true(util.compare("double", got, { 1, 2, 3 + 2 ^ -51, 4 }, 4, { ulps = 1 }))
    -- -0 and 0 differ bitwise
    assert.is_false((util.compare("double", ffi.new("double[1]", -0.0), { 0 })))
  end)

  it("compare() rounds the expected values to the element type", function()
    local got = ffi.new("float[3]")
    for i = 0, 2 do got[i] = 0.1 * (i + 1) end
    assert.is_true(util.compare("float", got, function(i) return 0.1 * (i + 1) end, 3))
    got[1] = got[1] + 1e-6
    local ok, msg = util.compare("float", got, function(i) return 0.1 * (i + 1) end, 3)
    assert.is_false(ok)
    assert.is_truthy(msg:find("^result%[1%] is 0%.2000"), msg)
  end)

  it("compare() on integers and Lua tables", function()
    local got = ffi.new("int32_t[3]", { 7, 8, 9 })
    assert.is_true(util.compare("int32_t", got, { 7, 8, 9 }))
    local ok, msg = util.compare("int32_t", { 7, 0, 9 }, got, 3)
    assert.is_false(ok)
    assert.are.equal("result[1] is 0, expected 8 (1 of 3 int32_t elements differ)", msg)
  end)

  it("check() raises compare's message at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, msg = pcall(function() util.check("double", { 1 }, { 2 }, 1) end)
    assert.is_false(ok)
    assert.is_truthy(msg:find("util_spec.lua:" .. line .. ": result[0] is 1, expected 2", 1, true), msg)
    assert.is_true(util.check("double", { 1 }, { 1 }, 1))
  end)
end)
