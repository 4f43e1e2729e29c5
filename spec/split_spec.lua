-- The loops over work items, as the cpu backend builds them, seen from
-- kernels.  Tests of the global id, as GPU kernels write them (`if i < n
-- then`), on every side of their boundaries: the cpu backend splits each
-- row of a work group into a loop where such tests are known to pass and
-- one for the other work items (targets/native_split.c); whatever the split,
-- every work item must do what the kernel says.  And the ids of launches
-- large enough to be cut into group ranges for the thread pool (a range
-- may start anywhere in a row of groups; native.c counts group ids up
-- from its first group).  Expected values are computed by plain Lua loops;
-- each launch covers group boundaries and partial groups.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local G = { 1000, 5000 }                   -- serial, and over the thread pool
local GROUPS = { false, 64, 100, 256 }     -- false: the backend chooses
local i32 = function(v) return ffi.new("int32_t", v) end

-- Launch k over n work items (group g or the default) on a fresh int32
-- array filled with -1, then compare with want(i) (nil: -1) for every i.
local function check(k, n, g, want, ...)
  local o = ffi.new("int32_t[?]", n)
  for i = 0, n - 1 do o[i] = -1 end
  k:launch(g and { global = n, group = g } or n, o, ...)
  for i = 0, n - 1 do
    local w = want(i) or -1
    if o[i] ~= w then
      error(("work item %d of %d (group %s): got %d, expected %d"):format(i, n, tostring(g), o[i], w),
        2)
    end
  end
end

-- check over every size and group.
local function each(k, want, ...)
  for _, n in ipairs(G) do
    for _, g in ipairs(GROUPS) do check(k, n, g, want, ...) end
  end
end

