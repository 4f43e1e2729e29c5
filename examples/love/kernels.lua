-- The kernels of the LÖVE example (examples/love/), shared by main.lua, the
-- worker thread (worker.lua) and the script that makes the bundle of
-- precompiled kernels (make_bundle.lua), and each one's plain-LuaJIT twin
-- that the headless run checks against.
--
--   local K = require("kernels")(gpu)
local ffi = require("ffi")

return function(gpu)
  local K = {}

  -- One step of particle i: state s (x, y, vx, vy as double at s[4i ..]),
  -- gravity g, bounces off the walls of a w x h box that keep `bounce` of
  -- the speed; then the vertex v[6i ..] (x, y as float, then r, g, b, a)
  -- coloured by speed.  Shared by the kernel and the plain-Lua check.
  function K.step(s, v, i, dt, g, w, h, bounce)
    local b = 4 * i
    local vx, vy = s[b + 2], s[b + 3] + g * dt
    local x, y = s[b] + vx * dt, s[b + 1] + vy * dt
    if x < 0 then x, vx = -x, -vx * bounce end
    if x > w then x, vx = 2 * w - x, -vx * bounce end
    if y > h then y, vy = 2 * h - y, -vy * bounce end
    if y < 0 then y, vy = -y, -vy * bounce end
    s[b], s[b + 1], s[b + 2], s[b + 3] = x, y, vx, vy
    local speed = math.sqrt(vx * vx + vy * vy)
    local t = math.min(speed / 600, 1)
    local o = 6 * i
    v[o], v[o + 1] = x, y
    v[o + 2], v[o + 3], v[o + 4], v[o + 5] = 0.25 + 0.75 * t, 0.45 + 0.35 * (1 - t), 1 - 0.8 * t, 0.85
  end
  local step = K.step

  K.particles = gpu.kernel(function(s, v, n, dt, g, w, h, bounce)
    local i = gpu.global_id(0)
    if i < n then step(s, v, i, dt, g, w, h, bounce) end
  end, { name = "love_particles" })

  -- The pixel (px, py) of a w x h view of the Mandelbrot set, as RGBA bytes
  -- at img[4 (py w + px) ..]; returns the iteration count.  The worker
  -- thread draws the background with it.
  function K.pixel(img, px, py, w, h, maxit)
    local cr = -2.2 + 3.2 * px / w
    local ci = -1.2 + 2.4 * py / h
    local zr, zi, it = 0.0, 0.0, 0
    while it < maxit and zr * zr + zi * zi <= 4.0 do
      local t = zr * zr - zi * zi + cr
      zi = 2.0 * zr * zi + ci
      zr = t
      it = it + 1
    end
    local o = 4 * (py * w + px)
    local c = it < maxit and 255 * math.sqrt(it / maxit) or 0
    img[o], img[o + 1], img[o + 2], img[o + 3] = math.floor(c * 0.45), math.floor(c * 0.3), math.floor(c), 255
    return it
  end
  local pixel = K.pixel

  K.mandel = gpu.kernel(function(img, w, h, maxit)
    local px, py = gpu.global_id(0), gpu.global_id(1)
    if px < w and py < h then pixel(img, px, py, w, h, maxit) end
  end, { name = "love_mandel" })

  -- Views of memory that LÖVE owns (ByteData, ImageData) as FFI pointers:
  -- kernels write into them in place on a device that shares host memory.
  function K.floats(data) return ffi.cast("float *", data:getFFIPointer()) end
  function K.doubles(data) return ffi.cast("double *", data:getFFIPointer()) end
  function K.bytes(data) return ffi.cast("uint8_t *", data:getFFIPointer()) end

  return K
end
