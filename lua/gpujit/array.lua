-- gpujit.array: device arrays (gpu.array, gpu.zeros, gpu.to_device).
--
-- A device array is an FFI struct, one struct type per element type:
--   struct gj_array_<T> { T *ptr; int64_t n; void *ctx; int32_t bk; int32_t dev; }
-- so that the dispatcher knows its element type from its ctype id alone, and
-- the launcher reads ptr and n straight from the struct.  bk is the core's
-- backend index (-1: the "sim" backend, plain host memory from calloc), dev
-- the 0-based device.  Memory is freed by the metatype's __gc or by e:free().
--
-- FFI metatypes cannot be changed once set, and a test runner may load this
-- module more than once in one lua_State; so the metatypes are made once per
-- state, kept in the Lua registry, and call through to the implementation of
-- the latest load.
local ffi = require("ffi")
local types = require("gpujit.types")

local M = {}

local SIM_BK = -1
M.SIM_BK = SIM_BK

-- Private, asm-labelled names: a program's own calloc/free keep their types.
pcall(ffi.cdef, [[void *gj_array_calloc(size_t nmemb, size_t size) asm("calloc");]])
pcall(ffi.cdef, [[void gj_array_free(void *ptr) asm("free");]])
local C = ffi.C

local REG = debug.getregistry()
local R = REG["gpujit.array"]
if R == nil then
  R = { ct = {} }
  REG["gpujit.array"] = R
end

local impl = {}
R.impl = impl

-- Filled by gpujit (init.lua): lib (the FFI namespace of core.so) or nil,
-- ctx, current() -> target, resolve(device) -> target, target_of(bk, dev)
-- -> target or nil.  A target is { backend, bk, dev, sim, shared, entry, label }.
local env = {}
function M.setup(e)
  local streams = env.streams
  env = e
  env.streams = env.streams or streams
end

-- gpujit.stream, for copies on a stream (set by gpujit after both load).
function M.set_streams(streams)
  env.streams = streams
end

-- A struct element (types.structs, by its C name) gets an anonymous struct
-- type made with its ctype, since its name may not be a C identifier
-- ("struct vec"); one per struct ctype id.
local function ctype_of(elem)
  local st = types.structs[elem]
  local key = st and ("struct:" .. st.ctid) or elem
  local ct = R.ct[key]
  if ct == nil then
    local decl
    local cname = st and types.struct_cname(st) or elem
    if not cname then   -- a struct with no C name: a template (see types.vla)
      decl = ffi.typeof("struct { $ *ptr; int64_t n; void *ctx; int32_t bk; int32_t dev; }",
        types.struct_ctype(st))
    else
      decl = "gj_array_" .. (st and "s" .. st.ctid or elem)
      ffi.cdef(string.format(
        "typedef struct %s { %s *ptr; int64_t n; void *ctx; int32_t bk; int32_t dev; } %s;",
        decl, cname, decl))
    end
    ct = ffi.metatype(decl, {
      __index = function(e, k) return R.impl.index(e, k, elem) end,
      __newindex = function(e, k, v) return R.impl.newindex(e, k, v, elem) end,
      __len = function(e) return tonumber(e.n) end,
      __gc = function(e) return R.impl.free(e) end,
      __tostring = function(e) return R.impl.tostring(e, elem) end,
    })
    R.ct[key] = ct
    if st then types.register_garray(tonumber(ct), elem) end
  end
  return ct
end

for _, s in ipairs(types.scalars) do
  types.register_garray(tonumber(ctype_of(s)), s)
end

M.ctype_of = ctype_of

-- "[4][3]" for dims { 4, 3 }.
local function dims_text(dims)
  local t = {}
  for i, d in ipairs(dims) do t[i] = "[" .. d .. "]" end
  return table.concat(t)
end

