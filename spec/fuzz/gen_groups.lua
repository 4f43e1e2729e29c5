-- spec/fuzz/gen_groups.lua: random kernels with work groups, 2-D and 3-D
-- launches, Lua-table and gpu.array arguments (docs/fuzzing.md).  They build
-- on spec/fuzz/gen.lua (its expressions, statements and device functions).
--
--   local GG = require("spec.fuzz.gen_groups")
--   local case = GG.generate(seed)   -- one seed in GG.EVERY makes such a case,
--                                    -- the others gen.lua's (G.generate)
--   GG.source(case), GG.batch_source(cases), GG.layout(case), GG.batch_key(case)
--
-- Such a case has case.launch = { global = x or {x, y [, z]}, group = ... }
-- (case.N is the number of work items) and the parameters GG.params: gen.lua's
-- with rd, od and ad Lua tables (1-based), ru, oi, of and ac gpu.arrays (read
-- back after the launch), and four arrays of GG.KA elements that atomics
-- update (ac int32_t, af float, ad double, ax int32_t).  Work item g (the
-- flattened global id) still owns elements 4g .. 4g+3 of the o* arrays.
--
-- Work groups (case.wg): the launch gives a group that divides global, the
-- kernel has pairs of gpu.shared arrays of GV elements (GV = the group's
-- volume), written only at the item's own slot l (the flattened local id)
-- and read anywhere after a barrier; a "sync" is gpu.barrier() followed by
-- swapping the pairs, so that a phase reads one array of a pair and writes the
-- other (race-free with one barrier a phase).  Barriers are only in uniform
-- control flow: top level, `for` loops whose limit is uniform, `if` on uniform
-- conditions (group ids, n, constants, loads at a uniform index).  Statements
-- the shrinker must not drop (a write every later read needs, the barrier
-- after it) are marked keep.
--
-- Atomics (any case) are order-independent, so that results compare exactly
-- whatever order work items run in: their return values are never used;
-- add/sub/and/or/xor/min/max on integers commute (their values go
-- through bit.tobit: an integer beyond int32, or a whole double, the
-- compiled code and sim convert differently, docs/fuzzing.md); float and
-- double atomic_add only add multiples of 1/8 of small magnitude, whose
-- sums are exact in any order; xchg and cas each have an
-- element of ax to themselves (one per call site) and store a value that is
-- the same for every work item, so the result is the same whichever item
-- comes first.

local G = require("spec.fuzz.gen")

local GG = {}

local node = G.node
local B31, BMAX = G.B31, G.BMAX

-- One seed in EVERY makes a case of this module (seed % EVERY == 0).
GG.EVERY = 3
GG.KA = 8

GG.params = { "n", "s", "ri", "rl", "ru", "rf", "rd", "oi", "ol", "ou", "oh", "of", "od",
  "ac", "af", "ad", "ax" }
GG.ctypes = { ac = "int32_t", af = "float", ad = "double", ax = "int32_t" }
for k, v in pairs(G.ctypes) do GG.ctypes[k] = v end
-- How each array is passed: "ffi" (an FFI array), "table" (a Lua table,
-- 1-based: indices are rendered `[e + 1]`), "garray" (gpu.to_device).
GG.box = { rd = "table", od = "table", ad = "table", ru = "garray", oi = "garray",
  of = "garray", ac = "garray" }

