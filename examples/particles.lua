-- particles: a particle system in a box: gravity, semi-implicit Euler steps,
-- and bounces off the floor that lose energy; every bounce is counted with
-- gpu.atomic_add on one shared counter.
--
--   luajit examples/particles.lua [backend] [particles] [steps]
--
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

-- One step of particle i (x, y, z, vx, vy, vz in p[6i ..]); 1 when it
-- bounced.  Shared by the kernel and the plain-Lua check.
local function step(p, i, dt, g, restitution)
  local b = 6 * i
  p[b + 4] = p[b + 4] - g * dt
  p[b] = p[b] + p[b + 3] * dt
  p[b + 1] = p[b + 1] + p[b + 4] * dt
  p[b + 2] = p[b + 2] + p[b + 5] * dt
  if p[b + 1] < 0 then
    p[b + 1] = -p[b + 1]
    p[b + 4] = -p[b + 4] * restitution
    return 1
  end
  return 0
end

local advance = gpu.kernel(function(p, bounces, n, dt, g, restitution)
  local i = gpu.global_id(0)
  if i < n and step(p, i, dt, g, restitution) == 1 then gpu.atomic_add(bounces, 0, 1) end
end, { name = "particles" })

local p = ffi.new("double[?]", 6 * N)
for i = 0, N - 1 do
  local b = 6 * i
  p[b], p[b + 1], p[b + 2] = (i % 100) * 0.01, 0.5 + (i % 37) * 0.05, math.floor(i / 100) * 0.01
  p[b + 3], p[b + 4], p[b + 5] = ((i * 7) % 11 - 5) * 0.1, ((i * 3) % 13) * 0.2, 0
end
local ref = ffi.new("double[?]", 6 * N)
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
for i = 0, 6 * N - 1 do
  local d = math.abs(p[i] - ref[i]) / (1 + math.abs(ref[i]))
  if d ~= d or d > worst then worst = d end  -- a NaN stays
end
print(ex.check("particles", worst <= 1e-12 and bounces[0] == want, string.format(
  "%s, %d particles x %d steps in %.1f ms (compile included), %d bounces (plain LuaJIT: %d), "
    .. "largest difference %.3g", gpu.backend(), N, STEPS, (t1 - t0) * 1e3, bounces[0], want, worst)))
