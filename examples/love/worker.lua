-- The worker thread of the LÖVE example: a lua_State of its own (gpujit
-- keeps its compiled kernels and backend state per lua_State), which draws
-- the Mandelbrot background with a gpujit kernel straight into an ImageData
-- and sends it back through a Channel, with this state's cache counters.
--   love.thread.newThread("worker.lua"):start(lua_dir, cpath_dir, w, h, maxit)
local lua_dir, cpath_dir, w, h, maxit = ...
require("love.filesystem")
require("love.image")
require("love.timer")
local out = love.thread.getChannel("gpujit-worker")

local ok, err = pcall(function()
  -- package.path is per lua_State: the main state's settings are not here.
  if lua_dir then package.path = lua_dir .. "/?.lua;" .. lua_dir .. "/?/init.lua;" .. package.path end
  if cpath_dir then package.cpath = cpath_dir .. "/?.so;" .. package.cpath end
  local gpu = require("gpujit")
  local K = love.filesystem.load("kernels.lua")()(gpu)
  local img = love.image.newImageData(w, h, "rgba8")
  local t0 = love.timer.getTime()
  K.mandel:launch({ global = { w, h } }, K.bytes(img), w, h, maxit)
  local t1 = love.timer.getTime()
  local s = gpu.cache.stats()
  out:push({ image = img, ms = (t1 - t0) * 1e3, hits = s.hits, compiles = s.compiles,
             backend = gpu.backend() })
end)
if not ok then out:push({ error = tostring(err) }) end
