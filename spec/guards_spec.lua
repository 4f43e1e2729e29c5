-- Ranges refined by conditions (docs/typing.md, "Guards"): a comparison of
-- two integers narrows their ranges where it holds, so that index math on
-- guarded ids and Lua-number sizes is done in integers where the integer
-- result is LuaJIT's double.  Every kernel here is run over a grid and its
-- stores compared bit for bit with the same function run by plain LuaJIT,
-- with sizes that bound (whole) and sizes that must not (fractions, -0,
-- NaN, +-inf, past 2^31).

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu
local types = require("gpujit.types")

local GW, GH = 6, 5          -- the grid; each work item writes o[y * GW + x]
local N = GW * GH

-- Sizes: classes lua_pos20 (small, its edge), lua_pos31, lua_zero,
-- lua_neg20, and doubles (which must not narrow anything).
local SIZES = { 4, 2 ^ 20, 2 ^ 31 - 1, 0, -3, 2.5, -0.0, 0 / 0, math.huge, -math.huge, 2 ^ 31, 2 ^ 53 }

-- f(o, x, y, a, b) stores into o[y * GW + x] (or not); the kernel calls it
-- with its ids, plain LuaJIT with every x, y of the grid.
local function grid_kernel(bk, name, f)
  return H.kernel(bk, function(o, p, q)
    f(o, gpu.global_id(0), gpu.global_id(1), p, q)
  end, { name = name })
end

local function grid(bk, k, f, a, b)
  local got, ref = ffi.new("double[?]", N), ffi.new("double[?]", N)
  for i = 0, N - 1 do got[i], ref[i] = -1.5, -1.5 end
  k:launch({ global = { GW, GH } }, got, a, b)
  H.interp(function()
    for y = 0, GH - 1 do
      for x = 0, GW - 1 do f(ref, x, y, a, b) end
    end
  end)
  H.check("double", got, function(i) return ref[i] end, N,
    { what = k.name .. "(" .. H.fmt(a) .. ", " .. H.fmt(b) .. ") on " .. bk })
end

-- The guarded kernels: each spelling of a guard, and a use of the guarded
-- value whose exactness in integers depends on its range (an index of a
-- 4-channel image, times a size again to pass 2^53 when nothing bounds it).
local GUARDS = {
  lt = function(o, x, y, w, _)
    if x < w then o[y * 6 + x] = ((y * w + x) * 4 + 3) * w end
  end,
  lt_and = function(o, x, y, w, h)
    if x < w and y < h then o[y * 6 + x] = ((y * w + x) * 4 + 3) * h end
  end,
  ge_return = function(o, x, y, w, h)
    if x >= w then return end
    if y >= h then return end
    o[y * 6 + x] = ((y * w + x) * 4 + 1) * (w + h)
  end,
  not_ge = function(o, x, y, w, _)   -- the spelling is the test
    if not (x >= w) then o[y * 6 + x] = (x * w * 4 + y) * w end -- luacheck: ignore 581
  end,
  swapped = function(o, x, y, w, h)
    if w > x and h >= y + 1 then o[y * 6 + x] = (y * w + x) * 4 * w + h end
  end,
  le = function(o, x, y, w, _)
    if x <= w - 1 then o[y * 6 + x] = (x * 4 + y) * w * 1024 end
  end,
  gt_else = function(o, x, y, w, h)   -- the else branch: x <= w
    if x > w then o[y * 6 + x] = -1 else o[y * 6 + x] = (x - w) * h * 4 end
  end,
  lower = function(o, x, y, w, h)     -- a lower bound: x - w > -1 ... from x >= w
    if x >= w and x < h then o[y * 6 + x] = (x - w) * (h - x) * 4096 end
  end,
  while_lt = function(o, x, y, w, h)
    local it = 0
    while it < w and it < x + y do it = it + 1 end
    o[y * 6 + x] = (it * h + it) * w
  end,
  repeat_until = function(o, x, y, w, h)
    local it = x
    repeat it = it + 1 until it >= w or it > x + 3
    o[y * 6 + x] = it * w * h
  end,
  for_limit = function(o, x, y, w, h)
    local s = 0
    for j = x, w - 1 do
      s = j * h * 64
      if j > x + 2 then break end
    end
    o[y * 6 + x] = s
  end,
  nested = function(o, x, y, w, h)
    if x < 5 then
      if y >= 1 then o[y * 6 + x] = (x * w + y) * (y - 1) * h end
    end
  end,
}