-- A shaped array (gpu.array(ctype, { h, w, ... })) has a struct type of its
-- own per element type and dimensions below the first (dims), so that its
-- ctype id alone gives the kernel type ("float[][4]"):
--   struct { T *ptr; int64_t n; void *ctx; int32_t bk; int32_t dev; int64_t rows; }
-- n is the element count (what the memory holds, as for a plain array),
-- rows the first dimension (the kernel's descriptor length, #e).
local function shaped_ctype_of(elem, dims)
  local st = types.structs[elem]
  local dt = dims_text(dims)
  local key = (st and ("struct:" .. st.ctid) or elem) .. dt
  local ct = R.ct[key]
  if ct == nil then
    local decl
    local cname = st and types.struct_cname(st) or elem
    local fields = "%s *ptr; int64_t n; void *ctx; int32_t bk; int32_t dev; int64_t rows;"
    if not cname then
      decl = ffi.typeof("struct { " .. fields:format("$") .. " }", types.struct_ctype(st))
    else
      decl = "gj_array_" .. (st and "s" .. st.ctid or elem) .. dt:gsub("%]%[", "_"):gsub("[%[%]]", "_")
      ffi.cdef(("typedef struct %s { " .. fields .. " } %s;"):format(decl, cname, decl))
    end
    ct = ffi.metatype(decl, {
      __index = function(e, k) return R.impl.index(e, k, elem, dims) end,
      __newindex = function(e, k, v) return R.impl.newindex(e, k, v, elem, dims) end,
      __len = function(e) return tonumber(e.rows) end,
      __gc = function(e) return R.impl.free(e) end,
      __tostring = function(e) return R.impl.tostring(e, elem, dims) end,
    })
    R.ct[key] = ct
    local inner = 1
    for _, d in ipairs(dims) do inner = inner * d end
    types.register_garray(tonumber(ct), { type = elem .. "[]" .. dt, elem = elem, dims = dims,
                                          esize = types.size[elem] * inner })
  end
  return ct
end

-- The ctype of elem declared as decl followed by the dimensions below the
-- first: "(*)" a pointer to a row (T (*)[4][3]), "[?]" an array of rows
-- (T[?][4][3]); memoized.
local shaped_cts = {}
local function shaped_ct(elem, dims, decl)
  local key = elem .. decl .. dims_text(dims)
  local ct = shaped_cts[key]
  if ct == nil then
    local st = types.structs[elem]
    local cname = st and types.struct_cname(st) or elem
    if cname then
      ct = ffi.typeof(cname .. decl .. dims_text(dims))
    else
      ct = ffi.typeof("$" .. decl .. dims_text(dims), types.struct_ctype(st))
    end
    shaped_cts[key] = ct
  end
  return ct
end

local function rowptr(elem, dims) return shaped_ct(elem, dims, "(*)") end

-- A new FFI array of rows elements of the shape (T[?][4][3]), or of a
-- plain one (T[?]) without dims.
local function shaped_vla(elem, dims, rows)
  if not dims then return types.vla(elem)(rows) end
  return shaped_ct(elem, dims, "[?]")(rows)
end
M.shaped_vla = shaped_vla

local function fail(msg, level)
  error(msg, (level or 1) + 1)
end

local function errmsg()
  if env.lib and env.ctx then return ffi.string(env.lib.gj_errmsg(env.ctx)) end
  return "unknown error"
end

local function target_of(bk, dev)
  if bk == SIM_BK then return env.sim_target end
  return env.target_of and env.target_of(bk, dev) or nil
end

local function label(e)
  local t = target_of(e.bk, e.dev)
  return t and t.label or ("backend " .. e.bk .. " device " .. e.dev)
end

-- Is the array's memory addressable from the host?
local function host_ok(e)
  if e.bk == SIM_BK then return true end
  local t = target_of(e.bk, e.dev)
  return t ~= nil and t.shared
end
M.host_accessible = host_ok

---------------------------------------------------------------------------
-- Metatype implementation.

local methods = {}

M.methods = methods   -- for spec/api_doc_spec.lua: every method is documented

-- An integer cdata index (an int64_t read from an array, in a kernel run by
-- the sim backend) indexes as its number, as it does an FFI array.
local function cindex(k)
  if type(k) == "cdata" then
    local ok, v = pcall(tonumber, k)
    if ok and type(v) == "number" then return v end
  end
  return k
end

-- The first dimension: the element count of a plain array, the row count
-- of a shaped one.
local function rows_of(e, dims)
  return dims and e.rows or e.n
end

function impl.index(e, k, elem, dims)
  k = cindex(k)
  if type(k) == "number" then
    if e.ptr == nil then fail("gpu.array: use of a freed array", 2) end
    if not host_ok(e) then
      fail("gpu.array: the array lives on " .. label(e)
        .. " and cannot be indexed from the host; use e:to_host()", 2)
    end
    local n = rows_of(e, dims)
    if k < 0 or k >= n or k % 1 ~= 0 then
      fail("gpu.array: index " .. k .. " out of range [0, " .. tonumber(n) .. ")"
        .. (dims and " (dimension 1)" or ""), 2)
    end
    if dims then return ffi.cast(rowptr(elem, dims), e.ptr)[k] end   -- a row: e[y][x]
    return e.ptr[k]
  end
  if k == "shape" then
    local sh = { tonumber(rows_of(e, dims)) }
    for i, d in ipairs(dims or {}) do sh[i + 1] = d end
    return sh
  end
  if k == "ctype" then return elem end
  if k == "device" then
    local t = target_of(e.bk, e.dev)
    return t and t.entry or nil
  end
  return methods[k]
end

function impl.newindex(e, k, v, _, dims)
  k = cindex(k)
  if type(k) ~= "number" then fail("gpu.array: cannot set field '" .. tostring(k) .. "'", 2) end
  if dims then
    fail("gpu.array: cannot assign to a row of a multi-dimensional array; assign its "
      .. "elements (e[y][x] = v)", 2)
  end
  if e.ptr == nil then fail("gpu.array: use of a freed array", 2) end
  if not host_ok(e) then
    fail("gpu.array: the array lives on " .. label(e)
      .. " and cannot be indexed from the host; use gpu.to_device or e:to_host()", 2)
  end
  if k < 0 or k >= e.n or k % 1 ~= 0 then
    fail("gpu.array: index " .. k .. " out of range [0, " .. tonumber(e.n) .. ")", 2)
  end
  e.ptr[k] = v
end

-- Arrays in use by launches on a stream (gpujit.stream): how many launches
-- use each, and the memory of those freed (e:free()) meanwhile, released
-- when the last of those launches is synchronized.  The stream keeps the
-- array object alive until then, so its finalizer cannot run before.
local inuse = setmetatable({}, { __mode = "k" })
local deferred = setmetatable({}, { __mode = "k" })

local function release_mem(p, ctx, bk, dev)
  if bk == SIM_BK then
    C.gj_array_free(p)
  elseif env.lib then
    env.lib.gj_mem_free(ctx, bk, dev, p)
  end
end

function impl.free(e)
  local p = e.ptr
  if p == nil then return end
  e.ptr = nil
  e.n = 0
  if types.ctype_info(e).dims then e.rows = 0 end
  if inuse[e] then
    deferred[e] = { p, e.ctx, e.bk, e.dev }
    return
  end
  release_mem(p, e.ctx, e.bk, e.dev)
end

local function is_garray(v)
  if type(v) ~= "cdata" then return false end
  local info = types.ctype_info(v)
  return info ~= nil and info.kind == "garray"
end

M.is_garray = is_garray

-- The gpu.array v is used by a launch (or copy) on a stream: its memory
-- outlives a free until the stream's synchronize releases it.
function M.use(v)
  inuse[v] = (inuse[v] or 0) + 1
end

-- That launch is synchronized.
function M.release(v)
  local c = inuse[v]
  if c == nil then return end
  if c > 1 then
    inuse[v] = c - 1
    return
  end
  inuse[v] = nil
  local d = deferred[v]
  if d then
    deferred[v] = nil
    release_mem(d[1], d[2], d[3], d[4])
  end
end

function impl.tostring(e, elem, dims)
  if e.ptr == nil then return "gpu.array<" .. elem .. "> (freed)" end
  return "gpu.array<" .. elem .. ">[" .. tonumber(rows_of(e, dims)) .. "]"
    .. (dims and dims_text(dims) or "") .. " on " .. label(e)
end

function methods.free(e)
  impl.free(e)
end

---------------------------------------------------------------------------
-- Allocation and copies.

local function elem_name(ctype, fname, level)
  local s, why
  if type(ctype) == "string" then
    s = types.scalar(ctype)
  elseif type(ctype) == "cdata" then
    local info = types.ctype_info(ctype)
    s = info and info.kind == "scalar" and info.elem or nil
  end
  if not s and (type(ctype) == "string" or type(ctype) == "cdata") then
    local st
    st, why = types.struct(ctype)   -- a struct type: its C name or its ctype
    s = st and st.name
  end
  if not s then
    fail(fname .. ": " .. (why or ("element type must be a scalar type name such as \"float\" "
      .. "or an FFI struct type, got " .. tostring(ctype))), level + 1)
  end
  return s
end

local function check_n(n, fname, level)
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    fail(fname .. ": length must be a non-negative integer, got " .. tostring(n), level + 1)
  end
  if n >= 2 ^ 53 then   -- not exact in a Lua number, and more than any device holds
    fail(("%s: length %.0f is too large (at most 2^53 - 1 elements)"):format(fname, n), level + 1)
  end
end

-- n: a length, or a shape { d1, d2, ... }: the element count, the first
-- dimension and the dimensions below it (nil for a plain array; a shape
-- of one dimension is a plain array).
local function check_shape(n, fname, level)
  if type(n) ~= "table" then
    check_n(n, fname, level + 1)
    return n, n, nil
  end
  if #n < 1 or #n > 8 then
    fail(fname .. ": a length or a shape (a list of 1 to 8 lengths) expected, got a table of "
      .. #n, level + 1)
  end
  local total, dims = 1, {}
  for i = 1, #n do
    local d = n[i]
    if type(d) ~= "number" or d < 0 or d % 1 ~= 0 then
      fail(fname .. ": shape[" .. i .. "] must be a non-negative integer, got " .. tostring(d),
        level + 1)
    end
    total = total * d
    if i > 1 then dims[i - 1] = d end
  end
  check_n(total, fname, level + 1)
  return total, n[1], #dims > 0 and dims or nil
end

local function alloc(elem, n, tgt, fname, level, rows, dims)
  local esz = types.size[elem]
  local bytes = math.max(n * esz, esz)
  local p
  if tgt.sim then
    p = C.gj_array_calloc(math.max(n, 1), esz)
    if p == nil then
      fail(("%s: cannot allocate %.0f bytes of host memory"):format(fname, bytes), level + 1)
    end
  else
    p = env.lib.gj_mem_alloc(env.ctx, tgt.bk, tgt.dev, bytes)
    if p == nil then
      fail(("%s: cannot allocate %.0f bytes on %s: %s"):format(fname, bytes, tgt.label, errmsg()),
        level + 1)
    end
  end
  local e = dims and shaped_ctype_of(elem, dims)() or ctype_of(elem)()
  e.ptr = ffi.cast(types.ptr(elem), p)
  e.n = n
  if dims then e.rows = rows end
  e.ctx = env.ctx
  e.bk = tgt.sim and SIM_BK or tgt.bk
  e.dev = tgt.sim and 0 or tgt.dev
  return e
end

-- The copies: now, or on stream s (gpujit.stream) when given, which then
-- keeps `keep` (the array and the host memory) alive and runs `done` at its
-- synchronize.  On sim (plain host memory) they are made now.
local function upload(e, src, bytes, fname, level, s, keep)
  if bytes == 0 then return end
  if e.bk == SIM_BK then
    ffi.copy(e.ptr, src, bytes)
  elseif s then
    env.streams.copy(s, e.ptr, src, bytes, 0, keep, nil, fname .. ": copy to " .. label(e), level + 1)
  elseif env.lib.gj_mem_copy(e.ctx, e.bk, e.dev, e.ptr, src, bytes, 0) ~= 0 then
    fail(fname .. ": copy to " .. label(e) .. " failed: " .. errmsg(), level + 1)
  end
end

local function download(e, dst, bytes, fname, level, s, keep, done)
  if bytes == 0 or e.bk == SIM_BK or not s then
    if bytes > 0 then
      if e.bk == SIM_BK then
        ffi.copy(dst, e.ptr, bytes)
      elseif env.lib.gj_mem_copy(e.ctx, e.bk, e.dev, dst, e.ptr, bytes, 1) ~= 0 then
        fail(fname .. ": copy from " .. label(e) .. " failed: " .. errmsg(), level + 1)
      end
    end
    if done then done() end
    return
  end
  env.streams.copy(s, dst, e.ptr, bytes, 1, keep, done, fname .. ": copy from " .. label(e), level + 1)
end

-- The stream that `arg` (a device argument, or a stream) names, checked
-- against array e's device; nil for none.
local function stream_arg(v, e, fname, level)
  if not (env.streams and env.streams.is_stream(v)) then return nil end
  local same = e == nil or (v.tgt.sim and e.bk == SIM_BK)
    or (not v.tgt.sim and v.tgt.bk == e.bk and v.tgt.dev == e.dev)
  if not same then
    fail(fname .. ": the stream is on " .. v.tgt.label .. ", the array on " .. label(e), level + 1)
  end
  return v
end

local function target(device, fname, level)
  if device ~= nil then return env.resolve(device, fname, level + 1) end
  return env.current(fname, level + 1)
end

-- gpu.array(ctype, n or shape [, device])
function M.array(ctype, n, device)
  local elem = elem_name(ctype, "gpu.array", 2)
  local total, rows, dims = check_shape(n, "gpu.array", 2)
  return alloc(elem, total, target(device, "gpu.array", 2), "gpu.array", 2, rows, dims)
end

-- gpu.zeros(ctype, n or shape [, device])
function M.zeros(ctype, n, device)
  local elem = elem_name(ctype, "gpu.zeros", 2)
  local rows, dims
  n, rows, dims = check_shape(n, "gpu.zeros", 2)
  local e = alloc(elem, n, target(device, "gpu.zeros", 2), "gpu.zeros", 2, rows, dims)
  if e.bk ~= SIM_BK and n > 0 then
    local bytes = n * types.size[elem]
    upload(e, ffi.new("uint8_t[?]", bytes), bytes, "gpu.zeros", 2)
  end
  return e
end

local function is_elem_ok(elem, v)
  if elem == "bool" then return type(v) == "boolean" end
  return type(v) == "number" or (type(v) == "cdata" and types.ctype_info(v) ~= nil
    and types.ctype_info(v).kind == "scalar")
end

local function fill_from_table(buf, t, n, elem, fname, level)
  for i = 1, n do
    local v = t[i]
    if not is_elem_ok(elem, v) then
      fail(fname .. ": table element [" .. i .. "] is " .. types.describe(v) .. ", expected "
        .. (elem == "bool" and "a boolean" or "a number"), level + 1)
    end
    buf[i - 1] = v
  end
end

-- Element count of an FFI array cdata (VLA or fixed), nil for a pointer.
local function ffi_len(v, info)
  if info.kind == "farray" then
    return info.len or ffi.sizeof(v) / info.esize
  end
  return nil
end
M.ffi_len = ffi_len

-- The dimensions of a nested Lua table (a table of tables ... of numbers,
-- the rows of each level of equal length), or nil for a flat one.
local function table_shape(t, fname, level)
  if type(t[1]) ~= "table" then return nil end
  local dims, x = {}, t
  while type(x) == "table" do
    dims[#dims + 1] = #x
    x = x[1]
  end
  if #dims > 8 then fail(fname .. ": a nested table of more than 8 levels", level + 1) end
  local function walk(u, d, path)
    if #u ~= dims[d] then
      fail(fname .. ": table" .. path .. " has " .. #u .. " elements, expected " .. dims[d]
        .. " (the rows of a nested table must have equal lengths)", level + 2)
    end
    if d == #dims then return end
    for i = 1, #u do
      if type(u[i]) ~= "table" then
        fail(fname .. ": table" .. path .. "[" .. i .. "] is " .. types.describe(u[i])
          .. ", expected a table (a row)", level + 2)
      end
      walk(u[i], d + 1, path .. "[" .. i .. "]")
    end
  end
  walk(t, 1, "")
  return dims
end

-- Nested table t of shape dims into the flat FFI array buf (row-major).
local function fill_from_nested(buf, t, dims, elem, fname, level)
  local k = 0
  local function walk(u, d, path)
    for i = 1, dims[d] do
      if d < #dims then
        walk(u[i], d + 1, path .. "[" .. i .. "]")
      else
        local v = u[i]
        if not is_elem_ok(elem, v) then
          fail(fname .. ": table element " .. path .. "[" .. i .. "] is " .. types.describe(v)
            .. ", expected " .. (elem == "bool" and "a boolean" or "a number"), level + 3)
        end
        buf[k] = v
        k = k + 1
      end
    end
  end
  walk(t, 1, "")
end

local function product(dims)
  local p = 1
  for _, d in ipairs(dims or {}) do p = p * d end
  return p
end

-- gpu.to_device(src [, ctype [, device or stream]]): src an FFI array, a
-- Lua table of numbers (or a nested table of them: a shaped array) or a
-- gpu.array.  With a stream: on its device, the copy enqueued on it (a
-- table is read now, an FFI array when the copy runs).
function M.to_device(src, ctype, device)
  local fname = "gpu.to_device"
  local elem = ctype ~= nil and elem_name(ctype, fname, 2) or nil
  local s = stream_arg(device, nil, fname, 2)
  local function tgt() return s and s.tgt or target(device, fname, 3) end
  local ts = type(src)
  if ts == "table" then
    elem = elem or "double"
    if types.structs[elem] then
      fail(fname .. ": a Lua table cannot fill an array of " .. elem .. "; pass an FFI array of it",
        2)
    end
    local shape = table_shape(src, fname, 2)
    if shape then   -- nested: an array of that shape
      local n = product(shape)
      local inner = { unpack(shape, 2) }
      local buf = types.vla(elem)(n)
      fill_from_nested(buf, src, shape, elem, fname, 2)
      local e = alloc(elem, n, tgt(), fname, 2, shape[1], inner)
      upload(e, buf, n * types.size[elem], fname, 2, s, { e, buf })
      return e
    end
    local n = #src
    local buf = types.vla(elem)(n)
    fill_from_table(buf, src, n, elem, fname, 2)
    local e = alloc(elem, n, tgt(), fname, 2)
    upload(e, buf, n * types.size[elem], fname, 2, s, { e, buf })
    return e
  elseif ts == "cdata" then
    local info = types.ctype_info(src)
    if info and info.kind == "garray" then
      if src.ptr == nil then fail(fname .. ": use of a freed array", 2) end
      if s then
        fail(fname .. ": a gpu.array source and a stream: copy it to the host first (on the "
          .. "stream: src:to_host(nil, s))", 2)
      end
      return M.to_device(src:to_host(), ctype or info.elem, device)
    elseif info and info.kind == "farray" then
      local rows = ffi_len(src, info)
      local n = rows * product(info.dims)   -- elements
      elem = elem or info.elem
      local e = alloc(elem, n, tgt(), fname, 2, rows, info.dims)
      local bytes = n * types.size[elem]
      if elem == info.elem then
        upload(e, src, bytes, fname, 2, s, { e, src })
      else
        if types.structs[elem] or info.struct then
          fail(fname .. ": an array of " .. info.elem .. " cannot be converted to " .. elem, 2)
        end
        local buf = types.vla(elem)(n)
        local sp = info.dims and ffi.cast("const " .. info.elem .. " *", src) or src
        for i = 0, n - 1 do buf[i] = sp[i] end
        upload(e, buf, bytes, fname, 2, s, { e, buf })
      end
      return e
    elseif info and info.kind == "fptr" then
      fail(fname .. ": an FFI pointer has no length; pass an FFI array or a table", 2)
    end
  end
  fail(fname .. ": source must be an FFI array, a Lua table of numbers or a gpu.array, got "
    .. types.describe(src), 2)
end

-- Flat FFI array buf (row-major, converted with conv) into the nested table
-- dst of shape { rows, dims... }, its rows made where missing.
local function fill_nested(dst, buf, rows, dims, conv)
  local all = { rows, unpack(dims) }
  local k = 0
  local function walk(u, d)
    for i = 1, all[d] do
      if d < #all then
        if type(u[i]) ~= "table" then u[i] = {} end
        walk(u[i], d + 1)
      else
        u[i] = conv(buf[k])
        k = k + 1
      end
    end
  end
  walk(dst, 1)
end

local function ident(x) return x end

-- e:to_host([dst [, stream]]): a new FFI array (of e's shape: T[?][w] for
-- a gpu.array of shape { h, w }), or dst (an FFI array of at least as many
-- elements, or a Lua table: nested for a shaped array) filled with the
-- contents.  With a stream: the copy enqueued on it, dst (or the new
-- array) filled by its synchronize.
function methods.to_host(e, dst, stream)
  local fname = "to_host"
  if type(e) ~= "cdata" or not types.ctype_info(e) or types.ctype_info(e).kind ~= "garray" then
    fail("to_host: call it as e:to_host([dst [, stream]]) on a gpu.array", 2)
  end
  if e.ptr == nil then fail("to_host: use of a freed array", 2) end
  local s = stream_arg(stream, e, fname, 2)
  if stream ~= nil and not s then
    fail("to_host: argument #2 must be a gpu.stream, got " .. types.describe(stream), 2)
  end
  local einfo = types.ctype_info(e)
  local elem, dims = einfo.elem, einfo.dims
  local n = tonumber(e.n)
  local rows = dims and tonumber(e.rows) or n
  local bytes = n * types.size[elem]
  if dst == nil then
    local out = shaped_vla(elem, dims, rows)
    download(e, out, bytes, fname, 2, s, { e, out })
    return out
  end
  local td = type(dst)
  if td == "table" then
    local buf = types.vla(elem)(n)
    local conv = types.is_int64[elem] and tonumber or ident
    download(e, buf, bytes, fname, 2, s, { e, buf, dst }, function()
      if dims then
        fill_nested(dst, buf, rows, dims, conv)
      else
        for i = 1, n do dst[i] = conv(buf[i - 1]) end
      end
    end)
    return dst
  elseif td == "cdata" then
    local info = types.ctype_info(dst)
    if info and (info.kind == "farray" or info.kind == "fptr") then
      local len = ffi_len(dst, info)
      if len then len = len * product(info.dims) end   -- elements
      if len and len < n then
        fail("to_host: the destination holds " .. len .. " elements, the array has " .. n, 2)
      end
      if info.elem == elem then
        download(e, dst, bytes, fname, 2, s, { e, dst })
      else
        if types.structs[elem] or info.struct then
          fail("to_host: an array of " .. elem .. " cannot be converted to " .. info.elem, 2)
        end
        local buf = types.vla(elem)(n)
        local dp = info.dims and ffi.cast(info.elem .. " *", dst) or dst
        download(e, buf, bytes, fname, 2, s, { e, buf, dst }, function()
          for i = 0, n - 1 do dp[i] = buf[i] end
        end)
      end
      return dst
    end
  end
  fail("to_host: destination must be an FFI array or a Lua table, got " .. types.describe(dst), 2)
end

return M
