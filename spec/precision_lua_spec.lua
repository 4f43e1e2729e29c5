-- precision = "lua" (docs/typing.md, "Precision"): a float element, field or
-- scalar is read as the double LuaJIT makes of it, every operation is done
-- in double, and a store into a float element rounds, as LuaJIT's FFI does.
-- Float kernels then give plain LuaJIT's bits: each case below runs a kernel
-- on every backend and compares every byte of its float output with the same
-- Lua function run by plain LuaJIT (the interpreter, H.interp) over the same
-- inputs.  The default precision computes float work in float and differs
-- on some of them (checked, so that the comparison can fail).

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[ typedef struct { float x, y, vx, vy; } plua_particle; ]]

-- A float array of n deterministic, non-integer values in [lo, hi).
local function floats(n, seed, lo, hi)
  local a = ffi.new("float[?]", n)
  local s = seed
  for i = 0, n - 1 do
    s = (s * 1103515245 + 12345) % 2147483648
    a[i] = lo + (hi - lo) * (s / 2147483648)
  end
  return a
end

local function copy(a, n)
  local c = ffi.new("float[?]", n)
  ffi.copy(c, a, n * 4)
  return c
end

-- The index of the first element whose bits differ, or nil.
local function first_diff(a, b, n)
  local ua, ub = ffi.cast("uint32_t *", a), ffi.cast("uint32_t *", b)
  for i = 0, n - 1 do
    if ua[i] ~= ub[i] then return i end
  end
  return nil
end

local function same_bits(label, got, want, n)
  local i = first_diff(got, want, n)
  if i then
    error(string.format("%s: element %d is %.9g (0x%08x), plain LuaJIT gives %.9g (0x%08x)",
      label, i, got[i], ffi.cast("uint32_t *", got)[i], want[i], ffi.cast("uint32_t *", want)[i]), 2)
  end
end

-- The kernels: each a body(i, ...) for one index, launched as a kernel
-- whose work item i calls it, and run by plain LuaJIT in a loop over i.

-- saxpy with a weak literal: y = a * x + 0.9 * y
local function saxpy(i, y, x, a)
  y[i] = a * x[i] + 0.9 * y[i]
end

-- a 3-point blur with clamped edges
local function blur(i, out, x, n)
  local l = i > 0 and i - 1 or 0
  local r = i < n - 1 and i + 1 or n - 1
  out[i] = (x[l] + x[i] + x[r]) / 3 + x[i] * 0.125
end

-- math on float elements
local function mathy(i, out, x)
  local v = x[i]
  out[i] = math.sqrt(v * v + 1.5) * math.exp(-v * 0.5) - math.floor(v * 2.5) / 7
end

-- n-body-like: accelerations of body i from every body, no reduction
local function nbody(i, vx, vy, px, py, n, dt)
  local ax, ay = 0.0, 0.0
  local xi, yi = px[i], py[i]
  for j = 0, n - 1 do
    local dx, dy = px[j] - xi, py[j] - yi
    local r2 = dx * dx + dy * dy + 0.01
    local inv = 1 / (r2 * math.sqrt(r2))
    ax = ax + dx * inv
    ay = ay + dy * inv
  end
  vx[i] = vx[i] + ax * dt
  vy[i] = vy[i] + ay * dt
end

-- float struct fields
local function particles(i, p, dt)
  local q = p[i]
  q.vx = q.vx - q.x * 0.3 * dt
  q.vy = q.vy - 9.81 * dt
  q.x = q.x + q.vx * dt
  q.y = q.y + q.vy * dt
end

-- a private float array (gpu.local_array in the kernel, an FFI array in Lua)
local function local_body(i, out, x, tmp)
  for k = 0, 3 do tmp[k] = x[i] * (k + 0.1) end
  local s = 0
  for k = 0, 3 do s = s + tmp[k] / 3 end
  out[i] = s
end