for _, bk in ipairs(H.backends) do
  describe("tests of the global id [" .. bk .. "]", function()
    it("i < n for n below, inside and beyond the launch", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = i end
      end, { name = "lt" })
      for _, n in ipairs({ -5, 0, 1, 63, 64, 65, 255, 256, 257, 999, 1000, 4097, 6000 }) do
        each(k, function(i) if i < n then return i end end, i32(n))
      end
    end)

    it("a <= i < b and a < i <= b, empty and reversed ranges", function()
      local k1 = H.kernel(bk, function(o, a, b)
        local i = gpu.global_id(0)
        if i >= a and i < b then o[i] = 1 end
      end, { name = "range" })
      local k2 = H.kernel(bk, function(o, a, b)
        local i = gpu.global_id(0)
        if i > a and i <= b then o[i] = 2 end
      end, { name = "range2" })
      for _, ab in ipairs({ { 0, 1000 }, { 10, 990 }, { 300, 200 }, { -5, 3 }, { 999, 7000 },
                            { 500, 500 }, { 63, 65 }, { 4095, 4097 } }) do
        local a, b = ab[1], ab[2]
        each(k1, function(i) if i >= a and i < b then return 1 end end, i32(a), i32(b))
        each(k2, function(i) if i > a and i <= b then return 2 end end, i32(a), i32(b))
      end
    end)

    it("i + k and i - k against a bound", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i + 1 < n and i - 2 >= 0 then o[i] = i end
      end, { name = "offset" })
      for _, n in ipairs({ 0, 3, 4, 100, 999, 1001, 5001 }) do
        each(k, function(i) if i + 1 < n and i - 2 >= 0 then return i end end, i32(n))
      end
    end)

    it("Lua-number bounds: fractions, infinities and nan", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = 1 end
      end, { name = "dlt" })
      local kn = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if not (i >= n) then o[i] = 2 end   -- luacheck: ignore 581 (true for nan)
      end, { name = "dnge" })
      for _, n in ipairs({ 100.5, 999.9, -0.5, 1 / 0, -1 / 0, 0 / 0, 4096.25 }) do
        each(k, function(i) if i < n then return 1 end end, n)
        each(kn, function(i) if not (i >= n) then return 2 end end, n)   -- luacheck: ignore 581
      end
    end)

    it("an early return, an else branch, a test in an inner loop", function()
      local kr = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i >= n then return end
        o[i] = 2 * i
      end, { name = "ret" })
      local ke = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = 1 else o[i] = 2 end
      end, { name = "else" })
      local kl = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        local c = 0
        for _ = 1, 3 do
          if i < n then c = c + 1 end
        end
        o[i] = c
      end, { name = "inner" })
      for _, n in ipairs({ 0, 257, 1000, 4500 }) do
        each(kr, function(i) if i < n then return 2 * i end end, i32(n))
        each(ke, function(i) return i < n and 1 or 2 end, i32(n))
        each(kl, function(i) return i < n and 3 or 0 end, i32(n))
      end
    end)

    it("tests of arguments and of the local id", function()
      local k = H.kernel(bk, function(o, flag, n)
        local i = gpu.global_id(0)
        if flag and i < n then o[i] = 1 end
      end, { name = "flag" })
      local kl = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if gpu.local_id(0) < n then o[i] = 3 end
      end, { name = "local" })
      for _, n in ipairs({ 10, 900 }) do
        each(k, function(i) if i < n then return 1 end end, true, i32(n))
        each(k, function() end, false, i32(n))
      end
      for _, g in ipairs({ 64, 100 }) do
        for _, n in ipairs(G) do
          check(kl, n, g, function(i) if i % g < 10 then return 3 end end, i32(10))
        end
      end
    end)

    it("ids of a 3-D launch cut into group ranges over the thread pool", function()
      local k = H.kernel(bk, function(o)
        local x, y, z = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
        local j = ((z * gpu.global_size(1) + y) * gpu.global_size(0) + x) * 3
        o[j] = gpu.group_id(0) + 100 * gpu.group_id(1) + 10000 * gpu.group_id(2)
        o[j + 1] = gpu.local_id(0) + 100 * gpu.local_id(1) + 10000 * gpu.local_id(2)
        o[j + 2] = x + 100 * y + 10000 * z
      end, { name = "ids3" })
      for _, c in ipairs({ { { 37, 29, 11 }, { 4, 3, 2 } }, { { 300, 5, 4 }, { 7, 2, 3 } },
                           { { 5000, 1, 1 }, { 3, 1, 1 } } }) do
        local g, l = c[1], c[2]
        local n = g[1] * g[2] * g[3]
        local o = ffi.new("int32_t[?]", n * 3)
        k:launch({ global = g, group = l }, o)
        for item = 0, n - 1 do
          local x, y, z = item % g[1], math.floor(item / g[1]) % g[2], math.floor(item / (g[1] * g[2]))
          local want = {
            math.floor(x / l[1]) + 100 * math.floor(y / l[2]) + 10000 * math.floor(z / l[3]),
            x % l[1] + 100 * (y % l[2]) + 10000 * (z % l[3]),
            x + 100 * y + 10000 * z,
          }
          for f = 0, 2 do
            if o[item * 3 + f] ~= want[f + 1] then
              error(("work item %d,%d,%d field %d: got %d, expected %d"):format(x, y, z, f,
                o[item * 3 + f], want[f + 1]))
            end
          end
        end
      end
    end)

    it("a 2-D stencil's border test", function()
      local k = H.kernel(bk, function(o, w, h)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        if x >= 1 and y >= 1 and x < w - 1 and y < h - 1 then o[y * w + x] = 1 end
      end, { name = "border" })
      for _, wh in ipairs({ { 300, 7 }, { 2, 2 }, { 1000, 3 }, { 3, 300 }, { 257, 20 } }) do
        local w, hh = wh[1], wh[2]
        for _, g in ipairs({ false, { 64, 1 }, { 100, 3 }, { 16, 16 } }) do
          local o = ffi.new("int32_t[?]", w * hh)
          for i = 0, w * hh - 1 do o[i] = -1 end
          k:launch(g and { global = { w, hh }, group = g } or { global = { w, hh } }, o, i32(w), i32(hh))
          for y = 0, hh - 1 do
            for x = 0, w - 1 do
              local want = (x >= 1 and y >= 1 and x < w - 1 and y < hh - 1) and 1 or -1
              assert.are.equal(want, o[y * w + x], ("x %d y %d of %dx%d"):format(x, y, w, hh))
            end
          end
        end
      end
    end)

    it("a long body (not split on cpu: native.c, CPU_SPLIT_MAX_INSNS) tests its id too", function()
      -- ~700 lines of work behind `if i < n`: past the size where the cpu
      -- backend runs one x loop instead of the split pair
      local src = { "return function(o, n)", "  local i = gpu.global_id(0)",
                    "  if i >= n then return end", "  local x = i" }
      for j = 1, 700 do
        src[#src + 1] = ("  x = (x * %d + %d) %% 1000003"):format(j % 7 + 2, j)
      end
      src[#src + 1] = "  o[i] = x"
      src[#src + 1] = "end"
      local fn = assert(loadstring(table.concat(src, "\n"), "=long.lua"))()
      setfenv(fn, { gpu = gpu })
      local function want(i)
        local x = i
        for j = 1, 700 do x = (x * (j % 7 + 2) + j) % 1000003 end
        return x
      end
      local k = H.kernel(bk, fn, { name = "long" })
      for _, n in ipairs({ 0, 63, 65, 999 }) do
        for _, g in ipairs({ false, 64 }) do
          check(k, 1000, g, function(i) if i < n then return want(i) end end, i32(n))
        end
      end
    end)
  end)
end

-- What the split costs at compile time (issue 23): the row loop must not be
-- cloned per outcome of the split's tests (O3's non-trivial unswitching
-- cloned the y, z and group loops, each with another vectorized body: the
-- cold compile of saxpy took 2.5-3x as long), and the second loop, whose
-- work items skip their work, is neither vectorized nor unrolled.
describe("the split x loop of saxpy on cpu", function()
  it("is one vectorized fast loop and one plain loop for the rest", function()
    H.need("cpu")
    local k = H.kernel("cpu", function(a, x, y, n)
      local i = gpu.global_id(0)
      if i < n then y[i] = a * x[i] + y[i] end
    end)
    local ir = k:inspect_llvm({ "float", "float[]", "float[]", "int32_t" })
    local entry = assert(ir:match("define void @gj_entry.-\n}\n"), ir)
    local function count(pat)
      local n = 0
      for _ in entry:gmatch(pat) do n = n + 1 end
      return n
    end
    assert.equal(1, count("\nvector%.body[%d]*:"), entry)   -- before: 2 (and 4 loop nests)
    assert.equal(1, count("\nxb[%w.]*:"), entry)            -- before: 27 (unrolled clones)
    assert.equal(0, count("llvm%.masked%."), entry)
    assert.truthy(entry:find("asm sideeffect \"\"", 1, true))
    local y = ffi.new("float[5]", 1, 1, 1, 1, 1)
    k:launch(5, 2, ffi.new("float[5]", 0, 1, 2, 3, 4), y, 4)
    assert.same({ 1, 3, 5, 7, 1 }, { y[0], y[1], y[2], y[3], y[4] })
  end)
end)
