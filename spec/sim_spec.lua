-- The "sim" backend: kernels run as plain Lua, work item by work item.
local ffi = require("ffi")
local gpu = require("gpujit")

describe("sim backend", function()
  local saved
  before_each(function()
    saved = gpu.backend()
    gpu.use("sim")
  end)
  after_each(function()
    if saved then pcall(gpu.use, saved) end
  end)

  it("is selectable and listed", function()
    assert.are.equal("sim", gpu.backend())
    local found
    for _, d in ipairs(gpu.devices()) do
      if d.backend == "sim" then found = d end
    end
    assert.truthy(found)
    assert.are.equal("sim", gpu.use(found).backend)
    assert.are.equal("sim", gpu.use("sim:0").backend)
  end)

  describe("ids", function()
    it("1-D: every id once, with the launch's shape", function()
      local n = 40
      local gid, lid, grp = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
      local shape = ffi.new("int32_t[3]")
      local k = gpu.kernel(function(g, l, p, s)
        local i = gpu.global_id(0)
        g[i] = g[i] + 1
        l[i] = gpu.local_id()
        p[i] = gpu.group_id(0)
        if i == 0 then
          s[0] = gpu.group_size(0)
          s[1] = gpu.num_groups()
          s[2] = gpu.global_size(0)
        end
      end)
      k:launch({ global = n, group = 8 }, gid, lid, grp, shape)
      for i = 0, n - 1 do
        assert.are.equal(1, gid[i])
        assert.are.equal(i % 8, lid[i])
        assert.are.equal(math.floor(i / 8), grp[i])
      end
      assert.are.same({ 8, 5, 40 }, { shape[0], shape[1], shape[2] })
    end)

    it("2-D: global id = group id * group size + local id", function()
      local w, h = 12, 6
      local out = ffi.new("int32_t[?]", w * h)
      local bad = ffi.new("int32_t[1]")
      local k = gpu.kernel(function(o, err, width)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        if x ~= gpu.group_id(0) * gpu.group_size(0) + gpu.local_id(0) then err[0] = 1 end
        if y ~= gpu.group_id(1) * gpu.group_size(1) + gpu.local_id(1) then err[0] = 1 end
        if gpu.global_size(1) ~= 6 or gpu.num_groups(1) ~= 3 or gpu.global_id(2) ~= 0 then
          err[0] = 1
        end
        o[y * width + x] = o[y * width + x] + 1
      end)
      k[{ global = { w, h }, group = { 4, 2 } }](out, bad, w)
      assert.are.equal(0, bad[0])
      for i = 0, w * h - 1 do assert.are.equal(1, out[i]) end
    end)

    it("3-D: every item runs once", function()
      local nx, ny, nz = 4, 3, 5
      local out = ffi.new("int32_t[?]", nx * ny * nz)
      local k = gpu.kernel(function(o)
        local x, y, z = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
        local i = (z * gpu.global_size(1) + y) * gpu.global_size(0) + x
        o[i] = o[i] + 1 + gpu.local_id(2) * 0
      end)
      k:launch({ global = { nx, ny, nz }, group = { 2, 3, 1 } }, out)
      for i = 0, nx * ny * nz - 1 do assert.are.equal(1, out[i]) end
    end)

    it("partial groups: ids beyond global never run", function()
      local out = ffi.new("int32_t[16]")
      local ng = ffi.new("int32_t[1]")
      local k = gpu.kernel(function(o, g)
        local i = gpu.global_id(0)
        o[i] = o[i] + 1
        g[0] = gpu.num_groups(0)
      end)
      k:launch({ global = 10, group = 4 }, out, ng)
      for i = 0, 15 do assert.are.equal(i < 10 and 1 or 0, out[i]) end
      assert.are.equal(3, ng[0])
    end)

    it("partial groups in 2-D", function()
      local out = ffi.new("int32_t[?]", 7 * 5)
      local k = gpu.kernel(function(o)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        o[y * 7 + x] = o[y * 7 + x] + 1
      end)
      k:launch({ global = { 7, 5 }, group = { 4, 4 } }, out)
      for i = 0, 34 do assert.are.equal(1, out[i]) end
    end)

    it("a launch of N runs N items, group chosen when absent", function()
      local out = ffi.new("int32_t[1]")
      local k = gpu.kernel(function(o) gpu.atomic_add(o, 0, 1) end)
      k:launch(1000, out)
      assert.are.equal(1000, out[0])
      k:launch(0, out)
      assert.are.equal(1000, out[0])
    end)

    it("rejects a bad dimension", function()
      local k = gpu.kernel(function() local _ = gpu.global_id(3) end)
      assert.has_error(function() k:launch(1) end)
    end)
  end)

  describe("barrier and shared memory", function()
    it("reduces per group", function()
      local n, g = 64, 16
      local inp = ffi.new("double[?]", n)
      for i = 0, n - 1 do inp[i] = i end
      local out = ffi.new("double[?]", n / g)
      local red = gpu.kernel(function(x, o)
        local sh = gpu.shared("double", 16)
        local l = gpu.local_id(0)
        sh[l] = x[gpu.global_id(0)]
        gpu.barrier()
        local s = gpu.group_size(0) / 2
        while s > 0 do
          if l < s then sh[l] = sh[l] + sh[l + s] end
          gpu.barrier()
          s = math.floor(s / 2)
        end
        if l == 0 then o[gpu.group_id(0)] = sh[0] end
      end)
      red:launch({ global = n, group = g }, inp, out)
      for j = 0, n / g - 1 do
        local want = 0
        for i = j * g, j * g + g - 1 do want = want + i end
        assert.are.equal(want, out[j])
      end
    end)

    it("every item sees writes made before the barrier (reverse within a group)", function()
      local n = 32
      local a = ffi.new("int32_t[?]", n)
      for i = 0, n - 1 do a[i] = i end
      local k = gpu.kernel(function(x)
        local sh = gpu.shared("int32_t", 8)
        local l, g = gpu.local_id(0), gpu.global_id(0)
        sh[l] = x[g]
        gpu.barrier()
        x[g] = sh[7 - l]
      end)
      k:launch({ global = n, group = 8 }, a)
      for i = 0, n - 1 do
        local base = i - i % 8
        assert.are.equal(base + 7 - i % 8, a[i])
      end
    end)

    it("gives each group its own zero-filled arrays, the k-th call the k-th array", function()
      local out = ffi.new("double[8]")
      local k = gpu.kernel(function(o)
        local s1 = gpu.shared("double", 4)
        local s2 = gpu.shared("float", 4)
        local l = gpu.local_id(0)
        if l == 0 then o[gpu.group_id(0) * 4] = s1[0] + s2[0] end
        s1[l] = l + 1
        s2[l] = 10 * (l + 1)
        gpu.barrier()
        if l == 0 then
          o[gpu.group_id(0) * 4 + 1] = s1[0] + s1[1] + s1[2] + s1[3]
          o[gpu.group_id(0) * 4 + 2] = s2[3]
        end
      end)
      k:launch({ global = 8, group = 4 }, out)
      assert.are.same({ 0, 10, 40, 0, 0, 10, 40, 0 },
        { out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7] })
    end)

    it("gives each item a fresh local array", function()
      local out = ffi.new("int32_t[4]")
      local k = gpu.kernel(function(o)
        local p = gpu.local_array("int32_t", 3)
        local i = gpu.global_id(0)
        p[0] = p[0] + i
        p[2] = p[2] + 1
        o[i] = p[0] * 10 + p[2]
      end)
      k:launch(4, out)
      assert.are.same({ 1, 11, 21, 31 }, { out[0], out[1], out[2], out[3] })
    end)

    it("errors when a barrier kernel is launched with a partial group", function()
      local k = gpu.kernel(function(x)
        gpu.barrier()
        x[0] = 1
      end)
      assert.has_error(function() k:launch({ global = 10, group = 4 }, ffi.new("int32_t[1]")) end,
        nil)
      local ok, err = pcall(k.launch, k, { global = { 8, 3 }, group = { 4, 2 } }, ffi.new("int32_t[1]"))
      assert.is_false(ok)
      assert.matches("multiple of group", err)
    end)

    it("runs a barrier kernel when the group is left to the backend", function()
      local out = ffi.new("int32_t[1]")
      local k = gpu.kernel(function(o)
        gpu.barrier()
        gpu.atomic_add(o, 0, 1)
      end)
      k:launch(997, out)
      assert.are.equal(997, out[0])
    end)

    it("errors when some items of a group skip a barrier", function()
      local k = gpu.kernel(function()
        if gpu.local_id(0) < 2 then gpu.barrier() end
      end)
      local ok, err = pcall(k.launch, k, { global = 4, group = 4 }, nil)
      assert.is_false(ok)
      assert.matches("barrier", err)
    end)

    it("errors when groups disagree about a shared array", function()
      local k = gpu.kernel(function()
        local _ = gpu.shared("float", gpu.local_id(0) + 1)
      end)
      assert.has_error(function() k:launch({ global = 2, group = 2 }) end)
    end)
  end)

  describe("atomics", function()
    it("add returns the old value and counts exactly", function()
      local c = ffi.new("int32_t[1]")
      local olds = ffi.new("int32_t[?]", 100)
      local k = gpu.kernel(function(cnt, o)
        o[gpu.global_id(0)] = gpu.atomic_add(cnt, 0, 1)
      end)
      k:launch({ global = 100, group = 10 }, c, olds)
      assert.are.equal(100, c[0])
      local seen = {}
      for i = 0, 99 do seen[olds[i]] = true end
      for i = 0, 99 do assert.is_true(seen[i]) end
    end)

    it("builds a histogram", function()
      local data = {}
      for i = 1, 200 do data[i] = (i * 7) % 10 end
      local hist = ffi.new("int32_t[10]")
      local k = gpu.kernel(function(d, h, n)
        local i = gpu.global_id(0)
        if i < n then gpu.atomic_add(h, d[i + 1], 1) end
      end)
      k:launch({ global = 256, group = 64 }, data, hist, #data)
      for b = 0, 9 do assert.are.equal(20, hist[b]) end
    end)

    it("wraps 32-bit integers", function()
      local a = ffi.new("int32_t[2]", 2147483647, -2147483648)
      local u = ffi.new("uint32_t[1]", 4294967295)
      local k = gpu.kernel(function(x, y)
        gpu.atomic_add(x, 0, 1)
        gpu.atomic_sub(x, 1, 1)
        gpu.atomic_add(y, 0, 2)
      end)
      k:launch(1, a, u)
      assert.are.equal(-2147483648, a[0])
      assert.are.equal(2147483647, a[1])
      assert.are.equal(1, u[0])
    end)

    it("adds floats and doubles, 64-bit integers", function()
      local f = ffi.new("float[1]")
      local d = ffi.new("double[1]")
      local l = ffi.new("int64_t[1]")
      local k = gpu.kernel(function(x, y, z)
        gpu.atomic_add(x, 0, 0.5)
        gpu.atomic_add(y, 0, 0.25)
        gpu.atomic_add(z, 0, 3)
      end)
      k:launch(8, f, d, l)
      assert.are.equal(4, f[0])
      assert.are.equal(2, d[0])
      assert.are.equal(24, tonumber(l[0]))
    end)

    it("min, max, and, or, xor, xchg, cas", function()
      local a = ffi.new("int32_t[7]", 100, -100, 0xff, 0, 0, -1, 0)
      local olds = ffi.new("int32_t[7]")
      local k = gpu.kernel(function(x, o)
        local i = gpu.global_id(0)
        gpu.atomic_min(x, 0, i)
        gpu.atomic_max(x, 1, i)
        gpu.atomic_and(x, 2, 0x0f)
        gpu.atomic_or(x, 3, bit.lshift(1, i))
        gpu.atomic_xor(x, 4, 1)
        o[i] = gpu.atomic_xchg(x, 5, i)
        gpu.atomic_cas(x, 6, i, i + 1)
      end)
      k:launch(7, a, olds)
      assert.are.equal(0, a[0])
      assert.are.equal(6, a[1])
      assert.are.equal(0x0f, a[2])
      assert.are.equal(127, a[3])
      assert.are.equal(1, a[4])
      assert.are.equal(6, a[5])
      assert.are.equal(-1, olds[0])
      assert.are.equal(7, a[6])
    end)

    it("cas returns the old value and swaps only on a match", function()
      local a = ffi.new("int32_t[1]", 5)
      local r = ffi.new("int32_t[2]")
      local k = gpu.kernel(function(x, o)
        o[0] = gpu.atomic_cas(x, 0, 4, 9)
        o[1] = gpu.atomic_cas(x, 0, 5, 8)
      end)
      k:launch(1, a, r)
      assert.are.same({ 5, 5, 8 }, { r[0], r[1], a[0] })
    end)
  end)

  describe("arguments", function()
    it("passes tables 1-based and writes into them", function()
      local t = { 1, 2, 3, 4 }
      local k = gpu.kernel(function(x, n)
        local i = gpu.global_id(0)
        if i < n then x[i + 1] = x[i + 1] * 10 + #x end
      end)
      k:launch(8, t, #t)
      assert.are.same({ 14, 24, 34, 44 }, t)
    end)

    it("passes gpu.array 0-based with its length, pointers, scalar cdata, booleans", function()
      local e = gpu.to_device({ 1, 2, 3 }, "float")
      local buf = ffi.new("double[4]")
      local p = ffi.cast("double *", buf)
      local k = gpu.kernel(function(a, q, s, flag)
        local i = gpu.global_id(0)
        a[i] = a[i] + #a
        if flag then q[i] = s * i end
      end)
      k:launch(3, e, p, ffi.new("int32_t", 7), true)
      local h = e:to_host()
      assert.are.same({ 4, 5, 6 }, { h[0], h[1], h[2] })
      assert.are.same({ 0, 7, 14, 0 }, { buf[0], buf[1], buf[2], buf[3] })
    end)

    it("keeps Lua numbers as doubles, also with precision = single", function()
      local out = ffi.new("double[1]")
      local k = gpu.kernel(function(o, x) o[0] = x / 3 end, { precision = "single" })
      k:launch(1, out, 1)
      assert.are.equal(1 / 3, out[0])
    end)

    it("records the argument types as signatures", function()
      local k = gpu.kernel(function(a, b) local _ = a[0] + b end)
      k:launch(1, ffi.new("float[2]"), 1)
      k:launch(1, ffi.new("int32_t[?]", 3), ffi.new("int64_t", 2))
      k:launch(1, ffi.new("float[?]", 3), 2)
      -- 1 and 2 are whole: the class lua_pos20 (typing.md)
      assert.are.same({ { "float[]", "lua_pos20" }, { "int32_t[]", "int64_t" } }, k:signatures())
    end)
  end)

  describe("errors", function()
    it("intrinsics outside a kernel", function()
      assert.has_error(function() gpu.global_id(0) end, "gpu.global_id called outside a kernel")
      assert.has_error(function() gpu.barrier() end, "gpu.barrier called outside a kernel")
      assert.has_error(function() gpu.shared("float", 4) end, "gpu.shared called outside a kernel")
      assert.has_error(function() gpu.atomic_add(ffi.new("int32_t[1]"), 0, 1) end,
        "gpu.atomic_add called outside a kernel")
    end)

    it("a failing work item names the kernel and the item", function()
      local k = gpu.kernel(function(x)
        local i = gpu.global_id(0)
        if i == 5 then error("boom") end
        x[i] = 1
      end, { name = "failing" })
      local ok, err = pcall(k.launch, k, 8, ffi.new("int32_t[8]"))
      assert.is_false(ok)
      assert.matches("boom", err)
      assert.matches("failing", err)
      assert.matches("work item 5", err, 1, true)
      -- the simulator is usable afterwards
      assert.has_error(function() gpu.global_id() end, "gpu.global_id called outside a kernel")
    end)

    it("bad launch configurations", function()
      local k = gpu.kernel(function() end, { name = "empty" })
      local cases = {
        { -1, "non%-negative" },
        { 2.5, "non%-negative" },
        { "x", "expected a number or a table" },
        { {}, "needs 'global'" },
        { { global = { 1, 2, 3, 4 } }, "1 to 3" },
        { { global = { 4, 4 }, group = 2 }, "same shape" },
        { { global = 4, group = 0 }, "positive" },
        { { global = { 4, 4 }, group = { 2, 2, 1 } }, "same shape" },
      }
      for _, c in ipairs(cases) do
        local ok, err = pcall(k.launch, k, c[1])
        assert.is_false(ok)
        assert.matches("bad launch configuration for kernel 'empty'", err, 1, true)
        assert.matches(c[2], err)
      end
    end)
  end)

  describe("device arrays", function()
    it("array, zeros, to_device, to_host, free", function()
      local z = gpu.zeros("int32_t", 5)
      assert.are.equal(5, #z)
      assert.are.equal("int32_t", z.ctype)
      assert.are.equal("sim", z.device.backend)
      local h = z:to_host()
      for i = 0, 4 do assert.are.equal(0, h[i]) end
      local a = gpu.array("double", 3)
      assert.are.equal(3, #a)
      local d = gpu.to_device(ffi.new("float[3]", 1, 2, 3))
      assert.are.equal("float", d.ctype)
      local t = d:to_host({})
      assert.are.same({ 1, 2, 3 }, t)
      local dst = ffi.new("float[4]")
      d:to_host(dst)
      assert.are.same({ 1, 2, 3, 0 }, { dst[0], dst[1], dst[2], dst[3] })
      local c = gpu.to_device(ffi.new("float[2]", 1.5, 2.5), "double")
      assert.are.equal("double", c.ctype)
      assert.are.same({ 1.5, 2.5 }, c:to_host({}))
      d:free()
      d:free()
      assert.has_error(function() d:to_host() end)
      local k = gpu.kernel(function(x) x[0] = 1 end)
      assert.has_error(function() k:launch(1, d) end)
    end)

    it("rejects bad input", function()
      assert.has_error(function() gpu.array("struct foo", 3) end)
      assert.has_error(function() gpu.array("float", -1) end)
      assert.has_error(function() gpu.to_device({ 1, "x" }) end)
      assert.has_error(function() gpu.to_device("abc") end)
      assert.has_error(function() gpu.to_device(ffi.new("float[2]")):to_host(ffi.new("float[1]")) end)
      local e = gpu.zeros("float", 2)
      assert.has_error(function() return e[2] end)
      e[1] = 3
      assert.are.equal(3, e[1])
    end)
  end)
end)
