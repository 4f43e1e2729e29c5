-- The per-frame script of examples/embed/host.c: one particle system whose
-- positions and velocities (x, y, z doubles per particle) are C arrays owned
-- by the host.  The host opened gpujit in this lua_State with
-- luaopen_gpujit and set the globals `gpu`, `gravity`, `fail_at_frame`
-- (a frame on which this script raises an error: a kernel that does not
-- compile) and `backend` (nil: the default one).
local ffi = require("ffi")
-- luacheck: read globals gpu gravity fail_at_frame backend no_such_function, globals update

if backend then gpu.use(backend) end

-- Semi-implicit Euler: gravity pulls y down, then every coordinate moves by
-- its velocity.  The host's C reference does the same operations in the
-- same order.
local step = gpu.kernel(function(p, v, n, g, dt)
  local i = gpu.global_id(0)
  if i < n then
    local b = 3 * i
    v[b + 1] = v[b + 1] - g * dt
    p[b] = p[b] + v[b] * dt
    p[b + 1] = p[b + 1] + v[b + 1] * dt
    p[b + 2] = p[b + 2] + v[b + 2] * dt
  end
end, { name = "particles_step" })

-- The injected error: a call to a function that does not exist, a compile
-- error naming this file and line (on the sim backend, the same Lua error
-- as outside a kernel).
local broken = gpu.kernel(function(p, n)
  local i = gpu.global_id(0)
  if i < n then p[i] = no_such_function(i) end
end, { name = "broken" })
local junk = ffi.new("double[1]")

-- A device that shares host memory (the cpu backend) works on the host's
-- arrays in place; another one gets copies, staged through FFI arrays that
-- the launch copies to the device and back.
local in_place = gpu.device().host_shared
local sp, sv

-- Called by the host once a frame; pos and vel are light userdata pointing
-- at the host's double[3 * n] arrays.
function update(frame, dt, pos, vel, n)
  local p, v = ffi.cast("double *", pos), ffi.cast("double *", vel)
  if frame == fail_at_frame then broken:launch(1, junk, 1) end
  if in_place then
    step:launch(n, p, v, n, gravity, dt)
    return
  end
  local bytes = 3 * n * ffi.sizeof("double")
  if not sp or ffi.sizeof(sp) ~= bytes then
    sp, sv = ffi.new("double[?]", 3 * n), ffi.new("double[?]", 3 * n)
  end
  ffi.copy(sp, p, bytes)
  ffi.copy(sv, v, bytes)
  step:launch(n, sp, sv, n, gravity, dt)
  ffi.copy(p, sp, bytes)
  ffi.copy(v, sv, bytes)
end
