-- Counter-based random numbers (lua/gpujit/rng.lua, docs/api.md "Random
-- numbers"): Philox4x32-10 against Random123's published known answers, on
-- the host and inside kernels on every backend, and the uniform and normal
-- numbers drawn from it, bit for bit equal between host and kernels.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Random123, tests/kat_vectors: philox4x32 10, counter[4] key[2] -> out[4].
local KAT = {
  { { 0, 0, 0, 0, 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
  { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
    { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
  { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0 },
    { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
}

describe("gpu.philox4x32 on the host", function()
  it("gives Random123's known answers", function()
    for _, t in ipairs(KAT) do
      assert.are.same(t[2], { gpu.philox4x32(unpack(t[1])) })
    end
  end)

  it("takes its arguments modulo 2^32, as bit.tobit does", function()
    assert.are.same({ gpu.philox4x32(1, 2, 3, 4, 5, 6) },
      { gpu.philox4x32(1 + 2 ^ 32, 2 - 2 ^ 32, 3, 4, 5 + 2 ^ 33, 6) })
    assert.are.same({ gpu.philox4x32(0xffffffff, 0, 0, 0, 0, 0) }, { gpu.philox4x32(-1, 0, 0, 0, 0, 0) })
  end)

  it("gives uniform numbers in [0, 1) on the 2^-53 (and float's 2^-24) grid", function()
    local sum, lo, hi = 0, 1, 0
    for c = 0, 9999 do
      local u, f = gpu.uniform(42, c), gpu.uniform_float(42, c)
      assert.is_true(u >= 0 and u < 1 and f >= 0 and f < 1)
      assert.are.equal(0, (u * 2 ^ 53) % 1)
      assert.are.equal(0, (f * 2 ^ 24) % 1)
      assert.are.equal(f, tonumber(ffi.new("float", f)))
      sum, lo, hi = sum + u, math.min(lo, u), math.max(hi, u)
    end
    assert.is_true(math.abs(sum / 10000 - 0.5) < 0.01, "mean " .. sum / 10000)
    assert.is_true(lo < 0.001 and hi > 0.999)
    assert.are_not.equal(gpu.uniform(42, 7), gpu.uniform(43, 7))
    assert.are_not.equal(gpu.uniform(42, 7), gpu.uniform(42, 7 + 2 ^ 32))   -- the counter's high word
  end)

  it("gives standard normal numbers", function()
    local s, s2, n = 0, 0, 20000
    for c = 0, n - 1 do
      local z = gpu.normal(1, c)
      s, s2 = s + z, s2 + z * z
    end
    assert.is_true(math.abs(s / n) < 0.03, "mean " .. s / n)
    assert.is_true(math.abs(s2 / n - 1) < 0.05, "variance " .. s2 / n)
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("random numbers in kernels [" .. bk .. "]", function()
    it("gpu.philox4x32 gives the known answers", function()
      local k = H.kernel(bk, function(o, c)
        local i = gpu.global_id(0)
        local a, b, d, e = gpu.philox4x32(c[i * 6], c[i * 6 + 1], c[i * 6 + 2], c[i * 6 + 3],
          c[i * 6 + 4], c[i * 6 + 5])
        o[i * 4], o[i * 4 + 1], o[i * 4 + 2], o[i * 4 + 3] = a, b, d, e
      end, { name = "philox" })
      local c, o = ffi.new("uint32_t[18]"), ffi.new("uint32_t[12]")
      for j, t in ipairs(KAT) do
        for m = 1, 6 do c[(j - 1) * 6 + m - 1] = t[1][m] end
      end
      k:launch(3, o, c)
      for j, t in ipairs(KAT) do
        for m = 1, 4 do assert.are.equal(t[2][m], o[(j - 1) * 4 + m - 1]) end
      end
    end)

    it("draws what the host draws, bit for bit, by (seed, counter)", function()
      local n = 1000
      local u, f, z = ffi.new("double[?]", n), ffi.new("float[?]", n), ffi.new("double[?]", n)
      local k = H.kernel(bk, function(uo, fo, zo, seed, base)
        local i = gpu.global_id(0)
        uo[i] = gpu.uniform(seed, base + i)
        fo[i] = gpu.uniform_float(seed, base + i)
        zo[i] = gpu.normal(seed, base + i)
      end, { name = "draw" })
      -- a seed and counters past 2^32: both words of each are used
      local seed, base = 2 ^ 40 + 12345, 2 ^ 33 + 7
      k:launch(n, u, f, z, seed, base)
      for i = 0, n - 1 do
        assert.are.equal(gpu.uniform(seed, base + i), u[i])
        assert.are.equal(gpu.uniform_float(seed, base + i), f[i])
        -- log, sqrt and cos are the backend's: within a few ulps
        local want = gpu.normal(seed, base + i)
        assert.is_true(math.abs(z[i] - want) <= 1e-14 * math.max(1, math.abs(want)),
          ("normal %d: %.17g, host %.17g"):format(i, z[i], want))
      end
    end)

    it("with precision = 'single', uniform_float stays exact, also for counters near 2^32", function()
      local n = 256
      local f = ffi.new("float[?]", n)
      local k = H.kernel(bk, function(fo, seed, base)
        local i = gpu.global_id(0)
        fo[i] = gpu.uniform_float(seed, base + i)
      end, { name = "drawf", precision = "single" })
      -- a Lua number past 2^31 is a float in such a kernel (typing.md): larger
      -- counters come as int64_t
      for _, base in ipairs({ 0, 2 ^ 31 - 100, 2 ^ 32 - 100, 2 ^ 40 }) do
        k:launch(n, f, 99, base < 2 ^ 31 and base or ffi.new("int64_t", base))
        for i = 0, n - 1 do assert.are.equal(gpu.uniform_float(99, base + i), f[i], base + i) end
      end
    end)
  end)
end
