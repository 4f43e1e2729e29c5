-- nbody_vec3: the n-body of nbody.lua written as LuaJIT code keeps its
-- vector math, with an FFI metatype: `vec3` has __add, __sub, __mul (v * s
-- and s * v), __unm, __len and a `dot` method, and the kernels use them as
-- plain LuaJIT does (docs/typing.md, "Metatypes"): each metamethod is
-- compiled as a device function.
--
--   luajit examples/nbody_vec3.lua [backend] [bodies] [steps]
--
-- Checks every position and velocity against the same steps in plain
-- LuaJIT: equal bit for bit (doubles, the same operations in the same order).
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local gpu = ex.gpu(require("gpujit"), arg)

local N = tonumber(ex.arg(arg, 2, 1024))
local STEPS = tonumber(ex.arg(arg, 3, 4))
local DT, EPS2 = 0.01, 1e-3   -- time step, softening (squared)

ffi.cdef "typedef struct { double x, y, z; } nbody_vec3;"
local vec3
vec3 = ffi.metatype("nbody_vec3", {
  __add = function(a, b) return vec3(a.x + b.x, a.y + b.y, a.z + b.z) end,
  __sub = function(a, b) return vec3(a.x - b.x, a.y - b.y, a.z - b.z) end,
  __mul = function(a, b)
    if type(a) == "number" then return vec3(a * b.x, a * b.y, a * b.z) end
    return vec3(a.x * b, a.y * b, a.z * b)
  end,
  __unm = function(a) return vec3(-a.x, -a.y, -a.z) end,
  __len = function(a) return math.sqrt(a:dot(a)) end,
  __index = {
    dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end,
  },
})

-- The acceleration of body i (pos: vec3[], mass: double[]): the kernel
-- calls it as a device function, the check from plain LuaJIT.
local function acceleration(pos, mass, i, n, eps2)
  local pi = pos[i]
  local acc = vec3(0, 0, 0)
  for j = 0, n - 1 do
    local d = pos[j] - pi
    local d2 = d:dot(d) + eps2
    acc = acc + d * (mass[j] / (d2 * math.sqrt(d2)))
  end
  return acc
end

local accelerate = gpu.kernel(function(pos, mass, vel, n, dt, eps2)
  local i = gpu.global_id(0)
  if i < n then vel[i] = vel[i] + dt * acceleration(pos, mass, i, n, eps2) end
end, { name = "nbody_vec3_accelerate" })

local move = gpu.kernel(function(pos, vel, n, dt)
  local i = gpu.global_id(0)
  if i < n then pos[i] = pos[i] + vel[i] * dt end
end, { name = "nbody_vec3_move" })

-- A disc of bodies on circular-ish orbits around a heavy one at the centre
-- (the bodies of nbody.lua).
local pos, vel = ffi.new("nbody_vec3[?]", N), ffi.new("nbody_vec3[?]", N)
local mass = ffi.new("double[?]", N)
for i = 0, N - 1 do
  local a, r = i * 2.399963, 0.2 + (i % 97) / 97
  pos[i] = vec3(r * math.cos(a), r * math.sin(a), 0.01 * ((i % 7) - 3))
  vel[i] = vec3(-math.sin(a) / math.sqrt(r), math.cos(a) / math.sqrt(r), 0)
  mass[i] = i == 0 and 10.0 or 1.0 / N
end
if N > 0 then pos[0], vel[0] = vec3(), vec3() end
local rpos, rvel = ffi.new("nbody_vec3[?]", N), ffi.new("nbody_vec3[?]", N)
ffi.copy(rpos, pos, ffi.sizeof(pos))
ffi.copy(rvel, vel, ffi.sizeof(vel))

local t0 = util.now()
for _ = 1, STEPS do
  accelerate:launch(N, pos, mass, vel, N, DT, EPS2)
  move:launch(N, pos, vel, N, DT)
end
local t1 = util.now()

-- Plain LuaJIT: the same steps, the same functions.
for _ = 1, STEPS do
  for i = 0, N - 1 do rvel[i] = rvel[i] + DT * acceleration(rpos, mass, i, N, EPS2) end
  for i = 0, N - 1 do rpos[i] = rpos[i] + rvel[i] * DT end
end

local differ, energy = 0, 0
for i = 0, N - 1 do
  if ffi.string(pos + i, 24) ~= ffi.string(rpos + i, 24)
    or ffi.string(vel + i, 24) ~= ffi.string(rvel + i, 24) then
    differ = differ + 1
  end
  energy = energy + 0.5 * mass[i] * (#vel[i]) ^ 2
end
print(ex.check("nbody_vec3", differ == 0, string.format(
  "%s, %d bodies x %d steps in %.1f ms (compile included), %d bodies differ from plain "
    .. "LuaJIT bit for bit, kinetic energy %.6g", gpu.backend(), N, STEPS, (t1 - t0) * 1e3,
  differ, energy)))
