-- gpujit.prims: the parallel primitives gpu.reduce, gpu.scan, gpu.fill and
-- gpu.copy, and what every primitive shares (arguments, views, scratch,
-- kernels, options); the others are one concern a file: gpujit.prims_sort
-- (sort, argsort), prims_select (compact, partition, unique), prims_segment
-- (reduce_by_key, scan_by_key, histogram), prims_map (map, iota, arange),
-- hashgrid (neighbour search).  All are written as gpujit kernels: Lua
-- functions compiled per device and per argument types like any kernel, so
-- they run on every backend (cpu, opencl, cuda, and sim item by item).
--
-- Contract: docs/api.md, "Parallel primitives".  Design:
--
-- * Arrays.  Each argument (an FFI array, a Lua table or a gpu.array) is
--   brought to the device the primitive runs on (the device of its
--   gpu.array arguments, else the current one) as a gpu.array: a
--   gpu.array there is used as it is; an FFI array on a device that
--   addresses host memory (cpu, sim) is wrapped in a non-owning gpu.array
--   view of the same memory (no copy); otherwise (a table, or an FFI array
--   for opencl/cuda) it is copied to a temporary device array, and copied
--   back after the primitive when the primitive writes it.
-- * Items.  The reductions run G "items" of LANES-wide chunks; an item is
--   one work item that loops over its chunk (on the cpu backend, a
--   row of S work items of which the first works, so that the launch has
--   the 4096 work items the backend spreads over its thread pool).
--   Partial results live in device arrays; the last pass runs on the
--   device too, and only a reduction's final scalar is read back.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local array = require("gpujit.array")
local sim = require("gpujit.sim")

-- The kernels below call the intrinsics through this table: the compiler
-- knows them by identity (they are the functions of gpu.*).
local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}

-- Filled by gpujit (init.lua): gpu (the module), current(fname, level) ->
-- target, target_of(bk, dev) -> target.
local env = {}
function M.setup(e) env = e end
function M.env_gpu() return env.gpu end

local LANES = 16       -- the lanes of a reduction item (the float order, docs/api.md)
local GMAX_MIN = 4096 -- a reduction or scan may use this many items on any device
M.LANES = LANES

---------------------------------------------------------------------------
-- Errors, Lua style: bad argument #2 to 'reduce' (...).

local function argerr(n, fname, msg, level)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), (level or 1) + 1)
end
M.argerr = argerr

local function i64(v) return ffi.new("int64_t", v) end
M.i64 = i64

