-- Boxed scalar arguments (issue 32, hold-out finding 5; docs/api.md,
-- "Arguments and types", and docs/typing.md, "Boxed floats"): a float or
-- double argument passed as cdata (ffi.new("double", x)) is its value, a
-- number, in the kernel on every backend: the kernel computes what the same
-- function computes on the host called with tonumber(x).  LuaJIT's own
-- cdata arithmetic would convert it to int64_t first (1.25 +
-- ffi.new("double", -0.375) is 1LL there); kernels do not follow that.
-- A boxed bool is the boolean.  Boxed integers are C integers on the
-- compiled backends (docs/typing.md, "C integers"; spec/carith_spec.lua).

local H = require("spec.helpers")
local ffi = require("ffi")

local function body(o, d, f, b)
  o[0] = 1.25 + d
  o[1] = d < 0 and 1 or 0
  o[2] = d / 2
  o[3] = -d
  o[4] = d * d + 0.5
  o[5] = f + 1
  o[6] = f * d
  o[7] = b and 1 or 0
  o[8] = math.floor(d)
  o[9] = d == -0.375 and 1 or 0
end

local N = 10

describe("boxed scalar arguments: LuaJIT's own cdata arithmetic", function()
  it("converts a boxed double to int64_t (what kernels do not follow)", function()
    local d = ffi.new("double", -0.375)
    assert.are.equal("cdata", type(1.25 + d))
    assert.is_true(1.25 + d == 1)
    assert.is_false(d < 0)
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("boxed scalar arguments [" .. bk .. "]", function()
    it("a boxed double, float or bool is its value: the host's result with tonumber", function()
      local k = H.kernel(bk, function(o, d, f, b) body(o, d, f, b) end, { name = "boxed" })
      for _, v in ipairs({ -0.375, 2.5, -0.0, 1e300 }) do
        local d, f, b = ffi.new("double", v), ffi.new("float", 1.5), ffi.new("bool", v > 0)
        local got, want = ffi.new("double[?]", N), ffi.new("double[?]", N)
        k:launch({ global = 1 }, got, d, f, b)
        body(want, tonumber(d), tonumber(f), v > 0)
        H.check("double", got, function(i) return want[i] end, N, { what = "boxed " .. v })
      end
      -- the signature is the unboxed one: the same compile serves both
      local sig = k:signatures()[1]
      assert.are.same({ "double", "float", "bool" }, { sig[2], sig[3], sig[4] })
    end)

    it("a boxed double and the Lua number give the same results", function()
      local k = H.kernel(bk, function(o, d, f, b) body(o, d, f, b) end, { name = "boxed2" })
      local a, c = ffi.new("double[?]", N), ffi.new("double[?]", N)
      k:launch({ global = 1 }, a, ffi.new("double", -0.375), ffi.new("float", 1.5), true)
      k:launch({ global = 1 }, c, -0.375, ffi.new("float", 1.5), true)
      assert.are.equal(0.875, a[0])
      assert.are.equal(1, a[1])
      H.check("double", a, function(i) return c[i] end, N, { what = "boxed vs number" })
    end)
  end)
end
