-- gpujit.hashgrid: neighbour search on a uniform grid hashed into a fixed
-- table of cells, gpu.hashgrid(cell [, opts]) (docs/api.md, "Neighbour
-- search"), built on the primitives: the sort and kernels of its own.
--
-- A point (x, y [, z]) is in cell (cx, cy [, cz]) = floor(coordinate /
-- cell); the cell's slot in the table of dim^2 (dim^3) slots is
-- index(cx, cy [, cz], dim) = cx % dim + dim * (cy % dim [+ dim * (cz %
-- dim)]) (each % in [0, dim)), so cells dim apart share a slot: the
-- table covers all of space, periodically (a world of dim * cell on a side
-- has no two cells in one slot).  grid:build(x, y [, z]) computes each
-- point's slot, sorts the point indices by slot (the radix sort: stable,
-- so the points of a slot are in index order) into grid.order, and marks
-- where each slot's run starts and ends in grid.cell_start / grid.cell_end
-- (equal for an empty slot).  A kernel loops over the slots around a
-- point with the device functions below and, for each, over order[k] for
-- k in [cell_start[c], cell_end[c]): every point within `cell` of the
-- query point is in the 3^2 (3^3) cells around its own, and may be listed
-- once per slot those cells hash to (so dim >= 3 lists it once).  The
-- query checks distances itself: a slot also holds far points aliased
-- into it.
local ffi = require("ffi")
local types = require("gpujit.types")
local P = require("gpujit.prims")
local S = require("gpujit.prims_sort")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}
local argerr, i64 = P.argerr, P.i64

---------------------------------------------------------------------------
-- Device functions: the query's helpers, in the kernel subset (a kernel
-- calls them as gpu.hashgrid_cell(x, inv_cell), gpu.hashgrid_index(cx, cy,
-- dim), gpu.hashgrid_index3(cx, cy, cz, dim)).

-- The cell coordinate of x (inv_cell = 1 / cell).
function M.cell(x, inv_cell)
  return math.floor(x * inv_cell)
end

