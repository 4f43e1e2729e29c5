-- The parallel primitives (issue 21) on the cpu backend against the same
-- algorithms in C with OpenMP (bench/ref.c, built with gcc and clang: the
-- faster is the anchor) and plain LuaJIT loops: gpu.reduce of 16M floats,
-- gpu.scan of 4M int32, gpu.sort of 4M int32, gpu.fill and gpu.copy of 16M
-- floats (goal for these two: within 2x of C, memory-bound either way);
-- and the second wave (issue 37): gpu.compact, gpu.argsort and
-- gpu.reduce_by_key of 4M elements, the hash grid's neighbour query at 16k
-- and 1M points and an all-pairs query at 16k (goal: within 2x of C).  Run by `make bench`
-- (bench/bench.lua prints and records its table), or alone:
--
--   luajit bench/prims.lua [runs]     (GJ_BENCH_REF_GCC, GJ_BENCH_REF_CLANG)
--
-- Method as bench.lua's: every side runs once and the outputs are compared
-- (gpujit and C bit for bit: same algorithm, same order of float sums; the
-- LuaJIT loop sums in double, so within 1e-5), then `runs` rounds, the order
-- of the sides rotating; medians; ratios as speed-ups of gpujit.  Sizes are
-- plain Lua numbers.  Sort samples start from the same unsorted keys (the
-- copy is not timed).
local ffi = require("ffi")
local gpu = require("gpujit")
local P = require("gpujit.prims")
local here = (arg and arg[0] or "bench/prims.lua"):gsub("[^/]*$", "")
local T = dofile(here .. "timing.lua")
local now, median = T.now, T.median

local RUNS = tonumber(arg and arg[1]) or tonumber(os.getenv("BENCH_RUNS")) or 7
local REFS = {
  { name = "gcc", path = os.getenv("GJ_BENCH_REF_GCC") or "build/bench/libgjref-gcc.so" },
  { name = "clang", path = os.getenv("GJ_BENCH_REF_CLANG") or "build/bench/libgjref-clang.so" },
}

ffi.cdef [[
void ref_init(int nthreads);
float ref_reduce_f32(const float *a, int64_t n, int64_t G, float *part);
void ref_scan_i32(const int32_t *a, int32_t *out, int64_t n, int64_t G, int64_t *part);
void ref_sort_i32(int32_t *keys, int64_t n, int64_t G, uint32_t *tmp, int64_t *hist);
void ref_fill_f32(float *a, int64_t n, float v);
void ref_copy_f32(float *dst, const float *src, int64_t n);
int64_t ref_compact_i32(const int32_t *a, int32_t *dst, int64_t n, int64_t G, int64_t *part);
void ref_argsort_i32(const int32_t *keys, int32_t *idx, int64_t n, int64_t G, uint32_t *k1,
                     uint32_t *k2, int32_t *i2, int64_t *hist);
int64_t ref_reduce_by_key_i32f(const int32_t *k, const float *v, int32_t *ko, float *vo,
                               int64_t n, int64_t G, float *tail, int64_t *nh);
void ref_grid_count2(const double *px, const double *py, const int32_t *cs, const int32_t *ce,
                     const int32_t *order, int32_t *cnt, double inv, int64_t dim, double r2,
                     int64_t n);
void ref_pairs_count2(const double *px, const double *py, int32_t *cnt, double r2, int64_t n);
]]

gpu.use("cpu")
local dev = gpu.device()
local THREADS = dev.compute_units
for _, ref in ipairs(REFS) do
  local ok, lib = pcall(ffi.load, ref.path)
  if not ok then error("cannot load the C references " .. ref.path .. " (make bench builds them): "
    .. lib, 0) end
  ref.lib = lib
  lib.ref_init(THREADS)
end

local function loadavg()
  local f = io.open("/proc/loadavg")
  if not f then return "?" end
  local l = f:read("*l")
  f:close()
  return l:match("^(%S+)")
end

