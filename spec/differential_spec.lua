-- Differential tests: each kernel runs on every backend of H.backends and on
-- "sim" (the kernel's own Lua function run work item by work item by plain
-- LuaJIT), each on its own copy of the arguments, and every array argument
-- must end up the same: bitwise for integers and doubles (math.* that both
-- take from libm included), within a few ulps where a kernel computes in
-- float (sim computes in double and rounds when it stores).  On a device
-- without host_math (math.* from its own library) a case that calls one
-- allows its inexact_dulps.
--
-- Part 1 runs every examples/*.lua script with a gpujit whose kernels compare
-- their first launch with sim.  Part 2 is a set of varied kernels.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

---------------------------------------------------------------------------
-- Part 1: the examples
---------------------------------------------------------------------------

-- The MPI examples (examples/mpi_*.lua) run under mpirun, in spec/mpi/mpi_spec.lua.
local function list_examples()
  local out = {}
  for _, p in ipairs(H.ls("examples/*.lua")) do
    if not p:match("/mpi_[^/]*$") then out[#out + 1] = p end
  end
  return out
end

-- Run an example script with `require("gpujit")` answered by a proxy: every
-- kernel it makes is a real kernel whose first launch is also run on sim
-- (on copies of the arguments) and compared.  Returns the number of kernels
-- compared.  Output of the script (print) is dropped.
local function run_example(bk, path)
  local compared = 0
  local proxy = setmetatable({}, { __index = gpu })
  proxy.kernel = function(a, b, c)
    local fn, sig, opts
    if type(a) == "function" then fn, opts = a, b else sig, fn, opts = a, b, c end
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    local real = H.kernel(bk, fn, o, sig)
    local done = false
    local wrapper = {}
    function wrapper.launch(_, cfg, ...)
      if done then return real:launch(cfg, ...) end
      done = true
      local n = select("#", ...)
      local args = { ... }
      local ref = {}
      for j = 1, n do ref[j] = H.clone_arg(args[j]) end
      local so = {}
      for k, v in pairs(o) do so[k] = v end
      H.kernel("sim", fn, so):launch(cfg, unpack(ref, 1, n))
      local r = { real:launch(cfg, ...) }
      -- bit for bit in double where the device's math.* is the host's libm;
      -- within OpenCL's bounds where it is not (SPIR-V: ad_fit's cos and sin)
      local fulps, dulps = H.math_ulps(bk, 2, 0)
      H.compare_args(path .. ": kernel " .. tostring(o.name or "?") .. " on " .. bk .. " vs sim",
        args, ref, fulps, dulps)
      compared = compared + 1
      return unpack(r)
    end
    return setmetatable(wrapper, {
      __index = function(_, key)
        if type(key) == "table" or type(key) == "number" then
          return function(...) return wrapper.launch(wrapper, key, ...) end
        end
        local v = real[key]
        if type(v) == "function" then
          return function(self, ...)
            if self == wrapper then self = real end
            return v(self, ...)
          end
        end
        return v
      end,
    })
  end
  local chunk = assert(loadfile(path))
  local env = setmetatable({
    print = function() end,
    arg = { [0] = path },
    require = function(name)
      if name == "gpujit" then return proxy end
      return require(name)
    end,
  }, { __index = _G })
  setfenv(chunk, env)
  H.with_backend(bk, chunk)
  return compared
end

-- Examples that write files (images) write them into a fresh temporary
-- folder, not into the checkout (examples/lib/example.lua: ex.out).
pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")

for _, bk in ipairs(H.backends) do
  describe("examples/ on " .. bk .. " and sim", function()
    local examples = list_examples()
    local out_dir
    setup(function()
      local p = assert(io.popen("mktemp -d"))
      out_dir = p:read("*l")
      p:close()
      ffi.C.setenv("GPUJIT_EXAMPLE_OUT", out_dir, 1)
    end)
    teardown(function()
      os.execute("rm -rf '" .. out_dir .. "'")
    end)
    it("there is at least one example", function()
      assert.is_true(#examples >= 1)
    end)
    for _, path in ipairs(examples) do
      it(path, function()
        local n = run_example(bk, path)
        assert.is_true(n >= 1, path .. " launched no kernel")
      end)
    end
  end)
end

---------------------------------------------------------------------------
-- Part 2: varied kernels
---------------------------------------------------------------------------

local rnd = H.rng(2024)
local function rand_array(ct, n, lo, hi)
  return H.array(ct, function() return lo + (hi - lo) * rnd() end, n)
end
local function rand_ints(ct, n, lo, hi)
  return H.array(ct, function() return lo + math.floor((hi - lo + 1) * rnd()) end, n)
end

-- Device functions used below.
local function cmul(ar, ai, br, bi) return ar * br - ai * bi, ar * bi + ai * br end
local function erf_approx(x)
  local s = 1
  if x < 0 then s = -1; x = -x end
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
    + 0.254829592) * t * math.exp(-x * x)
  return s * y
end
local function gcd(a, b)
  repeat
    local r = a % b
    a, b = b, r
  until b == 0
  return a
end

local N = 1000
local W, HT = 48, 32

local cases = {
  {
    name = "saxpy",
    fn = function(a, x, y, n)
      local i = gpu.global_id(0)
      if i < n then y[i] = a * x[i] + y[i] end
    end,
    cfg = N,
    args = function() return { 2.5, rand_array("float", N, -1, 1), rand_array("float", N, -1, 1), N } end,
  },
  {
    name = "mandelbrot",
    fn = function(out, w, h, maxit)
      local px, py = gpu.global_id(0), gpu.global_id(1)
      local cr = -2.2 + 3.2 * px / w
      local ci = -1.2 + 2.4 * py / h
      local zr, zi, it = 0.0, 0.0, 0
      while it < maxit and zr * zr + zi * zi <= 4 do
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        it = it + 1
      end
      out[py * w + px] = it
    end,
    cfg = { global = { W, HT } },
    args = function() return { ffi.new("int32_t[?]", W * HT), W, HT, 200 } end,
  },
  {
    name = "matmul",
    fn = function(c, a, b, n)
      local i, j = gpu.global_id(0), gpu.global_id(1)
      local s = 0
      for k = 0, n - 1 do s = s + a[i * n + k] * b[k * n + j] end
      c[i * n + j] = s
    end,
    cfg = { global = { 16, 16 }, group = { 4, 4 } },
    args = function()
      return { ffi.new("double[256]"), rand_array("double", 256, -1, 1),
        rand_array("double", 256, -1, 1), 16 }
    end,
  },
  {
    name = "stencil",
    fn = function(out, x, n)
      local i = gpu.global_id(0)
      if i >= n then return end
      local l = i > 0 and x[i - 1] or x[i]
      local r = i < n - 1 and x[i + 1] or x[i]
      out[i] = 0.25 * l + 0.5 * x[i] + 0.25 * r
    end,
    cfg = N + 24,
    -- positive data: no cancellation, so float (cpu) and double (sim) agree
    -- within a few float ulps
    args = function() return { ffi.new("float[?]", N), rand_array("float", N, 1, 10), N } end,
    ulps = 3,
  },
  {
    name = "collatz",
    fn = function(steps, start)
      local i = gpu.global_id(0)
      local n = start[i]
      local s = 0
      while n ~= 1 do
        if n % 2 == 0 then n = n / 2 else n = 3 * n + 1 end
        s = s + 1
      end
      steps[i] = s
    end,
    cfg = 500,
    args = function()
      return { ffi.new("int32_t[500]"), H.array("double", function(i) return i + 1 end, 500) }
    end,
  },
  {
    name = "primes",
    fn = function(isp, n)
      local i = gpu.global_id(0)
      if i >= n then return end
      local p = i >= 2
      local d = 2
      while d * d <= i do
        if i % d == 0 then
          p = false
          break
        end
        d = d + 1
      end
      isp[i] = p
    end,
    cfg = { global = 2000, group = 64 },
    args = function() return { ffi.new("bool[2000]"), 2000 } end,
  },
  {
    name = "gcd",
    fn = function(out, a, b)
      local i = gpu.global_id(0)
      out[i] = gcd(a[i], b[i])
    end,
    cfg = 300,
    args = function()
      return { ffi.new("int32_t[300]"), rand_ints("int32_t", 300, 1, 100000),
        rand_ints("int32_t", 300, 1, 100000) }
    end,
  },
  {
    name = "xorshift",
    fn = function(out, seed)
      local i = gpu.global_id(0)
      local h = bit.bxor(seed, i * 2654435761)
      for _ = 1, 16 do
        h = bit.bxor(h, bit.lshift(h, 13))
        h = bit.bxor(h, bit.rshift(h, 17))
        h = bit.bxor(h, bit.lshift(h, 5))
      end
      out[i] = h
    end,
    cfg = 512,
    args = function() return { ffi.new("int32_t[512]"), 12345 } end,
  },
  {
    name = "popcount",
    fn = function(out, x)
      local i = gpu.global_id(0)
      local v = bit.tobit(x[i])
      local c = 0
      while v ~= 0 do
        v = bit.band(v, v - 1)
        c = c + 1
      end
      out[i] = c
    end,
    cfg = 256,
    args = function() return { ffi.new("uint8_t[256]"), rand_ints("uint32_t", 256, 0, 4294967295) } end,
  },
  {
    name = "blackscholes",
    -- without host_math: exp and log within OpenCL's 3 ulps, and the call
    -- price's cancellation (s * N(d1) - disc * N(d2)) magnifies them (up to
    -- 120 ulps seen on PoCL's builtins through SPIR-V)
    inexact_dulps = 1024,
    fn = function(call, put, s, k, t, r, v)
      local i = gpu.global_id(0)
      local sq = v * math.sqrt(t[i])
      local d1 = (math.log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / sq
      local d2 = d1 - sq
      local cnd1 = 0.5 * (1 + erf_approx(d1 / math.sqrt(2)))
      local cnd2 = 0.5 * (1 + erf_approx(d2 / math.sqrt(2)))
      local disc = k[i] * math.exp(-r * t[i])
      call[i] = s[i] * cnd1 - disc * cnd2
      put[i] = disc * (1 - cnd2) - s[i] * (1 - cnd1)
    end,
    cfg = 400,
    args = function()
      return { ffi.new("double[400]"), ffi.new("double[400]"), rand_array("double", 400, 5, 30),
        rand_array("double", 400, 1, 100), rand_array("double", 400, 0.25, 10), 0.02, 0.3 }
    end,
  },
  {
    name = "horner",
    fn = function(y, x, n)
      local i = gpu.global_id(0)
      if i < n then
        local v = x[i]
        y[i] = ((((0.5 * v - 1.25) * v + 2) * v - 0.75) * v + 3)
      end
    end,
    cfg = { global = N, group = 128 },
    args = function() return { ffi.new("float[?]", N), rand_array("float", N, -2, 2), N } end,
    ulps = 8,
  },
  {
    name = "clamp",
    fn = function(out, x, lo, hi)
      local i = gpu.global_id(0)
      out[i] = math.min(math.max(x[i], lo), hi) + math.abs(x[i]) - math.floor(x[i]) + math.ceil(x[i] * 0.5)
    end,
    cfg = 333,
    args = function() return { ffi.new("double[333]"), rand_array("double", 333, -5, 5), -1.5, 2.25 } end,
  },
  {
    name = "transpose (partial groups)",
    fn = function(out, x, w, h)
      local c, r = gpu.global_id(0), gpu.global_id(1)
      out[c * h + r] = x[r * w + c]
    end,
    cfg = { global = { 13, 7 }, group = { 4, 4 } },
    args = function() return { ffi.new("int16_t[91]"), rand_ints("int16_t", 91, -30000, 30000), 13, 7 } end,
  },
  {
    name = "softmax rows",
    inexact_dulps = 16,      -- without host_math: OpenCL's exp (3 ulps), summed
    fn = function(out, x, cols)
      local r = gpu.global_id(0)
      local base = r * cols
      local m = x[base]
      for j = 1, cols - 1 do m = math.max(m, x[base + j]) end
      local s = 0
      for j = 0, cols - 1 do s = s + math.exp(x[base + j] - m) end
      for j = 0, cols - 1 do out[base + j] = math.exp(x[base + j] - m) / s end
    end,
    cfg = 20,
    args = function() return { ffi.new("double[400]"), rand_array("double", 400, -20, 20), 20 } end,
  },
  {
    name = "nbody accelerations",
    fn = function(ax, ay, px, py, m, n)
      local i = gpu.global_id(0)
      local fx, fy = 0, 0
      for j = 0, n - 1 do
        if j ~= i then
          local dx, dy = px[j] - px[i], py[j] - py[i]
          local d2 = dx * dx + dy * dy + 1e-3
          local inv = m[j] / (d2 * math.sqrt(d2))
          fx, fy = fx + dx * inv, fy + dy * inv
        end
      end
      ax[i], ay[i] = fx, fy
    end,
    cfg = 64,
    args = function()
      return { ffi.new("double[64]"), ffi.new("double[64]"), rand_array("double", 64, -1, 1),
        rand_array("double", 64, -1, 1), rand_array("double", 64, 0.1, 2), 64 }
    end,
  },
  {
    name = "fizzbuzz with goto",
    fn = function(out, n)
      local i = gpu.global_id(0)
      local score = 0
      for j = 1, n + i do
        if j % 15 == 0 then score = score + 15; goto continue end
        if j % 5 == 0 then score = score + 5; goto continue end
        if j % 3 == 0 then score = score + 3; goto continue end
        score = score - 1
        ::continue::
      end
      out[i] = score
    end,
    cfg = 100,
    args = function() return { ffi.new("int32_t[100]"), 50 } end,
  },
  {
    name = "leaky relu (and/or)",
    fn = function(y, x, slope)
      local i = gpu.global_id(0)
      local v = x[i]
      y[i] = v > 0 and v or v * slope
    end,
    cfg = 256,
    args = function() return { ffi.new("float[256]"), rand_array("float", 256, -3, 3), 0.01 } end,
  },
  {
    name = "complex multiply (two results)",
    fn = function(outr, outi, ar, ai, br, bi)
      local i = gpu.global_id(0)
      local r, im = cmul(ar[i], ai[i], br[i], bi[i])
      r, im = cmul(r, im, r, -im)
      outr[i], outi[i] = r, im
    end,
    cfg = 128,
    args = function()
      return { ffi.new("double[128]"), ffi.new("double[128]"), rand_array("double", 128, -2, 2),
        rand_array("double", 128, -2, 2), rand_array("double", 128, -2, 2), rand_array("double", 128, -2, 2) }
    end,
  },
  {
    name = "ids and shape, 3-D",
    fn = function(out)
      local x, y, z = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
      local lin = (z * gpu.global_size(1) + y) * gpu.global_size(0) + x
      local b = lin * 8
      out[b] = gpu.local_id(0) + 10 * gpu.local_id(1) + 100 * gpu.local_id(2)
      out[b + 1] = gpu.group_id(0) + 10 * gpu.group_id(1) + 100 * gpu.group_id(2)
      out[b + 2] = gpu.group_size(0) + 10 * gpu.group_size(1) + 100 * gpu.group_size(2)
      out[b + 3] = gpu.num_groups(0) + 10 * gpu.num_groups(1) + 100 * gpu.num_groups(2)
      out[b + 4] = gpu.global_size(0) + 10 * gpu.global_size(1) + 100 * gpu.global_size(2)
      out[b + 5] = x + 10 * y + 100 * z
      out[b + 6] = gpu.global_id() + gpu.local_id() * 1000
      out[b + 7] = 1
    end,
    cfg = { global = { 6, 4, 3 }, group = { 2, 2, 3 } },
    args = function() return { ffi.new("int32_t[?]", 6 * 4 * 3 * 8) } end,
  },
  {
    name = "Lua tables in and out",
    fn = function(t, u, n)
      local i = gpu.global_id(0) + 1
      if i <= n then
        t[i] = t[i] * 2 + u[n + 1 - i]
      end
    end,
    cfg = 40,
    args = function()
      local t, u = {}, {}
      for j = 1, 37 do t[j] = j * 0.5; u[j] = j * j end
      return { t, u, 37 }
    end,
  },
  {
    name = "private array: insertion sort of 8",
    needs = "workgroups",
    fn = function(out, x)
      local i = gpu.global_id(0)
      local a = gpu.local_array("double", 8)
      for j = 0, 7 do a[j] = x[i * 8 + j] end
      for j = 1, 7 do
        local v = a[j]
        local k = j - 1
        while k >= 0 and a[k] > v do
          a[k + 1] = a[k]
          k = k - 1
        end
        a[k + 1] = v
      end
      for j = 0, 7 do out[i * 8 + j] = a[j] end
    end,
    cfg = 32,
    args = function() return { ffi.new("double[256]"), rand_array("double", 256, -100, 100) } end,
  },
  {
    name = "group sums in shared memory with barriers",
    needs = "workgroups",
    fn = function(sums, x)
      local lid, gid = gpu.local_id(0), gpu.group_id(0)
      local s = gpu.shared("double", 64)
      s[lid] = x[gpu.global_id(0)]
      gpu.barrier()
      local step = 32
      while step > 0 do
        if lid < step then s[lid] = s[lid] + s[lid + step] end
        gpu.barrier()
        step = math.floor(step / 2)
      end
      if lid == 0 then sums[gid] = s[0] end
    end,
    cfg = { global = 1024, group = 64 },
    args = function() return { ffi.new("double[16]"), rand_array("double", 1024, 0, 1) } end,
  },
  {
    name = "histogram with atomic_add",
    needs = "workgroups",
    fn = function(hist, x, n)
      local i = gpu.global_id(0)
      if i < n then gpu.atomic_add(hist, x[i] % 16, 1) end
    end,
    cfg = 1000,
    args = function() return { ffi.new("int32_t[16]"), rand_ints("int32_t", 1000, 0, 1000), 1000 } end,
  },
  {
    name = "atomic min, max, or, xor, and sub on int32",
    needs = "workgroups",
    fn = function(acc, x)
      local i = gpu.global_id(0)
      gpu.atomic_min(acc, 0, x[i])
      gpu.atomic_max(acc, 1, x[i])
      gpu.atomic_or(acc, 2, x[i])
      gpu.atomic_xor(acc, 3, x[i])
      gpu.atomic_sub(acc, 4, 1)
      gpu.atomic_and(acc, 5, bit.bnot(bit.lshift(1, i % 31)))
    end,
    cfg = 200,
    args = function()
      return { H.array("int32_t", { 2147483647, -2147483648, 0, 0, 0, -1 }),
        rand_ints("int32_t", 200, -100000, 100000) }
    end,
  },
}

for _, bk in ipairs(H.backends) do
  describe("kernels on " .. bk .. " and sim", function()
    for _, c in ipairs(cases) do
      local test = c.needs and H.it_with(c.needs, bk) or it
      test(c.name, function()
        local args = c.args()
        H.differential(bk, c.fn, c.cfg, args, {
          name = c.name:gsub("[^%w]+", "_"), ulps = c.ulps,
          dulps = H.host_math(bk) and c.dulps or c.inexact_dulps or c.dulps,
        })
      end)
    end
  end)
end
