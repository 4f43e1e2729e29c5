-- Every kernel and every call shown in API.md, on each backend of
-- H.backends, compared with plain LuaJIT.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local function f32(v) return H.to_ct("float", v) end

-- The saxpy kernel of API.md, verbatim.
local function saxpy_fn(a, x, y, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end

local function saxpy_data(n)
  local x = H.array("float", function(i) return (i % 97) * 0.125 - 3 end, n)
  local y = H.array("float", function(i) return (i % 13) * 0.5 + 1 end, n)
  return x, y, H.copy("float", y, n)
end

local function check_saxpy(a, x, y, y0, n, what)
  H.check("float", y, function(i) return a * x[i] + y0[i] end, n, { what = what })
end

for _, bk in ipairs(H.backends) do
  describe("API.md on " .. bk, function()
    before_each(function() H.need(bk) end)

    describe("arrays of FFI structs", function()
      it("the particle step of API.md: p[i] is a reference, fields read and written", function()
        pcall(ffi.cdef, "typedef struct { float x, y, vx, vy; } particle;")
        local count = 1000
        local ps = ffi.new("particle[?]", count)
        for i = 0, count - 1 do ps[i].x, ps[i].y, ps[i].vx, ps[i].vy = i, -i, i % 7 - 3, 0.5 end
        local ref = ffi.new("particle[?]", count)
        ffi.copy(ref, ps, ffi.sizeof(ps))
        local step = H.kernel(bk, function(p, n, dt)
          local i = gpu.global_id(0)
          if i < n then
            local q = p[i]                       -- a reference into the array
            q.x, q.y = q.x + q.vx * dt, q.y + q.vy * dt
          end
        end, { name = "step" })
        step:launch(count, ps, count, 1 / 60)
        for i = 0, count - 1 do
          local q = ref[i]
          q.x, q.y = q.x + q.vx * (1 / 60), q.y + q.vy * (1 / 60)
        end
        assert.are.equal(ffi.string(ref, ffi.sizeof(ref)), ffi.string(ps, ffi.sizeof(ps)))
        assert.are.equal("particle[]", step:signatures()[1][1])
      end)
    end)

    describe("kernels and launches", function()
      it("saxpy:launch(n, 2.0, x, y, n)", function()
        local n = 10007
        local saxpy = H.kernel(bk, saxpy_fn, { name = "saxpy" })
        local x, y, y0 = saxpy_data(n)
        saxpy:launch(n, 2.0, x, y, n)
        check_saxpy(2.0, x, y, y0, n, "saxpy 1-D")
      end)

      it("saxpy:launch({ global = n, group = 256 }, ...), n not a multiple of 256", function()
        local n = 1000
        local saxpy = H.kernel(bk, saxpy_fn, { name = "saxpy" })
        local x, y, y0 = saxpy_data(n)
        saxpy:launch({ global = n, group = 256 }, 2.0, x, y, n)
        check_saxpy(2.0, x, y, y0, n, "saxpy with group")
      end)

      it("saxpy[{ global = n }](...), the numba-style launch", function()
        local n = 777
        local saxpy = H.kernel(bk, saxpy_fn, { name = "saxpy" })
        local x, y, y0 = saxpy_data(n)
        saxpy[{ global = n }](-1.5, x, y, n)
        check_saxpy(-1.5, x, y, y0, n, "saxpy[cfg]")
      end)

      it("k[{ global = { w, h }, group = { 16, 16 } }](a, b), a 2-D kernel", function()
        local w, h = 40, 24
        local k = H.kernel(bk, function(a, b)
          local x, y = gpu.global_id(0), gpu.global_id(1)
          b[y * w + x] = a[y * w + x] * 2 + x - y
        end, { name = "twod" })
        local a = H.array("double", function(i) return i * 0.5 end, w * h)
        local b = ffi.new("double[?]", w * h)
        k[{ global = { w, h }, group = { 16, 8 } }](a, b)
        H.check("double", b, function(i)
          local x, y = i % w, math.floor(i / w)
          return a[i] * 2 + x - y
        end, w * h)
        -- { 16, 16 } does not divide h = 24: the items beyond global do not run
        local c = ffi.new("double[?]", w * h)
        k[{ global = { w, h }, group = { 16, 16 } }](a, c)
        H.check("double", c, function(i) return b[i] end, w * h)
      end)

      it("gpu.kernel(sig, fn) compiles eagerly for { 'float', 'float[]', 'float[]', 'int32_t' }", function()
        local sig = { "float", "float[]", "float[]", "int32_t" }
        local saxpy = H.kernel(bk, saxpy_fn, { name = "saxpy_eager" }, sig)
        if bk ~= "sim" then
          local sigs = saxpy:signatures()
          assert.are.equal(1, #sigs)
        end
        local n = 500
        local x, y, y0 = saxpy_data(n)
        saxpy:launch(n, 0.1, x, y, n)
        -- a is float here: 0.1 rounds to float first, and the arithmetic is float
        H.check("float", y, function(i) return f32(f32(0.1) * x[i]) + y0[i] end, n, { ulps = 1 })
      end)

      it("a new tuple of argument types compiles once and is reused", function()
        local k = H.kernel(bk, function(o, v)
          local i = gpu.global_id(0)
          o[i] = v * 2
        end, { name = "lazy" })
        local d, f = ffi.new("double[4]"), ffi.new("float[4]")
        k:launch(4, d, 1.5)
        k:launch(4, f, 1.5)
        k:launch(4, d, 2.5)
        k:launch(4, d, ffi.new("int32_t", 3))
        H.check("double", d, { 6, 6, 6, 6 }, 4)
        H.check("float", f, { 3, 3, 3, 3 }, 4)
        if bk ~= "sim" then assert.are.equal(3, #k:signatures()) end
      end)

      it("global need not be a multiple of group: items beyond global never run", function()
        local out = H.array("double", function() return -1 end, 16)
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id(0)
          o[i] = i
        end, { name = "partial" })
        k:launch({ global = 10, group = 4 }, out)
        H.check("double", out, function(i) return i < 10 and i or -1 end, 16)
        local o2 = H.array("double", function() return -1 end, 16)
        k:launch({ global = { 10 } }, o2)
        H.check("double", o2, function(i) return i < 10 and i or -1 end, 16)
      end)

      it("a launch returns when the kernel has finished and written its arrays", function()
        local n = 200000
        local k = H.kernel(bk, function(o, m)
          local i = gpu.global_id(0)
          if i < m then
            local s = 0
            for j = 1, 20 do s = s + j * i end
            o[i] = s
          end
        end, { name = "finish" })
        local out = ffi.new("double[?]", n)
        k:launch(n, out, n)
        H.check("double", out, function(i) return 210 * i end, n)
      end)
    end)

    describe("inside a kernel", function()
      it("ids and the launch's shape in 1-D, d defaulting to 0", function()
        local out = ffi.new("int32_t[?]", 100 * 6)
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id()
          o[i * 6] = gpu.global_id(0)
          o[i * 6 + 1] = gpu.local_id()
          o[i * 6 + 2] = gpu.group_id()
          o[i * 6 + 3] = gpu.group_size()
          o[i * 6 + 4] = gpu.num_groups()
          o[i * 6 + 5] = gpu.global_size()
        end, { name = "ids1" })
        k:launch({ global = 100, group = 20 }, out)
        H.check("int32_t", out, function(j)
          local i, f = math.floor(j / 6), j % 6
          return ({ i, i % 20, math.floor(i / 20), 20, 5, 100 })[f + 1]
        end, 600)
      end)

      it("ids in 2-D and 3-D", function()
        local gx, gy, gz, lx, ly, lz = 8, 6, 4, 4, 3, 2
        local n = gx * gy * gz
        local out = ffi.new("int32_t[?]", n * 4)
        local k = H.kernel(bk, function(o)
          local x, y, z = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
          local j = ((z * gpu.global_size(1) + y) * gpu.global_size(0) + x) * 4
          o[j] = gpu.local_id(0) + 10 * gpu.local_id(1) + 100 * gpu.local_id(2)
          o[j + 1] = gpu.group_id(0) + 10 * gpu.group_id(1) + 100 * gpu.group_id(2)
          o[j + 2] = gpu.num_groups(0) + 10 * gpu.num_groups(1) + 100 * gpu.num_groups(2)
          o[j + 3] = gpu.group_size(0) + 10 * gpu.group_size(1) + 100 * gpu.group_size(2)
        end, { name = "ids3" })
        k:launch({ global = { gx, gy, gz }, group = { lx, ly, lz } }, out)
        H.check("int32_t", out, function(j)
          local item, f = math.floor(j / 4), j % 4
          local x, y, z = item % gx, math.floor(item / gx) % gy, math.floor(item / (gx * gy))
          if f == 0 then return x % lx + 10 * (y % ly) + 100 * (z % lz) end
          if f == 1 then return math.floor(x / lx) + 10 * math.floor(y / ly) + 100 * math.floor(z / lz) end
          if f == 2 then return gx / lx + 10 * (gy / ly) + 100 * (gz / lz) end
          return lx + 10 * ly + 100 * lz
        end, n * 4)
      end)

      local it_wg = H.it_with("workgroups", bk)
      it_wg("gpu.barrier and gpu.shared: a group reverses its slice through shared memory", function()
        local k = H.kernel(bk, function(o, x)
          local l, g = gpu.local_id(0), gpu.group_id(0)
          local s = gpu.shared("float", 64)
          s[l] = x[gpu.global_id(0)]
          gpu.barrier()
          o[g * 64 + l] = s[63 - l]
        end, { name = "shrev" })
        local x = H.array("float", function(i) return i * 0.5 end, 256)
        local out = ffi.new("float[256]")
        k:launch({ global = 256, group = 64 }, out, x)
        H.check("float", out, function(i)
          local g, l = math.floor(i / 64), i % 64
          return x[g * 64 + 63 - l]
        end, 256, { ulps = 0 })
      end)

      H.it_with("workgroups", bk)("gpu.local_array: a private array per work item", function()
        local k = H.kernel(bk, function(o)
          local i = gpu.global_id(0)
          local a = gpu.local_array("int32_t", 10)
          for j = 0, 9 do a[j] = i * j end
          local s = 0
          for j = 0, 9 do s = s + a[9 - j] * (j + 1) end
          o[i] = s
        end, { name = "priv" })
        local out = ffi.new("int32_t[64]")
        k:launch(64, out)
        H.check("int32_t", out, function(i)
          local s = 0
          for j = 0, 9 do s = s + i * (9 - j) * (j + 1) end
          return s
        end, 64)
      end)

      for _, ct in ipairs({ "int32_t", "uint32_t", "int64_t", "uint64_t" }) do
        H.it_with("workgroups", bk)("atomics on " .. ct .. ": add sub min max and or xor xchg cas", function()
          local n = 256
          local acc = ffi.new(ct .. "[9]")
          acc[2] = 1000000     -- min
          acc[5] = 0xffff      -- and
          local olds = ffi.new(ct .. "[?]", n)
          local won = ffi.new("int32_t[?]", n)
          local k = H.kernel(bk, function(a, old, w)
            local i = gpu.global_id(0)
            gpu.atomic_add(a, 0, i)
            gpu.atomic_sub(a, 1, 2)
            gpu.atomic_min(a, 2, i + 5)
            gpu.atomic_max(a, 3, i * 3)
            gpu.atomic_or(a, 4, bit.lshift(1, i % 16))
            gpu.atomic_and(a, 5, bit.bnot(bit.lshift(1, i % 8)))
            gpu.atomic_xor(a, 6, 1)
            old[i] = gpu.atomic_xchg(a, 7, i + 1)
            if gpu.atomic_cas(a, 8, 0, i + 1) == 0 then w[i] = 1 end
          end, { name = "atomics_" .. ct })
          k:launch({ global = n, group = 64 }, acc, olds, won)
          local function eq(j, v, what)
            assert.is_true(acc[j] == H.to_ct(ct, v),
              what .. ": " .. tostring(acc[j]) .. ", expected " .. tostring(v))
          end
          eq(0, n * (n - 1) / 2, "atomic_add")
          if ct:sub(1, 1) == "u" then
            eq(1, H.to_ct(ct, 0) - 2 * n, "atomic_sub")    -- wraps around
          else
            eq(1, -2 * n, "atomic_sub")
          end
          eq(2, 5, "atomic_min")
          eq(3, (n - 1) * 3, "atomic_max")
          eq(4, 0xffff, "atomic_or")
          eq(5, 0xff00, "atomic_and")
          eq(6, 0, "atomic_xor")    -- 256 flips
          -- xchg: the old values and the final value are 0..n, each once
          local seen = {}
          for i = 0, n - 1 do seen[tonumber(olds[i])] = (seen[tonumber(olds[i])] or 0) + 1 end
          seen[tonumber(acc[7])] = (seen[tonumber(acc[7])] or 0) + 1
          for v = 0, n do assert.are.equal(1, seen[v], "atomic_xchg value " .. v) end
          -- cas: exactly one work item found 0
          local wins = 0
          for i = 0, n - 1 do wins = wins + won[i] end
          assert.are.equal(1, wins, "atomic_cas winners")
          assert.is_true(acc[8] >= 1 and acc[8] <= n, "atomic_cas value " .. tostring(acc[8]))
        end)
      end

      for _, ct in ipairs({ "float", "double" }) do
        H.it_with("workgroups", bk)("atomic_add on " .. ct, function()
          local acc = ffi.new(ct .. "[2]")
          local k = H.kernel(bk, function(a)
            local i = gpu.global_id(0)
            gpu.atomic_add(a, 0, 1)
            gpu.atomic_add(a, 1, 0.5)
            if i < 0 then a[0] = 0 end
          end, { name = "atomicf_" .. ct })
          k:launch({ global = 1000, group = 50 }, acc)
          H.check(ct, acc, { 1000, 500 }, 2, { ulps = 0 })
        end)
      end
    end)

    describe("arguments", function()
      it("every kind of argument in one launch", function()
        local vla = H.array("double", { 1, 2, 3, 4 })
        local fixed = ffi.new("float[4]", 10, 20, 30, 40)
        local host = H.array("int32_t", { 100, 200, 300, 400 })
        -- an FFI pointer only where the device addresses host memory (API.md)
        local ptr = H.host_shared(bk) and ffi.cast("int32_t *", host) or host
        local tbl = { 1000, 2000, 3000, 4000 }
        local dev = gpu.to_device(H.array("double", { 5, 6, 7, 8 }), nil, bk)
        local out = ffi.new("double[4]")
        local k = H.kernel(bk, function(o, num, flag, sc, a, b, c, t, d)
          local i = gpu.global_id(0)
          local v = a[i] + b[i] + c[i] + t[i + 1] + d[i] + num + sc
          if flag then v = -v end
          o[i] = v
          t[i + 1] = i
        end, { name = "allargs" })
        k:launch(4, out, 0.5, true, ffi.new("int16_t", -7), vla, fixed, ptr, tbl, dev)
        H.check("double", out, function(i)
          -- the int16_t scalar is cdata: the sum becomes int64_t (LuaJIT's cdata
          -- arithmetic, typing.md "C integers"), the .5 truncated
          local v = vla[i] + fixed[i] + host[i] + (i + 1) * 1000 + (5 + i) + 0.5 + ffi.new("int16_t", -7)
          return tonumber(-v)
        end, 4)
        H.check(nil, tbl, { 0, 1, 2, 3 }, 4, { base = 1 })
      end)
    end)

    describe("device arrays", function()
      H.use_in_block(bk)
      it("gpu.array, gpu.zeros, gpu.to_device, to_host, #e, e.ctype, e.device, free", function()
        local n = 64
        local z = gpu.zeros("float", n)
        assert.are.equal(n, #z)
        assert.is_truthy(tostring(z.ctype):find("float"), tostring(z.ctype))
        assert.is_not_nil(z.device)
        H.check("float", z:to_host(), function() return 0 end, n)
        local e = gpu.to_device(H.array("float", function(i) return i end, n))
        local t = gpu.to_device({ 1, 2, 3 })
        assert.are.equal(3, #t)
        local d = gpu.array("float", n)
        local k = H.kernel(bk, function(dst, a, b)
          local i = gpu.global_id(0)
          dst[i] = a[i] + b[i] * 2
        end, { name = "devarr" })
        k:launch(n, d, e, z)
        local host = ffi.new("float[?]", n)
        local r = d:to_host(host)
        assert.is_truthy(r == nil or r == host or type(r) == "cdata")
        H.check("float", host, function(i) return i end, n, { ulps = 0 })
        local tt = {}
        d:to_host(tt)
        H.check(nil, tt, function(i) return i end, n, { base = 1 })
        d:free(); e:free(); z:free(); t:free()
      end)
    end)

    describe("devices and backends", function()
      it("gpu.devices, gpu.use, gpu.backend, gpu.synchronize", function()
        local devs = gpu.devices()
        assert.is_table(devs)
        local entry
        for _, dv in ipairs(devs) do
          assert.is_string(dv.backend)
          assert.is_string(dv.name)
          if dv.backend == bk then entry = dv end
        end
        assert.is_not_nil(entry, "no " .. bk .. " entry in gpu.devices()")
        local prev = gpu.backend()
        gpu.use(bk)
        assert.are.equal(bk, gpu.backend())
        gpu.synchronize()
        gpu.use(entry)
        assert.are.equal(bk, gpu.backend())
        -- a kernel without a backend option runs on the current backend
        local out = ffi.new("double[3]")
        local k = gpu.kernel(function(o) local i = gpu.global_id(0); o[i] = i + 0.5 end, { cache = false })
        k:launch(3, out)
        H.check("double", out, { 0.5, 1.5, 2.5 }, 3)
        gpu.use(prev)
      end)
    end)

    if bk ~= "sim" then
      describe("inspection and caching", function()
        it("k:signatures, k:inspect_llvm, k:inspect_asm, k:precompile", function()
          local k = H.kernel(bk, saxpy_fn, { name = "inspect" })
          assert.are.equal(0, #k:signatures())
          k:precompile({ "double", "double[]", "double[]", "int32_t" })
          assert.are.equal(1, #k:signatures())
          local ir = k:inspect_llvm({ "double", "double[]", "double[]", "int32_t" })
          assert.is_string(ir)
          assert.is_truthy(ir:find("define"), ir)
          local asm = k:inspect_asm({ "double", "double[]", "double[]", "int32_t" })
          assert.is_string(asm)
          assert.is_true(#asm > 0)
          -- a fraction is a double (a whole number would be a lua_pos20: typing.md)
          local x, y = H.array("double", { 1, 2 }), H.array("double", { 10, 20 })
          k:launch(2, 0.5, x, y, ffi.new("int32_t", 2))
          H.check("double", y, { 10.5, 21 }, 2)
          assert.are.equal(1, #k:signatures())
        end)

        it("gpu.cache.dir is $GPUJIT_CACHE_DIR; a cached kernel gives the same results", function()
          local dir = os.getenv("GPUJIT_CACHE_DIR")
          if dir then assert.are.equal(dir, gpu.cache.dir()) else assert.is_string(gpu.cache.dir()) end
          local function body(o, x)
            local i = gpu.global_id(0)
            o[i] = math.sin(x[i]) * 3 + i
          end
          local x = H.array("double", function(i) return i * 0.1 end, 32)
          local o1, o2 = ffi.new("double[32]"), ffi.new("double[32]")
          H.kernel(bk, body, { name = "cached", cache = true }):launch(32, o1, x)
          H.kernel(bk, body, { name = "cached", cache = true }):launch(32, o2, x)   -- from the cache
          H.check("double", o1, function(i) return math.sin(x[i]) * 3 + i end, 32,
            { ulps = H.math_ulps(bk, 0, 0) })
          H.check("double", o2, function(i) return o1[i] end, 32)
          if not H.own_cache then return end     -- never clear a user's cache
          gpu.cache.clear()
          local o3 = ffi.new("double[32]")
          H.kernel(bk, body, { name = "cached", cache = true }):launch(32, o3, x)
          H.check("double", o3, function(i) return o1[i] end, 32)
        end)
      end)
    end

    describe("options", function()
      it("fastmath = true still computes (within a relative 1e-12)", function()
        local x = H.array("double", function(i) return i * 0.37 + 0.1 end, 100)
        local out = ffi.new("double[100]")
        local k = H.kernel(bk, function(o, a)
          local i = gpu.global_id(0)
          o[i] = a[i] * a[i] + math.sqrt(a[i]) / 3
        end, { name = "fast", fastmath = true })
        k:launch(100, out, x)
        for i = 0, 99 do
          local want = x[i] * x[i] + math.sqrt(x[i]) / 3
          assert.is_true(math.abs(out[i] - want) <= 1e-12 * math.abs(want),
            i .. ": " .. out[i] .. " vs " .. want)
        end
      end)

      H.it_with("boundscheck", bk)("boundscheck = true turns an out-of-range index into an error", function()
        local k = H.kernel(bk, function(o, j)
          o[j] = 1
        end, { name = "bounds", boundscheck = true })
        local out = ffi.new("double[4]")
        k:launch(1, out, 3)
        assert.are.equal(1, out[3])
        -- The out-of-range launches run in a process of their own: without
        -- the check they would write past the end of an allocation.
        for _, case in ipairs({ "{ 1, 2, 3 }, 7", "gpu.zeros('double', 4), 4", "ffi.new('double[4]'), 100000",
          "gpu.zeros('double', 4), -1" }) do
          local ok, output = H.run_isolated(bk, [[
            local opts = { boundscheck = true, cache = false, name = "bounds" }
            local k = gpu.kernel(function(o, j) o[j] = 1 end, opts)
            local ok, err = pcall(function() k:launch(1, ]] .. case .. [[) end)
            print(ok and "NO ERROR" or ("ERROR: " .. tostring(err)))
          ]])
          assert.is_true(ok, "k:launch(1, " .. case .. ") with boundscheck crashed:\n" .. output)
          assert.is_truthy(output:find("ERROR: ", 1, true), "k:launch(1, " .. case .. "): " .. output)
        end
        H.sanity(bk)
      end)
    end)
  end)
end