for _, bk in ipairs(H.backends) do
  describe("guards [" .. bk .. "]", function()
    for name, f in pairs(GUARDS) do
      it(name .. ": bitwise LuaJIT's for sizes that bound and sizes that must not", function()
        -- a kernel per pair of classes, so that each runs its own overload
        -- (one kernel would run the double overload once it has one:
        -- docs/typing.md, "Value classes")
        local ks = {}
        local function run(a, b)
          local key = types.numtag(a) .. "," .. types.numtag(b)
          ks[key] = ks[key] or grid_kernel(bk, "g_" .. name, f)
          grid(bk, ks[key], f, a, b)
        end
        for _, w in ipairs(SIZES) do
          run(w, 3)
          run(5, w)
        end
        for key, k in pairs(ks) do
          local sig = k:signatures()
          assert.are.equal(1, #sig)
          assert.are.equal("double[]," .. key:gsub("number", "double"), table.concat(sig[1], ","))
        end
      end)
    end

    it("the RGBA invert's index math is integer with Lua-number sizes", function()
      local k = H.kernel(bk, function(src, dst, w, h)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        if x < w and y < h then
          for c = 0, 2 do dst[(y * w + x) * 4 + c] = 255 - src[(y * w + x) * 4 + c] end
          dst[(y * w + x) * 4 + 3] = src[(y * w + x) * 4 + 3]
        end
      end, { name = "rgba_inv" })
      local ir = k:inspect_llvm({ "uint8_t[]", "uint8_t[]", "lua_pos20", "lua_pos20" })
      assert.is_nil(ir:find("double"), "no double anywhere in the kernel")
      assert.is_nil(ir:find("sitofp"), "no integer converted to double")
      -- h of lua_pos31 bounds y below 2^31 only: (y * w + x) * 4 may pass
      -- 2^53, and is a double, as LuaJIT's
      local ir31 = k:inspect_llvm({ "uint8_t[]", "uint8_t[]", "lua_pos31", "lua_pos31" })
      assert.truthy(ir31:find("double"), "pos31 sizes: the index is a double")
      local W, Hh = 7, 3
      local src, dst = ffi.new("uint8_t[?]", W * Hh * 4), ffi.new("uint8_t[?]", W * Hh * 4)
      for i = 0, W * Hh * 4 - 1 do src[i] = (i * 37) % 256 end
      k:launch({ global = { W + 2, Hh + 1 } }, src, dst, W, Hh)
      H.check("uint8_t", dst, function(i) return i % 4 == 3 and src[i] or 255 - src[i] end, W * Hh * 4)
    end)

    it("a guard by a double, NaN or +-inf narrows nothing", function()
      local k = H.kernel(bk, function(o, w)
        local x = gpu.global_id(0)
        if x < w then o[x] = x * 4 * w end
      end, { name = "g_double" })
      -- with w a double the product is a double: the guard gave no range
      local ir = k:inspect_llvm({ "double[]", "double" })
      assert.truthy(ir:find("fmul double"))
      for _, w in ipairs({ 2.5, 0 / 0, math.huge, -math.huge, -0.0, 2 ^ 40 }) do
        local o = ffi.new("double[4]", -1, -1, -1, -1)
        k:launch(4, o, w)
        H.check("double", o, function(i)
          return H.interp(function() return i < w and i * 4 * w or -1 end)
        end, 4, { what = "w = " .. H.fmt(w) })
      end
    end)

    it("a counter bounded by a while guard counts in integers", function()
      local k = H.kernel(bk, function(o, maxit, w)
        local i = gpu.global_id(0)
        local it = 0
        while it < maxit and o[i] < 4 do it = it + 1; o[i] = o[i] + 1 end
        o[i] = it * w
      end, { name = "g_count" })
      local ir = k:inspect_llvm({ "int32_t[]", "lua_pos20", "lua_pos20" })
      assert.is_nil(ir:find("sitofp"), "it * w is an integer product")
      local o = ffi.new("int32_t[3]", 0, 2, 9)
      k:launch(3, o, 100, 3)
      H.check("int32_t", o, { 12, 6, 0 }, 3)
    end)
  end)
end
