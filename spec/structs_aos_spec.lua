-- Whole store groups for arrays of structs on the cpu target
-- (targets/native_aos.c; docs/backends.md, "cpu"): a store under an if is
-- sunk to the join, and a field that a work item read and did not write is
-- stored back, so that LLVM's loop vectorizer stores the element with wide
-- stores, not scatters.  Each kernel runs on every backend and by plain
-- LuaJIT (work item after work item), the arrays compared byte for byte;
-- on cpu the compile's note says what the pass did, and the cases where it
-- must not store a field (not read, written by another work item, another
-- array that may alias, an atomic on the way) say it stored none.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

pcall(ffi.cdef, "typedef struct { float x, y, vx, vy; } aos_particle;")
local PSIZE = ffi.sizeof("aos_particle")
-- lane counts 16 and 8 (AVX-512, AVX2), their rests, and a long row
local SIZES = { 1, 7, 16, 17, 37, 1000 }

local function particles(n, seed)
  local p = ffi.new("aos_particle[?]", n)
  for i = 0, n - 1 do
    local j = i + (seed or 0)
    p[i].x, p[i].y = (j % 1000) * 0.01 - 3, 1 + (j % 37) * 0.05 - 0.9
    p[i].vx, p[i].vy = ((j * 7) % 11 - 5) * 0.1, (j % 13) * 0.2 - 1
  end
  return p
end

local function copy(p, n)
  local q = ffi.new("aos_particle[?]", n)
  ffi.copy(q, p, n * PSIZE)
  return q
end

local notes_of = H.notes_of

local function is_parts(a)
  return type(a) == "cdata" and tostring(ffi.typeof(a)):find("aos_particle", 1, true) ~= nil
end

