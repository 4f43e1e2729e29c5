-- gpu.hashgrid (docs/api.md, "Neighbour search") on every backend of
-- GPUJIT_SPEC_BACKENDS: the grid a build leaves (order sorted by slot and
-- stable, cell_start/cell_end bracketing each slot's run) against plain
-- Lua, and a kernel's neighbour query against all pairs: 2-D and 3-D,
-- negative coordinates, a table small enough that far cells share slots,
-- empty and one point, FFI arrays, Lua tables and gpu.arrays, rebuilding
-- with another count, and the errors.
local H = require("spec.helpers")
local L = require("spec.prims_lib")
local ffi = require("ffi")
local gpu = H.gpu

-- n points in [lo, hi) per coordinate, deterministic (doubles).
local function points(n, dims, lo, hi, seed)
  local cs = {}
  for d = 1, dims do
    local g = L.gen(n, 0, 999999, seed + d)
    cs[d] = {}
    for i = 1, n do cs[d][i] = lo + (hi - lo) * g[i] / 1000000 end
  end
  return cs
end

local function slot_of(grid, p, i)
  local c = {}
  for d = 1, grid.dims do c[d] = gpu.hashgrid_cell(p[d][i], grid.inv_cell) end
  if grid.dims == 2 then return gpu.hashgrid_index(c[1], c[2], grid.dim) end
  return gpu.hashgrid_index3(c[1], c[2], c[3], grid.dim)
end

-- The grid against plain Lua: order lists the points by slot, in index
-- order within a slot; cs/ce bracket each non-empty slot's run.
local function check_grid(grid, p, n)
  local order = L.list(grid.order, n)
  local cs, ce = L.list(grid.cell_start, grid.slots), L.list(grid.cell_end, grid.slots)
  local seen = {}
  for k = 1, n do
    local i = order[k] + 1
    assert.is_nil(seen[i])
    seen[i] = true
    local s = slot_of(grid, p, i)
    assert.is_true(cs[s + 1] <= k - 1 and k - 1 < ce[s + 1], "point " .. (i - 1))
    if k > 1 then
      local ps = slot_of(grid, p, order[k - 1] + 1)
      assert.is_true(ps < s or ps == s and order[k - 1] < order[k], "order at " .. (k - 1))
    end
  end
  local total = 0
  for s = 1, grid.slots do total = total + (ce[s] - cs[s]) end
  assert.equals(n, total)
end

local count2 = function(px, py, cs, ce, order, cnt, inv, dim, r2, n)
  local i = gpu.global_id(0)
  if i < n then
    local cx, cy = gpu.hashgrid_cell(px[i], inv), gpu.hashgrid_cell(py[i], inv)
    local c = 0
    for oy = -1, 1 do
      for ox = -1, 1 do
        local s = gpu.hashgrid_index(cx + ox, cy + oy, dim)
        for k = cs[s], ce[s] - 1 do
          local j = order[k]
          local dx, dy = px[j] - px[i], py[j] - py[i]
          if dx * dx + dy * dy < r2 then c = c + 1 end
        end
      end
    end
    cnt[i] = c
  end
end

local count3 = function(px, py, pz, cs, ce, order, cnt, inv, dim, r2, n)
  local i = gpu.global_id(0)
  if i < n then
    local cx, cy = gpu.hashgrid_cell(px[i], inv), gpu.hashgrid_cell(py[i], inv)
    local cz = gpu.hashgrid_cell(pz[i], inv)
    local c = 0
    for oz = -1, 1 do
      for oy = -1, 1 do
        for ox = -1, 1 do
          local s = gpu.hashgrid_index3(cx + ox, cy + oy, cz + oz, dim)
          for k = cs[s], ce[s] - 1 do
            local j = order[k]
            local dx, dy, dz = px[j] - px[i], py[j] - py[i], pz[j] - pz[i]
            if dx * dx + dy * dy + dz * dz < r2 then c = c + 1 end
          end
        end
      end
    end
    cnt[i] = c
  end
end

local function brute(p, n, r2)
  local out = {}
  for i = 1, n do
    local c = 0
    for j = 1, n do
      local d2 = 0
      for d = 1, #p do d2 = d2 + (p[d][j] - p[d][i]) ^ 2 end
      if d2 < r2 then c = c + 1 end
    end
    out[i] = c
  end
  return out
end

for _, bk in ipairs(H.backends) do
  describe("gpu.hashgrid [" .. bk .. "]", function()
    H.use_in_block(bk)
    local k2 = H.kernel(bk, count2)
    local k3 = H.kernel(bk, count3)

    for _, dims in ipairs({ 2, 3 }) do
      it(dims .. "-D: the grid and a neighbour query, every kind of array, sizes 0, 1, odd", function()
        for _, n in ipairs(bk == "sim" and { 0, 1, 57 } or { 0, 1, 57, 1500 }) do
          for _, dim in ipairs({ 3, 16 }) do   -- 3: far cells share slots
            local p = points(n, dims, -6.5, 6.5, n + dim)
            for _, kind in ipairs(L.KINDS) do
              local grid = gpu.hashgrid(1.25, { dims = dims, dim = dim })
              local arrs = {}
              for d = 1, dims do arrs[d] = L.make(kind, "double", p[d]) end
              assert.equals(grid, grid:build(unpack(arrs)))
              assert.equals(n, grid.n)
              check_grid(grid, p, n)
              if n > 0 then
                local dev = {}
                for d = 1, dims do dev[d] = gpu.to_device(L.make("ffi", "double", p[d]), "double") end
                local cnt = gpu.array("int32_t", n)
                if dims == 2 then
                  k2:launch(n, dev[1], dev[2], grid.cell_start, grid.cell_end, grid.order, cnt,
                    grid.inv_cell, grid.dim, 1.25 ^ 2, n)
                else
                  k3:launch(n, dev[1], dev[2], dev[3], grid.cell_start, grid.cell_end, grid.order,
                    cnt, grid.inv_cell, grid.dim, 1.25 ^ 2, n)
                end
                local want = brute(p, n, 1.25 ^ 2)
                local got = L.list(cnt, n)
                for i = 1, n do
                  assert.equals(want[i], got[i], ("%s dim=%d n=%d point %d"):format(kind, dim, n, i - 1))
                end
              end
            end
          end
        end
      end)
    end

    it("rebuilds with another count and float or integer coordinates", function()
      local grid = gpu.hashgrid(2, { dims = 2, dim = 8 })
      for _, n in ipairs({ 40, 7, 40 }) do
        local p = points(n, 2, 0, 30, n)
        local x, y = ffi.new("float[?]", n), ffi.new("int16_t[?]", n)
        for i = 1, n do x[i - 1], y[i - 1] = p[1][i], p[2][i] end
        grid:build(x, y)
        local q = { {}, {} }
        for i = 1, n do q[1][i], q[2][i] = x[i - 1], tonumber(y[i - 1]) end
        check_grid(grid, q, n)
      end
    end)

    it("errors", function()
      local a = ffi.new("double[4]")
      assert.has_error(function() gpu.hashgrid(0) end,
        "bad argument #1 to 'hashgrid' (cell: a positive number expected, got Lua number)")
      assert.has_error(function() gpu.hashgrid(1, { dims = 4 }) end,
        "bad argument #2 to 'hashgrid' (option dims: 2 or 3 expected, got Lua number)")
      assert.has_error(function() gpu.hashgrid(1, { size = 4 }) end,
        "bad argument #2 to 'hashgrid' (unknown option 'size' (expected dim, dims))")
      assert.has_error(function() gpu.hashgrid(1, { dim = 2 ^ 11 }) end)
      local g3 = gpu.hashgrid(1)
      assert.has_error(function() g3:build(a, a) end)
      assert.has_error(function() gpu.hashgrid(1, { dims = 2 }):build(a, ffi.new("double[3]")) end,
        "bad argument #3 to 'build' (the array has 3 elements, x has 4)")
      assert.has_error(function() gpu.hashgrid(1, { dims = 2 }):build(a, a, a) end,
        "bad argument #4 to 'build' (a 2-D grid takes x and y)")
      -- a NaN or infinite coordinate has no cell: an error, never a write outside the table
      for _, bad in ipairs({ 0 / 0, math.huge, -math.huge }) do
        local g = gpu.hashgrid(1, { dims = 2, dim = 4 })
        local ok, err = pcall(g.build, g, { 1, 2, bad, 3 }, { 0, 0, 0, 0 })
        assert.is_false(ok)
        assert.matches("bad argument #2 to 'build' %(point 2 has a NaN or infinite coordinate%)", err)
        assert.equals(0, g.n)
        g:build({ 1, 2 }, { 0, 0 })   -- usable again
        assert.equals(2, g.n)
      end
    end)
  end)
end
