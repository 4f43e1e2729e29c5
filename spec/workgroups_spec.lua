-- Work groups (API.md "Inside a kernel"): shared and private arrays,
-- barriers, atomics and 1-, 2- and 3-D launches, on every backend that has
-- them (H.features.workgroups), each result checked against plain Lua.
local H = require("spec.helpers")
local ffi = H.ffi
local gpu = H.gpu

local TILE = 16
local F32 = ffi.typeof("float")

-- Plain-Lua references ------------------------------------------------------

local function ref_matmul(A, B, M, N, K)
  local C = {}
  for r = 0, M - 1 do
    for c = 0, N - 1 do
      local s = 0
      for k = 0, K - 1 do s = s + A[r * K + k] * B[k * N + c] end
      C[r * N + c] = s
    end
  end
  return C
end

-- Kernels -------------------------------------------------------------------

local function reduce(sums, x)
  local s = gpu.shared("double", 128)
  local lid = gpu.local_id(0)
  s[lid] = x[gpu.global_id(0)]
  gpu.barrier()
  local step = gpu.group_size(0) / 2
  while step > 0 do
    if lid < step then s[lid] = s[lid] + s[lid + step] end
    gpu.barrier()
    step = math.floor(step / 2)
  end
  if lid == 0 then sums[gpu.group_id(0)] = s[0] end
end

local function matmul(C, A, B, N, K)
  local tA = gpu.shared("float", TILE * TILE)
  local tB = gpu.shared(F32, TILE * TILE)
  local tx, ty = gpu.local_id(0), gpu.local_id(1)
  local col, row = gpu.global_id(0), gpu.global_id(1)
  local acc = 0.0
  for t = 0, K / TILE - 1 do
    tA[ty * TILE + tx] = A[row * K + t * TILE + tx]
    tB[ty * TILE + tx] = B[(t * TILE + ty) * N + col]
    gpu.barrier()
    for k = 0, TILE - 1 do acc = acc + tA[ty * TILE + k] * tB[k * TILE + tx] end
    gpu.barrier()
  end
  C[row * N + col] = acc
end

local function transpose(out, inp, W, Hh)
  local tile = gpu.shared("float", TILE * (TILE + 1))   -- padded: no bank conflicts
  local tx, ty = gpu.local_id(0), gpu.local_id(1)
  tile[ty * (TILE + 1) + tx] = inp[gpu.global_id(1) * W + gpu.global_id(0)]
  gpu.barrier()
  local ox = gpu.group_id(1) * TILE + tx
  local oy = gpu.group_id(0) * TILE + ty
  out[oy * Hh + ox] = tile[tx * (TILE + 1) + ty]
end

local function scan(out, x)
  local a = gpu.shared("int32_t", 64)
  local b = gpu.shared("int32_t", 64)
  local lid, gid = gpu.local_id(0), gpu.global_id(0)
  a[lid] = x[gid]
  gpu.barrier()
  local src, dst = a, b
  local off = 1
  while off < 64 do
    if lid >= off then dst[lid] = src[lid] + src[lid - off] else dst[lid] = src[lid] end
    gpu.barrier()
    src, dst = dst, src
    off = off * 2
  end
  out[gid] = src[lid]
end

local function histogram(h, data, n)
  local bins = gpu.shared("uint32_t", 256)
  local lid = gpu.local_id(0)
  bins[lid] = 0
  gpu.barrier()
  local i = gpu.global_id(0)
  while i < n do
    gpu.atomic_add(bins, data[i], 1)
    i = i + gpu.global_size(0)
  end
  gpu.barrier()
  gpu.atomic_add(h, lid, bins[lid])
end

local function fsum(sum, x, n)
  local i = gpu.global_id(0)
  if i < n then gpu.atomic_add(sum, 0, x[i]) end
end

local function ids3(out)
  local x, y, z = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
  local base = ((z * gpu.global_size(1) + y) * gpu.global_size(0) + x) * 18
  for d = 0, 2 do
    out[base + d] = gpu.global_id(d)
    out[base + 3 + d] = gpu.local_id(d)
    out[base + 6 + d] = gpu.group_id(d)
    out[base + 9 + d] = gpu.group_size(d)
    out[base + 12 + d] = gpu.num_groups(d)
    out[base + 15 + d] = gpu.global_size(d)
  end
end