-- Check an options table: nil or a table whose keys are all in `allowed`
-- (a set); an unknown key is an error naming it.  Returns the table ({}
-- for nil).
function M.options(opts, argn, fname, allowed, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    argerr(argn, fname, "options table expected, got " .. types.describe(opts), level + 1)
  end
  for k in each(opts) do
    if not allowed[k] then
      local names = {}
      for name in each(allowed) do names[#names + 1] = name end
      table.sort(names)
      argerr(argn, fname, "unknown option '" .. tostring(k) .. "' (" .. (#names > 0 and
        "expected " .. table.concat(names, ", ") or "it takes none") .. ")", level + 1)
    end
  end
  return opts
end

---------------------------------------------------------------------------
-- Arrays: what an argument is, and its device view.

-- { kind = "garray"|"farray"|"table", elem, n, value }, or an error.
local function classify(v, n, fname, level)
  local tv = type(v)
  if tv == "table" then
    return { kind = "table", elem = "double", n = #v, value = v }
  elseif tv == "cdata" then
    local info = types.ctype_info(v)
    if info and info.dims then
      argerr(n, fname, "a multi-dimensional array (" .. info.type .. "): the primitives take "
        .. "one-dimensional arrays", level + 1)
    end
    if info and info.kind == "garray" then
      if v.ptr == nil then argerr(n, fname, "the gpu.array has been freed", level + 1) end
      return { kind = "garray", elem = info.elem, n = tonumber(v.n), value = v }
    elseif info and info.kind == "farray" then
      return { kind = "farray", elem = info.elem, n = array.ffi_len(v, info), value = v }
    elseif info and info.kind == "fptr" then
      argerr(n, fname, "an FFI pointer has no length: pass an FFI array, a Lua table or a "
        .. "gpu.array", level + 1)
    end
  end
  argerr(n, fname, "array expected (an FFI array, a Lua table or a gpu.array), got "
    .. types.describe(v), level + 1)
end
M.classify = classify

local function label(t) return t.label or t.backend end

-- The target of a primitive: the device of its gpu.array arguments (all
-- on one), else the current device.
local function pick_target(args, fname, level)
  local tgt, first
  for _, a in ipairs(args) do
    if a.kind == "garray" then
      local t = env.target_of(a.value.bk, a.value.dev)
      if tgt == nil then
        tgt, first = t, a
      elseif t ~= tgt then
        argerr(a.argn, fname, "the gpu.array lives on " .. label(t) .. ", argument #"
          .. first.argn .. " on " .. label(tgt) .. ": use one device", level + 1)
      end
    end
  end
  return tgt or env.current("gpu." .. fname, level + 1)
end
M.pick_target = pick_target

-- A non-owning gpu.array of `elem` over `n` elements at `ptr` on `tgt`;
-- `keep` is kept alive with it.  Its memory is never freed through it: a
-- view's ptr is cleared (M.close_views) before the primitive that made it
-- returns, so that its finalizer (the gpu.array metatype's) finds nothing
-- to free.  (ffi.gc(view, nil) would drop the finalizer, but with
-- metatype finalizers LuaJIT's JIT then computed wrong values: the sim
-- backend's reductions came out wrong in one run of four.)
local views = setmetatable({}, { __mode = "k" })
local open = {}
local function view(ptr, elem, n, tgt, keep)
  local e = array.ctype_of(elem)()
  e.ptr = ffi.cast(elem .. " *", ptr)
  e.n = n
  e.ctx = env.ctx
  e.bk = tgt.sim and array.SIM_BK or tgt.bk
  e.dev = tgt.sim and 0 or tgt.dev
  views[e] = keep or true
  open[#open + 1] = e
  return e
end
M.view = view

-- The number of open views (a primitive's mark), and closing those opened
-- after a mark.
function M.open_views() return #open end
function M.close_views(mark)
  for i = #open, mark + 1, -1 do
    local e = open[i]
    open[i] = nil
    views[e] = nil
    e.ptr = nil
    e.n = 0
  end
end

-- Scratch device memory: n elements of elem on tgt for the named slot of a
-- primitive, a view of an array kept (weakly) for the next call, so that
-- a loop of sorts does not allocate, and page in, its temporaries each time
-- (a fresh 32 MB temporary cost more than the pass that first wrote it).
-- The arrays go with the next garbage collection that finds them unused.
local pool = setmetatable({}, { __mode = "v" })
function M.scratch(tgt, elem, n, slot)
  local key = tostring(tgt.label or tgt.backend) .. "/" .. elem .. "/" .. slot
  local e = pool[key]
  if e == nil or e.ptr == nil or tonumber(e.n) < n then
    e = env.gpu.array(elem, math.max(n, 1), tgt.entry)
    pool[key] = e
  end
  return view(e.ptr, elem, n, tgt, e)
end

-- A host buffer of one element of elem, made once: a one-element read-back
-- in a loop (the sort's per-pass flag) would otherwise allocate a small
-- VLA each time, the pattern that LuaJIT 2.1.0-beta3's allocation sinking
-- gets wrong (see gpujit.sim's new_array).
local hostbufs = {}
function M.read1(e, elem)
  local b = hostbufs[elem]
  if b == nil then
    b = ffi.new(elem .. "[1]")
    hostbufs[elem] = b
  end
  e:to_host(b)
  return b[0]
end

-- The same memory as another element type (n2 elements of elem2).
function M.alias(e, elem2, n2, tgt)
  return view(e.ptr, elem2, n2, tgt, e)
end

-- A device array on tgt for the classified argument a; a.dev is set, and
-- a.back() copies a temporary back into the argument (for outputs).
local function to_dev(a, tgt, fname)
  if a.kind == "garray" then
    a.dev = a.value
    a.back = function() end
    return a.dev
  end
  if a.kind == "farray" and tgt.shared then
    a.dev = view(a.value, a.elem, a.n, tgt, a.value)
    a.back = function() end
    return a.dev
  end
  local src = a.value
  if a.kind == "table" then
    local buf = ffi.new("double[?]", a.n)
    for i = 1, a.n do
      local x = src[i]
      if type(x) ~= "number" then   -- raised through the caller's pcall: no position
        error(("bad argument #%d to '%s' (table element [%d] is %s, expected a number)"):format(
          a.argn, fname, i, types.describe(x)), 0)
      end
      buf[i - 1] = x
    end
    src = buf
    if tgt.shared then
      a.dev = view(buf, "double", a.n, tgt, buf)
      a.back = function()
        local t = a.value
        for i = 1, a.n do t[i] = buf[i - 1] end
      end
      return a.dev
    end
  end
  a.dev = env.gpu.to_device(src, a.elem, tgt.entry)
  a.back = function() a.dev:to_host(a.value) end
  return a.dev
end
M.to_dev = to_dev

-- Drop the views and temporaries of a call (their memory is the
-- argument's, or freed by the collector).
local function done(list, mark)
  for _, a in ipairs(list) do
    if a.dev and a.kind ~= "garray" and not views[a.dev] then a.dev:free() end
    a.dev = nil
  end
  M.close_views(mark)
end
M.done = done

---------------------------------------------------------------------------
-- Kernels, per target and per name (the function closes over the element
-- types and the op, so gpujit compiles one per combination, once).

local kcache = setmetatable({}, { __mode = "k" })
local function kernel(tgt, key, make)
  local per = kcache[tgt]
  if per == nil then
    per = {}
    kcache[tgt] = per
  end
  local k = per[key]
  if k == nil then
    k = env.gpu.kernel(make(), { name = "gpu." .. key, backend = tgt.entry })
    per[key] = k
  end
  return k
end
M.kernel = kernel

-- Function ops are cached per function (weakly).
local fkeys = setmetatable({}, { __mode = "k" })
local nfkeys = 0
local function fkey(f)
  local k = fkeys[f]
  if k == nil then
    nfkeys = nfkeys + 1
    k = "fn" .. nfkeys
    fkeys[f] = k
  end
  return k
end
M.fkey = fkey

-- Run body(tgt) for a primitive over the classified arguments `list` (on
-- their device): the views and temporaries it opens are dropped after it,
-- and its error is raised at `level` (as error() counts from M.run: 3,
-- the default, is the caller of the primitive that called M.run).  list
-- may hold nils.  Returns body's results.
function M.run(list, fname, body, level)
  level = level or 3
  local args = {}
  for i = 1, table.maxn(list) do
    if list[i] then args[#args + 1] = list[i] end
  end
  local tgt = pick_target(args, fname, level)
  local mark = M.open_views()
  local res = { pcall(body, tgt) }
  M.done(args, mark)
  if not res[1] then error(res[2], level) end
  return unpack(res, 2, table.maxn(res))
end

-- A classified argument (argn set), or nil for nil when optional.
function M.arg(v, argn, fname, optional, level)
  if v == nil and optional then return nil end
  local a = classify(v, argn, fname, level + 1)
  a.argn = argn
  return a
end

-- The result of a primitive that wrote `count` elements of elem into the
-- device array d: an array of the kind of the argument `like` (a
-- gpu.array on the device, an FFI array, a Lua table) holding them.
function M.result_like(like, d, elem, count, tgt)
  if like.kind == "garray" then
    local e = env.gpu.array(elem, count, tgt.entry)
    if count > 0 then M.elementwise(tgt, "copy", M.make_copy, count, e, d, i64(count)) end
    return e
  end
  local out = like.kind == "table" and {} or ffi.new(elem .. "[?]", count)
  if count > 0 then M.alias(d, elem, count, tgt):to_host(out) end
  return out
end

-- The launch shape of G items: a row of S work items per item where the
-- device runs launches of fewer than entry.parallel_items work items on one
-- thread (the cpu backend: S * G reaches it), one work item per item
-- elsewhere; groups of one item, of 64 on GPUs.
local function items_cfg(tgt, G)
  local S, gy = 1, 1
  local P = tgt.entry and tgt.entry.parallel_items or 0
  if G < P then S = math.ceil(P / G) end
  if tgt.entry and tgt.entry.type == "gpu" then gy = math.min(G, 64) end
  return { global = { S, G }, group = { S, gy } }
end
M.items_cfg = items_cfg

-- How many items a reduction or scan of n elements runs on tgt.
local function n_items(tgt, n)
  local cu = tgt.entry and tgt.entry.compute_units or 1
  local max
  if tgt.sim then
    max = 16
  else
    max = math.max(GMAX_MIN, 64 * cu)
  end
  return math.max(1, math.min(max, math.ceil(n / (LANES * 16))))
end
M.n_items = n_items

-- How many items a sort runs on tgt (each keeps 256 counters).
function M.sort_items(tgt, n)
  local cu = tgt.entry and tgt.entry.compute_units or 1
  local max = tgt.sim and 4 or (tgt.entry.type == "gpu" and 16 * cu or 8 * cu)
  return math.max(1, math.min(max, math.ceil(n / 4096)))
end

---------------------------------------------------------------------------
-- Ops.

local OPNAMES = { ["+"] = "add", ["*"] = "mul", min = "min", max = "max", ["and"] = "band",
  ["or"] = "bor" }

local function op_fn(op)
  if op == "+" then return function(x, y) return x + y end end
  if op == "*" then return function(x, y) return x * y end end
  if op == "min" then return function(x, y) if y < x then return y end return x end end
  if op == "max" then return function(x, y) if y > x then return y end return x end end
  -- bit.* on int64_t/uint64_t elements (cdata) are 64-bit, as in LuaJIT 2.1
  if op == "and" then return function(x, y) return bit.band(x, y) end end
  return function(x, y) return bit.bor(x, y) end
end

local INT_RANGE = {
  int8_t = { -128, 127 }, uint8_t = { 0, 255 }, int16_t = { -32768, 32767 },
  uint16_t = { 0, 65535 }, int32_t = { -2 ^ 31, 2 ^ 31 - 1 }, uint32_t = { 0, 2 ^ 32 - 1 },
}

local function int_min(T)
  if T == "int64_t" then return -(ffi.new("int64_t", 2) ^ 62) * 2 end
  if T == "uint64_t" then return ffi.new("uint64_t", 0) end
  return INT_RANGE[T][1]
end
local function int_max(T)
  if T == "int64_t" then return (ffi.new("int64_t", 2) ^ 62 - 1) * 2 + 1 end
  if T == "uint64_t" then return ffi.new("uint64_t", 0) - 1 end
  return INT_RANGE[T][2]
end

-- The identity of a builtin op for accumulator type T, as a T cdata.
local function identity(op, T)
  local v
  if op == "+" or op == "or" then
    v = 0
  elseif op == "*" then
    v = 1
  elseif op == "and" then
    v = -1
    if T == "uint64_t" then v = ffi.new("uint64_t", 0) - 1 end
  elseif op == "min" then
    v = types.is_float[T] and math.huge or int_max(T)
  else
    v = types.is_float[T] and -math.huge or int_min(T)
  end
  return ffi.new(T, v)
end
M.identity = identity

-- Check an op argument: a builtin name or a function.
local function check_op(op, elem, argn, fname, level)
  if type(op) == "function" then return end
  if type(op) ~= "string" or not OPNAMES[op] then
    argerr(argn, fname, "unknown op '" .. tostring(op) .. "': expected + * min max and or or a "
      .. "function", level + 1)
  end
  if (op == "and" or op == "or") and not types.is_int[elem] then
    argerr(argn, fname, "op '" .. op .. "' needs integer elements, got " .. elem, level + 1)
  end
end

local function check_elem(a, fname, level)
  if not (types.is_int[a.elem] or types.is_float[a.elem]) then
    argerr(a.argn, fname, "elements of type " .. a.elem .. " are not supported: expected an "
      .. "integer or float type", level + 1)
  end
end

-- The accumulator type of op over elements elem (out: the output type).
local function acc_type(op, elem)
  if (op == "+" or op == "*") and types.is_int[elem] then
    return elem == "uint64_t" and "uint64_t" or "int64_t"
  end
  return elem
end

---------------------------------------------------------------------------
-- The chunk reduction (pass 1 of reduce and scan).  Item j folds the chunk
-- [j*C, min(n, (j+1)*C)): element i goes to lane (i - j*C) % LANES, each lane
-- folds its elements in index order, and the item's partial is its
-- non-empty lanes folded in lane order.  C is a multiple of LANES.

local function make_chunks(ACC, op)
  return function()
    return function(a, part, n, C)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local s
          if hi - lo >= LANES then
            local acc = gpu.local_array(ACC, LANES)
            for l = 0, LANES - 1 do acc[l] = a[lo + l] end
            local full = hi - (hi - lo) % LANES
            local i = lo + LANES
            while i < full do
              for l = 0, LANES - 1 do acc[l] = op(acc[l], a[i + l]) end
              i = i + LANES
            end
            for l = 0, hi - full - 1 do acc[l] = op(acc[l], a[full + l]) end
            -- folded in lane 0 (a store rounds each step as the kernels do)
            for l = 1, LANES - 1 do acc[0] = op(acc[0], acc[l]) end
            s = acc[0]
          else
            local acc = gpu.local_array(ACC, 1)
            acc[0] = a[lo]
            for i = lo + 1, hi - 1 do acc[0] = op(acc[0], a[i]) end
            s = acc[0]
          end
          part[j] = s
        end
      end
    end
  end
end

-- The last pass of reduce: out[0] = init op p[0] op ... op p[g-1] (from the
-- left), or without init from p[0].
local function make_final(ACC, op)
  return function()
    return function(part, out, g, has_init)
      if gpu.global_id(0) == 0 and gpu.global_id(1) == 0 then
        local acc = gpu.local_array(ACC, 1)
        local j0 = 0
        if has_init then
          acc[0] = out[0]   -- init, passed in out (a scalar argument would be a
        else                -- Lua number on the sim backend: 64-bit values round)
          acc[0] = part[0]
          j0 = 1
        end
        for j = j0, g - 1 do acc[0] = op(acc[0], part[j]) end
        out[0] = acc[0]
      end
    end
  end
end

local function chunking(tgt, n)
  local G = n_items(tgt, n)
  local C = math.ceil(n / (G * LANES)) * LANES
  local g = math.ceil(n / C)
  return G, C, g
end
M.chunking = chunking

local function opkey(op, T)
  return (type(op) == "function" and fkey(op) or OPNAMES[op]) .. "_" .. T
end

-- gpu.reduce(a, op [, init])
function M.reduce(a, op, init)
  local fname = "reduce"
  local A = classify(a, 1, fname, 2)
  A.argn = 1
  check_elem(A, fname, 2)
  check_op(op, A.elem, 2, fname, 2)
  local fn = type(op) == "function"
  local ACC = fn and A.elem or acc_type(op, A.elem)
  if init ~= nil and type(init) ~= "number" and not (type(init) == "cdata"
      and types.ctype_info(init) and types.ctype_info(init).kind == "scalar") then
    argerr(3, fname, "number expected, got " .. types.describe(init), 2)
  end
  local function result(v)
    if types.is_int64[A.elem] then return ffi.new(A.elem, v) end
    return tonumber(v)
  end
  if A.n == 0 then
    if init == nil and fn then
      argerr(3, fname, "the array is empty and a function op has no identity: pass init", 2)
    end
    if init == nil then return result(identity(op, ACC)) end
    return result(ffi.new(ACC, init))
  end
  local tgt = pick_target({ A }, fname, 2)
  local list = { A }
  local mark = M.open_views()
  local ok, res = pcall(function()
    local d = to_dev(A, tgt, fname)
    local G, C, g = chunking(tgt, A.n)
    local f = fn and op or op_fn(op)
    local key = opkey(op, ACC)
    local k1 = M.kernel(tgt, "reduce_" .. key, make_chunks(ACC, f))
    local k2 = M.kernel(tgt, "reduce_final_" .. key, make_final(ACC, f))
    local part = M.scratch(tgt, ACC, G, "part")
    local iv = init ~= nil and ffi.new(ACC, init) or (fn and ffi.new(ACC, 0) or identity(op, ACC))
    local out = env.gpu.to_device(ffi.new(ACC .. "[1]", iv), ACC, tgt.entry)
    k1:launch(items_cfg(tgt, G), d, part, i64(A.n), i64(C))
    k2:launch(items_cfg(tgt, 1), part, out, i64(g), init ~= nil or not fn)
    local v = M.read1(out, ACC)
    out:free()
    return result(v)
  end)
  done(list, mark)
  if not ok then error(res, 2) end
  return res
end

---------------------------------------------------------------------------
-- Scan: pass 1 the chunk reduction, pass 2 folds the partials into the
-- carries (in place: part[j] becomes p[0] op ... op p[j-1] for j >= 1),
-- pass 3 scans each chunk sequentially from its carry.

-- with_total: the fold of every partial (the scan's total) is stored
-- into tot[0] as a store converts.
local function make_carry(ACC, op, with_total)
  return function()
    return function(part, g, tot)
      if gpu.global_id(0) == 0 and gpu.global_id(1) == 0 then
        local acc = gpu.local_array(ACC, 1)
        acc[0] = part[0]
        for j = 1, g - 1 do
          local t = part[j]
          part[j] = acc[0]
          acc[0] = op(acc[0], t)
        end
        if with_total then tot[0] = acc[0] end
      end
    end
  end
end

local function make_scan(ACC, op, exclusive)
  return function()
    return function(a, out, part, n, C, id)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local acc = gpu.local_array(ACC, 1)
          if exclusive then
            if j == 0 then acc[0] = id[0] else acc[0] = part[j] end
            for i = lo, hi - 1 do
              local x = a[i]
              out[i] = acc[0]
              acc[0] = op(acc[0], x)
            end
          else
            if j == 0 then acc[0] = a[lo] else acc[0] = op(part[j], a[lo]) end
            out[lo] = acc[0]
            for i = lo + 1, hi - 1 do
              acc[0] = op(acc[0], a[i])
              out[i] = acc[0]
            end
          end
        end
      end
    end
  end
end

-- May a scan of `from` elements be written into `to` elements?
local function wider(from, to)
  if from == to or to == "double" then return true end
  local fs, ts = types.size[from], types.size[to]
  if types.is_float[from] then return false end           -- double into float
  if to == "float" then return fs <= 2 end                -- exact in float
  if not types.is_int[to] then return false end
  if ts <= fs then return false end
  local fsigned = from:sub(1, 1) == "i"
  local tsigned = to:sub(1, 1) == "i"
  return tsigned or not fsigned
end
M.wider = wider

local SCAN_OPTS = { exclusive = true, total = true }

-- gpu.scan(a, op, out [, exclusive | opts])
function M.scan(a, op, out, exclusive)
  local fname = "scan"
  local T
  if type(exclusive) == "table" then
    local o = M.options(exclusive, 4, fname, SCAN_OPTS, 2)
    exclusive = o.exclusive
    if o.total ~= nil then
      T = classify(o.total, 4, fname, 2)
      T.argn = 4
      check_elem(T, fname, 2)
      if T.n ~= 1 then argerr(4, fname, "total must be a 1-element array, got " .. T.n
        .. " elements", 2) end
    end
  end
  local A = classify(a, 1, fname, 2)
  A.argn = 1
  check_elem(A, fname, 2)
  check_op(op, A.elem, 2, fname, 2)
  local O = classify(out, 3, fname, 2)
  O.argn = 3
  check_elem(O, fname, 2)
  if O.n ~= A.n then
    argerr(3, fname, "out has " .. O.n .. " elements, a has " .. A.n, 2)
  end
  if not wider(A.elem, O.elem) then
    argerr(3, fname, "out must have the element type of a or a wider one, got " .. A.elem
      .. " into " .. O.elem, 2)
  end
  if exclusive ~= nil and type(exclusive) ~= "boolean" then
    argerr(4, fname, "boolean expected, got " .. types.describe(exclusive), 2)
  end
  local fn = type(op) == "function"
  if exclusive and fn then
    argerr(4, fname, "an exclusive scan starts from the op's identity, which a function op "
      .. "does not have: use an inclusive scan", 2)
  end
  local ACC = fn and O.elem or acc_type(op, O.elem)
  if A.n == 0 and T then
    if fn then argerr(4, fname, "the array is empty and a function op has no identity: the "
      .. "total is undefined", 2) end
    env.gpu.fill(T.value, identity(op, ACC))
  end
  if A.n == 0 then return out end
  local tgt = pick_target({ A, O, T }, fname, 2)
  local list = { A, O, T }
  local mark = M.open_views()
  local ok, res = pcall(function()
    local da = to_dev(A, tgt, fname)
    local same = rawequal(a, out)
    local dout = same and da or to_dev(O, tgt, fname)
    local G, C, g = chunking(tgt, A.n)
    local f = fn and op or op_fn(op)
    local key = opkey(op, ACC)
    local k1 = M.kernel(tgt, "reduce_" .. key, make_chunks(ACC, f))
    local k2 = M.kernel(tgt, (T and "scan_carryt_" or "scan_carry_") .. key,
      make_carry(ACC, f, T ~= nil))
    local k3 = M.kernel(tgt, (exclusive and "scan_excl_" or "scan_") .. key,
      make_scan(ACC, f, exclusive == true))
    local part = M.scratch(tgt, ACC, G, "part")
    k1:launch(items_cfg(tgt, G), da, part, i64(A.n), i64(C))
    k2:launch(items_cfg(tgt, 1), part, i64(g), T and to_dev(T, tgt, fname) or part)
    local id = env.gpu.to_device(ffi.new(ACC .. "[1]", fn and 0 or identity(op, ACC)), ACC,
      tgt.entry)
    k3:launch(items_cfg(tgt, G), da, dout, part, i64(A.n), i64(C), id)
    id:free()
    if same then A.back() else O.back() end
    if T then T.back() end
  end)
  done(list, mark)
  if not ok then error(res, 2) end
  return out
end

---------------------------------------------------------------------------
-- Shared elementwise kernels (one work item per element): copy and iota;
-- gpu.fill, gpu.copy, gpu.map, gpu.iota are gpujit.prims_map.

local function make_copy()
  return function(dst, src, n)
    local i = gpu.global_id(0)
    if i < n then dst[i] = src[i] end
  end
end
M.make_copy = make_copy   -- gpu.sort copies with it too (prims_sort.lua)

-- a[i] = start + i * step, computed in double (start, step: numbers) and
-- stored as a store converts (gpu.iota; the sorts' index arrays)
local function make_iota()
  return function(a, start, step, n)
    local i = gpu.global_id(0)
    if i < n then a[i] = start + i * step end
  end
end
M.make_iota = make_iota

function M.elementwise(tgt, name, make, n, ...)
  if n == 0 then return end
  local k = M.kernel(tgt, name, make)
  k:launch(n, ...)
end

return M