-- gpujit's item counts for these sizes (the C side runs the same chunks).
local tgt = { backend = "cpu", entry = dev }
local function items(n) return P.n_items(tgt, n) end
local function sort_items(n) return P.sort_items(tgt, n) end

local cases = {}

do -- reduce: 16M floats
  local n = 2 ^ 24
  local x = ffi.new("float[?]", n)
  for i = 0, n - 1 do x[i] = (i % 1000) / 1000 end
  local G = items(n)
  local part = ffi.new("float[?]", G)
  local r = {}
  cases[#cases + 1] = {
    name = "gpu.reduce(x, \"+\")", what = "16M floats", goal_c = 0.8, goal_lua = 2,
    gj = function() r.gj = gpu.reduce(x, "+") end,
    c = function(L) r.c = L.ref_reduce_f32(x, n, G, part) end,
    lua = function()
      local s = 0
      for i = 0, n - 1 do s = s + x[i] end
      r.lua = s
    end,
    check = function()
      assert(r.gj == r.c, ("reduce: gpujit %.9g, C %.9g"):format(r.gj, r.c))
      assert(math.abs(r.lua - r.gj) <= 1e-5 * math.abs(r.lua),
        ("reduce: gpujit %.9g, LuaJIT %.9g"):format(r.gj, r.lua))
    end,
  }
end

local rand_i32 = T.rand_i32

do -- scan: 4M int32
  local n = 2 ^ 22
  local a = rand_i32(n, 7)
  for i = 0, n - 1 do a[i] = a[i] % 2001 - 1000 end
  local G = items(n)
  local part = ffi.new("int64_t[?]", G)
  local og, oc, ol = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
  cases[#cases + 1] = {
    name = "gpu.scan(a, \"+\", out)", what = "4M int32", goal_c = 0.5,
    gj = function() gpu.scan(a, "+", og) end,
    c = function(L) L.ref_scan_i32(a, oc, n, G, part) end,
    lua = function()
      local s = 0
      for i = 0, n - 1 do
        s = s + a[i]
        ol[i] = s
      end
    end,
    check = function()
      for i = 0, n - 1 do
        if og[i] ~= oc[i] or ol[i] ~= oc[i] then
          error(("scan: out[%d] gpujit %d, C %d, LuaJIT %d"):format(i, og[i], oc[i], ol[i]), 0)
        end
      end
    end,
  }
end

do -- sort: 4M int32 keys
  local n = 2 ^ 22
  local src = rand_i32(n, 12345)
  local G = sort_items(n)
  local kg, kc = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
  local tmp, hist = ffi.new("uint32_t[?]", n), ffi.new("int64_t[?]", 256 * G)
  cases[#cases + 1] = {
    name = "gpu.sort(keys)", what = "4M int32", goal_c = 0.5,
    prep = { gj = function() ffi.copy(kg, src, n * 4) end,
             c = function() ffi.copy(kc, src, n * 4) end },
    gj = function() gpu.sort(kg) end,
    c = function(L) L.ref_sort_i32(kc, n, G, tmp, hist) end,
    check = function()
      for i = 0, n - 1 do
        if kg[i] ~= kc[i] then error(("sort: keys[%d] gpujit %d, C %d"):format(i, kg[i], kc[i]), 0) end
        if i > 0 and kc[i - 1] > kc[i] then error("sort: C result not sorted", 0) end
      end
    end,
  }
end