-- c modulo dim in [0, dim) (LuaJIT's % on int64_t cdata, as on C
-- integers, takes the sign of c: a kernel's dim may be one).
local function wrap(c, dim)
  local m = c % dim
  if m < 0 then m = m + dim end
  return m
end

-- The slot of cell (cx, cy) in a 2-D table of dim^2 slots.
function M.index(cx, cy, dim)
  return wrap(cx, dim) + dim * wrap(cy, dim)
end

-- The slot of cell (cx, cy, cz) in a 3-D table of dim^3 slots.
function M.index3(cx, cy, cz, dim)
  return wrap(cx, dim) + dim * (wrap(cy, dim) + dim * wrap(cz, dim))
end

local cell, index, index3 = M.cell, M.index, M.index3

---------------------------------------------------------------------------
-- Build kernels.

-- Point i's slot s into key[i] (order[i] = i).  A slot outside [0, slots)
-- (a NaN or infinite coordinate) is stored as 0 and flagged: bad[0] = the
-- point's index + 1 (one of them).  A device function of the four key
-- kernels below.
local function put_key(s, i, key, order, bad, slots)
  if not (s >= 0 and s < slots) then
    s = 0
    bad[0] = i + 1
  end
  key[i] = s
  order[i] = i
end

local function make_keys2()
  return function(x, y, key, order, bad, inv, dim, slots, n)
    local i = gpu.global_id(0)
    if i < n then
      local s = index(cell(x[i], inv), cell(y[i], inv), dim)
      put_key(s, i, key, order, bad, slots)
    end
  end
end

local function make_keys3()
  return function(x, y, z, key, order, bad, inv, dim, slots, n)
    local i = gpu.global_id(0)
    if i < n then
      local s = index3(cell(x[i], inv), cell(y[i], inv), cell(z[i], inv), dim)
      put_key(s, i, key, order, bad, slots)
    end
  end
end

-- The same from points p[i][0], p[i][1] [, p[i][2]] (a shaped array of
-- { n, dims }).
local function make_keys2p()
  return function(p, key, order, bad, inv, dim, slots, n)
    local i = gpu.global_id(0)
    if i < n then
      local s = index(cell(p[i][0], inv), cell(p[i][1], inv), dim)
      put_key(s, i, key, order, bad, slots)
    end
  end
end

local function make_keys3p()
  return function(p, key, order, bad, inv, dim, slots, n)
    local i = gpu.global_id(0)
    if i < n then
      local s = index3(cell(p[i][0], inv), cell(p[i][1], inv), cell(p[i][2], inv), dim)
      put_key(s, i, key, order, bad, slots)
    end
  end
end

local function make_bounds()
  return function(key, cs, ce, n)
    local i = gpu.global_id(0)
    if i < n then
      local k = key[i]
      if i == 0 or key[i - 1] ~= k then cs[k] = i end
      if i == n - 1 or key[i + 1] ~= k then ce[k] = i + 1 end
    end
  end
end

---------------------------------------------------------------------------
-- The grid object.

local Grid = {}
Grid.__index = Grid

local OPTS = { dim = true, dims = true }

-- gpu.hashgrid(cell [, opts]) -> grid
function M.new(cellsize, opts)
  local fname = "hashgrid"
  if type(cellsize) ~= "number" or cellsize ~= cellsize or cellsize <= 0 or cellsize == math.huge then
    argerr(1, fname, "cell: a positive number expected, got " .. types.describe(cellsize), 2)
  end
  local o = P.options(opts, 2, fname, OPTS, 2)
  local dims = o.dims or 3
  if dims ~= 2 and dims ~= 3 then
    argerr(2, fname, "option dims: 2 or 3 expected, got " .. types.describe(o.dims), 2)
  end
  local dim = o.dim or (dims == 2 and 256 or 64)
  if type(dim) ~= "number" or dim < 1 or dim % 1 ~= 0 or dim ^ dims >= 2 ^ 31 then
    argerr(2, fname, "option dim: a whole number >= 1 with dim^" .. dims .. " < 2^31 expected, "
      .. "got " .. types.describe(o.dim), 2)
  end
  return setmetatable({ cell = cellsize, inv_cell = 1 / cellsize, dim = dim, dims = dims,
    slots = dim ^ dims, n = 0 }, Grid)
end

-- A shaped array of points { n, dims } (a gpu.array or an FFI array of
-- numbers), classified by hand (the primitives take one-dimensional
-- arrays only); nil for anything else.
local function points_arg(v, dims)
  if type(v) ~= "cdata" then return nil end
  local info = types.ctype_info(v)
  if not (info and info.dims and #info.dims == 1 and info.dims[1] == dims) then return nil end
  if info.kind == "garray" then
    if v.ptr == nil then argerr(2, "build", "the gpu.array has been freed", 3) end
    return { kind = "garray", elem = info.elem, n = #v, value = v, argn = 2 }
  end
  return { kind = "farray", elem = info.elem, n = info.len or ffi.sizeof(v) / info.esize,
           value = v, argn = 2 }
end

-- grid:build(x, y [, z]): the points (x[i], y[i] [, z[i]]), i < n; or
-- grid:build(points): the points (p[i][0], p[i][1] [, p[i][2]]) of a shaped
-- array of { n, dims } (gpu.array(ct, { n, 2 }), ffi.new("double[?][2]", n))
function Grid:build(x, y, z)
  local fname = "build"
  if getmetatable(self) ~= Grid then
    argerr(1, fname, "a hashgrid expected (grid:build(x, y [, z]) or grid:build(points))", 2)
  end
  local PT = y == nil and z == nil and points_arg(x, self.dims)
  if PT then
    if not (types.is_int[PT.elem] or types.is_float[PT.elem]) then
      argerr(2, fname, "coordinates of type " .. PT.elem .. ": expected numbers", 2)
    end
    return self:_build_points(PT, fname)
  end
  local X = P.arg(x, 2, fname, false, 2)
  local Y = P.arg(y, 3, fname, false, 2)
  local Z = P.arg(z, 4, fname, self.dims == 2, 2)
  if self.dims == 2 and z ~= nil then
    argerr(4, fname, "a 2-D grid takes x and y", 2)
  end
  for _, A in ipairs({ X, Y, Z }) do
    if not (types.is_int[A.elem] or types.is_float[A.elem]) then
      argerr(A.argn, fname, "coordinates of type " .. A.elem .. ": expected numbers", 2)
    end
    if A.n ~= X.n then
      argerr(A.argn, fname, "the array has " .. A.n .. " elements, x has " .. X.n, 2)
    end
  end
  local n = X.n
  if n >= 2 ^ 31 then argerr(2, fname, "at most 2^31 - 1 points", 2) end
  local g = P.env_gpu()
  P.run({ X, Y, Z }, fname, function(tgt)
    local dev = tgt.entry
    if self.cell_start == nil or self.target ~= tgt then
      self.cell_start = g.array("int32_t", self.slots, dev)
      self.cell_end = g.array("int32_t", self.slots, dev)
      self.target = tgt
    end
    if self.order == nil or #self.order ~= n then
      self.order = g.array("int32_t", n, dev)
      self.keys = g.array("int32_t", n, dev)
    end
    g.fill(self.cell_start, 0)
    g.fill(self.cell_end, 0)
    self.n = n
    if n == 0 then return end
    local dx, dy = P.to_dev(X, tgt, fname), P.to_dev(Y, tgt, fname)
    local bad = P.scratch(tgt, "int64_t", 1, "hashgrid_bad")
    g.fill(bad, 0)
    if Z then
      P.elementwise(tgt, "hashgrid_keys3", make_keys3, n, dx, dy, P.to_dev(Z, tgt, fname),
        self.keys, self.order, bad, self.inv_cell, self.dim, self.slots, i64(n))
    else
      P.elementwise(tgt, "hashgrid_keys2", make_keys2, n, dx, dy, self.keys, self.order, bad,
        self.inv_cell, self.dim, self.slots, i64(n))
    end
    local b = tonumber(P.read1(bad, "int64_t"))
    if b ~= 0 then
      self.n = 0
      error(("bad argument #2 to 'build' (point %d has a NaN or infinite coordinate)"):format(
        b - 1), 0)
    end
    S.sort(self.keys, self.order)
    P.elementwise(tgt, "hashgrid_bounds", make_bounds, n, self.keys, self.cell_start,
      self.cell_end, i64(n))
  end)
  return self
end

-- The grid's arrays on tgt for n points (made or kept), emptied.
function Grid:_arrays(tgt, n, g)
  local dev = tgt.entry
  if self.cell_start == nil or self.target ~= tgt then
    self.cell_start = g.array("int32_t", self.slots, dev)
    self.cell_end = g.array("int32_t", self.slots, dev)
    self.target = tgt
  end
  if self.order == nil or #self.order ~= n then
    self.order = g.array("int32_t", n, dev)
    self.keys = g.array("int32_t", n, dev)
  end
  g.fill(self.cell_start, 0)
  g.fill(self.cell_end, 0)
  self.n = n
end

-- grid:build(points), PT the classified points.
function Grid:_build_points(PT, fname)
  local n = PT.n
  if n >= 2 ^ 31 then argerr(2, fname, "at most 2^31 - 1 points", 3) end
  local g = P.env_gpu()
  P.run({ PT }, fname, function(tgt)
    self:_arrays(tgt, n, g)
    if n == 0 then return end
    local dp = PT.value
    if PT.kind == "farray" then dp = g.to_device(dp, nil, tgt.entry) end   -- its shape kept
    local bad = P.scratch(tgt, "int64_t", 1, "hashgrid_bad")
    g.fill(bad, 0)
    P.elementwise(tgt, self.dims == 3 and "hashgrid_keys3p" or "hashgrid_keys2p",
      self.dims == 3 and make_keys3p or make_keys2p, n, dp, self.keys, self.order, bad,
      self.inv_cell, self.dim, self.slots, i64(n))
    local b = tonumber(P.read1(bad, "int64_t"))
    if b ~= 0 then
      self.n = 0
      error(("bad argument #2 to 'build' (point %d has a NaN or infinite coordinate)"):format(
        b - 1), 0)
    end
    S.sort(self.keys, self.order)
    P.elementwise(tgt, "hashgrid_bounds", make_bounds, n, self.keys, self.cell_start,
      self.cell_end, i64(n))
  end, 4)
  return self
end

M.api = { hashgrid = M.new, hashgrid_cell = M.cell, hashgrid_index = M.index,
  hashgrid_index3 = M.index3 }

return M
