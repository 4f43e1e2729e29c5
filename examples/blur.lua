-- blur: a box blur of a PNG image, one work item per pixel (a 2-D launch
-- over a uint8_t image), read and written with examples/lib/png.lua.
--
--   luajit examples/blur.lua [backend] [in.png] [out.png]
--
-- The input defaults to docs/img/mandelbrot.png.  Every output byte must
-- equal the same blur computed in plain LuaJIT, and the written file must
-- read back to the same bytes.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local png = require("png")
local gpu = ex.gpu(require("gpujit"), arg)

local R = 2   -- the box is (2R + 1) x (2R + 1) pixels, clipped at the edges

-- The mean of the box around (x, y) in channel c of img, rounded to
-- nearest.  The kernel calls it as a device function; the check calls it
-- from plain LuaJIT.
local function box_mean(img, w, h, ch, r, x, y, c)
  local x0, x1 = math.max(x - r, 0), math.min(x + r, w - 1)
  local y0, y1 = math.max(y - r, 0), math.min(y + r, h - 1)
  local count = (x1 - x0 + 1) * (y1 - y0 + 1)
  local sum = 0
  for yy = y0, y1 do
    for xx = x0, x1 do sum = sum + img[(yy * w + xx) * ch + c] end
  end
  return math.floor((sum + count / 2) / count)
end

local blur = gpu.kernel(function(out, img, w, h, ch, r)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x < w and y < h then
    for c = 0, ch - 1 do out[(y * w + x) * ch + c] = box_mean(img, w, h, ch, r, x, y, c) end
  end
end, { name = "blur" })

local input = ex.arg(arg, 2, ex.dir(arg) .. "/../docs/img/mandelbrot.png")
local path = ex.arg(arg, 3, ex.out("blur.png"))
local img = png.read(input)
local w, h, ch = img.width, img.height, img.channels
local out = ffi.new("uint8_t[?]", w * h * ch)
local t0 = util.now()
blur:launch({ global = { w, h }, group = { 16, 16 } }, out, img.pixels, w, h, ch, R)
local t1 = util.now()
png.write(path, w, h, ch, out)

-- Plain LuaJIT: the same function, pixel by pixel.
local bad = 0
for y = 0, h - 1 do
  for x = 0, w - 1 do
    for c = 0, ch - 1 do
      if out[(y * w + x) * ch + c] ~= box_mean(img.pixels, w, h, ch, R, x, y, c) then bad = bad + 1 end
    end
  end
end
local back = png.read(path)
local same = back.width == w and back.height == h and back.channels == ch
  and ffi.string(back.pixels, w * h * ch) == ffi.string(out, w * h * ch)
print(ex.check("blur", bad == 0 and same, string.format(
  "%s, %dx%d x %d channels in %.1f ms (first launch, compile included), %d bytes differ from "
    .. "plain LuaJIT, %s read back %s", gpu.backend(), w, h, ch, (t1 - t0) * 1e3, bad, path,
  same and "identical" or "DIFFERENT")))