do -- fill and copy: 16M floats
  local n = 2 ^ 24
  local src = ffi.new("float[?]", n)
  for i = 0, n - 1 do src[i] = i % 977 end
  local fg, fc, fl = ffi.new("float[?]", n), ffi.new("float[?]", n), ffi.new("float[?]", n)
  local function same(a, b, what)
    for i = 0, n - 1 do
      if a[i] ~= b[i] then error(("%s: element %d: %s vs %s"):format(what, i, a[i], b[i]), 0) end
    end
  end
  cases[#cases + 1] = {
    name = "gpu.fill(a, 1.5)", what = "16M floats", goal_c = 0.5,
    gj = function() gpu.fill(fg, 1.5) end,
    c = function(L) L.ref_fill_f32(fc, n, 1.5) end,
    lua = function() for i = 0, n - 1 do fl[i] = 1.5 end end,
    check = function() same(fg, fc, "fill gpujit/C"); same(fl, fc, "fill LuaJIT/C") end,
  }
  local dg, dc, dl = ffi.new("float[?]", n), ffi.new("float[?]", n), ffi.new("float[?]", n)
  cases[#cases + 1] = {
    name = "gpu.copy(dst, src)", what = "16M floats", goal_c = 0.5,
    gj = function() gpu.copy(dg, src) end,
    c = function(L) L.ref_copy_f32(dc, src, n) end,
    lua = function() for i = 0, n - 1 do dl[i] = src[i] end end,
    check = function() same(dg, dc, "copy gpujit/C"); same(dl, dc, "copy LuaJIT/C") end,
  }
end

local function same_elems(a, b, n, what)
  for i = 0, n - 1 do
    if a[i] ~= b[i] then error(("%s: element %d: %s vs %s"):format(what, i, a[i], b[i]), 0) end
  end
end

do -- compact: 4M int32, about half kept
  local n = 2 ^ 22
  local a = rand_i32(n, 99)
  local G = items(n)
  local part = ffi.new("int64_t[?]", G)
  local dg, dc = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
  local positive = function(x) return x > 0 end
  local r = {}
  cases[#cases + 1] = {
    name = "gpu.compact(a, pred, dst)", what = "4M int32", goal_c = 0.5,
    gj = function() r.gj = gpu.compact(a, positive, dg) end,
    c = function(L) r.c = tonumber(L.ref_compact_i32(a, dc, n, G, part)) end,
    check = function()
      assert(r.gj == r.c, ("compact: count gpujit %d, C %d"):format(r.gj, r.c))
      same_elems(dg, dc, r.c, "compact gpujit/C")
    end,
  }
end

do -- argsort: 4M int32 keys
  local n = 2 ^ 22
  local keys = rand_i32(n, 4242)
  local G = sort_items(n)
  local ig, ic = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
  local k1, k2 = ffi.new("uint32_t[?]", n), ffi.new("uint32_t[?]", n)
  local i2, hist = ffi.new("int32_t[?]", n), ffi.new("int64_t[?]", 256 * G)
  local opts = { out = ig }
  cases[#cases + 1] = {
    name = "gpu.argsort(keys, { out = idx })", what = "4M int32", goal_c = 0.5,
    gj = function() gpu.argsort(keys, opts) end,
    c = function(L) L.ref_argsort_i32(keys, ic, n, G, k1, k2, i2, hist) end,
    check = function() same_elems(ig, ic, n, "argsort gpujit/C") end,
  }
end

do -- reduce_by_key: 4M int32 keys in runs of 1-64, float values, "+"
  local n = 2 ^ 22
  local k, v = ffi.new("int32_t[?]", n), ffi.new("float[?]", n)
  local lens = rand_i32(n, 77)
  local key, i, r = 0, 0, 0
  while i < n do
    key = key + 1 + lens[r] % 3
    for _ = 1, lens[r] % 64 + 1 do
      if i < n then
        k[i], v[i] = key, (i % 1000) / 8
        i = i + 1
      end
    end
    r = r + 1
  end
  local G = items(n)
  local tail, nh = ffi.new("float[?]", G), ffi.new("int64_t[?]", G)
  local kg, vg = ffi.new("int32_t[?]", n), ffi.new("float[?]", n)
  local kc, vc = ffi.new("int32_t[?]", n), ffi.new("float[?]", n)
  local opts = { keys_out = kg, values_out = vg }
  local res = {}
  cases[#cases + 1] = {
    name = "gpu.reduce_by_key(k, v, \"+\", outs)", what = "4M int32/float", goal_c = 0.5,
    gj = function() res.gj = gpu.reduce_by_key(k, v, "+", opts) end,
    c = function(L) res.c = tonumber(L.ref_reduce_by_key_i32f(k, v, kc, vc, n, G, tail, nh)) end,
    check = function()
      assert(res.gj == res.c, ("reduce_by_key: %d segments, C %d"):format(res.gj, res.c))
      same_elems(kg, kc, res.c, "reduce_by_key keys gpujit/C")
      same_elems(vg, vc, res.c, "reduce_by_key values gpujit/C")
    end,
  }
