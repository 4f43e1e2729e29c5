-- The opencl backend (runtimes/opencl*.c, targets/spir*.c) on the OpenCL devices of this
-- machine (PoCL's CPU device where there is no GPU): what the shared specs
-- cannot see from the outside.  Runs when "opencl" is in H.backends
-- (make test: GPUJIT_SPEC_BACKENDS=cpu,opencl).
local H = require("spec.helpers")
local ffi = H.ffi
local gpu = H.gpu

if not H.testing("opencl") then return end

local function opencl_devices()
  local out = {}
  for _, d in ipairs(gpu.devices()) do
    if d.backend == "opencl" then out[#out + 1] = d end
  end
  return out
end

-- The specs of the SPIR text run where the first device compiles to SPIR
-- (GPUJIT_OPENCL_FORMAT=spirv makes it SPIR-V: spec/opencl_spirv_spec.lua
-- runs the suite so, and checks SPIR-V's own output).
local format = (opencl_devices()[1] or {}).format
local function it_spir(name, fn)
  if format == "spir" then return it(name, fn) end
  return pending(name .. " [the device compiles to " .. tostring(format) .. ", not SPIR]")
end

-- A gpu.array struct of the same element type as e that points elsewhere
-- (e.g. at freed or foreign memory): its ptr is cleared before it is
-- collected, so its finalizer frees nothing.
local function alias_of(e, ptr)
  local a = ffi.new(ffi.typeof(e))
  a.ptr, a.n, a.ctx, a.bk, a.dev = ptr, e.n, e.ctx, e.bk, e.dev
  return a
end

describe("opencl backend", function()
  setup(function() H.need("opencl") end)

  it("lists every device with its name, vendor, type, memory, compute units and group sizes", function()
    local devs = opencl_devices()
    assert.is_true(#devs >= 1)
    for i, d in ipairs(devs) do
      assert.are.equal(i - 1, d.index)
      assert.is_true(#d.name > 0 and #d.vendor > 0, "name and vendor")
      assert.is_truthy(({ cpu = true, gpu = true, accelerator = true })[d.type], d.type)
      assert.is_true(d.memory > 0 and d.compute_units > 0 and d.max_group > 0)
      assert.are.equal(3, #d.max_group_dim)
      for k = 1, 3 do
        assert.is_true(d.max_group_dim[k] >= 1 and d.max_group_dim[k] <= d.max_group, "max_group_dim")
      end
      assert.is_false(d.host_shared)
      assert.is_truthy(({ spir = true, spirv = true, ptx = true })[d.format], d.format)
      -- math.* can be the host's libm only on a CPU device through SPIR
      assert.is_boolean(d.host_math)
      if d.format ~= "spir" or d.type ~= "cpu" then assert.is_false(d.host_math) end
    end
  end)

  it("is the default device only for an OpenCL GPU (PoCL's CPU device is not)", function()
    local want = "cpu"
    for _, d in ipairs(gpu.devices()) do
      if d.backend == "cuda" then want = "cuda"; break end
      if d.backend == "opencl" and d.type == "gpu" and want == "cpu" then want = "opencl" end
    end
    local f = assert(io.popen("env -u GPUJIT_BACKEND LUA_PATH='" .. package.path .. "' LUA_CPATH='"
      .. package.cpath .. "' luajit -e \"io.write(require('gpujit').backend())\" 2>&1"))
    local got = f:read("*a")
    f:close()
    assert.are.equal(want, got)
  end)

  it_spir("compiles to SPIR: inspect_asm is the SPIR module's LLVM IR, with a spir_kernel entry", function()
    local k = H.kernel("opencl", function(y, x, a)
      local i = gpu.global_id(0)
      y[i] = a * x[i]
    end, { name = "spir" })
    local ir = k:inspect_asm({ "float[]", "float[]", "float" }, "opencl")
    assert.is_truthy(ir:find('target triple = "spir', 1, true), ir)
    assert.is_truthy(ir:find("define spir_kernel void @gj_kernel(", 1, true), ir)
    assert.is_truthy(ir:find("!kernel_arg_addr_space", 1, true), ir)
    assert.is_truthy(ir:find("_Z13get_global_idj", 1, true), ir)
  end)

  it("reports OpenCL errors by name and the call that failed", function()
    local d = opencl_devices()[1]
    -- more than one buffer may hold (CL_DEVICE_MAX_MEM_ALLOC_SIZE is a
    -- fraction of the memory), less than the device has
    local msg = H.error_of(gpu.array, "uint8_t", math.floor(d.memory * 0.95), "opencl")
    assert.is_truthy(msg:find("clCreateBuffer", 1, true), msg)
    assert.is_truthy(msg:find("CL_INVALID_BUFFER_SIZE", 1, true) or
      msg:find("CL_MEM_OBJECT_ALLOCATION_FAILURE", 1, true), msg)
    H.sanity("opencl")
  end)

  it("refuses a work group larger than the device allows, with the limit", function()
    local d = opencl_devices()[1]
    local out = ffi.new("double[4]")
    local k = H.kernel("opencl", function(o) o[0] = 1 end, { name = "biggroup" })
    local big = 2 * d.max_group
    local msg = H.error_of(function() k:launch({ global = big, group = big }, out) end)
    assert.is_truthy(msg:find("exceeds the device maximum", 1, true), msg)
    H.sanity("opencl")
  end)

  it("rounds the global size up to the group; ids beyond never run; global_size is the real one", function()
    local n = 1000
    local out = ffi.new("double[?]", n + 64)
    local k = H.kernel("opencl", function(o)
      local i = gpu.global_id(0)
      o[i] = gpu.global_size(0) + gpu.num_groups(0) * 0.001
    end, { name = "ragged" })
    k:launch({ global = n, group = 64 }, out)
    for i = 0, n - 1 do assert.are.equal(1000 + 16 * 0.001, out[i]) end
    for i = n, n + 63 do assert.are.equal(0, out[i]) end
    k:launch({ global = { 3, 5 } }, ffi.new("double[15]"))   -- default group, 2-D
  end)

  it_spir("has an entry without the global-size test for launches that fill their groups", function()
    local f = function(o)
      local i, j = gpu.global_id(0), gpu.global_id(1)
      o[j * gpu.global_size(0) + i] = i + 100 * j
    end
    local ir = H.kernel("opencl", f, { name = "entries" }):inspect_asm({ "int32_t[]" }, "opencl")
    assert.is_truthy(ir:find("define spir_kernel void @gj_kernel(", 1, true), ir)
    assert.is_truthy(ir:find("define spir_kernel void @gj_kernel_exact(", 1, true), ir)
    -- bounds-checked, so that a work item beyond the global size would fail
    -- the launch: 1-D and 2-D, filling the groups (the exact entry) and not
    local k = H.kernel("opencl", f, { name = "entries", boundscheck = true })
    for _, c in ipairs({ { 128, 1, 64, 1 }, { 100, 1, 64, 1 }, { 32, 8, 16, 4 }, { 30, 7, 16, 4 } }) do
      local gx, gy = c[1], c[2]
      local o = ffi.new("int32_t[?]", gx * gy)
      local global = gy > 1 and { gx, gy } or gx
      local group = gy > 1 and { c[3], c[4] } or c[3]
      k:launch({ global = global, group = group }, o)
      for j = 0, gy - 1 do
        for i = 0, gx - 1 do assert.are.equal(i + 100 * j, o[j * gx + i]) end
      end
    end
  end)

  it_spir("marks the loops of barrier kernels unroll.disable (as clang does for PoCL), no others", function()
    -- two loops: one around the barriers, a 4-step one between them
    local k = H.kernel("opencl", function(o, x, rounds)
      local s = gpu.shared("int32_t", 64)
      local lid, acc = gpu.local_id(0), 0
      for r = 1, rounds do
        s[lid] = x[gpu.global_id(0)] * r
        gpu.barrier()
        for j = 0, 3 do acc = acc + s[(lid + j) % 64] end
        gpu.barrier()
      end
      o[gpu.global_id(0)] = acc
    end, { name = "rounds" })
    local ir = k:inspect_asm({ "int32_t[]", "int32_t[]", "int32_t" }, "opencl")
    local _, latches = ir:gsub("\n  br [^\n]*, !llvm%.loop ", "")
    assert.are.equal(2, latches, ir)
    assert.is_truthy(ir:find('!{!"llvm.loop.unroll.disable"}', 1, true), ir)
    local n, rounds = 128, 3
    local o, x = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
    for i = 0, n - 1 do x[i] = i * 7 % 11 end
    k:launch({ global = n, group = 64 }, o, x, rounds)
    for i = 0, n - 1 do
      local g, want = i - i % 64, 0
      for r = 1, rounds do
        for j = 0, 3 do want = want + x[g + (i % 64 + j) % 64] * r end
      end
      assert.are.equal(want, o[i])
    end
    local plain = H.kernel("opencl", function(out, m)
      local i, sum = gpu.global_id(0), 0
      for j = 1, m do sum = sum + j * i end
      out[i] = sum
    end, { name = "plainloop" })
    local plain_ir = plain:inspect_asm({ "int32_t[]", "int32_t" }, "opencl")
    assert.is_falsy(plain_ir:find("llvm.loop", 1, true), plain_ir)
  end)

  it_spir("knows ids are non-negative: % of id arithmetic has no sign fix-up, and % stays floored", function()
    local k = H.kernel("opencl", function(o, m)
      local lid, s = gpu.local_id(0), 0
      for j = 0, m do s = s + (lid + j) % 64 end
      o[gpu.global_id(0)] = s * 1000 + (lid - 5) % 64
    end, { name = "idmod" })
    local ir = k:inspect_asm({ "int32_t[]", "int32_t" }, "opencl")
    -- (lid + j) % 64 is a mask; (lid - 5) % 64 keeps its srem and fix-up
    assert.is_truthy(ir:find("%.urem = and i64 %%%d+, 63"), ir)
    assert.is_truthy(ir:find("srem i64 %%%d+, 64"), ir)
    local n, m = 256, 70
    local o = ffi.new("int32_t[?]", n)
    k:launch({ global = n, group = 128 }, o, m)
    for i = 0, n - 1 do
      local lid, s = i % 128, 0
      for j = 0, m do s = s + (lid + j) % 64 end
      assert.are.equal(s * 1000 + (lid - 5) % 64, o[i])
    end
  end)

  it("maps a Lua table (its buffer minus one element) and writes back every element", function()
    local t, u = {}, {}
    for i = 1, 300 do t[i], u[i] = i, 1000 + i end
    local k = H.kernel("opencl", function(a, b, n)
      local i = gpu.global_id(0) + 1
      if i <= n then a[i] = a[i] * 2 + b[i] + #b end
    end, { name = "table" })
    k:launch(300, t, u, 300)
    for i = 1, 300 do assert.are.equal(i * 2 + 1000 + i + 300, t[i]) end
    assert.is_nil(t[0])
    assert.is_nil(t[301])
  end)

  it("keeps gpu.array memory on the device between launches", function()
    local n = 100
    local src = H.array("int32_t", function(i) return i * 3 end, n)
    local d = gpu.to_device(src, "int32_t", "opencl")
    local out = gpu.zeros("int32_t", n, "opencl")
    assert.are.equal("opencl", d.device.backend)
    assert.is_truthy(tostring(d):find("opencl:", 1, true))
    assert.has_error(function() return d[0] end)           -- not host memory
    local k = H.kernel("opencl", function(a, b, m)
      local i = gpu.global_id(0)
      if i < m then b[i] = b[i] + a[m - 1 - i] end
    end, { name = "garray" })
    k:launch(n, d, out, n)
    k:launch(n, d, out, n)
    local back = out:to_host()
    for i = 0, n - 1 do assert.are.equal(2 * (n - 1 - i) * 3, back[i]) end
    local t = {}
    d:to_host(t)
    assert.are.equal(n, #t)
    assert.are.equal(297, t[100])
    d:free()
    out:free()
  end)

  it("refuses an address that is no live allocation: freed, or outside any buffer", function()
    local e = gpu.to_device({ 1, 2, 3, 4 }, "double", "opencl")
    local k = H.kernel("opencl", function(a) a[gpu.global_id(0)] = 7 end, { name = "badptr" })
    -- the window of slot id + 2^16 (slots are 2^40 bytes apart): no live
    -- allocation there (the next slot may hold an earlier spec's buffer)
    local far = alias_of(e, ffi.cast("double *", e.ptr) + 2 ^ 37 * 2 ^ 16)
    local msg = H.error_of(function() k:launch(4, far) end)
    assert.is_truthy(msg:find("not the address of a live device allocation", 1, true), msg)
    far.ptr = nil
    local stale = alias_of(e, e.ptr)
    e:free()
    msg = H.error_of(function() k:launch(4, stale) end)
    assert.is_truthy(msg:find("not the address of a live device allocation", 1, true), msg)
    stale.ptr = nil
    -- the slot is reused, and the new array works
    local e2 = gpu.zeros("double", 4, "opencl")
    k:launch(4, e2)
    H.check("double", e2:to_host(), { 7, 7, 7, 7 }, 4)
  end)

  it("launches one kernel many times with changing scalars, arrays and sizes", function()
    local k = H.kernel("opencl", function(y, x, a, n)
      local i = gpu.global_id(0)
      if i < n then y[i] = a * x[i] + y[i] end
    end, { name = "again" })
    local xs = { H.array("double", function(i) return i end, 64),
                 H.array("double", function(i) return -i end, 64) }
    local y = ffi.new("double[64]")
    local expect = {}
    for i = 0, 63 do expect[i] = 0 end
    for r = 1, 12 do
      local x, a, n = xs[r % 2 + 1], r * 0.5, 8 * r % 64 + 1
      k:launch(n, y, x, a, n)
      for i = 0, n - 1 do expect[i] = a * x[i] + expect[i] end
      for i = 0, 63 do assert.are.equal(expect[i], y[i], "round " .. r .. " element " .. i) end
    end
  end)
end)
