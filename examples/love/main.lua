-- gpujit in a LÖVE 11.4 game: 100k particles stepped by a gpujit kernel each
-- frame, written in place into a love.data ByteData that feeds a Mesh drawn
-- as points; a worker thread (worker.lua, its own lua_State) draws the
-- background with a second kernel and sends it back through a Channel.  The
-- kernels come precompiled from kernels.gjb (make_bundle.lua), imported at
-- start, so the first frame compiles nothing.
--
--   love examples/love                        -- a window; Esc quits
--   love examples/love --frames 120 [--screenshot out.png] [--particles N]
--
-- With --frames N (what `make love-example` runs under Xvfb) it runs N
-- frames, checks sample particles and background pixels against plain
-- LuaJIT and that the first frame's kernels came from the bundle, saves a
-- screenshot, prints "love-example: PASS ..." or "love-example: FAIL ..."
-- and exits with 0 or 1.
local ffi = require("ffi")

-- Where gpujit is: GPUJIT_LUA_DIR / GPUJIT_CPATH_DIR when set, else the
-- checkout this example is part of (lua/ and build/, two levels up), else
-- wherever LuaJIT's default paths find an installed module.  LÖVE's own
-- loader (love.filesystem.setRequirePath) only searches inside the game, so
-- these go on package.path and package.cpath.
local function find_gpujit()
  local root = love.filesystem.getSource() .. "/../.."
  local lua_dir = os.getenv("GPUJIT_LUA_DIR") or root .. "/lua"
  local cpath_dir = os.getenv("GPUJIT_CPATH_DIR") or root .. "/build"
  local f = io.open(lua_dir .. "/gpujit/init.lua")
  if not f then return nil, nil end
  f:close()
  package.path = lua_dir .. "/?.lua;" .. lua_dir .. "/?/init.lua;" .. package.path
  package.cpath = cpath_dir .. "/?.so;" .. package.cpath
  return lua_dir, cpath_dir
end

local W, H = 960, 540
local G, BOUNCE, MAXIT = 300, 0.92, 200
local SAMPLES = 64

local opt = { frames = nil, screenshot = nil, particles = 100000 }
local gpu, K, bundle
local N, state, verts, sp, vp, mesh
local sample, ref_s, ref_v     -- the sampled particles and their plain-Lua twins
local worst = 0                 -- the largest difference seen so far
local frame, first_frame, kernel_ms = 0, nil, 0
local worker, worker_result, background
local failures = {}