end

-- The hash grid's neighbour query (and all pairs): points in a square of
-- side `side` cells of 1, as many slots; count those within 1.
local count_grid = gpu.kernel(function(px, py, cs, ce, order, cnt, inv, dim, r2, n)
  local i = gpu.global_id(0)
  if i < n then
    local x, y = px[i], py[i]
    local cx, cy = gpu.hashgrid_cell(x, inv), gpu.hashgrid_cell(y, inv)
    local c = 0
    for oy = -1, 1 do
      for ox = -1, 1 do
        local s = gpu.hashgrid_index(cx + ox, cy + oy, dim)
        for k = cs[s], ce[s] - 1 do
          local j = order[k]
          local dx, dy = px[j] - x, py[j] - y
          if dx * dx + dy * dy < r2 then c = c + 1 end
        end
      end
    end
    cnt[i] = c
  end
end, { name = "bench_grid_count" })
local count_pairs = gpu.kernel(function(px, py, cnt, r2, n)
  local i = gpu.global_id(0)
  if i < n then
    local x, y = px[i], py[i]
    local c = 0
    for j = 0, n - 1 do
      local dx, dy = px[j] - x, py[j] - y
      if dx * dx + dy * dy < r2 then c = c + 1 end
    end
    cnt[i] = c
  end
end, { name = "bench_pairs_count" })

