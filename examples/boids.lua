-- boids: a flock in a periodic 2-D world (Reynolds' alignment, cohesion
-- and separation), each boid seeing the boids within R, found with the
-- hash grid (gpu.hashgrid, docs/api.md "Neighbour search"): every step
-- rebuilds the grid from the positions (a sort on the device), then one
-- work item per boid loops over the 3 x 3 cells around it.
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

-- One step of boid i: reads the state (px, py, vx, vy) and the grid
-- (cs, ce, order), writes the new state of i into (qx, qy, ux, uy).
-- Returns how many boids i sees.
local function step(i, px, py, vx, vy, cs, ce, order, qx, qy, ux, uy)
  local x, y = px[i], py[i]
  local cx, cy = cell(x, INV), cell(y, INV)
  local n, ax, ay, mx, my, sx, sy = 0, 0, 0, 0, 0, 0, 0
  for oy = -1, 1 do
    for ox = -1, 1 do
      local s = index(cx + ox, cy + oy, DIM)
      for k = cs[s], ce[s] - 1 do
        local j = order[k]
        if j ~= i then
          local dx, dy = wrap(px[j] - x), wrap(py[j] - y)
          local d2 = dx * dx + dy * dy
          if d2 < R2 then
            n = n + 1
            ax, ay = ax + vx[j], ay + vy[j]
            mx, my = mx + dx, my + dy
            if d2 < SEP2 then sx, sy = sx - dx, sy - dy end
          end
        end
      end
    end
  end
  local wx, wy = vx[i], vy[i]
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
  qx[i], qy[i] = (x + wx * DT) % L, (y + wy * DT) % L
  ux[i], uy[i] = wx, wy
  return n
end

local flock = gpu.kernel(function(px, py, vx, vy, cs, ce, order, qx, qy, ux, uy, seen, n)
  local i = gpu.global_id(0)
  if i < n then seen[i] = step(i, px, py, vx, vy, cs, ce, order, qx, qy, ux, uy) end
end, { name = "boids" })

-- The start: boids on a jittered lattice, headings from a hash.
local init = {}
for _, f in ipairs({ "px", "py", "vx", "vy" }) do init[f] = ffi.new("double[?]", N) end
do
  local side = math.ceil(math.sqrt(N))
  local s = 7
  local function rnd()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
  for i = 0, N - 1 do
    init.px[i] = ((i % side) + rnd() * 0.5) * L / side
    init.py[i] = (math.floor(i / side) + rnd() * 0.5) * L / side
    local a = rnd() * 2 * math.pi
    init.vx[i], init.vy[i] = math.cos(a), math.sin(a)
  end
end

---------------------------------------------------------------------------
-- On the device: the state in gpu.arrays, two sets swapped every step.

local cur, nxt = {}, {}
for _, f in ipairs({ "px", "py", "vx", "vy" }) do
  cur[f] = gpu.to_device(init[f], "double")
  nxt[f] = gpu.array("double", N)
end
local seen = gpu.array("int32_t", N)
local grid = gpu.hashgrid(CELL, { dims = 2, dim = DIM })

local t0 = util.now()
for _ = 1, STEPS do
  grid:build(cur.px, cur.py)
  flock:launch(N, cur.px, cur.py, cur.vx, cur.vy, grid.cell_start, grid.cell_end, grid.order,
    nxt.px, nxt.py, nxt.vx, nxt.vy, seen, N)
  cur, nxt = nxt, cur
end
local t1 = util.now()

---------------------------------------------------------------------------
-- The check in plain LuaJIT: a host grid by counting sort, the same steps.

local function host_grid(px, py)
  local slots = DIM * DIM
  local cs, ce = ffi.new("int32_t[?]", slots), ffi.new("int32_t[?]", slots)
  local order, key = ffi.new("int32_t[?]", N), {}
  local count = {}
  for s = 0, slots - 1 do count[s] = 0 end
  for i = 0, N - 1 do
    key[i] = index(cell(px[i], INV), cell(py[i], INV), DIM)
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
for _, f in ipairs({ "px", "py", "vx", "vy" }) do
  h[f] = ffi.new("double[?]", N)
  ffi.copy(h[f], init[f], N * 8)
  hn[f] = ffi.new("double[?]", N)
end
local hseen = {}
local agree_grid = true
for st = 1, STEPS do
  local cs, ce, order = host_grid(h.px, h.py)
  if st == 1 then               -- the device's first grid, slot by slot
    local dev = {}
    grid:build(gpu.to_device(h.px, "double"), gpu.to_device(h.py, "double"))
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
    hseen[i] = step(i, h.px, h.py, h.vx, h.vy, cs, ce, order, hn.px, hn.py, hn.vx, hn.vy)
  end
  h, hn = hn, h
end

-- The last step's neighbour counts against all pairs (on the state it read).
local brute_ok = true
do
  local p = hn   -- the state before the last step
  for i = 0, N - 1, 7 do
    local c = 0
    for j = 0, N - 1 do
      if j ~= i then
        local dx, dy = wrap(p.px[j] - p.px[i]), wrap(p.py[j] - p.py[i])
        if dx * dx + dy * dy < R2 then c = c + 1 end
      end
    end
    if c ~= hseen[i] then brute_ok = false end
  end
end

local got = {}
for _, f in ipairs({ "px", "py", "vx", "vy" }) do got[f] = cur[f]:to_host() end
local gseen = seen:to_host()
local differ, seen_total = 0, 0
for i = 0, N - 1 do
  for _, f in ipairs({ "px", "py", "vx", "vy" }) do
    if got[f][i] ~= h[f][i] then differ = differ + 1 end
  end
  if gseen[i] ~= hseen[i] then differ = differ + 1 end
  seen_total = seen_total + hseen[i]
end
print(ex.check("boids", differ == 0 and agree_grid and brute_ok and seen_total > 0, string.format(
  "%s, %d boids x %d steps in %.1f ms (compile included), %.2f neighbours a boid; %d values "
    .. "differ from plain LuaJIT; grid %s; neighbour counts %s all pairs", gpu.backend(), N,
  STEPS, (t1 - t0) * 1e3, seen_total / N, differ, agree_grid and "as the host's" or "DIFFERS",
  brute_ok and "as" or "DIFFER from")))
