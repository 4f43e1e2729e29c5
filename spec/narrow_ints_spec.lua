-- 32-bit integers (docs/typing.md, "32-bit integers"): where the compile job
-- says narrow_ints (cuda and opencl GPUs by default), whole-number Lua values and
-- ids whose range fits int32_t are held in 32 bits.  The values must not
-- change: every case here is compared bit for bit with plain LuaJIT, on
-- every backend, with narrow_ints as the backend has it and with it turned
-- on for cpu too; the cases are the ones where 32 bits could go wrong (an
-- operand wider than its result, -2^31, a for counter whose last step
-- passes 2^31).  Then the code: mandelbrot's escape loop counts in 32 bits
-- in the PTX (no GPU needed) and in the SPIR.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local N, K = 7, 10   -- work items; results per work item

-- o[i * K + c]: case c of work item i; w and m are Lua numbers.
local function cases(o, i, w, m)
  local b = i * 10
  o[b] = (w + 2147483648) - 2147483648 + i        -- an operand past 2^31, the result not
  o[b + 1] = (w * 4096 + i + 1099511627776) % 7    -- % of a wide operand: in 64 bits
  o[b + 2] = -(2147483649 - w) + i                 -- -(2^31) is -2^31: no nsw
  o[b + 3] = (w + 2147483648) * 2 - 4294967296     -- a product past 2^32, then back
  local c = 0
  for _ = w - 3, w do                              -- w = 2^31 - 1: the last step passes 2^31
    c = c + 1
    if c > 9 then break end                        -- a wrapped counter would not end
  end
  o[b + 4] = c
  c = 0
  for j = m + 2, m, -1 do                          -- m = -2^31: the last step passes -2^31
    c = c + j - m + 1
    if c > 99 then break end
  end
  o[b + 5] = c
  local n = 0
  while n < w and n < i + 3 do n = n + 1 end       -- a guarded counter
  o[b + 6] = n * w
  if (w + 2147483648) > i + 2147483650 then        -- a wide and a narrow operand compared
    o[b + 7] = 1
  else
    o[b + 7] = 2
  end
  o[b + 8] = (i + 2147483640) % w                  -- an id past 2^31 - 8 in a %
  o[b + 9] = math.max(w, i) - math.min(m, i)
end

-- Values of w (and m) across the classes: each launch runs its own overload.
local VALUES = {
  { 1, -1 }, { 5, -7 }, { 2 ^ 20, -2 ^ 20 }, { 2 ^ 20 + 1, -2 ^ 20 - 1 },
  { 2 ^ 31 - 1, -2 ^ 31 }, { 0, 0 }, { 2.5, -0.5 },
}

local function run_cases(bk, opts)
  for _, v in ipairs(VALUES) do
    local w, m = v[1], v[2]
    local k = H.kernel(bk, function(o, a, b) cases(o, gpu.global_id(0), a, b) end, opts)
    local got, ref = ffi.new("double[?]", N * K), ffi.new("double[?]", N * K)
    for j = 0, N * K - 1 do got[j], ref[j] = -1.5, -1.5 end
    k:launch(N, got, w, m)
    H.interp(function() for i = 0, N - 1 do cases(ref, i, w, m) end end)
    H.check("double", got, function(j) return ref[j] end, N * K,
      { what = "cases(" .. H.fmt(w) .. ", " .. H.fmt(m) .. ") on " .. bk })
  end
end

-- mandelbrot's escape loop (examples/mandelbrot.lua)
local function escape(cr, ci, maxit)
  local zr, zi, n = 0.0, 0.0, 0
  while n < maxit and zr * zr + zi * zi <= 4.0 do
    zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    n = n + 1
  end
  return n
end

local function mandelbrot(bk, opts)
  return H.kernel(bk, function(out, w, h, x0, y0, step, maxit)
    local px, py = gpu.global_id(0), gpu.global_id(1)
    if px < w and py < h then
      out[py * w + px] = escape(x0 + px * step, y0 + py * step, maxit)
    end
  end, opts)
end
local MTYPES = { "int32_t[]", "lua_pos20", "lua_pos20", "double", "double", "double", "lua_pos20" }

for _, bk in ipairs(H.backends) do
  describe("32-bit integers [" .. bk .. "]", function()
    it("give plain LuaJIT's values where 32 bits could go wrong", function()
      run_cases(bk, { name = "narrow" })
    end)

    if bk ~= "sim" then
      it("give the same values with narrow_ints turned on and off by the job option", function()
        local on = not gpu.job(H.kernel(bk, function(o) o[0] = 1 end), { "double[]" }).narrow_ints
        run_cases(bk, { name = "narrow_flip", job = function(j) j.narrow_ints = on end })
      end)

      it("mandelbrot's escape loop agrees with plain LuaJIT", function()
        local W, Hh, MAXIT = 24, 16, 64
        local out = ffi.new("int32_t[?]", W * Hh)
        mandelbrot(bk, { name = "mb" })
          :launch({ global = { W, Hh } }, out, W, Hh, -2.2, -1.2, 2.4 / Hh, MAXIT)
        H.check("int32_t", out, function(i)
          local px, py = i % W, math.floor(i / W)
          return escape(-2.2 + px * (2.4 / Hh), -1.2 + py * (2.4 / Hh), MAXIT)
        end, W * Hh, { what = "mandelbrot on " .. bk })
      end)
    end
  end)
end

describe("32-bit integers in the code", function()
  it("mandelbrot's PTX counts its escape loop in 32 bits, and in 64 with narrow_ints off", function()
    local ptx = mandelbrot("cpu", { name = "mb" }):inspect_asm(MTYPES, "cuda")
    assert.truthy(ptx:find("add%.s32%s+%%r%d+, %%r%d+, 1;"), "a 32-bit counter")
    assert.truthy(ptx:find("setp%.[a-z]+%.s32"), "a 32-bit loop test")
    assert.is_nil(ptx:find("add%.s64%s+%%rd%d+, %%rd%d+, 1;"), "no 64-bit counter")
    -- and the int32_t store takes the count as it is: no out-of-range test
    assert.is_nil(ptx:find("4294967296"), "no range test before the store")
    local wide = mandelbrot("cpu", { name = "mb", job = function(j) j.narrow_ints = false end })
        :inspect_asm(MTYPES, "cuda")
    assert.truthy(wide:find("add%.s64%s+%%rd%d+, %%rd%d+, 1;"), "the 64-bit counter without it")
    assert.is_true(gpu.job(mandelbrot("cpu", { name = "mb" }), MTYPES, "cuda").narrow_ints)
    assert.is_false(gpu.job(mandelbrot("cpu", { name = "mb" }), MTYPES, "cpu").narrow_ints)
  end)

  it("mandelbrot's SPIR counts in 32 bits on opencl with narrow_ints (a GPU device's default)", function()
    if not H.available("opencl") then
      pending("no OpenCL device")
      return
    end
    local on = function(j) j.narrow_ints = true end
    local ir = mandelbrot("opencl", { name = "mb", job = on }):inspect_llvm(MTYPES)
    assert.truthy(ir:find("add nuw nsw i32 %%[%w._]+, 1"), "a 32-bit counter")
    assert.is_nil(ir:find("add nuw nsw i64 %%[%w._]+, 1\n"), "no 64-bit counter")
    -- the default follows the device: off on CPU devices (PoCL here)
    local dev = gpu.devices("opencl")[1]
    assert.equal(dev.type ~= "cpu", gpu.job(mandelbrot("opencl", { name = "mb" }), MTYPES).narrow_ints)
  end)
end)