for _, n in ipairs({ 2 ^ 14, 2 ^ 20 }) do
  local side = math.floor(math.sqrt(n))
  local px, py = ffi.new("double[?]", n), ffi.new("double[?]", n)
  for i = 0, n - 1 do   -- uniform in the square (Philox: rand_i32's sequence has short cycles)
    px[i] = gpu.uniform(5, i) * side
    py[i] = gpu.uniform(6, i) * side
  end
  local grid = gpu.hashgrid(1, { dims = 2, dim = side })
  grid:build(px, py)
  local cs, ce, order = grid.cell_start, grid.cell_end, grid.order   -- host-shared on cpu
  local csp, cep, op = ffi.cast("int32_t *", cs.ptr), ffi.cast("int32_t *", ce.ptr),
    ffi.cast("int32_t *", order.ptr)
  local cg, cc = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
  local what = ("%dk points, %.1f a cell"):format(n / 1024, n / side ^ 2)
  cases[#cases + 1] = {
    name = "hashgrid query (count within r)", what = what, goal_c = 0.5,
    gj = function() count_grid:launch(n, px, py, cs, ce, order, cg, 1, side, 1, n) end,
    c = function(L) L.ref_grid_count2(px, py, csp, cep, op, cc, 1, side, 1, n) end,
    check = function() same_elems(cg, cc, n, "grid query gpujit/C") end,
  }
  if n <= 2 ^ 14 then
    local pg, pc = ffi.new("int32_t[?]", n), ffi.new("int32_t[?]", n)
    cases[#cases + 1] = {
      name = "all-pairs query (the same count)", what = what, goal_c = 0.5,
      gj = function() count_pairs:launch(n, px, py, pg, 1, n) end,
      c = function(L) L.ref_pairs_count2(px, py, pc, 1, n) end,
      check = function()
        same_elems(pg, pc, n, "all pairs gpujit/C")
        same_elems(pg, cg, n, "all pairs/grid")
      end,
    }
  end
end

local function range(a, b)
  local lo, hi = math.huge, 0
  for r = 1, #a do
    local q = a[r] / b[r]
    if q < lo then lo = q end
    if q > hi then hi = q end
  end
  return ("%.2f-%.2f"):format(lo, hi)
end

local rows = {}
local LOAD0 = loadavg()
for _, cs in ipairs(cases) do
  io.stderr:write("bench: ", cs.name, " ...\n")
  local run = { gj = cs.gj, lua = cs.lua,
    gcc = function() cs.c(REFS[1].lib) end, clang = function() cs.c(REFS[2].lib) end }
  local prep = cs.prep or {}
  local function prep_of(side) return prep[side] or (side ~= "lua" and prep.c) or nil end
  local sides = { "gj", "gcc", "clang" }
  if cs.lua then sides[#sides + 1] = "lua" end
  for _, pair in ipairs({ { "gj", "gcc" }, { "gj", "clang" } }) do
    for _, side in ipairs(pair) do
      local p = prep_of(side)
      if p then p() end
      run[side]()
    end
    if cs.lua then run.lua() end
    cs.check()
  end
  local t = {}
  for _, side in ipairs(sides) do t[side] = {} end
  for r = 1, RUNS do
    for s = 0, #sides - 1 do
      local side = sides[(r + s - 1) % #sides + 1]
      local p = prep_of(side)
      if p then p() end
      local t0 = now()
      run[side]()
      t[side][r] = now() - t0
    end
  end
  local m = {}
  for _, side in ipairs(sides) do m[side] = median(t[side]) end
  local best = m.gcc <= m.clang and "gcc" or "clang"
  rows[#rows + 1] = {
    name = cs.name, what = cs.what, gj = m.gj, gcc = m.gcc, clang = m.clang, lua = m.lua,
    best = best, vs_c = m[best] / m.gj, vs_lua = m.lua and m.lua / m.gj, goal_c = cs.goal_c,
    goal_lua = cs.goal_lua, range_c = range(t[best], t.gj),
    range_lua = cs.lua and range(t.lua, t.gj) or "-", load = loadavg(),
  }
end

local out = {}
local function p(s, ...) out[#out + 1] = s:format(...) end
p("Parallel primitives (`luajit bench/prims.lua %d`, run by `make bench`; medians of %d rounds,"
  .. " sides interleaved; the C side runs gpujit's algorithm with OpenMP, %d threads; load"
  .. " average at start %s):", RUNS, RUNS, THREADS, LOAD0)
p("")
p("| primitive | size | gpujit cpu ms | C gcc ms | C clang ms | LuaJIT loop ms | gpujit vs best C (goal)"
  .. " | gpujit vs LuaJIT (goal) | per-round ratios vs C; vs LuaJIT | load |")
p("|---|---|---|---|---|---|---|---|---|---|")
for _, r in ipairs(rows) do
  local lua_ms = r.lua and ("%.2f"):format(r.lua * 1e3) or "-"
  local vs_lua = "-"
  if r.vs_lua then
    vs_lua = ("%.2fx"):format(r.vs_lua)
    if r.goal_lua then
      vs_lua = vs_lua .. (" (>= %dx) %s"):format(r.goal_lua, r.vs_lua >= r.goal_lua and "ok" or "**miss**")
    end
  end
  p("| %s | %s | %.2f | %.2f | %.2f | %s | %.3fx (%s; >= %.2f) %s | %s | %s; %s | %s |", r.name,
    r.what, r.gj * 1e3, r.gcc * 1e3, r.clang * 1e3, lua_ms, r.vs_c, r.best, r.goal_c,
    r.vs_c >= r.goal_c and "ok" or "**miss**", vs_lua, r.range_c, r.range_lua, r.load)
end
print(table.concat(out, "\n"))

-- Leave without closing the Lua state: closing it collects the C references'
-- libraries (dlclose) while their OpenMP threads (libomp's spin in the
-- clang build) still run in them, which crashed about one exit in two.
-- os.exit runs the C exit path, where the OpenMP runtimes shut down first.
io.stdout:flush()
os.exit(0)
