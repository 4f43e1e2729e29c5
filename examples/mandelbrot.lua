-- mandelbrot: the Mandelbrot set, one work item per pixel (a 2-D launch),
-- written as a PNG image (docs/img/mandelbrot.png is its output).
--
--   luajit examples/mandelbrot.lua [backend] [out.png]   (paths: README.md)
--
-- The escape-time loop is a plain Lua function: the kernel calls it as a
-- device function, and the check runs the very same function in plain
-- LuaJIT for every pixel; every iteration count must agree.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local png = require("png")
local gpu = ex.gpu(require("gpujit"), arg)

local W, H, MAXIT = 640, 400, 256
local X0, Y0, STEP = -2.3, -1.25, 2.5 / H

-- Iterations before z = z^2 + c leaves the disc of radius 2 (at most maxit).
local function escape(cr, ci, maxit)
  local zr, zi, n = 0.0, 0.0, 0
  while n < maxit and zr * zr + zi * zi <= 4.0 do
    zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    n = n + 1
  end
  return n
end

local mandelbrot = gpu.kernel(function(out, w, h, x0, y0, step, maxit)
  local px, py = gpu.global_id(0), gpu.global_id(1)
  if px < w and py < h then
    out[py * w + px] = escape(x0 + px * step, y0 + py * step, maxit)
  end
end, { name = "mandelbrot" })

local counts = ffi.new("int32_t[?]", W * H)
local t0 = util.now()
mandelbrot:launch({ global = { W, H }, group = { 16, 16 } }, counts, W, H, X0, Y0, STEP, MAXIT)
local t1 = util.now()

-- Colours: Bernstein polynomials of the log of the iteration count, black
-- inside the set.
local rgb = ffi.new("uint8_t[?]", W * H * 3)
for i = 0, W * H - 1 do
  local n = counts[i]
  if n < MAXIT then
    local t = math.log(n + 1) / math.log(MAXIT)
    local u = 1 - t
    rgb[3 * i] = math.min(255, math.floor(255 * 9 * u * t ^ 3 + 0.5))
    rgb[3 * i + 1] = math.min(255, math.floor(255 * 15 * u ^ 2 * t ^ 2 + 0.5))
    rgb[3 * i + 2] = math.min(255, math.floor(255 * 8.5 * u ^ 3 * t + 0.5))
  end
end
local path = ex.arg(arg, 2, ex.out("mandelbrot.png"))
png.write(path, W, H, 3, rgb)

local bad = 0
for py = 0, H - 1 do
  for px = 0, W - 1 do
    if counts[py * W + px] ~= escape(X0 + px * STEP, Y0 + py * STEP, MAXIT) then bad = bad + 1 end
  end
end
print(ex.check("mandelbrot", bad == 0, string.format(
  "%s, %dx%d pixels in %.1f ms (first launch, compile included), %d differ from plain LuaJIT, wrote %s",
  gpu.backend(), W, H, (t1 - t0) * 1e3, bad, path)))
