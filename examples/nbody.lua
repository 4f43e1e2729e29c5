-- nbody: gravitational n-body, all pairs, a few leapfrog-style steps: one
-- kernel gives each body its acceleration from every other body and
-- updates its velocity, a second moves every body.
--
--   luajit examples/nbody.lua [backend] [bodies] [steps]
--
-- Checks every position and velocity against the same steps in plain
-- LuaJIT (doubles, the same order of operations: equal to 1e-12).
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local gpu = ex.gpu(require("gpujit"), arg)

local N = tonumber(ex.arg(arg, 2, 1024))
local STEPS = tonumber(ex.arg(arg, 3, 4))
local DT, EPS2 = 0.01, 1e-3   -- time step, softening (squared)

-- p: x, y, z, mass per body; v: vx, vy, vz per body.  The acceleration of
-- body i: the kernel calls this as a device function, the check from plain
-- LuaJIT.
local function acceleration(p, i, n, eps2)
  local xi, yi, zi = p[4 * i], p[4 * i + 1], p[4 * i + 2]
  local ax, ay, az = 0.0, 0.0, 0.0
  for j = 0, n - 1 do
    local dx, dy, dz = p[4 * j] - xi, p[4 * j + 1] - yi, p[4 * j + 2] - zi
    local d2 = dx * dx + dy * dy + dz * dz + eps2
    local s = p[4 * j + 3] / (d2 * math.sqrt(d2))
    ax, ay, az = ax + s * dx, ay + s * dy, az + s * dz
  end
  return ax, ay, az
end

local accelerate = gpu.kernel(function(p, v, n, dt, eps2)
  local i = gpu.global_id(0)
  if i < n then
    local ax, ay, az = acceleration(p, i, n, eps2)
    v[3 * i] = v[3 * i] + ax * dt
    v[3 * i + 1] = v[3 * i + 1] + ay * dt
    v[3 * i + 2] = v[3 * i + 2] + az * dt
  end
end, { name = "nbody_accelerate" })

local move = gpu.kernel(function(p, v, n, dt)
  local i = gpu.global_id(0)
  if i < n then
    p[4 * i] = p[4 * i] + v[3 * i] * dt
    p[4 * i + 1] = p[4 * i + 1] + v[3 * i + 1] * dt
    p[4 * i + 2] = p[4 * i + 2] + v[3 * i + 2] * dt
  end
end, { name = "nbody_move" })

-- A disc of bodies on circular-ish orbits around a heavy one at the centre.
local p, v = ffi.new("double[?]", 4 * N), ffi.new("double[?]", 3 * N)
for i = 0, N - 1 do
  local a, r = i * 2.399963, 0.2 + (i % 97) / 97
  p[4 * i], p[4 * i + 1], p[4 * i + 2] = r * math.cos(a), r * math.sin(a), 0.01 * ((i % 7) - 3)
  p[4 * i + 3] = i == 0 and 10.0 or 1.0 / N
  v[3 * i], v[3 * i + 1], v[3 * i + 2] = -math.sin(a) / math.sqrt(r), math.cos(a) / math.sqrt(r), 0
end
if N > 0 then p[0], p[1], p[2], v[0], v[1] = 0, 0, 0, 0, 0 end
local rp, rv = ffi.new("double[?]", 4 * N), ffi.new("double[?]", 3 * N)
ffi.copy(rp, p, ffi.sizeof(p))
ffi.copy(rv, v, ffi.sizeof(v))

local t0 = util.now()
for _ = 1, STEPS do
  accelerate:launch(N, p, v, N, DT, EPS2)
  move:launch(N, p, v, N, DT)
end
local t1 = util.now()

-- Plain LuaJIT: the same steps.
for _ = 1, STEPS do
  for i = 0, N - 1 do
    local ax, ay, az = acceleration(rp, i, N, EPS2)
    rv[3 * i], rv[3 * i + 1], rv[3 * i + 2] = rv[3 * i] + ax * DT, rv[3 * i + 1] + ay * DT,
      rv[3 * i + 2] + az * DT
  end
  for i = 0, N - 1 do
    for k = 0, 2 do rp[4 * i + k] = rp[4 * i + k] + rv[3 * i + k] * DT end
  end
end

local worst = 0
for i = 0, N - 1 do
  for k = 0, 2 do
    local dp = math.abs(p[4 * i + k] - rp[4 * i + k]) / (1 + math.abs(rp[4 * i + k]))
    local dv = math.abs(v[3 * i + k] - rv[3 * i + k]) / (1 + math.abs(rv[3 * i + k]))
    if dp ~= dp or dp > worst then worst = dp end  -- a NaN stays
    if dv ~= dv or dv > worst then worst = dv end
  end
end
print(ex.check("nbody", worst <= 1e-12, string.format(
  "%s, %d bodies x %d steps in %.1f ms (compile included), largest difference from plain "
    .. "LuaJIT %.3g", gpu.backend(), N, STEPS, (t1 - t0) * 1e3, worst)))
