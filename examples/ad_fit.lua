-- ad_fit: fit the drag coefficient and the launch speed of projectiles to
-- where they land, by gradient descent through gpu.tape (docs/autodiff.md).
--
--   luajit examples/ad_fit.lua [backend]   (paths: README.md)
--
-- Sixteen projectiles, one per work item, leave at angles 20..70 degrees with
-- speed v0 and fall for 120 steps of explicit Euler with quadratic drag c.
-- The "measured" positions come from c = 0.02, v0 = 30; the fit starts from
-- c = 0.005, v0 = 24.  Each iteration records the 121 launches on a tape,
-- seeds the adjoint of the final positions with the loss's derivative and
-- runs tape:backward, which gives d loss / d c and d loss / d v0 (both kept
-- in arrays of one element, into which every work item's adjoint is added).
-- Checks: the first gradient against central finite differences of the
-- whole 121-launch program, and the loss falling by a factor 1000 within
-- 200 iterations (Adam).
-- On sim, whose reverse mode runs the launch once per element with dual
-- numbers (docs/autodiff.md, "On sim"), the example checks the forward
-- flight against plain Lua and the first gradient, and leaves the fit out.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local gpu = ex.gpu(require("gpujit"), arg)

local N, STEPS, DT, G = 16, 120, 0.02, 9.81

local launch = gpu.kernel(function(v0, ang, x, y, vx, vy, n)
  local i = gpu.global_id()
  if i < n then
    local v = v0[0]
    x[i], y[i] = 0.0, 0.0
    vx[i] = v * math.cos(ang[i])
    vy[i] = v * math.sin(ang[i])
  end
end, { name = "launch" })

local step = gpu.kernel(function(c, x, y, vx, vy, dt, g, n)
  local i = gpu.global_id()
  if i < n then
    local u, w = vx[i], vy[i]
    local k = c[0] * math.sqrt(u * u + w * w)
    local nu = u - dt * k * u
    local nw = w - dt * (g + k * w)
    vx[i], vy[i] = nu, nw
    x[i] = x[i] + dt * nu
    y[i] = y[i] + dt * nw
  end
end, { name = "step" })

local function darr(n, f)
  local a = ffi.new("double[?]", n)
  for i = 0, n - 1 do a[i] = f and f(i) or 0 end
  return a
end

local ang = darr(N, function(i) return math.rad(20 + 50 * i / (N - 1)) end)

-- The program: where the projectiles are after STEPS steps.  With a tape,
-- every launch is recorded on it.
local function fly(c, v0, tape)
  local s = { x = darr(N), y = darr(N), vx = darr(N), vy = darr(N),
              c = darr(1, function() return c end), v0 = darr(1, function() return v0 end) }
  local run = tape and function(k, ...) tape:launch(k, N, ...) end
    or function(k, ...) k:launch(N, ...) end
  run(launch, s.v0, ang, s.x, s.y, s.vx, s.vy, N)
  for _ = 1, STEPS do run(step, s.c, s.x, s.y, s.vx, s.vy, DT, G, N) end
  return s
end

local target = fly(0.02, 30)

local function loss(s)
  local L = 0
  for i = 0, N - 1 do
    L = L + (s.x[i] - target.x[i]) ^ 2 + (s.y[i] - target.y[i]) ^ 2
  end
  return L / N
end

if gpu.backend() == "sim" then
  -- the same flight in plain Lua, step by step
  local x, y, vx, vy = {}, {}, {}, {}
  for i = 0, N - 1 do
    x[i], y[i], vx[i], vy[i] = 0, 0, 30 * math.cos(ang[i]), 30 * math.sin(ang[i])
  end
  for _ = 1, STEPS do
    for i = 0, N - 1 do
      local u, w = vx[i], vy[i]
      local k = 0.02 * math.sqrt(u * u + w * w)
      local nu, nw = u - DT * k * u, w - DT * (G + k * w)
      vx[i], vy[i], x[i], y[i] = nu, nw, x[i] + DT * nu, y[i] + DT * nw
    end
  end
  local same = true
  for i = 0, N - 1 do same = same and x[i] == target.x[i] and y[i] == target.y[i] end
  print(ex.check("ad_fit on sim: the flight", same, "the same as plain Lua"))
end

-- The gradient of the loss at (c, v0) through the tape.
local function gradient(c, v0)
  local tape = gpu.tape()
  local s = fly(c, v0, tape)
  local adj = {}
  for _, name in ipairs({ "x", "y", "vx", "vy", "c", "v0" }) do
    adj[s[name]] = darr(name == "c" and 1 or name == "v0" and 1 or N)
  end
  for i = 0, N - 1 do   -- d loss / d (final x, y)
    adj[s.x][i] = 2 * (s.x[i] - target.x[i]) / N
    adj[s.y][i] = 2 * (s.y[i] - target.y[i]) / N
  end
  tape:backward(adj)
  return loss(s), adj[s.c][0], adj[s.v0][0]
end

local c, v0 = 0.005, 24
local L0, gc, gv = gradient(c, v0)

-- the first gradient against central differences of the whole program
local h = 1e-6
local fc = (loss(fly(c + h, v0)) - loss(fly(c - h, v0))) / (2 * h)
local fv = (loss(fly(c, v0 + h)) - loss(fly(c, v0 - h))) / (2 * h)
local function rel(a, b) return math.abs(a - b) / math.max(math.abs(a), math.abs(b)) end
print(("gradient at the start: dL/dc %.10g (finite differences %.10g), dL/dv0 %.10g (%.10g)")
  :format(gc, fc, gv, fv))
print(ex.check("ad_fit gradient", rel(gc, fc) < 1e-6 and rel(gv, fv) < 1e-6,
  ("relative errors %.2g, %.2g"):format(rel(gc, fc), rel(gv, fv))))
if gpu.backend() == "sim" then
  print("ad_fit on sim: the fit is left out (sim's reverse mode runs each launch once per element)")
  return
end

-- Adam (each parameter's step scaled by its own gradient's size)
local L
local m, v = { 0, 0 }, { 0, 0 }
local lr = { 2e-3, 0.3 }
for it = 1, 200 do
  local Ln, dc, dv = gradient(c, v0)
  L = Ln
  local g = { dc, dv }
  for j = 1, 2 do
    m[j] = 0.9 * m[j] + 0.1 * g[j]
    v[j] = 0.999 * v[j] + 0.001 * g[j] * g[j]
    local mh, vh = m[j] / (1 - 0.9 ^ it), v[j] / (1 - 0.999 ^ it)
    g[j] = lr[j] * mh / (math.sqrt(vh) + 1e-12) / (1 + it / 100)
  end
  c, v0 = c - g[1], v0 - g[2]
  if it % 50 == 0 then print(("iteration %3d: loss %.6g, c %.6f, v0 %.6f"):format(it, L, c, v0)) end
  if L < L0 * 1e-5 then break end
end
L = loss(fly(c, v0))   -- at the last step's parameters
print(ex.check("ad_fit", L < L0 * 1e-3,
  ("loss %.4g -> %.4g; c = %.5f (true 0.02), v0 = %.4f (true 30)"):format(L0, L, c, v0)))
