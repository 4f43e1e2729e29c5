-- Compile time against kernel length (issue 23, item 9): a kernel of N
-- source lines -- straight-line float and integer work on array elements,
-- with a branch every few lines, as long generated kernels (unrolled
-- stencils, code generators) look -- compiled cold (empty cache) on one
-- backend.  Prints seconds per length.
--
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/compile_time.lua [backend] [lines...]
local ffi = require("ffi")
local gpu = require("gpujit")

local BK = arg and arg[1] or "cpu"
local sizes = {}
for i = 2, (arg and #arg or 0) do sizes[#sizes + 1] = tonumber(arg[i]) end
if #sizes == 0 then sizes = { 500, 1000, 2000 } end

-- The kernel's source: every line one statement; 8 live locals rotate so
-- that values stay in use across the whole body.
local function source(lines)
  local s = { "return function(o, a, b, n)",
              "  local i = gpu.global_id(0)",
              "  if i >= n then return end",
              "  local x0, x1, x2, x3, x4, x5, x6, x7 = a[i], b[i], a[i] * 2, b[i] + 1, 0.5, 1.5, 2.5, 3.5",
              "  local k = i % 7" }
  local body = lines - #s - 3
  for j = 1, body do
    local d, p, q = j % 8, (j * 3) % 8, (j * 5 + 1) % 8
    local r = j % 6
    if r == 0 then
      s[#s + 1] = ("  x%d = x%d * %d.25 + x%d - a[(i + %d) %% n]"):format(d, p, j % 5 + 1, q, j % 13)
    elseif r == 1 then
      s[#s + 1] = ("  x%d = math.sqrt(math.abs(x%d)) + b[(k + %d) %% n] * 0.5"):format(d, p, j % 11)
    elseif r == 2 then
      s[#s + 1] = ("  if x%d > x%d then x%d = x%d - 1 end"):format(p, q, d, d)
    elseif r == 3 then
      s[#s + 1] = ("  k = (k * %d + %d) %% 1024"):format(j % 7 + 2, j % 17)
    elseif r == 4 then
      s[#s + 1] = ("  x%d = (x%d + x%d) * 0.5 + k"):format(d, p, q)
    else
      s[#s + 1] = ("  if x%d + x%d > %d then k = k + 1 end"):format(d, p, j % 9)
    end
  end
  s[#s + 1] = "  o[i] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + k"
  s[#s + 1] = "end"
  return table.concat(s, "\n"), #s
end

local now = require("gpujit.util").now
local n = 64
local o, a, b = ffi.new("double[?]", n), ffi.new("double[?]", n), ffi.new("double[?]", n)
for i = 0, n - 1 do a[i], b[i] = i * 0.25, 1 + i % 3 end
for _, lines in ipairs(sizes) do
  local src, got = source(lines)
  local fn = assert(loadstring(src, "=long" .. lines .. ".lua"))()
  setfenv(fn, setmetatable({ gpu = gpu }, { __index = _G }))
  local k = gpu.kernel(fn, { name = "long" .. lines, backend = BK, cache = false })
  local t0, c0 = now(), os.clock()
  k:launch(n, o, a, b, n)
  -- wall time, and the process's cpu time (the compile is one thread; the
  -- cpu time is what a busy machine does not inflate)
  print(("%-8s %5d lines  %7.2f s wall  %7.2f s cpu"):format(BK, got, now() - t0, os.clock() - c0))
  -- the same function run by LuaJIT, item by item, gives the same results
  local ref = ffi.new("double[?]", n)
  local env = getfenv(fn)
  for i = 0, n - 1 do
    env.gpu = { global_id = function() return i end }
    fn(ref, a, b, n)
  end
  env.gpu = gpu
  for i = 0, n - 1 do
    if ref[i] ~= o[i] then
      error(("long%d: o[%d] is %.17g, LuaJIT gives %.17g"):format(lines, i, o[i], ref[i]))
    end
  end
end
