-- Kernels without barriers, timed: the work-group machinery (resumable
-- functions, per-group scratch) must cost them nothing.  Prints one line per
-- kernel: "name median_ms".  bench/before_after.sh runs this file against
-- two builds (two commits) alternately and prints the ratios.
-- Run alone: make && LUA_PATH="lua/?.lua;lua/?/init.lua;;"
--   LUA_CPATH="build/?.so;;" luajit bench/nobarrier.lua [rounds]
local gpu = require("gpujit")
local ffi = require("ffi")

local rounds = tonumber(arg and arg[1]) or 15

local T = dofile((arg and arg[0] or "bench/nobarrier.lua"):gsub("[^/]*$", "") .. "timing.lua")

-- Milliseconds per call of f: the median of `rounds` (bench/timing.lua).
local function median(f)
  return T.time(f, rounds) * 1e3
end

local cases = {}

do -- saxpy, 1-D
  local n = 4194304
  local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
  for i = 0, n - 1 do x[i], y[i] = i % 13, i % 7 end
  local k = gpu.kernel(function(a, xs, ys, m)
    local i = gpu.global_id(0)
    if i < m then ys[i] = a * xs[i] + ys[i] end
  end, { name = "saxpy" })
  cases[#cases + 1] = { "saxpy_4M", function() k:launch(n, 2.0, x, y, n) end }
end

do -- 3x3 box stencil, 2-D
  local w, h = 2048, 2048
  local src, dst = ffi.new("float[?]", w * h), ffi.new("float[?]", w * h)
  for i = 0, w * h - 1 do src[i] = i % 31 end
  local k = gpu.kernel(function(o, s, W, Hh)
    local x, y = gpu.global_id(0), gpu.global_id(1)
    if x > 0 and y > 0 and x < W - 1 and y < Hh - 1 then
      local acc = 0.0
      for dy = -1, 1 do
        for dx = -1, 1 do acc = acc + s[(y + dy) * W + x + dx] end
      end
      o[y * W + x] = acc / 9
    end
  end, { name = "stencil", precision = "single" })
  cases[#cases + 1] = { "stencil3x3_2048", function() k:launch({ global = { w, h } }, dst, src, w, h) end }
end

do -- mandelbrot, 2-D, compute bound
  local w, h = 512, 512
  local out = ffi.new("int32_t[?]", w * h)
  local k = gpu.kernel(function(o, W, Hh, iters)
    local px, py = gpu.global_id(0), gpu.global_id(1)
    local cx, cy = px / W * 3.0 - 2.0, py / Hh * 2.0 - 1.0
    local x, y, n = 0.0, 0.0, 0
    while n < iters and x * x + y * y <= 4.0 do
      x, y = x * x - y * y + cx, 2.0 * x * y + cy
      n = n + 1
    end
    o[py * W + px] = n
  end, { name = "mandelbrot" })
  cases[#cases + 1] = { "mandelbrot_512", function() k:launch({ global = { w, h } }, out, w, h, 200) end }
end

for _, c in ipairs(cases) do
  print(string.format("%s %.3f", c[1], median(c[2])))
end