-- The arrays of a case: a list of { name =, ct =, box = }.
function GG.layout(case)
  local out = {}
  if not case.launch then
    for _, name in ipairs(G.arrays) do
      -- a reproducer written before an array was added has no data for it,
      -- and its kernel (its stored source) no parameter
      if not (case.data and case.data[name] == nil) then
        out[#out + 1] = { name = name, ct = G.ctypes[name], box = G.box[name] or "ffi" }
      end
    end
    return out
  end
  for j = 3, #GG.params do
    local name = GG.params[j]
    out[#out + 1] = { name = name, ct = GG.ctypes[name], box = GG.box[name] or "ffi" }
  end
  return out
end

function GG.params_of(case) return case.launch and GG.params or G.params end

-- Cases compiled together must have the same parameters and precision.
-- (A kernel that calls gpu.barrier() must be launched with global a multiple
-- of group: cases with work groups are not compiled with those without.)
-- With work groups the group's shape is part of the key too: PoCL compiles a
-- kernel again for each group size it is launched with (seconds for a batch
-- with barriers), so the cases of a batch share one (GG.SHAPES).
function GG.batch_key(case)
  if not case.launch then return case.precision end
  if not case.wg then return "g" .. case.precision end
  local g = case.launch.group
  return "w" .. (type(g) == "number" and g or table.concat(g, "x")) .. case.precision
end
GG.SHAPES = { { 4 }, { 16 }, { 3 }, { 2, 4 }, { 3, 2 }, { 2, 2, 2 }, { 1, 2, 3 } }
GG.batch_keys = { "double", "single", "gdouble", "gsingle" }
for _, sh in ipairs(GG.SHAPES) do
  for _, p in ipairs({ "double", "single" }) do
    GG.batch_keys[#GG.batch_keys + 1] = "w" .. table.concat(sh, "x") .. p
  end
end

---------------------------------------------------------------------------
-- Statements of this module (rendered through G.renderers)
---------------------------------------------------------------------------
-- raw:    { lines = {...} }                     fixed text
-- sync:   { pairs = { {"isrc","idst"}, ... } }  gpu.barrier() and the swaps
-- atomic: { fn =, arr =, args = { idx, v [, v2] } }
-- uloop:  { var =, lim = expr, body = {...} }   for var = 1, lim do ... end

G.renderers.raw = function(out, st, ind)
  local p = string.rep("  ", ind)
  for _, l in ipairs(st.lines) do out[#out + 1] = p .. l end
end

G.renderers.sync = function(out, st, ind)
  local p = string.rep("  ", ind)
  out[#out + 1] = p .. "gpu.barrier()"
  for _, pr in ipairs(st.pairs) do
    out[#out + 1] = p .. pr[1] .. ", " .. pr[2] .. " = " .. pr[2] .. ", " .. pr[1]
  end
end

G.renderers.atomic = function(out, st, ind)
  local a = {}
  for j, e in ipairs(st.args) do a[j] = G.expr(e) end
  out[#out + 1] = string.rep("  ", ind) .. "gpu." .. st.fn .. "(" .. st.arr .. ", " ..
    table.concat(a, ", ") .. ")"
end

G.renderers.uloop = function(out, st, ind)
  local p = string.rep("  ", ind)
  out[#out + 1] = p .. "for " .. st.var .. " = 1, " .. G.expr(st.lim) .. " do"
  G.render_block(out, st.body, ind + 1)
  out[#out + 1] = p .. "end"
end

local function raw(lines, keep) return { t = "raw", lines = lines, keep = keep } end
local BARRIER = function() return raw({ "gpu.barrier()" }, true) end

---------------------------------------------------------------------------
-- The generator
---------------------------------------------------------------------------

local P = {}
P.__index = P

-- Register an integer variable (immutable) that gen.lua's expressions may use.
function P:ivar(name, b)
  self.gen.vars[#self.gen.vars + 1] = { name = name, k = "i", b = b, mut = false }
end

-- A value that is the same for every work item of a group: constants, n,
-- group ids and counts, uniform loop counters, loads at constant indices.
function P:uint(depth)
  local R = self.R
  local opts = {
    function() return G.const_i(R.int(-3, 9)) end,
    function() return node("n", "i", 4096) end,
    function() return node("ri[" .. R.int(0, self.case.M - 1) .. "]", "i", B31) end,
  }
  if self.case.launch.group then
    opts[#opts + 1] = function() return node("w" .. R.pick(self.dims), "i", 4096) end
    opts[#opts + 1] = function()
      return node("gpu.num_groups(" .. R.int(0, self.ndim - 1) .. ")", "i", 4096)
    end
  end
  for _, v in ipairs(self.uvars) do
    opts[#opts + 1] = function() return node(v, "i", 8) end
  end
  if self.wg and self.synced then
    -- a shared element at a constant index, after a barrier: the same for all
    opts[#opts + 1] = function() return node("isrc[" .. R.int(0, 63) .. " % GV]", "i", B31) end
  end
  if depth > 0 and R.chance(0.5) then
    local a, b = self:uint(depth - 1), self:uint(depth - 1)
    local op = R.pick({ "(%1 + %2)", "(%1 - %2)", "bit.band(%1, %2)", "bit.bxor(%1, %2)" })
    return node(op, "i", op:find("bit") and B31 or a.b + b.b, { a, b })
  end
  return R.pick(opts)()
end

function P:ucond()
  local op = self.R.pick({ "<", "<=", ">", ">=", "==", "~=" })
  return node("(%1 " .. op .. " %2)", "b", nil, { self:uint(1), self:uint(1) })
end

-- A uniform loop limit: 0 .. 3 turns.
function P:ulimit()
  local R = self.R
  local r = R.int(1, 3)
  if r == 1 then return G.const_i(R.int(1, 3)) end
  return node("(%1 % 3 + 1)", "i", 3, { self:uint(1) }, true)
end

-- gen.lua's statements; early returns dropped where barriers follow (an
-- item that returned would never reach them).
local function drop_returns(block)
  for j = #block, 1, -1 do
    local st = block[j]
    if st.t == "ret" then
      table.remove(block, j)
    else
      if st.body then drop_returns(st.body) end
      if st.els then drop_returns(st.els) end
    end
  end
end

function P:gen_stmts(out, n, depth)
  local gen = self.gen
  gen.budget = n
  local first = #out + 1
  while gen.budget > 0 do out[#out + 1] = gen:stmt(depth) end
  if self.wg then
    for j = #out, first, -1 do
      if out[j].t == "ret" then table.remove(out, j) else drop_returns({ out[j] }) end
    end
  end
end

-- An index into a shared array of GV elements: a neighbour of l, or any
-- element.  Fixed: the shrinker must not make it a constant out of range.
function P:sh_index()
  local R = self.R
  local r = R.int(1, 4)
  local ix
  if r == 1 then
    ix = node("((l + " .. R.int(1, 7) .. ") % GV)", "i", 64)
  elseif r == 2 then
    ix = node("(bit.bxor(l, " .. R.int(1, 3) .. ") % GV)", "i", 64)
  elseif r == 3 then
    ix = node("((GV - 1 - l) % GV)", "i", 64)
  else
    ix = node("(%1 % GV)", "i", 64, { self.gen:gen_i(1, BMAX) }, true)
  end
  ix.fixed = true
  return ix
end

-- Read a shared element into a new local that later expressions may use.
function P:sh_read(out)
  local gen, R = self.gen, self.R
  local name = gen:fresh("a")
  if self.single or R.chance(0.5) then
    out[#out + 1] = { t = "local", name = name, e = node("isrc[%1]", "i", B31, { self:sh_index() }, true) }
    self:ivar(name, B31)
    gen.vars[#gen.vars].mut = nil
  else
    out[#out + 1] = { t = "local", name = name, e = node("xsrc[%1]", "d", nil, { self:sh_index() }, true) }
    gen.vars[#gen.vars + 1] = { name = name, k = "d" }
  end
end

-- The writes of a phase: every item writes its own slot of both arrays of
-- the pairs (keep: a later read of that slot needs it).
function P:sh_writes(out, dst_i, dst_x, init)
  local gen = self.gen
  local own = node("l", "i", 64)
  own.fixed = true
  local R = self.R
  local e
  if init then
    e = gen:gen_i(3, BMAX)
  else
    -- a value of the src array, so that data flows from phase to phase
    e = node(R.pick({ "(isrc[%1] + %2)", "bit.bxor(isrc[%1], %2)", "(%2 - isrc[%1])" }), "i", 2 * B31,
      { self:sh_index(), gen:gen_i(2, B31) }, true)
  end
  out[#out + 1] = { t = "store", arr = dst_i, idx = own, e = e, keep = true }
  if self.single and init then
    e = gen:gen_f(2)
  elseif self.single then
    e = node("(%1 + xsrc[%2])", "f", nil, { gen:gen_f(1), self:sh_index() }, true)
  elseif init then
    e = gen:gen_d(3)
  else
    e = node(R.pick({ "(xsrc[%1] + %2)", "(xsrc[%1] * %2)", "math.max(xsrc[%1], %2)" }), "d", nil,
      { self:sh_index(), gen:gen_d(2) }, true)
  end
  out[#out + 1] = { t = "store", arr = dst_x, idx = node("l", "i", 64, nil, true), e = e, keep = true }
  out[#out].idx.fixed = true
end

-- One phase: reads of the src arrays, gen.lua statements, the writes of the
-- dst arrays, a sync (droppable: without it the next phase reads the same
-- src and writes the same dst, still race-free).
function P:phase(out, depth)
  local R = self.R
  local saved = #self.gen.vars
  for _ = 1, R.int(1, 2) do self:sh_read(out) end
  self:gen_stmts(out, R.int(0, 2), depth)
  self:sh_writes(out, "idst", "xdst")
  out[#out + 1] = { t = "sync", pairs = { { "isrc", "idst" }, { "xsrc", "xdst" } } }
  for j = #self.gen.vars, saved + 1, -1 do self.gen.vars[j] = nil end
end

-- A uniform loop or if around phases.
function P:uniform_block(out, depth)
  local R = self.R
  local body = {}
  if R.chance(0.6) then
    local var = self.gen:fresh("t")
    self.uvars[#self.uvars + 1] = var
    for _ = 1, R.int(1, 2) do self:phase(body, depth + 1) end
    table.remove(self.uvars)
    out[#out + 1] = { t = "uloop", var = var, lim = self:ulimit(), body = body }
  else
    for _ = 1, R.int(1, 2) do self:phase(body, depth + 1) end
    local st = { t = "if", c = self:ucond(), body = body }
    if R.chance(0.4) then
      st.els = {}
      self:phase(st.els, depth + 1)
    end
    out[#out + 1] = st
  end
end

-- Integer atomics in classes whose operations commute with each other (add
-- and sub do; min and or do not): an element is only ever updated by one class.
local INT_CLASSES = { { "atomic_add", "atomic_sub" }, { "atomic_min" }, { "atomic_max" },
  { "atomic_and" }, { "atomic_or" }, { "atomic_xor" } }

-- The value of an integer atomic: an int32 already (see the top; an integer
-- expression that may be -0 is a double for gpujit, whose atomics convert a
-- double beyond the element's range as a store does, sim modulo 2^32).
function P:atomic_value()
  return node("bit.tobit(%1)", "i", B31, { self.gen:gen_i(2, BMAX) }, true)
end

-- A multiple of 1/8 in -4 .. 3.875, for float and double atomic_add.
function P:eighths()
  return node("((bit.band(%1, 63) - 32) / 8)", "d", nil, { self.gen:gen_i(1, BMAX) }, true)
end

-- An index into an atomics array: (e % KA), plus 1 for a table.
function P:aindex(arr)
  local e = node("(%1 % " .. GG.KA .. ")", "i", GG.KA - 1, { self.gen:gen_i(1, BMAX) }, true)
  if GG.box[arr] == "table" then
    e = node("(%1 + 1)", "i", GG.KA, { e }, true)
    e.fixed = true
  end
  return e
end

-- A value the same for every work item of the launch (xchg, cas).
function P:kernel_uniform()
  local R = self.R
  local r = R.int(1, 3)
  if r == 1 then return G.const_i(R.int(-1000, 1000)) end
  if r == 2 then return node("n", "i", 4096) end
  return node("ri[" .. R.int(0, self.case.M - 1) .. "]", "i", B31)
end

-- An atomic on a global array, sometimes under a condition of gen.lua.
function P:atomic(out)
  local R = self.R
  local r = R.int(1, 10)
  local st
  if r <= 5 then
    -- class c updates elements 2c - 2 and 2c - 1 of ac
    local c = R.int(1, #INT_CLASSES)
    local fn = R.pick(INT_CLASSES[c])
    local ix = node("(" .. (2 * c - 2) .. " + %1 % 2)", "i", 2 * c - 1, { self.gen:gen_i(1, BMAX) }, true)
    ix.fixed = true
    st = { t = "atomic", fn = fn, arr = "ac", args = { ix, self:atomic_value() } }
  elseif r <= 7 then
    local arr = R.pick({ "af", "ad" })
    st = { t = "atomic", fn = "atomic_add", arr = arr, args = { self:aindex(arr), self:eighths() } }
  elseif self.nsite < GG.KA then
    local site = node(tostring(self.nsite), "i", GG.KA)
    site.fixed = true
    self.nsite = self.nsite + 1
    if R.chance(0.5) then
      st = { t = "atomic", fn = "atomic_xchg", arr = "ax", args = { site, self:kernel_uniform() } }
    else
      local expect = R.chance(0.6) and G.const_i(self.case.data.ax[self.nsite]) or self:kernel_uniform()
      st = { t = "atomic", fn = "atomic_cas", arr = "ax", args = { site, expect, self:kernel_uniform() } }
    end
  else
    return
  end
  if R.chance(0.35) then st = { t = "if", c = self.gen:gen_cond(1), body = { st } } end
  out[#out + 1] = st
end

-- Atomics on a shared int32 array: every item sets its slot, a barrier,
-- atomics at any slot, a barrier, then reads (nothing writes it later).
function P:shared_atomics(out)
  local R, gen = self.R, self.gen
  local own = node("l", "i", 64)
  own.fixed = true
  out[#out + 1] = { t = "store", arr = "sc", idx = own, e = gen:bounded_i(2), keep = true }
  out[#out + 1] = BARRIER()
  local class = R.pick(INT_CLASSES)
  for _ = 1, R.int(1, 3) do
    local fn = R.pick(class)
    local ix = node("(%1 % GV)", "i", 64, { gen:gen_i(1, BMAX) }, true)
    local st = { t = "atomic", fn = fn, arr = "sc", args = { ix, self:atomic_value() } }
    if R.chance(0.3) then st = { t = "if", c = gen:gen_cond(1), body = { st } } end
    out[#out + 1] = st
  end
  out[#out + 1] = BARRIER()
  local name = gen:fresh("a")
  out[#out + 1] = { t = "local", name = name, e = node("sc[%1]", "i", B31, { self:sh_index() }, true) }
  self:ivar(name, B31)
  out[#out + 1] = { t = "store", arr = "oh", idx = gen:own_index(1), e = node(name, "i", B31) }
end

-- The launch: ndim 1..3; with work groups a group that divides global.
function P:launch()
  local R = self.R
  local ndim = R.pick({ 1, 2, 2, 3, 3 })
  local shape
  if self.wg then
    shape = R.pick(GG.SHAPES)
    ndim = #shape
  end
  local caps = { { 1, 2, 3, 4, 5, 8, 16 }, { 1, 2, 3, 4 }, { 1, 2, 3 } }
  local nmax = ({ 4, 2, 2 })[ndim]
  local glob, grp, N = {}, {}, 1
  local explicit = self.wg or R.chance(0.6)
  for d = 1, ndim do
    grp[d] = shape and shape[d] or R.pick(caps[ndim])
    glob[d] = grp[d] * R.int(1, nmax)
    -- without barriers, global need not be a multiple of group
    if not self.wg and R.chance(0.3) and glob[d] > 1 then glob[d] = glob[d] - R.int(1, grp[d] - 1 + 1) end
    if glob[d] < 1 then glob[d] = 1 end
    N = N * glob[d]
  end
  -- at most 64 work items (the oracle runs them one by one)
  for d = ndim, 1, -1 do
    while N > 64 and glob[d] > grp[d] do
      N = N / glob[d]
      glob[d] = glob[d] - grp[d]
      N = N * glob[d]
    end
  end
  local L = { global = glob, group = explicit and grp or nil }
  if ndim == 1 and R.chance(0.5) then
    L.global = glob[1]
    if L.group then L.group = grp[1] end
  end
  return L, ndim, N
end

local function dims3(t)
  if type(t) == "number" then return { t, 1, 1 } end
  return { t[1], t[2] or 1, t[3] or 1 }
end

-- The group volume of a case (the size of its shared arrays).
function GG.volume(case)
  local g = dims3(case.launch.group or 1)
  return g[1] * g[2] * g[3]
end

-- The number of work items of a launch.
function GG.count(launch)
  local g = dims3(launch.global)
  return g[1] * g[2] * g[3]
end

local XYZ = { "x", "y", "z" }

-- The kernel's first lines: ids, flattened ids, shared arrays.
function P:header()
  local lines = {
    "local gx, gy, gz = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)",
    "local g = gx + gpu.global_size(0) * (gy + gpu.global_size(1) * gz)",
  }
  local dims = {}
  for d = 1, self.ndim do dims[d] = XYZ[d] end
  self.dims = dims
  for _, v in ipairs({ "gx", "gy", "gz" }) do self:ivar(v, 4096) end
  if self.case.launch.group then
    lines[#lines + 1] = "local lx, ly, lz = gpu.local_id(0), gpu.local_id(1), gpu.local_id(2)"
    lines[#lines + 1] = "local l = lx + gpu.group_size(0) * (ly + gpu.group_size(1) * lz)"
    lines[#lines + 1] = "local wx, wy, wz = gpu.group_id(0), gpu.group_id(1), gpu.group_id(2)"
    for _, v in ipairs({ "lx", "ly", "lz", "l", "wx", "wy", "wz" }) do self:ivar(v, 4096) end
  end
  if self.wg then
    local xt = self.single and "float" or "double"
    lines[#lines + 1] = "local isrc, idst = gpu.shared(\"int32_t\", GV), gpu.shared(\"int32_t\", GV)"
    local sh = "gpu.shared(\"" .. xt .. "\", GV)"
    lines[#lines + 1] = "local xsrc, xdst = " .. sh .. ", " .. sh
    lines[#lines + 1] = "local sc = gpu.shared(\"int32_t\", GV)"
  end
  return raw(lines, true)
end

function P:body()
  local R, gen = self.R, self.gen
  local out = { self:header() }
  self:gen_stmts(out, R.int(0, self.wg and 2 or 4), 0)
  if self.wg then
    -- the first writes, and the barrier every read of src needs
    self:sh_writes(out, "isrc", "xsrc", true)
    out[#out + 1] = BARRIER()
    self.synced = true
    local shared_atomics = R.chance(0.4)
    for _ = 1, R.int(1, 3) do
      local r = R.int(1, 6)
      if r <= 2 then
        self:phase(out, 0)
      elseif r <= 4 then
        self:uniform_block(out, 0)
      elseif r == 5 then
        self:atomic(out)
      else
        self:gen_stmts(out, R.int(1, 3), 0)
      end
    end
    if shared_atomics then self:shared_atomics(out) end
    -- results out of the shared arrays
    self:sh_read(out)
    out[#out + 1] = { t = "store", arr = "oi", idx = gen:own_index(1),
      e = node("(isrc[%1] + %2)", "i", 2 * B31, { self:sh_index(), gen:gen_i(1, B31) }, true) }
    if self.single then
      out[#out + 1] = { t = "store", arr = "of", idx = gen:own_index(1),
        e = node("(xsrc[%1] * %2)", "f", nil, { self:sh_index(), gen:gen_f(1) }, true) }
    else
      out[#out + 1] = { t = "store", arr = "od", idx = gen:own_index(1),
        e = node("xsrc[%1]", "d", nil, { self:sh_index() }, true) }
    end
  end
  for _ = 1, R.int(0, 3) do self:atomic(out) end
  self:gen_stmts(out, self.wg and R.int(1, 5) or R.int(2, 10), 0)
  return out
end

-- Rewrite loads and stores of Lua-table arrays to 1-based indices.
local function one_based(case)
  local tabs = {}
  for name, box in pairs(GG.box) do if box == "table" then tabs[name] = true end end
  local function expr(e)
    local name = e.f:match("^(%a+)%[%%1%]$")
    if name and tabs[name] then e.f = name .. "[%1 + 1]" end
    for _, c in ipairs(e.c) do expr(c) end
  end
  local function block(b)
    for _, st in ipairs(b) do
      for _, fld in ipairs({ "e", "idx", "c", "a", "b", "lim" }) do
        if type(st[fld]) == "table" and st[fld].f then expr(st[fld]) end
      end
      for _, list in ipairs({ st.args or {}, st.es or {} }) do
        for _, e in ipairs(list) do expr(e) end
      end
      if st.t == "store" and tabs[st.arr] then
        local ix = node("%1 + 1", "i", B31, { st.idx }, true)
        ix.fixed = true
        st.idx = ix
      end
      if st.body then block(st.body) end
      if st.els then block(st.els) end
    end
  end
  for _, f in ipairs(case.fns) do block(f.body) end
  block(case.body)
end

function GG.generate_groups(seed, o)
  o = o or {}
  local R = G.rng(seed * 7 + 3)
  local single = o.precision == "single" or (o.precision == nil and R.chance(0.15))
  local M = R.int(5, 40)
  -- (no assert or error: an item that stopped would miss the barriers)
  local gen = G.new_gen(R, { single = single, M = M, no_assert = true })
  for j = 1, R.int(0, 2) do
    local isf = not single and R.chance(0.4)
    local v = isf and (R.int(-100, 100) + 0.375) or R.int(-50, 50)
    gen.consts[j] = { name = "K" .. j, v = v, k = isf and "d" or "i" }
  end
  for j = 1, R.int(0, 2) do gen.fns[j] = gen:device_fn(j) end

  local case = { seed = seed, precision = single and "single" or "double", M = M,
    consts = gen.consts, fns = gen.fns }
  local p = setmetatable({ R = R, gen = gen, case = case, single = single, uvars = {}, nsite = 0 }, P)
  p.wg = o.wg == nil and R.chance(0.7) or o.wg
  case.wg = p.wg
  case.launch, p.ndim, case.N = p:launch()
  -- the data first: a cas may expect an element's initial value
  case.data = G.data(R, case)
  GG.data(R, case)
  -- s fractional: every case of a batch then has the same signature, one
  -- compile (a batch with barriers compiles slowly; gen.lua's cases cover
  -- the classes of whole numbers)
  case.data.s = R.int(-1000, 1000) / 4 + 0.125
  case.body = p:body()
  one_based(case)
  return case
end

-- The atomics arrays' initial values.
function GG.data(R, case)
  local d = case.data
  local function fill(name, f, n)
    local t = {}
    for j = 1, n or GG.KA do t[j] = f() end
    d[name] = t
  end
  fill("ac", function() return R.int(-1000, 1000) end, 2 * #INT_CLASSES)
  fill("af", function() return R.int(-800, 800) / 8 end)
  fill("ad", function() return R.int(-8000, 8000) / 8 end)
  fill("ax", function() return R.int(-20, 20) end)
end

-- A case of either generator: one seed in GG.EVERY is this module's.
function GG.generate(seed, o)
  if seed % GG.EVERY == 0 then return GG.generate_groups(seed, o) end
  return G.generate(seed, o)
end

---------------------------------------------------------------------------
-- Rendering
---------------------------------------------------------------------------

local function render_case(out, case, head, ind)
  local p = string.rep("  ", ind)
  if case.launch.group then out[#out + 1] = p .. "local GV = " .. GG.volume(case) end
  for _, c in ipairs(case.consts) do
    out[#out + 1] = p .. "local " .. c.name .. " = " .. G.const_text(c)
  end
  for _, f in ipairs(case.fns) do
    out[#out + 1] = p .. "local function " .. f.name .. "(" .. table.concat(f.pnames, ", ") .. ")"
    G.render_block(out, f.body, ind + 1)
    out[#out + 1] = p .. "end"
  end
  out[#out + 1] = p .. head .. "function(" .. table.concat(GG.params, ", ") .. ")"
  G.render_block(out, case.body, ind + 1)
  out[#out + 1] = p .. "end"
end

function GG.source(case)
  if not case.launch then return G.source(case) end
  local out = { "local gpu = ...", "local bit, math = bit, math" }
  render_case(out, case, "return ", 0)
  return table.concat(out, "\n") .. "\n"
end

function GG.batch_source(cases)
  if not cases[1].launch then return G.batch_source(cases) end
  local out = { "local gpu = ...", "local bit, math = bit, math" }
  local names = {}
  for j = 1, #cases do names[j] = "k" .. j end
  out[#out + 1] = "local " .. table.concat(names, ", ")
  for j, case in ipairs(cases) do
    out[#out + 1] = "do"
    render_case(out, case, names[j] .. " = ", 1)
    out[#out + 1] = "end"
  end
  local ps = table.concat(GG.params, ", ")
  out[#out + 1] = "return function(which, " .. ps .. ")"
  for j = 1, #cases do
    out[#out + 1] = "  " .. (j == 1 and "if" or "elseif") .. " which == " .. j .. " then " ..
      names[j] .. "(" .. ps .. ")"
  end
  out[#out + 1] = "  end"
  out[#out + 1] = "end"
  return table.concat(out, "\n") .. "\n"
end

-- The launch configuration of a case for k:launch.
function GG.cfg(case)
  return case.launch or case.N
end

return GG