-- body(i, n, ...) as a kernel on bk over n work items and on the host; the
-- particle arrays in args (copied for each side) compared byte for byte.
-- The cpu compile's note, or "".
local function check(bk, name, body, n, args)
  local mine, ref = {}, {}
  for j, a in ipairs(args) do
    if is_parts(a) then mine[j], ref[j] = copy(a, n), copy(a, n)
    else mine[j], ref[j] = a, a end
  end
  local notes = notes_of(function()
    local fns = {
      function(m, a) local i = gpu.global_id(0); if i < m then body(i, m, a) end end,
      function(m, a, b) local i = gpu.global_id(0); if i < m then body(i, m, a, b) end end,
      function(m, a, b, c) local i = gpu.global_id(0); if i < m then body(i, m, a, b, c) end end,
    }
    -- vectorize = true: the pass as it runs by default, also in cuda_spec's
    -- run of the suite with GPUJIT_VECTORIZE=0 (with the vectorizer off the
    -- sink finds fewer triangles: docs/backends.md)
    local k = H.kernel(bk, fns[#args], { name = name, vectorize = true })
    k:launch(n, n, unpack(mine, 1, #args))
  end)
  for i = 0, n - 1 do body(i, n, unpack(ref, 1, #args)) end
  for j, a in ipairs(args) do
    if is_parts(a) then
      local got, want = ffi.string(mine[j], n * PSIZE), ffi.string(ref[j], n * PSIZE)
      if got ~= want then
        local at = 0
        while got:byte(at + 1) == want:byte(at + 1) do at = at + 1 end
        error(("%s, n = %d: argument %d differs from plain LuaJIT's at byte %d on %s")
          :format(name, n, j, at, bk), 2)
      end
    end
  end
  return notes[name] or ""
end

local function filled(note) return tonumber(note:match("(%d+) filled")) or 0 end
local function sunk(note) return tonumber(note:match("(%d+) sunk")) or 0 end

-- The two forms of bench/structs.lua (Lua numbers: double arithmetic).
local function select_form(i, _, p, dt, g)
  local q = p[i]
  local v = q.vy - g * dt
  local yy = q.y + v * dt
  if yy < 0 then yy = -yy; v = -v * 0.5 end
  q.x = q.x + q.vx * dt
  q.y = yy
  q.vy = v
end

local function store_form(i, _, p, dt, g)
  local q = p[i]
  q.vy = q.vy - g * dt
  q.x = q.x + q.vx * dt
  q.y = q.y + q.vy * dt
  if q.y < 0 then q.y = -q.y; q.vy = -q.vy * 0.5 end
end

for _, bk in ipairs(H.backends) do
  describe("struct store groups [" .. bk .. "]", function()
    local cpu = bk == "cpu"

    it("a group with a gap (vx read, not written) is filled: bench's select form", function()
      for _, n in ipairs(SIZES) do
        local note = check(bk, "aos_select", select_form, n, { particles(n), 0.25, 9.81 })
        if cpu then assert.equals(1, filled(note), note) end
      end
    end)

    it("stores under an if are sunk to the join, then the gap filled: bench's store form", function()
      for _, n in ipairs(SIZES) do
        local note = check(bk, "aos_store", store_form, n, { particles(n), 0.25, 9.81 })
        if cpu then
          assert.equals(2, sunk(note), note)
          assert.equals(1, filled(note), note)
        end
      end
    end)

    it("a complete group needs nothing; an if that stores where nothing stored before stays", function()
      local note = check(bk, "aos_whole", function(i, _, p, s)
        local q = p[i]
        q.x, q.y, q.vx, q.vy = q.y * s, q.x, q.vy + 1, q.vx
      end, 37, { particles(37), 0.5 })
      if cpu then assert.equals(0, filled(note) + sunk(note), note) end
      note = check(bk, "aos_ifonly", function(i, _, p)
        local q = p[i]
        q.x = q.x + 1
        if q.y > 0 then q.vx = 2 end     -- vx not read nor stored before
      end, 37, { particles(37) })
      if cpu then assert.equals(0, sunk(note), note) end
    end)

    it("an if's store sinks after a load of the field, not past another array's store", function()
      local note = check(bk, "aos_sinkload", function(i, _, p)
        local q = p[i]
        q.x = q.x + 1
        if q.vx > 0 then q.vx = q.vx * 2 end   -- vx loaded (not stored) before the if
      end, 37, { particles(37) })
      if cpu then assert.equals(1, sunk(note), note) end
      note = check(bk, "aos_nosink", function(i, _, p, r)
        local q = p[i]
        local v = q.vx
        r[i].y = v                        -- r may be p: vx's last access is unknown
        if v > 0 then q.vx = v * 2 end
      end, 37, { particles(37), particles(37, 5) })
      if cpu then assert.equals(0, sunk(note), note) end
    end)

    it("a field the work item does not read is never stored", function()
      local note = check(bk, "aos_noread", function(i, _, p)
        local q = p[i]
        q.x = q.x + q.y
        q.y = 2 * q.y
      end, 37, { particles(37) })
      if cpu then assert.equals(0, filled(note), note) end
    end)

    it("a field another work item writes (p[i + 1].vx) is not stored by this one", function()
      local note = check(bk, "aos_next", function(i, n, p)
        local q = p[i]
        q.x = q.x + q.y
        q.y = q.vy                        -- vy: read, not written here
        if i + 1 < n then p[i + 1].vx = i end
      end, 1000, { particles(1000) })
      -- vy only: work item i - 1 writes vx, which item i never reads
      if cpu then assert.equals(1, filled(note), note) end
    end)

    it("a field read after another element's store is not stored back", function()
      local note = check(bk, "aos_other", function(i, n, p)
        local q = p[i]
        local v = q.vx
        p[(i + 1) % n].vy = v             -- may be q's own vy (n = 1): unknown
        q.x = q.x + v
      end, 37, { particles(37) })
      if cpu then assert.equals(0, filled(note), note) end
    end)

    it("no store back across an atomic", function()
      local n = 37
      local p, cnt = particles(n), ffi.new("int32_t[1]")
      local want = copy(p, n)
      for i = 0, n - 1 do want[i].x = want[i].x + want[i].vx end
      local notes = notes_of(function()
        local k = H.kernel(bk, function(a, c, m)
          local i = gpu.global_id(0)
          if i < m then
            local q = a[i]
            local v = q.vx
            gpu.atomic_add(c, 0, 1)
            q.x = q.x + v
          end
        end, { name = "aos_atomic" })
        k:launch(n, p, cnt, n)
      end)
      assert.equals(ffi.string(want, n * PSIZE), ffi.string(p, n * PSIZE))
      assert.equals(n, cnt[0])
      if cpu then assert.equals(0, filled(notes.aos_atomic or ""), notes.aos_atomic) end
    end)

    it("kernels with barriers are left alone", function()
      local p = particles(64)
      local want = copy(p, 64)
      for i = 0, 63 do want[i].x = want[i].x + want[i].vx end
      local notes = notes_of(function()
        local k = H.kernel(bk, function(a)
          local i = gpu.global_id(0)
          local q = a[i]
          local v = q.vx
          gpu.barrier()
          q.x = q.x + v
        end, { name = "aos_barrier" })
        k:launch({ global = 64, group = 16 }, p)
      end)
      assert.equals(ffi.string(want, 64 * PSIZE), ffi.string(p, 64 * PSIZE))
      if cpu then assert.equals(0, filled(notes.aos_barrier or ""), notes.aos_barrier) end
    end)

    if cpu then
      it("two arrays that alias: a store through one stops the store back through the other", function()
        -- the same array twice (the cpu passes FFI arrays by address): r[i].vx = 7 is p[i].vx
        local function body(i, _, p, r)
          local q = p[i]
          local v = q.vx
          r[i].vx = 7
          q.x = q.x + v
        end
        local n = 37
        local a, b = particles(n), particles(n)
        local notes = notes_of(function()
          local k = H.kernel("cpu", function(m, p, r)
            local i = gpu.global_id(0)
            if i < m then body(i, m, p, r) end
          end, { name = "aos_alias" })
          k:launch(n, n, a, a)
        end)
        for i = 0, n - 1 do body(i, n, b, b) end
        assert.equals(ffi.string(b, n * PSIZE), ffi.string(a, n * PSIZE))
        assert.equals(7, a[3].vx)
        assert.equals(0, filled(notes.aos_alias or ""), notes.aos_alias)
      end)
    end
  end)
end

describe("struct store groups: the assembly", function()
  local function has_avx512()
    local f = io.open("/proc/cpuinfo")
    if not f then return false end
    local s = f:read("*a")
    f:close()
    return s:find("avx512f", 1, true) ~= nil
  end

  it("the select and store forms have no scatter on AVX-512 (wide stores)", function()
    if not H.available("cpu") then return pending("needs the cpu backend") end
    -- without AVX-512 LLVM has no vscatter to emit: nothing to check
    if not has_avx512() then return pending("this CPU has no AVX-512 (no scatter instructions)") end
    local sig = { "aos_particle[]", "lua_pos31", "double", "double" }
    for name, body in pairs({ select = select_form, store = store_form }) do
      local k = H.kernel("cpu", function(p, n, dt, g)
        local i = gpu.global_id(0)
        if i < n then body(i, n, p, dt, g) end
      end, { name = "aos_asm_" .. name, precision = "single", vectorize = true })
      local s = k:inspect_asm(sig)
      local _, scatters = s:gsub("vscatter", "")
      local _, wide = s:gsub("vmovups%s+%%[xyz]mm%d+, [^\n]*%(", "")
      assert.equals(0, scatters, name .. ": scatters in the assembly")
      assert.is_true(wide > 0, name .. ": no wide store")
    end
  end)
end)
