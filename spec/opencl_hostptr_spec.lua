-- Host arrays on OpenCL devices that share the host's memory
-- (runtimes/opencl_host.c): an FFI array or a table's staging buffer is
-- passed to the kernel as a buffer made over the host memory
-- (CL_MEM_USE_HOST_PTR) for one launch instead of being copied in and back.
-- gpu.core.host_stats() counts the registrations, so these specs fail if a
-- launch silently copied, and see one left behind.  Runs when "opencl" is in
-- H.backends (make test).
local H = require("spec.helpers")
local ffi = H.ffi
local gpu = H.gpu

if not H.testing("opencl") then return end

-- The first OpenCL device that takes host memory (PoCL's CPU device), or nil.
local function hostreg_device()
  for _, d in ipairs(gpu.devices()) do
    if d.backend == "opencl" and d.host_register then return d end
  end
end

local function stats()
  return gpu.core.host_stats()
end

describe("opencl host arrays", function()
  setup(function() H.need("opencl") end)

  it("is what PoCL's CPU device does (it reports CL_DEVICE_HOST_UNIFIED_MEMORY)", function()
    for _, d in ipairs(gpu.devices()) do
      if d.backend == "opencl" and d.name:match("^pthread") then
        assert.is_true(d.host_register, d.name)
      end
      if d.backend == "cpu" then assert.is_nil(d.host_register) end
    end
  end)

  local dev = hostreg_device()
  local hit = dev and it or function(name) pending(name .. " [no OpenCL device shares host memory here]") end
  local function kernel(fn, opts)
    opts = opts or {}
    opts.device = dev.index
    return H.kernel("opencl", fn, opts)
  end
  local prev
  before_each(function() prev = gpu.backend(); if dev then gpu.use(dev) end end)
  after_each(function() gpu.use(prev) end)

  hit("passes FFI arrays in place: results in the host array, read-only ones untouched", function()
    local saxpy = kernel(function(y, x, a)
      local i = gpu.global_id(0)
      y[i] = a * x[i] + y[i]
    end)
    for _, n in ipairs({ 1, 1000, 65537 }) do
      local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
      for i = 0, n - 1 do x[i], y[i] = i, 1 - i end
      local s0 = stats()
      saxpy:launch(n, y, x, 3)
      local s1 = stats()
      assert.are.equal(s0.registered + 2, s1.registered)
      assert.are.equal(0, s1.live)
      for i = 0, n - 1 do
        assert.are.equal(1 + 2 * i, y[i])
        assert.are.equal(i, x[i])
      end
    end
  end)

  hit("round-trips tables through their staging buffers, written elements back", function()
    local k = kernel(function(out, src, m)
      local i = gpu.global_id(0) + 1
      out[i] = src[i] * m + i
    end)
    local n = 777
    local out, src = {}, {}
    for i = 1, n do out[i], src[i] = -1, i / 4 end
    local s0 = stats()
    k:launch(n, out, src, 2)
    local s1 = stats()
    assert.are.equal(s0.registered + 2, s1.registered)
    assert.are.equal(0, s1.live)
    for i = 1, n do
      assert.are.equal(i / 2 + i, out[i])
      assert.are.equal(i / 4, src[i])
    end
    -- a signature's element type: the staging buffer is int32_t
    local ki = H.kernel("opencl", function(o)
      local i = gpu.global_id(0) + 1
      o[i] = o[i] * 2 - 5
    end, { device = dev.index }, { "int32_t[]" })
    local t = { 7, -3, 1e9 }
    ki:launch(3, t)
    assert.are.same({ 9, -11, 2e9 - 5 }, t)
  end)

  hit("gives an array passed twice one buffer: writes through one are seen through the other", function()
    local k = kernel(function(a, b)
      local i = gpu.global_id(0)
      a[i] = 7
      b[i] = b[i] + 1
    end)
    local n = 100
    local x = ffi.new("double[?]", n)
    local s0 = stats()
    k:launch(n, x, x)
    assert.are.equal(0, stats().live)
    assert.are.equal(s0.registered + 2, stats().registered)
    -- copied separately, the second copy-back would leave 0 + 1 here
    for i = 0, n - 1 do assert.are.equal(8, x[i]) end
    local t = {}
    for i = 1, n do t[i] = 0 end
    local kt = kernel(function(a, b)
      local i = gpu.global_id(0) + 1
      a[i] = 7
      b[i] = b[i] + 1
    end)
    kt:launch(n, t, t)
    -- a table is staged once per argument (two buffers), then written back
    -- in argument order: the second argument's values win
    for i = 1, n do assert.are.equal(1, t[i]) end
    assert.are.equal(0, stats().live)
  end)

  hit("takes zero-length arrays beside others", function()
    local k = kernel(function(dst, _, t, n)   -- _: a zero-length array
      local i = gpu.global_id(0)
      if i < n then dst[i] = i + #t end
    end)
    local dst = ffi.new("int32_t[?]", 4)
    k:launch(4, dst, ffi.new("float[?]", 0), {}, 4)
    for i = 0, 3 do assert.are.equal(i, dst[i]) end
    k:launch(4, ffi.new("int32_t[?]", 0), ffi.new("float[?]", 0), {}, 0)
    assert.are.equal(0, stats().live)
  end)

  hit("leaves no registration behind when a launch fails, and keeps working", function()
    local k = kernel(function(a, b, j)
      local i = gpu.global_id(0)
      a[i] = b[i + j]
    end, { boundscheck = true, name = "oob" })
    local a, b = ffi.new("float[?]", 64), ffi.new("float[?]", 64)
    for i = 0, 63 do b[i] = i * 2 end
    for _ = 1, 3 do
      local s0 = stats()
      local ok, err = pcall(k.launch, k, 64, a, b, 1)
      assert.is_false(ok)
      assert.matches("out of bounds", err)
      assert.are.equal(s0.registered + 2, stats().registered)
      assert.are.equal(0, stats().live)
    end
    -- a bad table element after a registrable argument: raised before any
    -- registration
    local kt = kernel(function(o, t)
      local i = gpu.global_id(0)
      o[i] = t[i + 1]
    end)
    local ok, err = pcall(kt.launch, kt, 2, a, { 1, "x" })
    assert.is_false(ok)
    assert.matches("element %[2%]", err)
    assert.are.equal(0, stats().live)
    k:launch(64, a, b, 0)
    for i = 0, 63 do assert.are.equal(i * 2, a[i]) end
    assert.are.equal(0, stats().live)
  end)

  hit("leaves launches on gpu.array alone (no registration)", function()
    local k = kernel(function(a)
      local i = gpu.global_id(0)
      a[i] = a[i] + 1
    end)
    local d = gpu.to_device(ffi.new("float[4]", { 1, 2, 3, 4 }))
    local s0 = stats()
    k:launch(4, d)
    assert.are.equal(s0.registered, stats().registered)
    local h = d:to_host()
    for i = 0, 3 do assert.are.equal(i + 2, h[i]) end
  end)
end)
