-- Struct constructors and metatype operators in kernels that call
-- gpu.barrier() (issue 32, hold-out finding 1): a tiled n-body step with a
-- vec3 metatype, the natural program.  The barrier's uniformity check
-- (src/gj_uniform.c) replays the kernel's calls; a struct's constructor is
-- one that reaches no barrier.  Results equal plain LuaJIT's, bit for bit:
-- the tiles sum the bodies in the order of the host's plain loop.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[ typedef struct { double x, y, z; } nb_vec3; ]]

local vec3
vec3 = ffi.metatype("nb_vec3", {
  __add = function(a, b) return vec3(a.x + b.x, a.y + b.y, a.z + b.z) end,
  __sub = function(a, b) return vec3(a.x - b.x, a.y - b.y, a.z - b.z) end,
  __mul = function(a, s) return vec3(a.x * s, a.y * s, a.z * s) end,
  __index = { dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end },
})

local TILE = 8

-- The pull of body p on a body at pi.
local function pull(p, pi, eps2)
  local d = p - pi
  local r2 = d:dot(d) + eps2
  return d * (1 / (r2 * math.sqrt(r2)))
end

-- acc[i] = the sum over j of pull(pos[j], pos[i]), a tile of TILE bodies
-- at a time through shared memory.
local function nbody(pos, acc, ntiles, eps2)
  local i = gpu.global_id(0)
  local li = gpu.local_id(0)
  local sx = gpu.shared("double", TILE)
  local sy = gpu.shared("double", TILE)
  local sz = gpu.shared("double", TILE)
  local pi = pos[i]
  local a = vec3(0, 0, 0)
  for t = 0, ntiles - 1 do
    local p = pos[t * TILE + li]
    sx[li], sy[li], sz[li] = p.x, p.y, p.z
    gpu.barrier()
    for j = 0, TILE - 1 do
      a = a + pull(vec3(sx[j], sy[j], sz[j]), pi, eps2)
    end
    gpu.barrier()
  end
  acc[i].x, acc[i].y, acc[i].z = a.x, a.y, a.z
end

local function host_nbody(pos, acc, n, eps2)
  for i = 0, n - 1 do
    local a = vec3(0, 0, 0)
    for j = 0, n - 1 do a = a + pull(vec3(pos[j].x, pos[j].y, pos[j].z), pos[i], eps2) end
    acc[i].x, acc[i].y, acc[i].z = a.x, a.y, a.z
  end
end

-- A constructor on a path no work item takes, after the barrier.
local function never(out, flag)
  local i = gpu.global_id(0)
  local s = gpu.shared("double", TILE)
  s[gpu.local_id(0)] = i
  gpu.barrier()
  local v = s[(gpu.local_id(0) + 1) % TILE]
  if flag < 0 then
    local w = vec3(v, v, v) * 2
    v = w.x + w.z
  end
  out[i] = v
end

local function same_bytes(got, want, n)
  assert.are.equal(ffi.string(want, ffi.sizeof("nb_vec3") * n), ffi.string(got, ffi.sizeof("nb_vec3") * n))
end

for _, bk in ipairs(H.backends) do
  describe("a vec3 metatype in a kernel with barriers on " .. bk, function()
    it("a tiled n-body step equals plain LuaJIT's, bit for bit", function()
      local n = 4 * TILE
      local rng = H.rng(32)
      local pos = ffi.new("nb_vec3[?]", n)
      for i = 0, n - 1 do pos[i].x, pos[i].y, pos[i].z = rng() * 2 - 1, rng() * 2 - 1, rng() * 2 - 1 end
      local got, want = ffi.new("nb_vec3[?]", n), ffi.new("nb_vec3[?]", n)
      H.kernel(bk, nbody, { name = "nbody" }):launch({ global = n, group = TILE }, pos, got, n / TILE, 1e-3)
      host_nbody(pos, want, n, 1e-3)
      assert.is_true(want[0].x ~= 0)
      same_bytes(got, want, n)
    end)

    it("a constructor on a path never taken after the barrier compiles and runs", function()
      local n = 2 * TILE
      local out = ffi.new("double[?]", n)
      H.kernel(bk, never, { name = "never" }):launch({ global = n, group = TILE }, out, 1)
      for i = 0, n - 1 do
        assert.are.equal(i - i % TILE + (i + 1) % TILE, out[i])
      end
      H.kernel(bk, never, { name = "never" }):launch({ global = n, group = TILE }, out, -1)
      for i = 0, n - 1 do
        assert.are.equal(4 * (i - i % TILE + (i + 1) % TILE), out[i])
      end
    end)
  end)
end
