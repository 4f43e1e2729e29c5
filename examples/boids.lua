-- boids: a flock in a periodic 2-D world (Reynolds' alignment, cohesion
-- and separation), each boid seeing the boids within R, found with the
-- hash grid (gpu.hashgrid, docs/api.md "Neighbour search"): every step
-- rebuilds the grid from the positions (a sort on the device), then one
-- work item per boid loops over the 3 x 3 cells around it.  The state is
-- two multi-dimensional arrays, p[i][0], p[i][1] the position and v[i][0],
-- v[i][1] the velocity of boid i: shaped gpu.arrays of { N, 2 } doubles on
-- the device, FFI double[?][2] arrays on the host.
--
--   luajit examples/boids.lua [backend] [boids] [steps]
--
-- The world is DIM cells of CELL = R on a side and the grid's table has
-- DIM x DIM slots, so no two cells share a slot and the periodic wrap of
-- the slots is the world's.  The step is one Lua function, shared by the
-- kernel and the plain-LuaJIT check; the check builds its own grid on the
-- host (a counting sort) and runs the same steps: the positions and
-- velocities must agree bit for bit, and the grid's neighbour counts with
-- an all-pairs count.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local gpu = ex.gpu(require("gpujit"), arg)

local N = tonumber(ex.arg(arg, 2, 4000))
local STEPS = tonumber(ex.arg(arg, 3, 30))
local R = 1.0                       -- the radius a boid sees
local CELL, DIM = R, 64
local L = CELL * DIM                -- the world's side
local HALF, R2, SEP2 = L / 2, R * R, 0.3 * 0.3
local INV = 1 / CELL
local ALIGN, COHERE, SEPARATE = 0.05, 0.01, 0.05
local VMIN, VMAX, DT = 0.5, 2.0, 0.1

local cell, index = gpu.hashgrid_cell, gpu.hashgrid_index

-- The offset from a to b in the periodic world (the nearest image).
local function wrap(d)
  if d > HALF then return d - L end
  if d < -HALF then return d + L end
  return d
end

-- One step of boid i: reads the state (p, v) and the grid (cs, ce,
-- order), writes the new state of i into (q, u).  Returns how many boids
-- i sees.
local function step(i, p, v, cs, ce, order, q, u)
  local x, y = p[i][0], p[i][1]
  local cx, cy = cell(x, INV), cell(y, INV)
  local n, ax, ay, mx, my, sx, sy = 0, 0, 0, 0, 0, 0, 0
  for oy = -1, 1 do
    for ox = -1, 1 do
      local s = index(cx + ox, cy + oy, DIM)
      for k = cs[s], ce[s] - 1 do
        local j = order[k]
        if j ~= i then
          local pj = p[j]
          local dx, dy = wrap(pj[0] - x), wrap(pj[1] - y)
          local d2 = dx * dx + dy * dy
          if d2 < R2 then
            n = n + 1
            ax, ay = ax + v[j][0], ay + v[j][1]
            mx, my = mx + dx, my + dy
            if d2 < SEP2 then sx, sy = sx - dx, sy - dy end
          end
        end
      end
    end
  end
  local wx, wy = v[i][0], v[i][1]
  if n > 0 then
    wx = wx + (ax / n - wx) * ALIGN + mx / n * COHERE + sx * SEPARATE
    wy = wy + (ay / n - wy) * ALIGN + my / n * COHERE + sy * SEPARATE
  end
  local sp = math.sqrt(wx * wx + wy * wy)
  if sp > VMAX then
    wx, wy = wx / sp * VMAX, wy / sp * VMAX
  elseif sp < VMIN and sp > 0 then
    wx, wy = wx / sp * VMIN, wy / sp * VMIN
  end
  local qi, ui = q[i], u[i]
  qi[0], qi[1] = (x + wx * DT) % L, (y + wy * DT) % L
  ui[0], ui[1] = wx, wy
  return n
end

local flock = gpu.kernel(function(p, v, cs, ce, order, q, u, seen, n)
  local i = gpu.global_id(0)
  if i < n then seen[i] = step(i, p, v, cs, ce, order, q, u) end
end, { name = "boids" })

-- The start: boids on a jittered lattice, headings from a hash.
local init = { p = ffi.new("double[?][2]", N), v = ffi.new("double[?][2]", N) }
do
  local side = math.ceil(math.sqrt(N))
  local s = 7
  local function rnd()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
  for i = 0, N - 1 do
    init.p[i][0] = ((i % side) + rnd() * 0.5) * L / side
    init.p[i][1] = (math.floor(i / side) + rnd() * 0.5) * L / side
    local a = rnd() * 2 * math.pi
    init.v[i][0], init.v[i][1] = math.cos(a), math.sin(a)
  end
