-- The cpu target's work-item vectorizer (targets/native_vec.c): each form
-- it handles, run with vectorize on and off and against plain LuaJIT
-- (bitwise), at sizes around the lane count W (W is 16 or 8 on AVX-512,
-- 8 or 4 on AVX2: the sizes below cover both) and in 2-D launches with
-- partial groups; each reason it leaves a kernel scalar, seen in the
-- compile event's note (GPUJIT_VERBOSE's line); the option, the variable
-- and the disk cache key.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local SIZES = { 0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000003 }

local notes_of = H.notes_of

local function darray(n, f)
  local a = ffi.new("double[?]", math.max(n, 1))
  for i = 0, n - 1 do a[i] = f(i) end
  return a
end

-- Bitwise equality of n elements (a NaN equals a NaN of the same bits;
-- -0 differs from 0).
local function same_bits(what, got, want, n)
  local sz = ffi.sizeof(got) / math.max(n, 1)
  assert(sz == 4 or sz == 8, "same_bits: arrays of exactly n elements")
  for i = 0, n - 1 do
    if ffi.C.memcmp(got + i, want + i, sz) ~= 0 then
      error(("%s: element %d: got %s, expected %s"):format(what, i, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end
pcall(ffi.cdef, "int memcmp(const void *a, const void *b, size_t n);")

-- k compiled both ways: run(k) for each gives the outputs, compared
-- bitwise with each other and with want.
local function both(fn, name, body)
  local kv = H.kernel("cpu", fn, { name = name .. "_vec", vectorize = true })
  local ks = H.kernel("cpu", fn, { name = name .. "_scalar", vectorize = false })
  return notes_of(function() body(kv, ks) end)
end

if not H.available("cpu") then
  describe("the work-item vectorizer", function()
    pending("needs the cpu backend")
  end)
  return
end

-- A device function with a barrier (the vectorizer leaves its callers
-- scalar: its frame is the callee's).
local function swap8(s, lid, v)
  s[lid] = v
  gpu.barrier()
  return s[7 - lid]
end

describe("the work-item vectorizer [cpu]", function()
  it("a guarded kernel with an inner loop at sizes around the lane count", function()
    local function horner(y, x, a, m, n)
      local i = gpu.global_id(0)
      if i < n then
        local v, s = x[i], 0.0
        for k = 1, m do s = s * v + k * a end
        y[i] = s + y[i]
      end
    end
    local notes = both(horner, "horner", function(kv, ks)
      for _, n in ipairs(SIZES) do
        local x = darray(n, function(i) return (i % 97) * 0.37 - 11 end)
        local y1 = darray(n, function(i) return (i % 13) * 1.5 end)
        local y2 = darray(n, function(i) return (i % 13) * 1.5 end)
        local want = darray(n, function(i)
          local v, s = x[i], 0.0
          for k = 1, 3 do s = s * v + k * 2.5 end
          return s + y1[i]
        end)
        if n > 0 then
          kv:launch(n, y1, x, 2.5, 3, n)
          ks:launch(n, y2, x, 2.5, 3, n)
        end
        same_bits("vec n=" .. n, y1, want, n)
        same_bits("scalar n=" .. n, y2, want, n)
      end
    end)
    assert.matches("^vectorized: %d+ lanes$", notes.horner_vec)
    assert.equals("not vectorized: turned off", notes.horner_scalar)
  end)

  it("leaves a loop without inner loops or calls (saxpy) to LLVM's loop vectorizer", function()
    local function axpy(y, x, a, n)
      local i = gpu.global_id(0)
      if i < n then y[i] = a * x[i] + y[i] end
    end
    local n = 1001
    local x = darray(n, function(i) return (i % 97) * 0.37 - 11 end)
    local y = darray(n, function(i) return (i % 13) * 1.5 end)
    local want = darray(n, function(i) return 2.5 * x[i] + y[i] end)
    local notes = both(axpy, "axpy", function(kv)
      kv:launch(n, y, x, 2.5, n)
      same_bits("axpy", y, want, n)
    end)
    assert.matches("left to LLVM's loop vectorizer", notes.axpy_vec, 1, true)
  end)

  it("an inner loop with a broadcast load (matmul), 2-D with partial groups", function()
    local function mm(C, A, B, n, m, p)
      local col, row = gpu.global_id(0), gpu.global_id(1)
      if col < p and row < n then
        local acc = 0.0
        for k = 0, m - 1 do acc = acc + A[row * m + k] * B[k * p + col] end
        C[row * p + col] = acc
      end
    end
    local notes = both(mm, "mm", function(kv, ks)
      for _, sh in ipairs({ { 1, 1, 1 }, { 3, 5, 7 }, { 5, 4, 17 }, { 9, 3, 33 }, { 4, 20, 100 } }) do
        local n, m, p = sh[1], sh[2], sh[3]
        local A = darray(n * m, function(i) return (i % 11) * 0.3 - 1.7 end)
        local B = darray(m * p, function(i) return (i % 7) * 0.9 + 0.1 end)
        local want = darray(n * p, function(i)
          local r, c, acc = math.floor(i / p), i % p, 0.0
          for k = 0, m - 1 do acc = acc + A[r * m + k] * B[k * p + c] end
          return acc
        end)
        for _, cfg in ipairs({ { global = { p, n } }, { global = { p + 3, n + 1 }, group = { 10, 3 } } }) do
          local C1, C2 = darray(n * p, function() return 0 end), darray(n * p, function() return 0 end)
          kv:launch(cfg, C1, A, B, n, m, p)
          ks:launch(cfg, C2, A, B, n, m, p)
          same_bits("vec", C1, want, n * p)
          same_bits("scalar", C2, want, n * p)
        end
      end
    end)
    assert.matches("^vectorized", notes.mm_vec)
  end)

  it("math functions per lane and sqrt as a vector: LuaJIT's bits", function()
    local function f(o, x, n)
      local i = gpu.global_id(0)
      if i < n then
        local v = x[i]
        o[i] = math.sqrt(v * v + 1) + math.exp(-v) * math.sin(v) - math.floor(v / 3)
          + math.abs(v) + math.log(v * v + 2) + math.atan2(v, 3)
      end
    end
    local n = 1001
    local x = darray(n, function(i) return (i - 500) * 0.0137 end)
    local want = darray(n, function(i)
      local v = x[i]
      return math.sqrt(v * v + 1) + math.exp(-v) * math.sin(v) - math.floor(v / 3)
        + math.abs(v) + math.log(v * v + 2) + math.atan2(v, 3)
    end)
    local notes = both(f, "mathf", function(kv, ks)
      local o1, o2 = darray(n, function() return 0 end), darray(n, function() return 0 end)
      kv:launch(n, o1, x, n)
      ks:launch(n, o2, x, n)
      same_bits("vec", o1, want, n)
      same_bits("scalar", o2, want, n)
    end)
    assert.matches("^vectorized", notes.mathf_vec)
  end)

  it("gathers, scatters, integer arithmetic and a uniform store", function()
    local function g(o, idx, a, flag, n, reps)
      local i = gpu.global_id(0)
      if i < n then
        for r = 0, reps - 1 do
          local j = idx[i]
          o[n - 1 - i] = bit.bxor(a[j], i) + j * 3 - bit.lshift(i, 2) + r
        end
        flag[0] = 7
      end
    end
    for _, n in ipairs({ 1, 9, 17, 1000 }) do
      local idx = ffi.new("int32_t[?]", n)
      local a = ffi.new("int64_t[?]", n)
      for i = 0, n - 1 do idx[i] = (i * 7919) % n; a[i] = i * 1000003 - 77 end
      local want = ffi.new("int64_t[?]", n)
      for i = 0, n - 1 do
        local j = idx[i]
        want[n - 1 - i] = bit.bxor(a[j], i) + j * 3 - bit.lshift(i, 2) + 1
      end
      local notes = both(g, "gather" .. n, function(kv, ks)
        for _, k in ipairs({ kv, ks }) do
          local o, flag = ffi.new("int64_t[?]", n), ffi.new("int32_t[1]")
          k:launch(n, o, idx, a, flag, n, 2)
          same_bits("n=" .. n, o, want, n)
          assert.equals(7, flag[0])
        end
      end)
      assert.matches("^vectorized", notes["gather" .. n .. "_vec"])
    end
  end)

  it("a uniform address under a varying if: one masked element, the last lane's store", function()
    local function u(o, last, c, n, m)
      local i = gpu.global_id(0)
      if i < n then
        local s = 0.0
        for k = 1, m do s = s + k * i end         -- an inner loop: vectorized
        if i % 3 == 1 then
          last[0] = s + i                         -- the last such item's stays
          o[i] = c[0] * s                         -- every such lane loads c[0]
        end
      end
    end
    for _, n in ipairs({ 1, 2, 5, 16, 17, 33, 100 }) do
      local notes = both(u, "unif" .. n, function(kv, ks)
        for _, k in ipairs({ kv, ks }) do
          local o, last, c = darray(n, function() return -1 end), darray(1, function() return -5 end),
            darray(1, function() return 0.5 end)
          k:launch(n, o, last, c, n, 3)
          local want_last = -5
          for i = 0, n - 1 do
            local s = 0.0
            for kk = 1, 3 do s = s + kk * i end
            if i % 3 == 1 then
              want_last = s + i
              assert.equals(0.5 * s, o[i])
            else
              assert.equals(-1, o[i])
            end
          end
          assert.equals(want_last, last[0])
        end
      end)
      assert.matches("^vectorized", notes["unif" .. n .. "_vec"])
    end
  end)

  it("loops the lanes leave apart, under a mask (mandelbrot), 1-D and 2-D", function()
    local function mandel(out, w, h, maxit)
      local px, py = gpu.global_id(0), gpu.global_id(1)
      if px < w and py < h then
        local cr, ci = -2.0 + 3.0 * px / w, -1.5 + 3.0 * py / h
        local zr, zi, it = 0.0, 0.0, 0
        while it < maxit and zr * zr + zi * zi <= 4.0 do
          local t = zr * zr - zi * zi + cr
          zi = 2.0 * zr * zi + ci
          zr = t
          it = it + 1
        end
        out[py * w + px] = it + zr
      end
    end
    local function sqrt_up(o, n)
      local i = gpu.global_id(0)
      if i < n then
        local c = 0
        while c * c < i do c = c + 1 end
        o[i] = c
      end
    end
    local notes = both(mandel, "mandel", function(kv, ks)
      for _, sh in ipairs({ { 1, 1 }, { 17, 3 }, { 33, 9 }, { 100, 7 } }) do
        local w, h = sh[1], sh[2]
        local want = darray(w * h, function(k)
          local px, py = k % w, math.floor(k / w)
          local cr, ci = -2.0 + 3.0 * px / w, -1.5 + 3.0 * py / h
          local zr, zi, it = 0.0, 0.0, 0
          while it < 50 and zr * zr + zi * zi <= 4.0 do
            local t = zr * zr - zi * zi + cr
            zi = 2.0 * zr * zi + ci
            zr = t
            it = it + 1
          end
          return it + zr
        end)
        for _, cfg in ipairs({ { global = { w, h } }, { global = { w + 5, h }, group = { 9, 2 } } }) do
          local o1, o2 = darray(w * h, function() return 0 end), darray(w * h, function() return 0 end)
          kv:launch(cfg, o1, w, h, 50)
          ks:launch(cfg, o2, w, h, 50)
          same_bits("vec", o1, want, w * h)
          same_bits("scalar", o2, want, w * h)
        end
      end
    end)
    assert.matches("^vectorized", notes.mandel_vec)
    notes = both(sqrt_up, "sqrt_up", function(kv, ks)
      for _, n in ipairs(SIZES) do
        local want = darray(n, function(i) local c = 0; while c * c < i do c = c + 1 end; return c end)
        for _, k in ipairs({ kv, ks }) do
          local o = darray(n, function() return -1 end)
          if n > 0 then k:launch(n, o, n) end
          same_bits("n=" .. n, o, want, n)
        end
      end
    end)
    assert.matches("^vectorized", notes.sqrt_up_vec)
  end)

  -- Issue 24's list: break and goto out of loops the lanes leave apart, and a
  -- device function called with values that vary: all three vectorized now
  -- (linearized with masks, issue 38), the results LuaJIT's, bit for bit.
  it("break and goto out of varying loops, varying device-function calls: LuaJIT's results", function()
    local function collatz(x)          -- a device function with a loop of its own
      local steps = 0
      while x ~= 1 and steps < 200 do
        if x % 2 == 0 then x = x / 2 else x = 3 * x + 1 end
        steps = steps + 1
      end
      return steps
    end
    local function brk(o, a, n)
      local i = gpu.global_id(0)
      if i < n then
        local s, k = 0.0, 0
        while true do                    -- leaves at a k that varies
          s = s + a[(i + k) % n] * 0.5
          k = k + 1
          if s > i * 0.75 or k >= 40 then break end
        end
        o[i] = s + k
      end
    end
    local function gto(o, a, n)
      local i = gpu.global_id(0)
      if i < n then
        local s = 0.0
        for k = 0, 63 do
          s = s + a[(i * 3 + k) % n]
          if s > 20 + i % 7 then goto done end
        end
        s = -s
        ::done::
        o[i] = s
      end
    end
    local function dev(o, a, n)
      local i = gpu.global_id(0)
      if i < n then o[i] = collatz(i + 1) + a[i] end
    end
    local n = 37
    local a = darray(n, function(i) return (i * 13) % 11 * 0.25 end)
    for _, c in ipairs({ { brk, "brk" }, { gto, "gto" }, { dev, "devcall" } }) do
      local want = darray(n, function() return 0 end)
      local ref = ffi.new("double[?]", n)
      -- plain LuaJIT, item by item
      for i = 0, n - 1 do
        local g = gpu.global_id
        gpu.global_id = function() return i end
        local ok, err = pcall(c[1], ref, a, n)
        gpu.global_id = g
        assert(ok, err)
      end
      ffi.copy(want, ref, ffi.sizeof(ref))
      local notes = both(c[1], c[2], function(kv, ks)
        for _, k in ipairs({ kv, ks }) do
          local o = darray(n, function() return -1 end)
          k:launch(n, o, a, n)
          same_bits(c[2], o, want, n)
        end
      end)
      assert.matches("^vectorized", notes[c[2] .. "_vec"])
    end
  end)

  it("ifs that vary: masked loads and stores, selects at the join", function()
    local function f(o, idx, a, n, m)
      local i = gpu.global_id(0)
      if i < n then
        local s = 0.0
        for k = 1, m do
          local j = idx[i]
          if j >= 0 then
            s = s + a[j] * k
            o[i] = s
          else
            s = s - k
          end
        end
        o[n + i] = s
      end
    end
    local function ref(o, idx, a, n, m)
      for i = 0, n - 1 do
        local s = 0.0
        for k = 1, m do
          local j = idx[i]
          if j >= 0 then
            s = s + a[j] * k
            o[i] = s
          else
            s = s - k
          end
        end
        o[n + i] = s
      end
    end
    local notes = both(f, "ifs", function(kv, ks)
      for _, n in ipairs(SIZES) do
        local idx, a = ffi.new("int64_t[?]", n + 1), darray(n, function(i) return i * 0.5 - 3 end)
        -- a masked lane's load would fault: its index is far outside a
        for i = 0, n - 1 do idx[i] = (i % 3 == 0) and -(2 ^ 40) or (i * 7) % n end
        local want = darray(2 * n, function() return -1 end)
        ref(want, idx, a, n, 3)
        for _, k in ipairs({ kv, ks }) do
          local o = darray(2 * n, function() return -1 end)
          if n > 0 then k:launch(n, o, idx, a, n, 3) end
          same_bits("n=" .. n, o, want, 2 * n)
        end
      end
    end)
    assert.matches("^vectorized", notes.ifs_vec)
  end)

  it("atomics lane by lane: slots, a histogram, sums under varying ifs and in loops", function()
    local function f(o, slot, hist, sums, idx, n)
      local i = gpu.global_id(0)
      if i < n then
        slot[i] = gpu.atomic_add(sums, 0, 1)          -- every item: a distinct slot
        local j = idx[i]
        if j >= 0 then                                -- off lanes: j far outside
          gpu.atomic_add(hist, j % 7, 1)
          gpu.atomic_add(sums, 1, j * 0.5)
        end
        for k = 1, 3 do
          if k <= i % 4 then gpu.atomic_max(hist, 7, i * k) end
        end
        o[i] = i
      end
    end
    local notes = both(f, "atom", function(kv, ks)
      for _, n in ipairs(SIZES) do
        local idx = darray(n + 1, function(i) return (i % 3 == 0) and -(2 ^ 40) or (i * 5) % 11 end)
        local whist, wsum, wmax = {}, 0, 0
        for b = 0, 6 do whist[b] = 0 end
        for i = 0, n - 1 do
          local j = idx[i]
          if j >= 0 then whist[j % 7] = whist[j % 7] + 1; wsum = wsum + j * 0.5 end
          for k = 1, i % 4 do wmax = math.max(wmax, i * k) end
        end
        for _, k in ipairs({ kv, ks }) do
          local o, slot = darray(n + 1, function() return -1 end), ffi.new("int32_t[?]", n + 1)
          local hist, sums = ffi.new("int32_t[8]"), ffi.new("double[2]")
          if n > 0 then k:launch(n, o, slot, hist, sums, idx, n) end
          local seen = {}
          for i = 0, n - 1 do
            assert.equals(i, o[i])
            assert.is_nil(seen[slot[i]], "slot " .. slot[i] .. " given twice")
            assert.is_true(slot[i] >= 0 and slot[i] < n)
            seen[slot[i]] = true
          end
          for b = 0, 6 do assert.equals(whist[b], hist[b], "bin " .. b .. ", n=" .. n) end
          assert.equals(wmax, hist[7])
          assert.equals(n, sums[0])
          assert.equals(wsum, sums[1])
        end
      end
    end)
    assert.matches("^vectorized", notes.atom_vec)
  end)

  it("float kernels in single precision: vector code in the assembly, none when off", function()
    local function mm(C, A, B, n)
      local col, row = gpu.global_id(0), gpu.global_id(1)
      if col < n and row < n then
        local acc = 0.0
        for k = 0, n - 1 do acc = acc + A[row * n + k] * B[k * n + col] end
        C[row * n + col] = acc
      end
    end
    local types = { "float[]", "float[]", "float[]", "int32_t" }
    local on = gpu.kernel(mm, { backend = "cpu", precision = "single", cache = false, vectorize = true })
    local off = gpu.kernel(mm, { backend = "cpu", precision = "single", cache = false, vectorize = false })
    assert.matches("%%[xyz]mm%d+", on:inspect_asm(types))
    assert.is_truthy(on:inspect_asm(types):match("mulps") or on:inspect_asm(types):match("vmulps"))
    assert.is_nil(off:inspect_asm(types):match("mulps"))
    local n = 37
    local A, B = ffi.new("float[?]", n * n), ffi.new("float[?]", n * n)
    for i = 0, n * n - 1 do A[i] = (i % 9) * 0.31; B[i] = (i % 5) * 1.7 - 2 end
    local C1, C2 = ffi.new("float[?]", n * n), ffi.new("float[?]", n * n)
    on:launch({ global = { n, n } }, C1, A, B, n)
    off:launch({ global = { n, n } }, C2, A, B, n)
    same_bits("single", C1, C2, n * n)
  end)

  describe("kernels with barriers: the lanes run a group between its barriers", function()
    local VEC = "^vectorized: %d+ lanes %(groups through their barriers%)"
    local K = dofile("bench/kernels.lua")

    -- launch kv and ks with fresh outputs from mk(); outputs compared bitwise
    local function run_both(kv, ks, cfg, mk, nout)
      local av, as = mk(), mk()
      kv:launch(cfg, unpack(av))
      ks:launch(cfg, unpack(as))
      same_bits("vectorize on vs off", av[1], as[1], nout)
      return av[1]
    end

    it("a tree reduction in shared memory (double), groups of 256, 64 and 24", function()
      local function reduce(sums, x)
        local s = gpu.shared("double", 256)
        local lid = gpu.local_id(0)
        s[lid] = x[gpu.global_id(0)]
        gpu.barrier()
        local step = gpu.group_size(0) / 2
        while step >= 1 do
          if lid < step then s[lid] = s[lid] + s[lid + step] end
          gpu.barrier()
          step = math.floor(step / 2)
        end
        if lid == 0 then sums[gpu.group_id(0)] = s[0] end
      end
      local notes = both(reduce, "tree", function(kv, ks)
        for _, g in ipairs({ 256, 64, 24 }) do
          local n = g * 5
          local x = darray(n, function(i) return (i * 37) % 101 * 0.1 - 3 end)
          local got = run_both(kv, ks, { global = n, group = g },
            function() return { ffi.new("double[5]"), x } end, 5)
          for grp = 0, 4 do
            local s = {}
            for l = 0, g - 1 do s[l] = x[grp * g + l] end
            local step = g / 2
            while step >= 1 do
              for l = 0, g - 1 do if l < step then s[l] = s[l] + s[l + step] end end
              step = math.floor(step / 2)
            end
            assert.equals(s[0], got[grp], "group size " .. g .. ", group " .. grp)
          end
        end
      end)
      assert.matches(VEC, notes.tree_vec)
    end)

    it("bench's tree reduction (float): per-item sums, then the tree", function()
      local notes = both(K.reduce_tree, "rtree", function(kv, ks)
        for _, per in ipairs({ 1, 3, 8 }) do
          local groups = 3
          local n = groups * K.RGROUP * per
          local x = ffi.new("float[?]", n)
          for i = 0, n - 1 do x[i] = (i * 37) % 1001 * 0.125 end
          run_both(kv, ks, { global = groups * K.RGROUP, group = K.RGROUP },
            function() return { ffi.new("float[?]", groups), x, per } end, groups)
        end
      end)
      assert.matches(VEC, notes.rtree_vec)
    end)

    it("the tiled matmul, several tiles, float", function()
      local notes = both(K.matmul_tiled, "tiled", function(kv, ks)
        for _, d in ipairs({ { 32, 16 }, { 48, 64 } }) do
          local N, Kk = d[1], d[2]
          local A = ffi.new("float[?]", N * Kk)
          local B = ffi.new("float[?]", Kk * N)
          for i = 0, N * Kk - 1 do A[i] = (i % 17) * 0.25 - 2; B[i] = (i % 13) * 0.5 - 3 end
          local C = run_both(kv, ks, { global = { N, N }, group = { K.TILE, K.TILE } },
            function() return { ffi.new("float[?]", N * N), A, B, N, Kk } end, N * N)
          for _, rc in ipairs({ { 0, 0 }, { N - 1, 3 }, { 7, N - 2 } }) do
            local acc = 0
            for k = 0, Kk - 1 do acc = acc + A[rc[1] * Kk + k] * B[k * N + rc[2]] end
            assert.near(acc, C[rc[1] * N + rc[2]], 1e-3 * (1 + math.abs(acc)))
          end
        end
      end)
      assert.matches(VEC, notes.tiled_vec)
    end)

    it("barriers inside uniform loops, 2-D groups that are not a multiple of the lanes", function()
      local function rot(out, x, rounds)
        local s = gpu.shared("double", 96)
        local lid = gpu.local_id(1) * gpu.group_size(0) + gpu.local_id(0)
        local n = gpu.group_size(0) * gpu.group_size(1)
        local gid = gpu.global_id(1) * gpu.global_size(0) + gpu.global_id(0)
        local v = x[gid]
        for r = 1, rounds do
          s[lid] = v
          gpu.barrier()
          v = s[(lid + r) % n] * 0.5 + v
          if r % 2 == 0 then       -- uniform: a barrier in it
            gpu.barrier()
            s[lid] = v * 2
            gpu.barrier()
            v = s[n - 1 - lid] - v
          end
          gpu.barrier()
        end
        out[gid] = v
      end
      local notes = both(rot, "rot", function(kv, ks)
        for _, sh in ipairs({ { 24, 4, 2, 1 }, { 19, 5, 1, 3 }, { 16, 1, 4, 1 } }) do
          local gx, gy = sh[1] * sh[3], sh[2] * sh[4]
          local n = gx * gy
          local x = darray(n, function(i) return (i * 7) % 23 - 11.5 end)
          for _, rounds in ipairs({ 0, 1, 4 }) do
            run_both(kv, ks, { global = { gx, gy }, group = { sh[1], sh[2] } },
              function() return { ffi.new("double[?]", n), x, rounds } end, n)
          end
        end
      end)
      assert.matches(VEC, notes.rot_vec)
    end)

    it("a shared-memory scan (Hillis-Steele, two arrays swapped), int32 and double", function()
      local function scan_i(out, x)
        local a = gpu.shared("int32_t", 64)
        local b = gpu.shared("int32_t", 64)
        local lid, gid = gpu.local_id(0), gpu.global_id(0)
        a[lid] = x[gid]
        gpu.barrier()
        local src, dst = a, b
        local off = 1
        while off < gpu.group_size(0) do
          if lid >= off then dst[lid] = src[lid] + src[lid - off] else dst[lid] = src[lid] end
          gpu.barrier()
          src, dst = dst, src
          off = off * 2
        end
        out[gid] = src[lid]
      end
      local function scan_d(out, x)
        local a = gpu.shared("double", 64)
        local lid, gid = gpu.local_id(0), gpu.global_id(0)
        a[lid] = x[gid]
        gpu.barrier()
        local off = 1
        while off < gpu.group_size(0) do
          local v = a[lid]
          if lid >= off then v = v + a[lid - off] end
          gpu.barrier()
          a[lid] = v
          gpu.barrier()
          off = off * 2
        end
        out[gid] = a[lid]
      end
      for _, c in ipairs({ { scan_i, "int32_t", "scani" }, { scan_d, "double", "scand" } }) do
        local notes = both(c[1], c[3], function(kv, ks)
          for _, g in ipairs({ 64, 40, 16 }) do
            local n = g * 3
            local x = ffi.new(c[2] .. "[?]", n)
            for i = 0, n - 1 do x[i] = (i * 13) % 17 - 8 end
            local got = run_both(kv, ks, { global = n, group = g },
              function() return { ffi.new(c[2] .. "[?]", n), x } end, n)
            for i = 0, n - 1 do
              local want = 0
              for j = i - i % g, i do want = want + tonumber(x[j]) end
              assert.equals(want, tonumber(got[i]), c[3] .. " group " .. g .. " item " .. i)
            end
          end
        end)
        assert.matches(VEC, notes[c[3] .. "_vec"])
      end
    end)

    it("one barrier (its resume switch folded to a branch), uniform early return", function()
      -- the slots of the sum loop are stored again in the if after the barrier:
      -- those stores are dead (nothing reads them in a later pass), and must go
      -- for the loop's counters to stay uniform
      local function sums(out, x, per, stop)
        local s = gpu.shared("double", 64)
        local lid = gpu.local_id(0)
        if stop < 0 then return end         -- uniform: before the barrier
        local base = (gpu.global_id(0) - lid) * per + lid
        local acc = 0.0
        for k = 0, per - 1 do acc = acc + x[base + k * gpu.group_size(0)] end
        s[lid] = acc
        gpu.barrier()
        if lid == 0 then out[gpu.group_id(0)] = s[0] + s[1] + s[gpu.group_size(0) - 1] end
      end
      local notes = both(sums, "onebar", function(kv, ks)
        for _, g in ipairs({ 64, 24 }) do
          for _, stop in ipairs({ 1, -1 }) do
            local per, groups = 3, 4
            local x = darray(g * groups * per, function(i) return (i * 29) % 83 * 0.25 end)
            local got = run_both(kv, ks, { global = g * groups, group = g },
              function() return { darray(groups, function() return -7 end), x, per, stop } end,
              groups)
            for grp = 0, groups - 1 do
              local acc = {}
              for _, l in ipairs({ 0, 1, g - 1 }) do
                acc[l] = 0.0
                for k = 0, per - 1 do acc[l] = acc[l] + x[grp * g * per + l + k * g] end
              end
              assert.equals(stop < 0 and -7 or acc[0] + acc[1] + acc[g - 1], got[grp])
            end
          end
        end
      end)
      assert.matches(VEC, notes.onebar_vec)
    end)

    it("a barrier under an if that varies is still the compile error", function()
      local k = H.kernel("cpu", function(o)
        local i = gpu.global_id(0)
        if i % 2 == 0 then gpu.barrier() end
        o[i] = i
      end, { name = "varbar", vectorize = true })
      local ok, err = pcall(function() k:launch({ global = 16, group = 16 }, ffi.new("double[16]")) end)
      assert.is_false(ok)
      assert.matches("barrier", tostring(err))
    end)
  end)

  -- Control flow the if and loop shapes do not cover, linearized with masks
  -- (targets/native_vec_lin.c): each shape vectorized (the note says so) and
  -- bitwise LuaJIT's results, item by item, at sizes around the lane count.
  describe("linearizes any reducible control flow with masks", function()
    local LIN = "^vectorized: %d+ lanes %(linearized with masks%)$"
    local LSIZES = { 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1001 }
    -- kernel(o, a, n) against item(i, a, n) -> value (a: doubles; o[i] is
    -- compared, o's other elements must stay -1)
    local function check(name, kernel, item)
      local notes = both(kernel, name, function(kv, ks)
        for _, n in ipairs(LSIZES) do
          local a = darray(n, function(i) return ((i * 37) % 23 - 7) * 0.375 end)
          local want = darray(n + 1, function() return -1 end)
          for i = 0, n - 1 do
            local v = item(i, a, n)
            if v ~= nil then want[i] = v end
          end
          for _, k in ipairs({ kv, ks }) do
            local o = darray(n + 1, function() return -1 end)
            k:launch(n, o, a, n)
            same_bits(name .. " n=" .. n, o, want, n + 1)
          end
        end
      end)
      assert.matches(LIN, notes[name .. "_vec"])
    end
    local CASES = {
      { "nested_ifs", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s = 0
          for k = 1, 3 do
            if i % 3 == k - 1 then
              if a[i] > 0 then o[i] = k end
              s = s + math.sin(k * i)
            else
              if i % 5 == 1 then s = s - 1 else s = s * 0.5 end
            end
          end
          o[i] = o[i] + s
        end
      end, function(i, a)
        local s, v = 0, -1
        for k = 1, 3 do
          if i % 3 == k - 1 then
            if a[i] > 0 then v = k end
            s = s + math.sin(k * i)
          else
            if i % 5 == 1 then s = s - 1 else s = s * 0.5 end
          end
        end
        return v + s
      end },
      { "early_return", function(o, a, n)
        local i = gpu.global_id(0)
        if i >= n then return end
        local s = a[i]
        if s < -1 then o[i] = 1; return end
        for k = 1, 8 do s = s * 0.75 + k end
        if i % 4 == 3 then return end
        o[i] = s
      end, function(i, a)
        local s = a[i]
        if s < -1 then return 1 end
        for k = 1, 8 do s = s * 0.75 + k end
        if i % 4 == 3 then return nil end
        return s
      end },
      { "store_in_varying_loop", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local c = 0
          while c * c < i do o[i] = c + a[c % n]; c = c + 1 end
          o[i] = o[i] + c
        end
      end, function(i, a, n)
        local c, v = 0, -1
        while c * c < i do v = c + a[c % n]; c = c + 1 end
        return v + c
      end },
      { "break_with_store", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s, k = 0.0, 0
          while true do
            s = s + a[(i + k) % n]
            k = k + 1
            if s > 3 or k >= 10 + i % 7 then break end
            o[i] = s
          end
          o[i] = o[i] * 2 + k
        end
      end, function(i, a, n)
        local s, k, v = 0.0, 0, -1
        while true do
          s = s + a[(i + k) % n]
          k = k + 1
          if s > 3 or k >= 10 + i % 7 then break end
          v = s
        end
        return v * 2 + k
      end },
      { "goto_out", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s = 0.0
          for k = 0, 31 do
            s = s + a[(i * 3 + k) % n]
            if s > 4 + i % 7 then goto done end
          end
          s = -s
          ::done::
          o[i] = s
        end
      end, function(i, a, n)
        local s = 0.0
        for k = 0, 31 do
          s = s + a[(i * 3 + k) % n]
          if s > 4 + i % 7 then return s end
        end
        return -s
      end },
      { "return_in_loop", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s = 0.0
          for k = 1, 20 do
            s = s + a[(i + k) % n]
            if s < -3 then o[i] = k; return end
          end
          o[i] = s
        end
      end, function(i, a, n)
        local s = 0.0
        for k = 1, 20 do
          s = s + a[(i + k) % n]
          if s < -3 then return k end
        end
        return s
      end },
      { "loops_in_loops", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s, j = 0, 0
          while j < i % 7 do
            local k = 0
            while k * k < j + i % 5 do
              s = s + k * a[(j + k) % n]
              k = k + 1
            end
            j = j + 1
          end
          o[i] = s + j
        end
      end, function(i, a, n)
        local s, j = 0, 0
        while j < i % 7 do
          local k = 0
          while k * k < j + i % 5 do
            s = s + k * a[(j + k) % n]
            k = k + 1
          end
          j = j + 1
        end
        return s + j
      end },
      { "loop_in_varying_if", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local v, s = a[i], 0
          _G.assert(v >= -1e300, "x too small")  -- an exit before the loop
          if v > 0 then
            for _ = 1, 16 do s = s * v + 0.25 end
          end
          o[i] = s
        end
      end, function(i, a)
        local v, s = a[i], 0
        if v > 0 then
          for _ = 1, 16 do s = s * v + 0.25 end
        end
        return s
      end },
      { "division_under_mask", function(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local s = 0
          for k = 1, 2 do
            if i % 2 == 0 then s = s + (1000 + k) % (i + 1) + math.floor(7 / (i - 4)) end
          end
          o[i] = s + a[i]
        end
      end, function(i, a)
        local s = 0
        for k = 1, 2 do
          if i % 2 == 0 then s = s + (1000 + k) % (i + 1) + math.floor(7 / (i - 4)) end
        end
        return s + a[i]
      end },
    }
    for _, c in ipairs(CASES) do
      it(c[1], function() check(c[1], c[2], c[3]) end)
    end

    it("integers bitwise: an escape loop on int32 with a break", function()
      local function f(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local x, steps = i + 1, 0
          while x ~= 1 do
            if x % 2 == 0 then x = x / 2 else x = 3 * x + 1 end
            steps = steps + 1
            if steps >= 60 then break end
          end
          a[i] = bit.bxor(steps, x)
          o[i] = steps
        end
      end
      local notes = both(f, "collatz", function(kv, ks)
        for _, n in ipairs(LSIZES) do
          local want = ffi.new("int32_t[?]", n)
          for i = 0, n - 1 do
            local x, steps = i + 1, 0
            while x ~= 1 do
              if x % 2 == 0 then x = x / 2 else x = 3 * x + 1 end
              steps = steps + 1
              if steps >= 60 then break end
            end
            want[i] = bit.bxor(steps, x)
          end
          for _, k in ipairs({ kv, ks }) do
            local a, o = ffi.new("int32_t[?]", n), darray(n, function() return 0 end)
            k:launch(n, o, a, n)
            same_bits("collatz n=" .. n, a, want, n)
          end
        end
      end)
      assert.matches(LIN, notes.collatz_vec)
    end)

    it("integer atomics whose old value is unused in loops the lanes leave apart", function()
      local function f(hist, cnt, n)
        local i = gpu.global_id(0)
        if i < n then
          local k = 0
          while k < i % 5 do
            gpu.atomic_add(hist, (i + k) % 7, 1)          -- old value unused: any order
            k = k + 1
          end
          cnt[i] = k
        end
      end
      local notes = both(f, "hist", function(kv, ks)
        for _, n in ipairs(LSIZES) do
          local want = ffi.new("int32_t[7]")
          for i = 0, n - 1 do
            for k = 0, i % 5 - 1 do want[(i + k) % 7] = want[(i + k) % 7] + 1 end
          end
          for _, k in ipairs({ kv, ks }) do
            local hist, cnt = ffi.new("int32_t[7]"), ffi.new("int32_t[?]", n)
            k:launch(n, hist, cnt, n)
            same_bits("hist n=" .. n, hist, want, 7)
            for i = 0, n - 1 do assert.equals(i % 5, cnt[i]) end
          end
        end
      end)
      assert.matches(LIN, notes.hist_vec)
    end)

    it("an assert that fails in one lane of a linearized kernel: the scalar code's error", function()
      local function f(o, a, n)
        local i = gpu.global_id(0)
        if i < n then
          local v, s = a[i], 0
          _G.assert(v ~= 2.25, "bad value")
          for k = 1, 4 do s = s * v + k end
          o[i] = s
        end
      end
      local n = 50
      local a = darray(n, function(i) return i == 37 and 2.25 or i * 0.5 end)
      local errs = {}
      local notes = both(f, "afail", function(kv, ks)
        for j, k in ipairs({ kv, ks }) do
          local ok, err = pcall(function() k:launch(n, darray(n, function() return 0 end), a, n) end)
          assert.is_false(ok)
          errs[j] = tostring(err):gsub("afail_%a+", "afail")
        end
      end)
      assert.matches("bad value", errs[1])
      assert.equals(errs[2], errs[1])
      assert.matches(LIN, notes.afail_vec)
    end)
  end)

  describe("leaves scalar, with the reason in the note", function()
    local cases = {
      { "a float atomic in a loop the lanes leave apart", "order in a loop under linearization at line %d+",
        function(o, n)
        local i = gpu.global_id(0)
        if i < n then
          local k = 0
          while k < i % 3 do gpu.atomic_add(o, n, 0.5); k = k + 1 end
          o[i] = k
        end
      end, function(i) return i % 3 end },
      { "atomics in a kernel with barriers", "atomics in a kernel with barriers", function(o, n)
        local i = gpu.global_id(0)
        local s = gpu.shared("double", 8)
        s[gpu.local_id(0)] = i
        gpu.barrier()
        if i < n then o[i] = s[7 - gpu.local_id(0)]; gpu.atomic_add(o, n, 1) end
      end, function(i, n) return i == n and n or i - i % 8 + 7 - i % 8 end, 8 },
      { "a private array", "private array", function(o, n)
        local i = gpu.global_id(0)
        if i < n then
          local t = gpu.local_array("double", 4)
          for k = 0, 3 do t[k] = i + k end
          o[i] = t[i % 4]
        end
      end, function(i) return i + i % 4 end },
      { "a device function with barriers", "a device function with barriers", function(o, n)
        local i = gpu.global_id(0)
        local s = gpu.shared("double", 8)
        local v = swap8(s, gpu.local_id(0), i)
        if i < n then o[i] = v end
      end, function(i) return i - i % 8 + 7 - i % 8 end, 8 },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local n = 40
        local notes = both(c[3], "fb", function(kv, ks)
          for _, k in ipairs({ kv, ks }) do
            local o = ffi.new("double[?]", n + 1)
            k:launch(c[5] and { global = n, group = c[5] } or n, o, n)
            for i = 0, n - 1 do assert.equals(c[4](i, n), o[i]) end
          end
        end)
        assert.matches("^not vectorized: .*" .. c[2], notes.fb_vec)
      end)
    end

    it("print and bounds checks", function()
      local function p(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = i + 0.5 end
      end
      local n = 20
      local notes = notes_of(function()
        local k = H.kernel("cpu", p, { name = "bc", boundscheck = true, vectorize = true })
        local o = ffi.new("double[?]", n)
        k:launch(n, o, n)
        for i = 0, n - 1 do assert.equals(i + 0.5, o[i]) end
        assert.has_error(function() k:launch(n + 1, o, n + 1) end)
      end)
      assert.matches("^not vectorized", notes.bc)
    end)
  end)

  it("GPUJIT_VECTORIZE=0 turns it off; the option wins over it", function()
    local script = [[
      local gpu = require("gpujit")
      gpu.on_compile(function(e)
        if e.phase == "done" then io.write(e.kernel, ":", e.note or "", "\n") end
      end)
      local f = function(o, n)
        local i = gpu.global_id(0)
        if i < n then local s = 0; for k = 1, n do s = s + k * i end; o[i] = s end
      end
      local o = require("ffi").new("double[64]")
      gpu.kernel(f, { backend = "cpu", cache = false, name = "a" }):launch(64, o, 64)
      gpu.kernel(f, { backend = "cpu", cache = false, name = "b", vectorize = true }):launch(64, o, 64)
    ]]
    local function run(env)
      local cmd = ("%s LUA_PATH=%q LUA_CPATH=%q luajit -e %q 2>&1"):format(env,
        package.path, package.cpath, script)
      local f = io.popen(cmd)
      local out = f:read("*a")
      f:close()
      return out
    end
    local off = run("GPUJIT_VECTORIZE=0")
    assert.matches("a:not vectorized: turned off", off, 1, true)
    assert.matches("b:vectorized: %d+ lanes", off)
    assert.matches("a:vectorized: %d+ lanes", run("GPUJIT_VECTORIZE=1"))
  end)

  it("the job carries the setting: gpu.job shows it, the job option and plugins change it", function()
    local f = function(o, n)
      local i = gpu.global_id(0)
      if i < n then local s = 0; for k = 1, n do s = s + k * i end; o[i] = s end
    end
    local types = { "double[]", "int32_t" }
    -- on by default, unless GPUJIT_VECTORIZE=0 (cuda_spec's scalar run of the suite)
    assert.equals(os.getenv("GPUJIT_VECTORIZE") ~= "0",
      gpu.job(gpu.kernel(f, { backend = "cpu" }), types).vectorize)
    assert.is_false(gpu.job(gpu.kernel(f, { backend = "cpu", vectorize = false }), types).vectorize)
    local notes = notes_of(function()
      local o = ffi.new("double[20]")
      H.kernel("cpu", f, { name = "viajob", job = { vectorize = false } }):launch(20, o, 20)
      for i = 0, 19 do assert.equals(i * 210, o[i]) end
    end)
    assert.equals("not vectorized: turned off", notes.viajob)
    assert.has_error(function()
      H.kernel("cpu", f, { job = { vectorize = 1 } }):launch(1, ffi.new("double[1]"), 1)
    end)
  end)

  it("a bad option is an error", function()
    assert.has_error(function() gpu.kernel(function() end, { vectorize = 1 }) end,
      "gpu.kernel: option 'vectorize' must be a boolean, got number")
  end)

  it("the setting is in the disk cache key", function()
    local dir = os.tmpname()
    os.remove(dir)
    local f = function(o, n) local i = gpu.global_id(0); if i < n then o[i] = i * 0.5 end end
    local caches = {}
    H.with_cache_dir(dir, function()
      local off = gpu.on_compile(function(e) if e.phase == "done" then caches[#caches + 1] = e.cache end end)
      local o = ffi.new("double[40]")
      for _, v in ipairs({ true, false, true, false }) do
        gpu.kernel(f, { backend = "cpu", vectorize = v }):launch(40, o, 40)
        for i = 0, 39 do assert.equals(i * 0.5, o[i]) end
      end
      off()
    end)
    os.execute("rm -rf '" .. dir .. "'")
    assert.same({ "written", "written", "hit", "hit" }, caches)
  end)
end)
