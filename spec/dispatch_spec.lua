-- The dispatcher: argument classification, overload caching, generated
-- launchers, argument blocks, launch configurations.  Most of it runs
-- against a fake core (below) that computes the argument block layout as
-- src/gj_type.c does, and whose gj_launch decodes the block and runs the
-- kernel through the simulator; the last part needs the real gpujit.core.
-- luacheck: no unused args
local ffi = require("ffi")
local types = require("gpujit.types")
local array = require("gpujit.array")
local sim = require("gpujit.sim")

-- A fresh dispatcher module instance, set up with a fake core.
local function fresh_dispatch()
  package.loaded["gpujit.dispatch"] = nil
  local D = require("gpujit.dispatch")
  package.loaded["gpujit.dispatch"] = nil
  return D
end

local function layout(tl)
  local params, off = {}, 0
  for i, t in ipairs(tl) do
    local e = types.elem(t)
    local size, align
    if e then size, align = 16, 8 else size = types.size[t]; align = size end
    off = math.ceil(off / align) * align
    params[i] = { type = t, is_array = e ~= nil, elem = e or t, offset = off, size = size,
                  read = true, written = true }
    off = off + size
  end
  return params, math.ceil(off / 8) * 8
end

local function fake_core()
  local fake = { kernels = {}, ncompile = 0, launches = 0, mem = {}, written = {} }
  fake.core = {
    compile = function(fn, tl, opts)
      fake.ncompile = fake.ncompile + 1
      if fake.compile_error then error(fake.compile_error, 0) end
      local params, argsize = layout(tl)
      for i, p in ipairs(params) do
        if fake.written[i] == false then p.written = false end
      end
      local id = #fake.kernels + 1
      fake.kernels[id] = { fn = fn, types = tl, opts = opts, params = params }
      return { handle = ffi.cast("void *", id), argsize = argsize, params = params,
               uses_barrier = fake.uses_barrier or false }
    end,
    inspect = function(_, tl, opts, what)
      return what .. ":" .. table.concat(tl, ",") .. ":" .. opts.name
    end,
  }
  local function in_device_memory(p)
    local a = tonumber(ffi.cast("intptr_t", p))
    for addr, buf in pairs(fake.mem) do
      if a >= addr and a < addr + ffi.sizeof(buf) then return true end
    end
    return false
  end
  fake.lib = {
    gj_launch = function(h, dims, args)
      fake.launches = fake.launches + 1
      if fake.bare then return 0 end
      if fake.fail then return -1 end
      local k = fake.kernels[tonumber(ffi.cast("intptr_t", h))]
      local base = ffi.cast("uint8_t *", args)
      local argv, lens = {}, {}
      for i, p in ipairs(k.params) do
        if p.is_array then
          local ptr = ffi.cast("void **", base + p.offset)[0]
          lens[i] = tonumber(ffi.cast("int64_t *", base + p.offset + 8)[0])
          argv[i] = ffi.cast(p.elem .. " *", ptr)
          if fake.device_only then
            -- element 0 or element 1 (a table) must be device memory
            assert(in_device_memory(argv[i]) or in_device_memory(argv[i] + 1),
              "array argument not in device memory")
          end
        else
          local v = ffi.cast(p.elem .. " *", base + p.offset)[0]
          if p.elem == "bool" then argv[i] = v
          elseif types.is_int64[p.elem] then argv[i] = v
          else argv[i] = tonumber(v) end
        end
      end
      local g = { [0] = tonumber(dims.global[0]), tonumber(dims.global[1]), tonumber(dims.global[2]) }
      local gr = { [0] = tonumber(dims.group[0]), tonumber(dims.group[1]), tonumber(dims.group[2]) }
      fake.last = { argv = argv, lens = lens, ndim = dims.ndim, global = { g[0], g[1], g[2] },
                    group = { gr[0], gr[1], gr[2] } }
      if not fake.norun then sim.run(k.fn, dims.ndim, g, gr, argv, #k.params, "fake") end
      return 0
    end,
    gj_errmsg = function() return "fake launch failure" end,
    gj_mem_alloc = function(_, _, _, bytes)
      local buf = ffi.new("uint8_t[?]", bytes)
      local p = ffi.cast("void *", buf)
      fake.mem[tonumber(ffi.cast("intptr_t", p))] = buf
      return p
    end,
    gj_mem_free = function(_, _, _, p)
      fake.mem[tonumber(ffi.cast("intptr_t", p))] = nil
    end,
    gj_mem_copy = function(_, _, _, dst, src, bytes, _)
      fake.ncopy = (fake.ncopy or 0) + 1
      ffi.copy(dst, src, bytes)
      return 0
    end,
  }
  return fake
end

local sim_entry = { backend = "sim", index = 0 }
local sim_target = { backend = "sim", bk = -1, dev = 0, sim = true, shared = true,
                     entry = sim_entry, label = "sim" }

local function setup(opts)
  opts = opts or {}
  local D = fresh_dispatch()
  local fake = fake_core()
  local host = { backend = "fake", bk = 0, dev = 0, sim = false, shared = true, label = "fake:0",
                 entry = { backend = "fake", index = 0 } }
  local dev = { backend = "fakegpu", bk = 1, dev = 0, sim = false, shared = false,
                label = "fakegpu:0", entry = { backend = "fakegpu", index = 0 } }
  local S = { cur = host }
  local targets = { fake = host, fakegpu = dev, sim = sim_target }
  D.setup({
    core = fake.core, lib = fake.lib, ctx = nil, state = S,
    resolve = function(d) return targets[d] end,
    target_of = function(bk) return bk == 0 and host or bk == 1 and dev or nil end,
    inspect_target = function() return host end,
  })
  array.setup({
    current = function() return S.cur end, resolve = function(d) return targets[d] end,
    target_of = function(bk) return bk == 0 and host or bk == 1 and dev or nil end,
    sim_target = sim_target,
  })
  local function kernel(fn, o, sigs)
    o = o or {}
    return D.kernel(fn, sigs, o, opts.pin)
  end
  return { D = D, fake = fake, S = S, host = host, dev = dev, kernel = kernel }
end

describe("dispatch", function()
  describe("type names", function()
    it("normalizes C spellings", function()
      assert.are.equal("int32_t", types.normalize("int"))
      assert.are.equal("uint8_t", types.normalize("unsigned char"))
      assert.are.equal("int64_t", types.normalize("long"))
      assert.are.equal("float[]", types.normalize("float*"))
      assert.are.equal("float[]", types.normalize("const float *"))
      assert.are.equal("float[]", types.normalize("float[?]"))
      assert.are.equal("double[]", types.normalize("double [16]"))
      assert.are.equal("int32_t[]", types.normalize("int[]"))
      assert.are.equal("bool", types.normalize("_Bool"))
      assert.is_nil(types.normalize("struct foo"))
      assert.is_nil(types.normalize("float **"))
      assert.is_nil(types.normalize("string"))
    end)

    it("classifies FFI ctypes", function()
      local function info(v) return types.ctype_info(v) end
      assert.are.equal("int32_t", info(ffi.new("int", 1)).type)
      assert.are.equal("scalar", info(ffi.new("int", 1)).kind)
      assert.are.equal("uint64_t", info(ffi.new("size_t", 1)).type)
      assert.are.equal("int64_t", info(5LL).type)
      assert.are.equal("bool", info(ffi.new("bool", true)).type)
      local v = info(ffi.new("float[?]", 3))
      assert.are.same({ "farray", "float[]", "float" }, { v.kind, v.type, v.elem })
      assert.is_nil(v.len)
      assert.are.equal(16, info(ffi.new("double[16]")).len)
      assert.are.equal("fptr", info(ffi.cast("uint16_t *", 0)).kind)
      assert.are.equal("int8_t[]", info(ffi.cast("const char *", "x")).type)
      assert.are.equal("garray", info(array.ctype_of("float")()).kind)
      -- a struct cdata: passed by reference, an array of one to the launcher
      local sv = info(ffi.new("struct { int a; }"))
      assert.are.same({ "farray", 1, 4, true }, { sv.kind, sv.len, sv.esize, sv.byref })
      assert.are.equal(sv.elem, sv.type)
      assert.is_nil(info(ffi.new("union { int a; float b; }")))
      assert.is_nil(info(ffi.new("float *[2]")))
    end)
  end)

  describe("launch configuration", function()
    local D
    setup(nil)
    before_each(function() D = setup().D end)
    local function dims(cfg)
      local d = ffi.new("gj_dims")
      local k = { name = "k" }
      local run, partial = D.set_dims(k, d, cfg)
      return { run = run, partial = partial, ndim = d.ndim,
               global = { tonumber(d.global[0]), tonumber(d.global[1]), tonumber(d.global[2]) },
               group = { tonumber(d.group[0]), tonumber(d.group[1]), tonumber(d.group[2]) } }
    end

    it("fills gj_dims", function()
      assert.are.same({ run = true, partial = false, ndim = 1, global = { 100, 1, 1 },
                        group = { 0, 0, 0 } }, dims(100))
      assert.are.same({ run = true, partial = false, ndim = 1, global = { 100, 1, 1 },
                        group = { 0, 0, 0 } }, dims({ global = 100 }))
      assert.are.same({ run = true, partial = true, ndim = 1, global = { 100, 1, 1 },
                        group = { 32, 1, 1 } }, dims({ global = 100, group = 32 }))
      assert.are.same({ run = true, partial = false, ndim = 2, global = { 64, 32, 1 },
                        group = { 16, 16, 1 } }, dims({ global = { 64, 32 }, group = { 16, 16 } }))
      assert.are.same({ run = true, partial = false, ndim = 3, global = { 4, 5, 6 },
                        group = { 0, 0, 0 } }, dims({ global = { 4, 5, 6 } }))
      assert.are.same({ run = true, partial = false, ndim = 1, global = { 8, 1, 1 },
                        group = { 4, 1, 1 } }, dims({ global = { 8 }, group = { 4 } }))
      assert.is_false(dims(0).run)
      assert.is_false(dims({ global = { 4, 0 } }).run)
    end)

    it("rejects bad ones with a clear message", function()
      for _, cfg in ipairs({ -1, 0.5, 0 / 0, "8", true, {}, { global = "8" }, { global = {} },
                             { global = { 1, 2, 3, 4 } }, { global = { 1, -2 } },
                             { global = 8, group = { 2, 2 } }, { global = 8, group = 0 },
                             { global = 8, group = 1.5 }, { global = { 8, 8 }, group = 4 },
                             { global = 8, group = "x" } }) do
        local ok, err = pcall(dims, cfg)
        assert.is_false(ok)
        assert.matches("bad launch configuration for kernel 'k'", err, 1, true)
      end
    end)
  end)

  describe("with a fake core", function()
    local env, fake
    before_each(function()
      env = setup()
      fake = env.fake
    end)

    it("specializes on argument types and packs the argument block", function()
      local k = env.kernel(function(a, x, y, n)
        local i = sim.global_id(0)
        if i < n then y[i] = a * x[i] + y[i] end
      end, { name = "saxpy" })
      local n = 10
      local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
      for i = 0, n - 1 do x[i], y[i] = i, 1 end
      k:launch(n, 2, x, y, n)
      assert.are.equal(1, fake.ncompile)
      assert.are.same({ "double", "float[]", "float[]", "double" }, fake.kernels[1].types)
      assert.are.same({ 2, nil, nil, 10 }, { fake.last.argv[1], nil, nil, fake.last.argv[4] })
      assert.are.same({ [2] = 10, [3] = 10 }, fake.last.lens)
      for i = 0, n - 1 do assert.are.equal(2 * i + 1, y[i]) end
      assert.are.equal("saxpy", fake.kernels[1].opts.name)
      assert.are.equal(0, fake.kernels[1].opts.bk)
      assert.are.equal(0, fake.kernels[1].opts.device)
      assert.are.equal("double", fake.kernels[1].opts.precision)
      assert.are.same({ { "double", "float[]", "float[]", "double" } }, k:signatures())
    end)

    it("compiles once per type tuple, and a hit does not compile", function()
      local k = env.kernel(function(a, b) end)
      local x = ffi.new("float[?]", 4)
      k:launch(1, x, 1)
      k:launch(1, ffi.new("float[?]", 8), 2)
      k:launch(1, ffi.new("float[3]"), 3)           -- fixed array: other launcher, same overload
      k:launch(1, ffi.cast("float *", x), 3)         -- pointer: same overload
      assert.are.equal(1, fake.ncompile)
      assert.are.equal(-1, fake.last.lens[1])
      k:launch(1, ffi.new("double[?]", 2), true)
      assert.are.equal(2, fake.ncompile)
      k:launch(1, ffi.new("float[?]", 2), 5)
      k:launch(1, ffi.new("double[?]", 2), false)
      assert.are.equal(2, fake.ncompile)
      assert.are.same({ { "float[]", "double" }, { "double[]", "bool" } }, k:signatures())
      assert.are.equal(7, fake.launches)
    end)

    it("passes every scalar type and every array kind", function()
      local k = env.kernel(function(a, b, c, d, e, f, g, h, i, j, l, m, o, p)
      end)
      fake.norun = true
      local fixed = ffi.new("int16_t[5]")
      local vla = ffi.new("uint8_t[?]", 7)
      local ptr = ffi.cast("int32_t *", ffi.new("int32_t[3]"))
      local ga = array.array("double", 9, "sim")
      k:launch(1, true, ffi.new("int8_t", -3), ffi.new("uint8_t", 200), ffi.new("int16_t", -300),
        ffi.new("uint16_t", 60000), ffi.new("int32_t", -70000), ffi.new("uint32_t", 4000000000),
        -5LL, 5ULL, ffi.new("float", 1.5), 2.25, fixed, vla, ptr)
      assert.are.same({ "bool", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
                        "int64_t", "uint64_t", "float", "double", "int16_t[]", "uint8_t[]",
                        "int32_t[]" }, fake.kernels[1].types)
      local v = fake.last.argv
      assert.are.same({ true, -3, 200, -300, 60000, -70000, 4000000000 },
        { v[1], v[2], v[3], v[4], v[5], v[6], v[7] })
      assert.is_true(v[8] == -5LL and v[9] == 5ULL)
      assert.are.same({ 1.5, 2.25 }, { v[10], v[11] })
      assert.are.same({ [12] = 5, [13] = 7, [14] = -1 }, fake.last.lens)
      local k2 = env.kernel(function(x, t) end)
      k2:launch(1, ga, { 1, 2 })
      assert.are.same({ "double[]", "double[]" }, fake.kernels[2].types)
      assert.are.same({ 9, 2 }, fake.last.lens)
    end)

    it("copies tables in (1-based) and written ones back", function()
      local k = env.kernel(function(t, n)
        local i = sim.global_id(0)
        if i < n then t[i + 1] = t[i + 1] * 2 end
      end)
      local t = { 1, 2, 3 }
      k:launch(4, t, 3)
      assert.are.same({ 2, 4, 6 }, t)
      local big = {}
      for i = 1, 100 do big[i] = i end
      k:launch(100, big, 100)
      for i = 1, 100 do assert.are.equal(2 * i, big[i]) end
      k:launch(4, t, 3)
      assert.are.same({ 4, 8, 12 }, t)
      k:launch(1, {}, 0)
      assert.are.equal(1, fake.ncompile)
    end)

    it("does not copy back tables the kernel does not write", function()
      fake.written[1] = false
      local k = env.kernel(function(t) t[1] = 99 end)
      local t = { 1 }
      k:launch(1, t)
      assert.are.same({ 1 }, t)
    end)

    it("rejects tables of non-numbers, naming the argument and the element", function()
      local k = env.kernel(function(x, t) end, { name = "kk" })
      local ok, err = pcall(k.launch, k, 1, 1, { 1, "two" })
      assert.is_false(ok)
      assert.matches("bad argument #2 't' to kernel 'kk': table element [2] is Lua string", err, 1, true)
      assert.matches("dispatch_spec.lua:%d+:", err)
    end)

    it("names the argument in errors", function()
      local k = env.kernel(function(a, x, y, n) end, { name = "saxpy" })
      local x = ffi.new("float[4]")
      local function e(...)
        local ok, err = pcall(k.launch, k, 4, ...)
        assert.is_false(ok)
        return err
      end
      assert.matches("bad argument #2 'x' to kernel 'saxpy': unsupported argument type 'string'",
        e(1, "x", x, 4), 1, true)
      assert.matches("bad argument #3 'y' to kernel 'saxpy': unsupported argument type 'function'",
        e(1, x, print, 4), 1, true)
      assert.matches("bad argument #4 'n' to kernel 'saxpy': got nil or no value (the kernel takes 4"
        .. " arguments)", e(1, x, x), 1, true)
      assert.matches("bad argument #1 'a' to kernel 'saxpy': got nil", e(nil, x, x, 4), 1, true)
      assert.matches("bad argument #5 to kernel 'saxpy': the kernel takes 4 arguments",
        e(1, x, x, 4, 5), 1, true)
      assert.matches("bad argument #6 to kernel 'saxpy'", e(1, x, x, 4, nil, 6), 1, true)
      assert.matches("unions are not supported in kernels",
        e(1, ffi.new("union { int a; float b; }"), x, 4), 1, true)
      assert.matches("unsupported argument type 'userdata'", e(1, io.stdout, x, 4), 1, true)
      -- a launch that matches after errors still works, and trailing nils are fine
      k:launch(4, 1, x, x, 4, nil)
      assert.are.equal(1, fake.ncompile)
      -- the kernel called with a dot
      local ok, err = pcall(k.launch, 4, 1, x, x, 4)
      assert.is_false(ok)
      assert.matches("with a colon", err)
    end)

    it("types Lua numbers as float with precision = single", function()
      local k = env.kernel(function(a, t) end, { precision = "single" })
      k:launch(1, 1.5, { 1 })
      assert.are.same({ "float", "double[]" }, fake.kernels[1].types)
      assert.are.equal("single", fake.kernels[1].opts.precision)
    end)

    it("re-raises compile errors unchanged", function()
      fake.compile_error = "kern.lua:3: strings are not supported (in kernel k)"
      local k = env.kernel(function(a) end)
      local ok, err = pcall(k.launch, k, 1, 1)
      assert.is_false(ok)
      assert.are.equal("kern.lua:3: strings are not supported (in kernel k)", err)
      fake.compile_error = nil
      k:launch(1, 1)
    end)

    it("reports a failed launch with the core's message", function()
      local k = env.kernel(function(a) end, { name = "f" })
      fake.fail = true
      local ok, err = pcall(k.launch, k, 1, 1)
      assert.is_false(ok)
      assert.are.equal("fake launch failure (in kernel f)", err)
    end)

    it("checks barrier kernels against partial groups before launching", function()
      fake.uses_barrier = true
      local k = env.kernel(function(a) end, { name = "b" })
      k:launch({ global = 64, group = 16 }, 1)
      k:launch(63, 1)
      local ok, err = pcall(k.launch, k, { global = 63, group = 16 }, 1)
      assert.is_false(ok)
      assert.matches("multiple of group", err)
      assert.matches("global 63, group 16", err, 1, true)
      assert.are.equal(2, fake.launches)
    end)

    it("launches numba style, caching the bound launcher per configuration", function()
      local k = env.kernel(function(x)
        local i = sim.global_id(0)
        x[i] = x[i] + 1
      end)
      local x = ffi.new("int32_t[8]")
      local cfg = { global = 8, group = 4 }
      k[cfg](x)
      k[8](x)
      assert.are.equal(k[cfg], k[cfg])
      assert.are.equal(k[8], k[8])
      local a, b = k[4], k[{ global = 2 }]
      b(x)
      a(x)
      for i = 0, 7 do assert.are.equal(i < 2 and 4 or i < 4 and 3 or 2, x[i]) end
      assert.are.same({ 4, 1, 1 }, fake.last.global)
      assert.has_error(function() k[8](x, 2) end)
    end)

    it("makes no garbage and no compile on a cache hit", function()
      fake.bare = true
      local k = env.kernel(function(a, x, y, n, t) end)
      local x, y = ffi.new("float[?]", 100), ffi.new("float[100]")
      local t = { 1, 2, 3 }
      local cfg = { global = 100, group = 10 }
      local function run(n)
        for _ = 1, n do k:launch(cfg, 2, x, y, 100, t) end
      end
      run(100)
      local n0 = fake.ncompile
      -- (traces are GC objects too: measure once they have formed)
      local grew
      for _ = 1, 3 do
        collectgarbage()
        collectgarbage("stop")
        local before = collectgarbage("count")
        run(20000)
        grew = collectgarbage("count") - before
        collectgarbage("restart")
      end
      assert.are.equal(n0, fake.ncompile)
      assert.is_true(grew < 1, "garbage per 20000 launches: " .. grew .. " KB")
    end)

    it("keeps working when a call site alternates between signatures", function()
      fake.norun = true
      local k = env.kernel(function(x) end)
      local a, b = ffi.new("float[4]"), ffi.new("int32_t[4]")
      for _ = 1, 100 do
        k:launch(1, a)
        k:launch(1, b)
        k:launch(1, 3)
      end
      assert.are.equal(3, fake.ncompile)
      assert.are.equal(300, fake.launches)
    end)

    it("compiles anew for another device and for sim runs the Lua function", function()
      local k = env.kernel(function(x)
        local i = sim.global_id(0)
        x[i] = x[i] + 1
      end)
      local x = ffi.new("float[4]")
      k:launch(4, x)
      env.S.cur = env.dev
      k:launch(4, x)
      assert.are.equal(2, fake.ncompile)
      assert.are.equal(1, fake.kernels[2].opts.bk)
      env.S.cur = sim_target
      k:launch(4, x)
      assert.are.equal(2, fake.ncompile)
      assert.are.equal(2, fake.launches)
      for i = 0, 3 do assert.are.equal(3, x[i]) end
      env.S.cur = env.host
      k:launch(4, x)
      assert.are.equal(2, fake.ncompile)
      assert.are.same({ { "float[]" } }, k:signatures())
    end)

    it("copies FFI arrays and tables through device memory when the device does not share it", function()
      env.S.cur = env.dev
      fake.device_only = true
      local k = env.kernel(function(x, t, n)
        local i = sim.global_id(0)
        if i < n then
          x[i] = x[i] * 2
          t[i + 1] = t[i + 1] + x[i]
        end
      end)
      local x = ffi.new("float[?]", 5, { 1, 2, 3, 4, 5 })
      local t = { 10, 20, 30, 40, 50 }
      k:launch(5, x, t, 5)
      assert.are.same({ 2, 4, 6, 8, 10 }, { x[0], x[1], x[2], x[3], x[4] })
      assert.are.same({ 12, 24, 36, 48, 60 }, t)
      local ok, err = pcall(k.launch, k, 5, ffi.cast("float *", x), t, 5)
      assert.is_false(ok)
      assert.matches("shares host memory", err)
    end)

    it("checks gpu.array arguments: freed, other device", function()
      local k = env.kernel(function(x) end, { name = "g" })
      local mem = ffi.new("float[4]")
      local e = array.ctype_of("float")()
      e.ptr, e.n, e.bk, e.dev = mem, 4, 1, 0
      local ok, err = pcall(k.launch, k, 1, e)
      assert.is_false(ok)
      assert.matches("lives on fakegpu:0, the kernel runs on fake:0", err, 1, true)
      env.S.cur = env.dev
      k:launch(1, e)
      e.ptr = nil
      ok, err = pcall(k.launch, k, 1, e)
      assert.is_false(ok)
      assert.matches("freed", err)
    end)

    it("eager signatures: compile up front, convert arguments, reject mismatches", function()
      local sig = { types.normalize_sig({ "float", "float[]", "int" }) }
      local k = env.kernel(function(a, x, n)
        local i = sim.global_id(0)
        if i < n then x[i + 1] = a * i end
      end, { name = "e" }, sig)
      require("gpujit.dispatch")
      env.D.overload(k, env.host, sig[1])
      assert.are.equal(1, fake.ncompile)
      local t = { 0, 0, 0 }
      k:launch(3, 1.5, t, 3.9)
      assert.are.same({ 0, 1.5, 3 }, t)
      assert.are.equal(1, fake.ncompile)
      assert.are.same({ { "float", "float[]", "int32_t" } }, k:signatures())
      local ok, err = pcall(k.launch, k, 3, 1, ffi.new("double[3]"), 3)
      assert.is_false(ok)
      assert.matches("bad argument #2 'x' to kernel 'e': expected float[] (signature (float, float[], "
        .. "int32_t)), got FFI double [3]", err, 1, true)
      k:launch(3, 1, ffi.new("float[3]"), 3)
      assert.are.equal(1, fake.ncompile)
      ok, err = pcall(k.launch, k, 3, true, t, 3)
      assert.is_false(ok)
      assert.matches("expected float", err)
    end)

    it("eager kernels with several signatures pick the first that fits", function()
      local sigs = { types.normalize_sig({ "float[]" }), types.normalize_sig({ "int32_t[]" }) }
      local k = env.kernel(function(x) end, { name = "m" }, sigs)
      fake.norun = true
      k:launch(1, ffi.new("int32_t[2]"))
      k:launch(1, { 1, 2 })
      assert.are.same({ { "int32_t[]" }, { "float[]" } }, k:signatures())
      local ok, err = pcall(k.launch, k, 1, ffi.new("double[2]"))
      assert.is_false(ok)
      assert.matches("no signature of kernel 'm' accepts", err, 1, true)
    end)

    it("checks the signature's arity", function()
      assert.has_error(function()
        env.kernel(function(a, b) end, {}, { { "float" } })
      end)
    end)

    it("precompile, inspect, cache clear", function()
      local k = env.kernel(function(a, b) end, { name = "p" })
      k:precompile({ "float", "int[]" })
      assert.are.equal(1, fake.ncompile)
      assert.are.same({ { "float", "int32_t[]" } }, k:signatures())
      k:launch(1, ffi.new("float", 1), ffi.new("int32_t[1]"))
      assert.are.equal(1, fake.ncompile)
      assert.are.equal("llvm:float,int32_t[]:p", k:inspect_llvm({ "float", "int32_t *" }))
      assert.are.equal("asm:float,int32_t[]:p", k:inspect_asm())
      assert.has_error(function() k:precompile({ "float" }) end)
      assert.has_error(function() k:precompile({ "float", "nonsense" }) end)
      env.D.clear_all()
      assert.are.same({}, k:signatures())
      k:launch(1, ffi.new("float", 1), ffi.new("int32_t[1]"))
      assert.are.equal(2, fake.ncompile)
    end)

    it("names kernels after the function by default", function()
      local k = env.kernel(function() end)
      assert.matches("^dispatch_spec.lua:%d+$", k.name)
      assert.matches("dispatch_spec.lua", tostring(k))
    end)
  end)
end)

describe("the compiled core", function()
  local ok_core = pcall(require, "gpujit.core")
  local gpu

  -- Without the core these are reported as pending.
  local it = ok_core and it or function(name)
    pending(name .. " (needs build/gpujit/core.so: make)")
  end

  local function need_core()
    package.loaded["gpujit"] = nil
    gpu = require("gpujit")
    gpu.use("cpu")
    return true
  end

  it("runs saxpy on the cpu backend, compiling once", function()
    if not need_core() then return end
    local compiles = 0
    local compile = gpu.core.compile
    gpu.core.compile = function(...)
      compiles = compiles + 1
      return compile(...)
    end
    local saxpy = gpu.kernel(function(a, x, y, n)
      local i = gpu.global_id(0)
      if i < n then y[i] = a * x[i] + y[i] end
    end, { name = "saxpy" })
    local n = 1000
    local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
    for i = 0, n - 1 do x[i], y[i] = i, 1 end
    saxpy:launch(n, 2, x, y, n)
    saxpy:launch({ global = n, group = 64 }, 2, x, y, n)
    gpu.core.compile = compile
    for i = 0, n - 1 do assert.are.equal(4 * i + 1, y[i]) end
    assert.are.equal(1, compiles)
    assert.are.same({ { "lua_pos20", "float[]", "float[]", "lua_pos20" } }, saxpy:signatures())
    assert.matches("define", saxpy:inspect_llvm({ "lua_pos20", "float[]", "float[]", "lua_pos20" }))
  end)

  it("copies tables and gpu.arrays", function()
    if not need_core() then return end
    local k = gpu.kernel(function(t, e, n)
      local i = gpu.global_id(0)
      if i < n then
        t[i + 1] = t[i + 1] + e[i] + #e
      end
    end)
    local t = { 1, 2, 3 }
    local e = gpu.to_device({ 10, 20, 30 }, "int32_t")
    k:launch(3, t, e, 3)
    assert.are.same({ 14, 25, 36 }, t)
  end)
end)
