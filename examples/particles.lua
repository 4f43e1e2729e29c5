-- particles: a particle system in a box: gravity, semi-implicit Euler steps,
-- and bounces off the floor that lose energy; every bounce is counted with
-- gpu.atomic_add on one shared counter.
--
--   luajit examples/particles.lua [backend] [particles] [steps]
--
-- The particles live in an array of FFI structs, as LuaJIT code keeps them:
-- the kernel reads and writes p[i].x, and `local q = p[i]` is a reference
-- into the array, as in plain LuaJIT (docs/typing.md, "Structs").
-- Checks every particle and the bounce count against the same steps in
-- plain LuaJIT.  (examples/embed/ runs a particle system from C.)
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local gpu = ex.gpu(require("gpujit"), arg)

local N = tonumber(ex.arg(arg, 2, 100000))
local STEPS = tonumber(ex.arg(arg, 3, 100))
local DT, G, RESTITUTION = 1 / 60, 9.81, 0.8

ffi.cdef("typedef struct { double x, y, z, vx, vy, vz; } particle3d;")

-- One step of particle i; 1 when it bounced.  Shared by the kernel and the
-- plain-Lua check.
local function step(p, i, dt, g, restitution)
  local q = p[i]
  q.vy = q.vy - g * dt
  q.x = q.x + q.vx * dt
  q.y = q.y + q.vy * dt
  q.z = q.z + q.vz * dt
  if q.y < 0 then
    q.y = -q.y
    q.vy = -q.vy * restitution
    return 1
  end
  return 0
end

local advance = gpu.kernel(function(p, bounces, n, dt, g, restitution)
  local i = gpu.global_id(0)
  if i < n and step(p, i, dt, g, restitution) == 1 then gpu.atomic_add(bounces, 0, 1) end
end, { name = "particles" })

local p = ffi.new("particle3d[?]", N)
for i = 0, N - 1 do
  local q = p[i]
  q.x, q.y, q.z = (i % 100) * 0.01, 0.5 + (i % 37) * 0.05, math.floor(i / 100) * 0.01
  q.vx, q.vy, q.vz = ((i * 7) % 11 - 5) * 0.1, ((i * 3) % 13) * 0.2, 0
end
local ref = ffi.new("particle3d[?]", N)
ffi.copy(ref, p, ffi.sizeof(p))
local bounces = ffi.new("int32_t[1]")

local t0 = util.now()
for _ = 1, STEPS do advance:launch(N, p, bounces, N, DT, G, RESTITUTION) end
local t1 = util.now()

local want = 0
for _ = 1, STEPS do
  for i = 0, N - 1 do want = want + step(ref, i, DT, G, RESTITUTION) end
end
local worst = 0
local pd, rd = ffi.cast("double *", p), ffi.cast("double *", ref)
for i = 0, 6 * N - 1 do
  local d = math.abs(pd[i] - rd[i]) / (1 + math.abs(rd[i]))
  if d ~= d or d > worst then worst = d end  -- a NaN stays
end
print(ex.check("particles", worst <= 1e-12 and bounces[0] == want, string.format(
  "%s, %d particles x %d steps in %.1f ms (compile included), %d bounces (plain LuaJIT: %d), "
    .. "largest difference %.3g", gpu.backend(), N, STEPS, (t1 - t0) * 1e3, bounces[0], want, worst)))