local function fail(msg) failures[#failures + 1] = msg end

local function parse_args(args)
  local i = 1
  while args[i] do
    local a, v = args[i], args[i + 1]
    if a == "--frames" then opt.frames = tonumber(v); i = i + 1
    elseif a == "--screenshot" then opt.screenshot = v; i = i + 1
    elseif a == "--particles" then opt.particles = tonumber(v); i = i + 1
    end
    i = i + 1
  end
end

pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")

-- A small generator (Park-Miller: exact in doubles), so that every run
-- starts from the same particles.
local seed = 12345
local function rnd()
  seed = (seed * 16807) % 2147483647
  return seed / 2147483647
end

-- The cache directory is the game's own (in its save directory), set
-- before gpujit reads it; the bundle shipped in the game goes into it.
local function import_bundle()
  love.filesystem.createDirectory("gpujit-cache")
  ffi.C.setenv("GPUJIT_CACHE_DIR", love.filesystem.getSaveDirectory() .. "/gpujit-cache", 1)
  -- The headless run proves the bundle: it starts from an empty directory.
  if opt.frames then gpu.cache.clear() end
  -- LÖVE's filesystem puts the save directory over the game: only a
  -- kernels.gjb of the game itself counts.
  local real = love.filesystem.getRealDirectory("kernels.gjb")
  if not real or real == love.filesystem.getSaveDirectory() then return { found = false } end
  local n, rejected
  local f = io.open(real .. "/kernels.gjb", "rb")
  if f then   -- the game is a directory: import the file where it is
    f:close()
    n, rejected = gpu.cache.import(real .. "/kernels.gjb")
  else        -- a .love archive: gpu.cache.import reads OS files, so copy it out
    love.filesystem.write("bundle-copy.gjb", love.filesystem.read("kernels.gjb"))
    n, rejected = gpu.cache.import(love.filesystem.getSaveDirectory() .. "/bundle-copy.gjb")
    love.filesystem.remove("bundle-copy.gjb")
  end
  return { found = true, imported = n, rejected = rejected }
end

function love.load(args)
  parse_args(args or {})
  local lua_dir, cpath_dir = find_gpujit()
  gpu = require("gpujit")
  if not (gpu.device() and gpu.device().host_shared) then
    error("this example writes into LÖVE's memory in place: it needs a device that shares host "
      .. "memory (the cpu backend), not " .. tostring(gpu.backend()))
  end
  bundle = import_bundle()
  K = require("kernels")(gpu)

  N = opt.particles
  state = love.data.newByteData(N * 4 * ffi.sizeof("double"))
  verts = love.data.newByteData(N * 6 * ffi.sizeof("float"))
  sp, vp = K.doubles(state), K.floats(verts)
  for i = 0, N - 1 do
    local b = 4 * i
    local a, r = rnd() * 2 * math.pi, 50 + 250 * rnd()
    sp[b], sp[b + 1] = W / 2 + 80 * (rnd() - 0.5), H / 3 + 40 * (rnd() - 0.5)
    sp[b + 2], sp[b + 3] = r * math.cos(a), r * math.sin(a) - 200
  end
  mesh = love.graphics.newMesh({ { "VertexPosition", "float", 2 }, { "VertexColor", "float", 4 } },
    N, "points", "stream")

  sample = {}
  ref_s, ref_v = ffi.new("double[?]", 4 * SAMPLES), ffi.new("float[?]", 6 * SAMPLES)
  for j = 0, SAMPLES - 1 do
    local i = math.floor(j * (N - 1) / (SAMPLES - 1))
    sample[j] = i
    for c = 0, 3 do ref_s[4 * j + c] = sp[4 * i + c] end
  end

  worker = love.thread.newThread("worker.lua")
  worker:start(lua_dir, cpath_dir, W, H, MAXIT)
end

-- The worker's Mandelbrot pixels against plain LuaJIT, a sample of them.
local function check_background(r)
  local img = r.image
  local want = ffi.new("uint8_t[?]", 4 * W * H)
  local bad = 0
  for j = 0, 499 do
    local px, py = (j * 7919) % W, (j * 104729) % H
    K.pixel(want, px, py, W, H, MAXIT)
    local cr, cg, cb, ca = img:getPixel(px, py)   -- 0..1 floats of the bytes
    local got = { cr, cg, cb, ca }
    for c = 0, 3 do
      if math.floor(got[c + 1] * 255 + 0.5) ~= want[4 * (py * W + px) + c] then bad = bad + 1 end
    end
  end
  if bad > 0 then
    fail(string.format("background: %d of 2000 sampled bytes differ from plain LuaJIT", bad))
  end
  if r.compiles ~= 0 or r.hits < 1 then
    fail(string.format("worker: %d compiled, %d loaded from the cache (the bundle should hold it)",
      r.compiles, r.hits))
  end
end

local function poll_worker(wait)
  if worker_result then return end
  local ch = love.thread.getChannel("gpujit-worker")
  local r = wait and ch:demand(60) or ch:pop()
  if not r then
    if wait then fail("worker: no result after 60 s (" .. tostring(worker:getError()) .. ")") end
    return
  end
  worker_result = r
  if r.error then fail("worker: " .. r.error); return end
  background = love.graphics.newImage(r.image)
  if opt.frames then check_background(r) end
end

function love.threaderror(_, err)
  fail("worker: " .. tostring(err))
  worker_result = worker_result or { error = tostring(err) }
end

local function compare_samples()
  for j = 0, SAMPLES - 1 do
    local i = sample[j]
    for c = 0, 3 do
      local a, b = sp[4 * i + c], ref_s[4 * j + c]
      local d = math.abs(a - b) / (1 + math.abs(b))
      if d ~= d or d > worst then worst = d end
    end
    for c = 0, 5 do
      local a, b = vp[6 * i + c], ref_v[6 * j + c]
      local d = math.abs(a - b) / (1 + math.abs(b))
      if d ~= d or d > worst then worst = d end
    end
  end
end

function love.update(dt)
  -- A fixed step in the headless run, so the plain-Lua check sees the same.
  dt = opt.frames and 1 / 60 or math.min(dt, 1 / 30)
  local t0 = love.timer.getTime()
  K.particles:launch(N, sp, vp, N, dt, G, W, H, BOUNCE)
  kernel_ms = (love.timer.getTime() - t0) * 1e3
  mesh:setVertices(verts)
  frame = frame + 1
  if not first_frame then
    local s = gpu.cache.stats()
    first_frame = { hits = s.hits, compiles = s.compiles, ms = kernel_ms }
  end
  if opt.frames then
    for j = 0, SAMPLES - 1 do K.step(ref_s, ref_v, j, dt, G, W, H, BOUNCE) end
    compare_samples()
  end
  poll_worker(opt.frames and frame >= opt.frames)
end

local function finish()
  if not bundle.found then
    fail("no kernels.gjb in the game: make it with make_bundle.lua (make love-example does)")
  elseif bundle.imported < 2 then
    fail(string.format("kernels.gjb: %d imported, %d rejected", bundle.imported, bundle.rejected))
  end
  if first_frame.compiles ~= 0 or first_frame.hits < 1 then
    fail(string.format("first frame: %d compiled, %d loaded from the bundle", first_frame.compiles,
      first_frame.hits))
  end
  if worst > 1e-6 then fail(string.format("particles: differ from plain LuaJIT by %.3g", worst)) end
  local wr = worker_result or {}
  local renderer = select(4, love.graphics.getRendererInfo())
  local line = string.format(
    "%d particles x %d frames on %s, %d sampled within %.2g of plain LuaJIT; first frame: %d kernel(s) "
      .. "from the bundle, %d compiled (%.2f ms); worker thread: %d from the bundle, %d compiled; %s",
    N, frame, gpu.backend(), SAMPLES, worst, first_frame.hits, first_frame.compiles, first_frame.ms,
    wr.hits or -1, wr.compiles or -1, renderer)
  if #failures == 0 then
    print("love-example: PASS, " .. line)
    return 0
  end
  print("love-example: FAIL, " .. table.concat(failures, "; ") .. " (" .. line .. ")")
  return 1
end

function love.draw()
  love.graphics.clear(0.02, 0.02, 0.05)
  if background then love.graphics.setColor(1, 1, 1, 0.8); love.graphics.draw(background) end
  love.graphics.setColor(1, 1, 1, 1)
  love.graphics.setPointSize(1)
  love.graphics.draw(mesh)
  love.graphics.print(string.format("gpujit %s: %d particles, kernel %.2f ms, %d fps\n"
      .. "first frame: %d kernel(s) from kernels.gjb, %d compiled", gpu.backend(), N, kernel_ms,
      love.timer.getFPS(), first_frame and first_frame.hits or 0, first_frame and first_frame.compiles or 0),
    10, 10)
  if opt.frames and frame >= opt.frames and not opt.done then
    opt.done = true
    local code = finish()
    if opt.screenshot then
      love.graphics.captureScreenshot(function(img)
        local f = io.open(opt.screenshot, "wb")
        if f then
          f:write(img:encode("png"):getString())
          f:close()
        else
          print("love-example: could not write " .. opt.screenshot)
          code = 1
        end
        love.event.quit(code)
      end)
    else
      love.event.quit(code)
    end
  end
end

function love.keypressed(key)
  if key == "escape" then love.event.quit() end
end