-- A device function with a barrier inside: a neighbour exchange.
local function exchange(s, lid, v)
  s[lid] = v
  gpu.barrier()
  local r = s[(lid + 1) % gpu.group_size(0)]
  gpu.barrier()
  return r
end

local function rotate(out, x, rounds)
  local s = gpu.shared("double", 32)
  local lid = gpu.local_id(0)
  local v = x[gpu.global_id(0)]
  for _ = 1, rounds do v = exchange(s, lid, v) end
  out[gpu.global_id(0)] = v
end

-- Every listed backend, and sim (the reference) in any case.
local backends = {}
for _, bk in ipairs(H.backends) do
  if bk ~= "sim" then backends[#backends + 1] = bk end
end
backends[#backends + 1] = "sim"

for _, bk in ipairs(backends) do
  local it_wg = H.it_with("workgroups", bk)

  describe("work groups on " .. bk, function()
    it_wg("a tree reduction in shared memory", function()
      local n, g = 128 * 24, 128
      local x = ffi.new("double[?]", n)
      local rng = H.rng(7)
      for i = 0, n - 1 do x[i] = math.floor(rng() * 1000) end
      local sums = ffi.new("double[?]", n / g)
      H.kernel(bk, reduce, { name = "reduce" }):launch({ global = n, group = g }, sums, x)
      H.check("double", sums, function(k)
        local s = 0
        for i = k * g, k * g + g - 1 do s = s + x[i] end
        return s
      end, n / g, { what = "group sums" })
    end)

    it_wg("code after an if holding a barrier that no item enters runs once (groups 1 wide in x)",
      function()
      -- PoCL 3.1 ran it twice for work item 0 of such groups (gj_job.join_barriers)
      local k = H.kernel(bk, function(c, oi, ol)
        local g = gpu.global_id(0) + gpu.global_size(0) * (gpu.global_id(1)
          + gpu.global_size(1) * gpu.global_id(2))
        if c[0] >= 0 then gpu.barrier() end
        ol[g] = oi[g] % 10
        oi[g] = 0
      end, { name = "ifbarrier" })
      for _, shape in ipairs({ { 3, 1, 1 }, { 1, 3, 1 }, { 1, 1, 3 }, { 2, 1, 3 } }) do
        for _, c in ipairs({ -1, 1 }) do
          local n = shape[1] * shape[2] * shape[3]
          local oi, ol = ffi.new("int32_t[?]", n), ffi.new("int64_t[?]", n)
          for i = 0, n - 1 do oi[i] = 845 + 4 * i end
          k:launch({ global = shape, group = shape }, ffi.new("int32_t[1]", c), oi, ol)
          for i = 0, n - 1 do
            assert.are.equal((845 + 4 * i) % 10, tonumber(ol[i]), table.concat(shape, "x") .. " item " .. i)
          end
        end
      end
    end)

    it_wg("an atomic's integer operand converts modulo 2^32 before min, max and cas", function()
      local k = H.kernel(bk, function(a, v)
        gpu.atomic_max(a, 0, v)
        gpu.atomic_min(a, 1, v)
        gpu.atomic_cas(a, 2, v, 77)
      end, { name = "atomicconv" })
      local a = ffi.new("int32_t[3]", 10, 10, 5)
      k:launch(1, a, ffi.new("int64_t", 2 ^ 32 + 5))   -- an integer: 5 as an int32_t
      assert.are.same({ 10, 5, 77 }, { a[0], a[1], a[2] })
    end)

    it_wg("a tiled matrix multiply: two shared tiles, barriers inside a loop", function()
      local M, N, K = 48, 64, 80
      local rng = H.rng(3)
      local A, B = ffi.new("float[?]", M * K), ffi.new("float[?]", K * N)
      for i = 0, M * K - 1 do A[i] = math.floor(rng() * 16) - 8 end
      for i = 0, K * N - 1 do B[i] = math.floor(rng() * 16) - 8 end
      local C = ffi.new("float[?]", M * N)
      H.kernel(bk, matmul, { name = "matmul" })
        :launch({ global = { N, M }, group = { TILE, TILE } }, C, A, B, N, K)
      local ref = ref_matmul(A, B, M, N, K)
      H.check("float", C, function(i) return ref[i] end, M * N, { what = "C" })
    end)

    it_wg("a transpose through a padded shared tile", function()
      local W, Hh = 64, 48
      local inp, out = ffi.new("float[?]", W * Hh), ffi.new("float[?]", W * Hh)
      for i = 0, W * Hh - 1 do inp[i] = i end
      H.kernel(bk, transpose, { name = "transpose" })
        :launch({ global = { W, Hh }, group = { TILE, TILE } }, out, inp, W, Hh)
      H.check("float", out, function(i)
        local r, c = math.floor(i / Hh), i % Hh      -- out is W rows of Hh
        return inp[c * W + r]
      end, W * Hh, { what = "transposed" })
    end)

    it_wg("an in-group inclusive scan with double-buffered shared arrays", function()
      local n = 64 * 5
      local x, out = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
      for i = 0, n - 1 do x[i] = (i * 37) % 11 - 3 end
      H.kernel(bk, scan, { name = "scan" }):launch({ global = n, group = 64 }, out, x)
      H.check("int32_t", out, function(i)
        local s = 0
        for j = i - i % 64, i do s = s + x[j] end
        return s
      end, n, { what = "scan" })
    end)

    it_wg("a 256-bin histogram with integer atomics in shared and global memory", function()
      local n = 50000
      local data = ffi.new("uint8_t[?]", n)
      local rng = H.rng(11)
      for i = 0, n - 1 do data[i] = math.floor(rng() * rng() * 256) end
      local h = ffi.new("uint32_t[256]")
      H.kernel(bk, histogram, { name = "histogram" })
        :launch({ global = 256 * 8, group = 256 }, h, data, n)
      local ref = {}
      for b = 0, 255 do ref[b] = 0 end
      for i = 0, n - 1 do ref[data[i]] = ref[data[i]] + 1 end
      H.check("uint32_t", h, function(b) return ref[b] end, 256, { what = "bins" })
    end)

    for _, ct in ipairs({ "float", "double" }) do
      it_wg("a " .. ct .. " atomic_add sum", function()
        local n = 3000
        local x, sum = ffi.new(ct .. "[?]", n), ffi.new(ct .. "[1]")
        local ref = 0
        for i = 0, n - 1 do
          x[i] = (i % 17) * 0.5 - 2
          ref = ref + x[i]
        end
        H.kernel(bk, fsum, { name = "fsum_" .. ct }):launch(n, sum, x, n)
        H.check(ct, sum, ref, 1, { what = "sum" })
      end)
    end

    it_wg("a 3-D launch that writes each item's ids", function()
      local gx, gy, gz, lx, ly, lz = 6, 4, 9, 3, 2, 3
      local out = ffi.new("int32_t[?]", gx * gy * gz * 18)
      H.kernel(bk, ids3, { name = "ids3" })
        :launch({ global = { gx, gy, gz }, group = { lx, ly, lz } }, out)
      local G, L = { gx, gy, gz }, { lx, ly, lz }
      H.check("int32_t", out, function(i)
        local item, f = math.floor(i / 18), i % 18
        local id = { item % gx, math.floor(item / gx) % gy, math.floor(item / (gx * gy)) }
        local what, d = math.floor(f / 3), f % 3 + 1
        if what == 0 then return id[d]
        elseif what == 1 then return id[d] % L[d]
        elseif what == 2 then return math.floor(id[d] / L[d])
        elseif what == 3 then return L[d]
        elseif what == 4 then return G[d] / L[d]
        end
        return G[d]
      end, gx * gy * gz * 18, { what = "ids" })
    end)

    it_wg("a barrier inside a device function called in a loop", function()
      local n, rounds = 32 * 4, 5
      local x, out = ffi.new("double[?]", n), ffi.new("double[?]", n)
      for i = 0, n - 1 do x[i] = i end
      H.kernel(bk, rotate, { name = "rotate" }):launch({ global = n, group = 32 }, out, x, rounds)
      H.check("double", out, function(i)
        return i - i % 32 + (i % 32 + rounds) % 32
      end, n, { what = "rotated" })
    end)

    it_wg("private arrays and loop counters keep their values across barriers", function()
      local n = 64
      local out = ffi.new("double[?]", n)
      H.kernel(bk, function(o)
        local gid = gpu.global_id(0)
        local la = gpu.local_array("double", 4)
        local acc = 0
        for j = 0, 3 do
          la[j] = gid * 10 + j
          gpu.barrier()
          acc = acc + la[j] * (j + 1)
        end
        if gpu.group_id(0) % 2 == 1 then   -- uniform across the group
          gpu.barrier()
          acc = -acc
        end
        o[gid] = acc + la[3] - gid * 10
      end, { name = "privates" }):launch({ global = n, group = 16 }, out)
      H.check("double", out, function(i)
        local acc = 0
        for j = 0, 3 do acc = acc + (i * 10 + j) * (j + 1) end
        if math.floor(i / 16) % 2 == 1 then acc = -acc end
        return acc + 3
      end, n, { what = "out" })
    end)

    it_wg("a barrier kernel launched without a group gets one that divides global", function()
      local n = 1000
      local x, sums = ffi.new("double[?]", n), ffi.new("double[?]", n)
      for i = 0, n - 1 do x[i] = i % 7 end
      H.kernel(bk, function(s, v)
        local sh = gpu.shared("double", 1024)
        local lid, gs = gpu.local_id(0), gpu.group_size(0)
        sh[lid] = v[gpu.global_id(0)]
        gpu.barrier()
        if lid == 0 then
          local t = 0
          for j = 0, gs - 1 do t = t + sh[j] end
          s[gpu.group_id(0)] = t
          s[n - 1 - gpu.group_id(0)] = gs
        end
      end, { name = "defgroup" }):launch(n, sums, x)
      local gs = sums[n - 1]
      assert.is_true(gs >= 1 and n % gs == 0, "group size " .. tostring(gs))
      for g = 0, n / gs - 1 do
        local t = 0
        for j = g * gs, g * gs + gs - 1 do t = t + x[j] end
        assert.are.equal(t, sums[g])
      end
    end)

    it_wg("atomics on shared memory and atomic_xchg on floats, without barriers", function()
      local n = 256
      local out = ffi.new("int64_t[2]")
      local last = ffi.new("float[1]")
      H.kernel(bk, function(o, l)
        local c = gpu.shared("int64_t", 1)
        if gpu.local_id(0) == 0 then c[0] = 0 end   -- one group, items in order on cpu/sim
        gpu.atomic_add(o, 0, 1)
        gpu.atomic_max(o, 1, gpu.global_id(0))
        gpu.atomic_xchg(l, 0, 2.5)
      end, { name = "nobarrier" }):launch({ global = n, group = n }, out, last)
      assert.are.equal(256, tonumber(out[0]))
      assert.are.equal(255, tonumber(out[1]))
      assert.are.equal(2.5, last[0])
    end)

    H.it_with("divergence", bk)("diverging work items give a launch error, and the module goes on", function()
      local out = ffi.new("double[64]")
      local k = H.kernel(bk, function(o)
        local la = gpu.local_array("int32_t", 1)
        la[0] = gpu.local_id(0)
        if la[0] < 3 then gpu.barrier() end
        o[gpu.global_id(0)] = 1
      end, { name = "diverge" })
      local msg = H.error_of(function() k:launch({ global = 64, group = 16 }, out) end)
      assert.is_truthy(msg and msg:find("barrier"), tostring(msg))
      H.sanity(bk)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  local it_wg = H.it_with("workgroups", bk)
  describe("work-group compile errors on " .. bk, function()
    local function compile_error(name, fn, words)
      local k = H.kernel(bk, fn, { name = name })
      local msg = H.error_of(function() k:launch(16, ffi.new("float[16]")) end)
      assert.is_string(msg)
      for _, w in ipairs(words) do
        assert.is_truthy(msg:find(w, 1, true), "'" .. w .. "' not in: " .. msg)
      end
      H.sanity(bk)
    end
    it_wg("an element type that is not a number type", function()
      compile_error("k_badtype", function(o) local s = gpu.shared("floaty", 4); o[0] = s[0] end,
        { "gpu.shared", "element type" })
    end)
    it_wg("a private array too large for a work item's stack", function()
      compile_error("k_biglocal", function(o)
        local a = gpu.local_array("double", 1e7); a[0] = 1; o[0] = a[0]
      end, { "gpu.local_array", "at most 65536 bytes" })
    end)
    it_wg("atomic_min on a float array", function()
      compile_error("k_fmin", function(o) gpu.atomic_min(o, 0, 1) end, { "atomic_min", "float" })
    end)
    it_wg("gpu.barrier with an argument", function()
      compile_error("k_bararg", function(o) gpu.barrier(1); o[0] = 1 end, { "gpu.barrier", "no arguments" })
    end)
    it_wg("a string used as a value", function()
      compile_error("k_strval", function(o) local s = "float"; if s then o[0] = 1 end end, { "string" })
    end)
  end)
end