-- gpu.atomic_add on a float array, one add per element, with a value a
-- float holds (docs/typing.md: the device adds in float, which rounds as
-- LuaJIT's y[i] = y[i] + v does for such a value), and its old value
local function atomic_body(i, o, y, x)
  local v = x[i] * 0.5
  local old = gpu.atomic_add(y, i, v)
  o[i] = old * 0.1 + v
end

-- the same in plain LuaJIT, the atomic written as what it stands for
local function atomic_ref(i, o, y, x)
  local v = x[i] * 0.5
  local old = y[i]
  y[i] = old + v
  o[i] = old * 0.1 + v
end

-- kernel(n, args...) whose work item i < n calls body(i, args...)
local wrappers = {
  [2] = function(body)
    return function(n, a, b)
      local i = gpu.global_id(0)
      if i < n then body(i, a, b) end
    end
  end,
  [3] = function(body)
    return function(n, a, b, c)
      local i = gpu.global_id(0)
      if i < n then body(i, a, b, c) end
    end
  end,
  [6] = function(body)
    return function(n, a, b, c, d, e, f)
      local i = gpu.global_id(0)
      if i < n then body(i, a, b, c, d, e, f) end
    end
  end,
}
local function launch1d(body)
  return wrappers[debug.getinfo(body, "u").nparams - 1](body)
end

local function with_local(out, x, n)
  local i = gpu.global_id(0)
  if i < n then local_body(i, out, x, gpu.local_array("float", 4)) end
end

-- examples/saxpy.lua's kernel (a is a Lua number, 2.5 there)
local function ex_saxpy(a, x, y, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end

-- examples/inspect.lua's kernel, with its signature { "float[]", "float[]", "float" }
local function ex_inspect(y, x, a)
  local i = gpu.global_id()
  y[i] = a * x[i] + y[i]
end

-- examples/matmul.lua's kernel: tiles in gpu.shared float arrays
local TILE = 16
local function ex_matmul(c, a, b, n)
  local ta = gpu.shared("float", TILE * TILE)
  local tb = gpu.shared("float", TILE * TILE)
  local tx, ty = gpu.local_id(0), gpu.local_id(1)
  local col, row = gpu.global_id(0), gpu.global_id(1)
  local acc = 0.0
  for t = 0, math.floor((n + TILE - 1) / TILE) - 1 do
    local ac, br = t * TILE + tx, t * TILE + ty
    ta[ty * TILE + tx] = (row < n and ac < n) and a[row * n + ac] or 0
    tb[ty * TILE + tx] = (br < n and col < n) and b[br * n + col] or 0
    gpu.barrier()
    for k = 0, TILE - 1 do acc = acc + ta[ty * TILE + k] * tb[k * TILE + tx] end
    gpu.barrier()
  end
  if row < n and col < n then c[row * n + col] = acc end
end

-- What matmul computes, by plain LuaJIT: the tiles' order of additions,
-- the padding's zeros included.
local function matmul_ref(c, a, b, n)
  local tiles = math.floor((n + TILE - 1) / TILE)
  for row = 0, n - 1 do
    for col = 0, n - 1 do
      local acc = 0.0
      for k = 0, tiles * TILE - 1 do
        local x = k < n and a[row * n + k] or 0
        local y = k < n and b[k * n + col] or 0
        x, y = ffi.new("float[1]", x)[0], ffi.new("float[1]", y)[0]
        acc = acc + x * y
      end
      c[row * n + col] = acc
    end
  end
end

for _, bk in ipairs(H.backends) do
  describe("precision = 'lua' on " .. bk, function()
    local N = 1000

    -- Run body over n items on bk (precision p) and by plain LuaJIT; the
    -- output (argument out of args, a float array of n) compared bit for
    -- bit.  Returns whether the default precision gives other bits.
    local function check(name, body, n, args, out)
      local mine, ref, dflt = {}, {}, {}
      for j, a in ipairs(args) do
        local c = type(a) == "cdata" and H.elem_ct(a) == "float" and copy(a, ffi.sizeof(a) / 4)
        mine[j], ref[j], dflt[j] = c or a, c and copy(a, ffi.sizeof(a) / 4) or a,
          c and copy(a, ffi.sizeof(a) / 4) or a
      end
      local k = H.kernel(bk, launch1d(body), { name = name, precision = "lua" })
      k:launch(n, n, unpack(mine, 1, #args))
      H.interp(function()
        for i = 0, n - 1 do body(i, unpack(ref, 1, #args)) end
      end)
      same_bits(name .. " on " .. bk, mine[out], ref[out], n)
      local kd = H.kernel(bk, launch1d(body), { name = name .. "_d" })
      kd:launch(n, n, unpack(dflt, 1, #args))
      return first_diff(dflt[out], ref[out], n) ~= nil
    end

    it("saxpy with a literal: LuaJIT's bits (the default rounds 0.9 * y in float)", function()
      local x, y = floats(N, 1, -2, 2), floats(N, 2, -50, 50)
      local differs = check("pl_saxpy", saxpy, N, { y, x, 0.37 }, 1)
      if bk ~= "sim" then assert.is_true(differs) end
    end)

    it("a 3-point blur: LuaJIT's bits (the default sums in float)", function()
      local x = floats(N, 3, 0, 255)
      local out = ffi.new("float[?]", N)
      local differs = check("pl_blur", blur, N, { out, x, N }, 1)
      if bk ~= "sim" then assert.is_true(differs) end
    end)

    it("math.sqrt, math.exp and math.floor of float elements: LuaJIT's bits", function()
      local x = floats(N, 4, -6, 6)
      local out = ffi.new("float[?]", N)
      if H.host_math(bk) then
        local differs = check("pl_math", mathy, N, { out, x }, 1)
        if bk ~= "sim" then assert.is_true(differs) end
      else   -- exp is the device's, not the host's libm: within its ulps
        local got, want = copy(out, N), copy(out, N)
        H.kernel(bk, launch1d(mathy), { name = "pl_math", precision = "lua" }):launch(N, N, got, x)
        H.interp(function() for i = 0, N - 1 do mathy(i, want, x) end end)
        local _, fulps = H.math_ulps(bk, 0, 1)
        H.check("float", got, function(i) return want[i] end, N, { ulps = fulps })
      end
    end)

    it("an n-body step without reduction: LuaJIT's bits (the default differs)", function()
      local n = 256
      local px, py = floats(n, 5, -10, 10), floats(n, 6, -10, 10)
      local vx, vy = floats(n, 7, -1, 1), floats(n, 8, -1, 1)
      local differs = check("pl_nbody", nbody, n, { vx, vy, px, py, n, 0.01 }, 1)
      if bk ~= "sim" then assert.is_true(differs) end
    end)

    it("float struct fields: LuaJIT's bits", function()
      local n = 500
      local p = ffi.new("plua_particle[?]", n)
      local src = floats(4 * n, 9, -3, 3)
      ffi.copy(p, src, 16 * n)
      local q = ffi.new("plua_particle[?]", n)
      ffi.copy(q, src, 16 * n)
      H.kernel(bk, launch1d(particles), { name = "pl_struct", precision = "lua" }):launch(n, n, p, 0.05)
      H.interp(function() for i = 0, n - 1 do particles(i, q, 0.05) end end)
      same_bits("pl_struct on " .. bk, ffi.cast("float *", p), ffi.cast("float *", q), 4 * n)
    end)

    it("a gpu.local_array of float: LuaJIT's bits", function()
      local x = floats(N, 10, -100, 100)
      local got, want = ffi.new("float[?]", N), ffi.new("float[?]", N)
      H.kernel(bk, with_local, { name = "pl_local", precision = "lua" }):launch(N, got, x, N)
      H.interp(function()
        local tmp = ffi.new("float[4]")
        for i = 0, N - 1 do local_body(i, want, x, tmp) end
      end)
      same_bits("pl_local on " .. bk, got, want, N)
    end)

    it("gpu.atomic_add on float elements, with a value a float holds: LuaJIT's bits", function()
      local x, y = floats(N, 19, -8, 8), floats(N, 20, -100, 100)
      local o, ref_o, ref_y = ffi.new("float[?]", N), ffi.new("float[?]", N), copy(y, N)
      H.kernel(bk, launch1d(atomic_body), { name = "pl_atomic", precision = "lua" }):launch(N, N, o, y, x)
      H.interp(function() for i = 0, N - 1 do atomic_ref(i, ref_o, ref_y, x) end end)
      same_bits("pl_atomic (array) on " .. bk, y, ref_y, N)
      same_bits("pl_atomic (old values) on " .. bk, o, ref_o, N)
    end)

    it("a boxed float scalar is its number, in double (tonumber(a) in LuaJIT)", function()
      local x, y = floats(N, 11, -2, 2), floats(N, 12, -50, 50)
      local a = ffi.new("float", 0.1)
      local ref = copy(y, N)
      H.kernel(bk, launch1d(saxpy), { name = "pl_boxed", precision = "lua" }):launch(N, N, y, x, a)
      -- plain LuaJIT's cdata arithmetic would convert the boxed float to
      -- int64_t (docs/typing.md, "Boxed scalars"): kernels take its number
      H.interp(function() for i = 0, N - 1 do saxpy(i, ref, x, tonumber(a)) end end)
      same_bits("pl_boxed on " .. bk, y, ref, N)
    end)

    describe("the float kernels of examples/", function()
      it("saxpy.lua", function()
        local x, y = floats(N, 13, -0.25, 0.75), floats(N, 14, -100, 100)
        local ref = copy(y, N)
        H.kernel(bk, ex_saxpy, { name = "saxpy", precision = "lua" }):launch(N, 2.5, x, y, N)
        H.interp(function() for i = 0, N - 1 do ref[i] = 2.5 * x[i] + ref[i] end end)
        same_bits("examples/saxpy.lua on " .. bk, y, ref, N)
      end)

      it("inspect.lua (a float parameter: the float's value, in double)", function()
        local x, y = floats(N, 15, -1, 1), floats(N, 16, -10, 10)
        local ref, dflt = copy(y, N), copy(y, N)
        local a = 1.1   -- rounded to float by the signature, then computed with in double
        local af = ffi.new("float[1]", a)[0]
        local sig = { "float[]", "float[]", "float" }
        H.kernel(bk, ex_inspect, { name = "saxpy", precision = "lua" }, sig):launch(N, y, x, a)
        H.interp(function() for i = 0, N - 1 do ref[i] = af * x[i] + ref[i] end end)
        same_bits("examples/inspect.lua on " .. bk, y, ref, N)
        H.kernel(bk, ex_inspect, { name = "saxpy" }, sig):launch(N, dflt, x, a)
        if bk ~= "sim" then assert.is_truthy(first_diff(dflt, ref, N)) end
      end)

      it("matmul.lua (gpu.shared float tiles), on non-integer entries", function()
        local n = 40
        local a, b = floats(n * n, 17, -1, 1), floats(n * n, 18, -1, 1)
        local c, ref, dflt = ffi.new("float[?]", n * n), ffi.new("float[?]", n * n),
          ffi.new("float[?]", n * n)
        local g = math.ceil(n / TILE) * TILE
        local cfg = { global = { g, g }, group = { TILE, TILE } }
        H.kernel(bk, ex_matmul, { name = "matmul", precision = "lua" }):launch(cfg, c, a, b, n)
        H.interp(matmul_ref, ref, a, b, n)
        same_bits("examples/matmul.lua on " .. bk, c, ref, n * n)
        H.kernel(bk, ex_matmul, { name = "matmul" }):launch(cfg, dflt, a, b, n)
        if bk ~= "sim" then assert.is_truthy(first_diff(dflt, ref, n * n)) end
      end)
    end)
  end)
end

describe("precision = 'lua'", function()
  it("is an option value; an unknown one is an error naming the allowed ones", function()
    local ok, err = pcall(function()
      local k = gpu.kernel(function() end, { precision = "luajit" })
      return k
    end)
    assert.is_false(ok)
    assert.is_truthy(err:find("precision", 1, true))
    assert.is_truthy(err:find('"double", "single" or "lua"', 1, true))
    assert.is_truthy(err:find('"luajit"', 1, true))
    assert.is_truthy(err:find("precision_lua_spec.lua", 1, true))
    assert.is_true(pcall(gpu.kernel, function() end, { precision = "lua" }))
  end)

  if H.testing("cpu") then
    it("changes the code only where float values are read, and is in the cache key", function()
      local function k1(y, x) local i = gpu.global_id(0); y[i] = x[i] * 0.5 + 1 end
      local sig = { "float[]", "float[]" }
      local dl = H.kernel("cpu", k1, { name = "pk", precision = "lua" }):inspect_llvm(sig)
      local dd = H.kernel("cpu", k1, { name = "pk" }):inspect_llvm(sig)
      assert.is_truthy(dl:find("fpext", 1, true))
      assert.is_truthy(dl:find("fptrunc", 1, true))
      assert.is_falsy(dd:find("fpext", 1, true))
      -- the description plugins' hooks get says which precision
      local seen = {}
      gpu.plugin({ name = "plua_seen", all = true,
        job = function(_, desc) seen[#seen + 1] = desc.precision end })
      -- (without the PTX run's harvest, whose second compile of each kernel
      -- for cuda would show the hook each description twice)
      local ok, err = pcall(H.no_ptx, function()
        for _, p in ipairs({ "double", "single", "lua" }) do
          H.kernel("cpu", k1, { name = "pkp", precision = p }):compile(sig)
        end
      end)
      gpu.remove_plugin("plua_seen")
      assert(ok, err)
      assert.are.same({ "double", "single", "lua" }, seen)
      -- a kernel whose code does not change (no float in it) has a cache
      -- entry of its own: the precision is in the key
      local dir = H.tmpdir()
      H.with_cache_dir(dir, function()
        local function int_only(o, n) local i = gpu.global_id(0); if i < n then o[i] = i * 2 end end
        local isig = { "int32_t[]", "lua_pos20" }
        local hits = 0
        local off = gpu.on_compile(function(ev)
          if ev.phase == "done" and ev.cache == "hit" then hits = hits + 1 end
        end)
        gpu.kernel(int_only, { backend = "cpu", name = "pkc" }):compile(isig)
        gpu.kernel(int_only, { backend = "cpu", name = "pkc", precision = "lua" }):compile(isig)
        assert.are.equal(0, hits)
        gpu.kernel(int_only, { backend = "cpu", name = "pkc" }):compile(isig)
        gpu.kernel(int_only, { backend = "cpu", name = "pkc", precision = "lua" }):compile(isig)
        off()
        assert.are.equal(2, hits)
      end)
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end
end)