end

---------------------------------------------------------------------------
-- On the device: the state in shaped gpu.arrays of { N, 2 }, two sets
-- swapped every step.

local cur, nxt = {}, {}
for _, f in ipairs({ "p", "v" }) do
  cur[f] = gpu.to_device(init[f])   -- a double[?][2]: a gpu.array of { N, 2 }
  nxt[f] = gpu.array("double", { N, 2 })
end
local seen = gpu.array("int32_t", N)
local grid = gpu.hashgrid(CELL, { dims = 2, dim = DIM })

local t0 = util.now()
for _ = 1, STEPS do
  grid:build(cur.p)
  flock:launch(N, cur.p, cur.v, grid.cell_start, grid.cell_end, grid.order, nxt.p, nxt.v, seen, N)
  cur, nxt = nxt, cur
end
local t1 = util.now()

---------------------------------------------------------------------------
-- The check in plain LuaJIT: a host grid by counting sort, the same steps.

local function host_grid(p)
  local slots = DIM * DIM
  local cs, ce = ffi.new("int32_t[?]", slots), ffi.new("int32_t[?]", slots)
  local order, key = ffi.new("int32_t[?]", N), {}
  local count = {}
  for s = 0, slots - 1 do count[s] = 0 end
  for i = 0, N - 1 do
    key[i] = index(cell(p[i][0], INV), cell(p[i][1], INV), DIM)
    count[key[i]] = count[key[i]] + 1
  end
  local at = 0
  for s = 0, slots - 1 do
    cs[s], ce[s] = at, at
    at = at + count[s]
  end
  for i = 0, N - 1 do          -- in index order: stable, as the device's sort
    local s = key[i]
    order[ce[s]] = i
    ce[s] = ce[s] + 1
  end
  return cs, ce, order
end

local h, hn = {}, {}
for _, f in ipairs({ "p", "v" }) do
  h[f] = ffi.new("double[?][2]", N)
  ffi.copy(h[f], init[f], N * 16)
  hn[f] = ffi.new("double[?][2]", N)
end
local hseen = {}
local agree_grid = true
for st = 1, STEPS do
  local cs, ce, order = host_grid(h.p)
  if st == 1 then               -- the device's first grid, slot by slot
    local dev = {}
    grid:build(gpu.to_device(h.p))
    dev.cs, dev.ce, dev.order = grid.cell_start:to_host(), grid.cell_end:to_host(), grid.order:to_host()
    for s = 0, DIM * DIM - 1 do   -- an empty slot: start == end, wherever
      local empty = cs[s] == ce[s]
      if empty ~= (dev.cs[s] == dev.ce[s]) or not empty and (dev.cs[s] ~= cs[s]
          or dev.ce[s] ~= ce[s]) then agree_grid = false end
    end
    for k = 0, N - 1 do
      if dev.order[k] ~= order[k] then agree_grid = false end
    end
  end
  for i = 0, N - 1 do
    hseen[i] = step(i, h.p, h.v, cs, ce, order, hn.p, hn.v)
  end
  h, hn = hn, h
end

-- The last step's neighbour counts against all pairs (on the state it read).
local brute_ok = true
do
  local p = hn.p   -- the state before the last step
  for i = 0, N - 1, 7 do
    local c = 0
    for j = 0, N - 1 do
      if j ~= i then
        local dx, dy = wrap(p[j][0] - p[i][0]), wrap(p[j][1] - p[i][1])
        if dx * dx + dy * dy < R2 then c = c + 1 end
      end
    end
    if c ~= hseen[i] then brute_ok = false end
  end
end

local got = {}
for _, f in ipairs({ "p", "v" }) do got[f] = cur[f]:to_host() end   -- double[?][2]
local gseen = seen:to_host()
local differ, seen_total = 0, 0
for i = 0, N - 1 do
  for _, f in ipairs({ "p", "v" }) do
    for c = 0, 1 do
      if got[f][i][c] ~= h[f][i][c] then differ = differ + 1 end
    end
  end
  if gseen[i] ~= hseen[i] then differ = differ + 1 end
  seen_total = seen_total + hseen[i]
end
print(ex.check("boids", differ == 0 and agree_grid and brute_ok and seen_total > 0, string.format(
  "%s, %d boids x %d steps in %.1f ms (compile included), %.2f neighbours a boid; %d values "
    .. "differ from plain LuaJIT; grid %s; neighbour counts %s all pairs", gpu.backend(), N,
  STEPS, (t1 - t0) * 1e3, seen_total / N, differ, agree_grid and "as the host's" or "DIFFERS",
  brute_ok and "as" or "DIFFER from")))
