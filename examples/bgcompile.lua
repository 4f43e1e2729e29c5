-- bgcompile: a LÖVE-style game loop whose first frame does not wait for the
-- kernel's compile.  Frame 1 starts `k:compile(types, { async = true })`
-- and every frame moves the particles with a Lua fallback (the same update
-- function, called per particle on the host) until `h:done()`; from then on
-- the kernel moves them.  120 frames at a fake 60 Hz (each frame sleeps
-- until its 16.7 ms are up, as vsync would); no LÖVE needed.
--
--   luajit examples/bgcompile.lua [backend] [particles]
--
-- Prints how many frames ran before the kernel was ready, the longest
-- frame's work time and the compile's wall time, and checks the particles
-- against a reference run of the Lua fallback alone (exit status 1 when
-- they differ).
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local gpu = ex.gpu(require("gpujit"), arg)
local util = require("gpujit.util")

local N = tonumber(ex.arg(arg, 2, 4096))
local FRAMES, DT = 120, 1 / 60
pcall(ffi.cdef, "int usleep(unsigned int usec);")

-- One particle's step: bounce inside the unit box under gravity and drag.
-- Both the kernel and the Lua fallback call it.
local function update(x, y, vx, vy, dt)
  vy = vy - 9.81 * dt
  vx, vy = vx * (1 - 0.1 * dt), vy * (1 - 0.1 * dt)
  x, y = x + vx * dt, y + vy * dt
  if x < 0 then x, vx = -x, -vx elseif x > 1 then x, vx = 2 - x, -vx end
  if y < 0 then y, vy = -y, -vy * 0.9 elseif y > 1 then y, vy = 2 - y, -vy end
  return x, y, vx, vy
end

local step = gpu.kernel(function(px, py, vx, vy, n, dt)
  local i = gpu.global_id()
  if i < n then
    px[i], py[i], vx[i], vy[i] = update(px[i], py[i], vx[i], vy[i], dt)
  end
end, { name = "particles_step", cache = false })   -- cache = false: every run shows the
-- compile; a game keeps the disk cache, and a kernel found there is ready in a frame or two

local function lua_step(px, py, vx, vy, n, dt)
  for i = 0, n - 1 do
    px[i], py[i], vx[i], vy[i] = update(px[i], py[i], vx[i], vy[i], dt)
  end
end

local function particles()
  local p = {}
  for _, k in ipairs({ "px", "py", "vx", "vy" }) do p[k] = ffi.new("double[?]", N) end
  for i = 0, N - 1 do
    p.px[i], p.py[i] = (i % 64) / 64, math.floor(i / 64) % 64 / 64
    p.vx[i], p.vy[i] = ((i * 37) % 101) / 101 - 0.5, ((i * 53) % 97) / 97 - 0.5
  end
  return p
end

local p, ref = particles(), particles()
local h, t_start, t_ready
local ready_at             -- the first frame the kernel ran
local longest, first = 0, 0
local n, dt = ffi.new("int32_t", N), DT   -- the launch's types: the compile's
for frame = 1, FRAMES do
  local t0 = util.now()
  if frame == 1 then
    t_start = t0
    h = step:compile({ "double[]", "double[]", "double[]", "double[]", "int32_t", "double" },
                     { async = true })
  end
  if not ready_at and h:done() then
    h:wait()                 -- raises a compile error, if there was one
    ready_at, t_ready = frame, util.now()
  end
  if ready_at then
    step:launch(N, p.px, p.py, p.vx, p.vy, n, dt)
  else
    lua_step(p.px, p.py, p.vx, p.vy, N, dt)
  end
  lua_step(ref.px, ref.py, ref.vx, ref.vy, N, dt)   -- the check's reference
  local work = util.now() - t0
  if frame == 1 then first = work end
  if work > longest then longest = work end
  local left = DT - (util.now() - t0)                -- "vsync"
  if left > 0 then ffi.C.usleep(math.floor(left * 1e6)) end
end
if not ready_at then         -- a slow machine: the compile outlasted the loop
  h:wait()
  t_ready = util.now()
  step:launch(N, p.px, p.py, p.vx, p.vy, n, dt)
  lua_step(ref.px, ref.py, ref.vx, ref.vy, N, dt)
end

local compile_ms = (t_ready - t_start) * 1e3
print(string.format("%s: kernel ready at frame %s (%d frames drew with the Lua fallback); "
  .. "compile %.0f ms in the background; longest frame %.1f ms, first frame %.1f ms",
  gpu.backend(), tostring(ready_at or "(after the loop)"), (ready_at or FRAMES + 1) - 1,
  compile_ms, longest * 1e3, first * 1e3))
local ok, why = true, ""
for _, k in ipairs({ "px", "py", "vx", "vy" }) do
  local same, msg = util.compare("double", p[k], ref[k], N, { ulps = 64, label = k })
  if not same then ok, why = false, msg end
end
print(ex.check("bgcompile", ok and (first * 1e3 < compile_ms or ready_at == 1), ok and string.format(
  "%d particles after %d frames match the Lua fallback's; the first frame took %.1f ms of "
  .. "the compile's %.0f ms", N, FRAMES, first * 1e3, compile_ms) or why))
