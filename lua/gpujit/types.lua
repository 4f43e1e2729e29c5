-- gpujit.types: type names, FFI ctypes and Lua values -> kernel type names.
--
-- Canonical type names are those of the core's type table (below; "bool",
-- "int8_t" ... "uint64_t", "float", "double") and "<scalar>[]" for arrays.
-- Everything here runs on cold paths, except `tag`, which the dispatcher
-- calls on a cache miss, and the memoized `ctype_info`.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")

local M = {}

---------------------------------------------------------------------------
-- The type table.
--
-- It is the core's: gj_types in src/gj_type.h, one entry per kind with its
-- canonical name, size, alignment, kind and C spellings, read once here
-- through core.types() (a cold path; launches never look at it).  Nothing
-- below writes a size, a kind or a spelling of its own.
--
-- Without the compiled core (the sim backend runs without it) the entries
-- are derived once from LuaJIT's FFI instead: FFI_SPELLINGS lists the
-- spellings the core knows, and for each the FFI gives the size and the
-- alignment (ffi.sizeof, ffi.alignof), stored values give the kind (a bool
-- reads back a boolean, a float keeps 0.5, a signed integer keeps -1), and
-- the canonical name follows from the kind and the size ("int" .. bits ..
-- "_t", "uint" .. bits .. "_t", "float", "double", "bool").  The list is
-- names only; spec/types_spec.lua checks that deriving from it gives exactly
-- core.types(), so a kind added to the core without it fails there.

local FFI_SPELLINGS = "bool,_Bool,int8_t,char,signed char,uint8_t,unsigned char,"
  .. "int16_t,short,short int,signed short,uint16_t,unsigned short,unsigned short int,"
  .. "int32_t,int,signed,signed int,uint32_t,unsigned int,unsigned,"
  .. "int64_t,long,long int,signed long,long long,long long int,ssize_t,ptrdiff_t,intptr_t,"
  .. "uint64_t,unsigned long,unsigned long int,unsigned long long,unsigned long long int,"
  .. "size_t,uintptr_t,float,double"

-- The entries core.types() would return, derived from the FFI (above), in
-- the order of their first spelling in the list.
function M.ffi_entries()
  local list, by_name = {}, {}
  for sp in FFI_SPELLINGS:gmatch("[^,]+") do
    local ct = ffi.typeof(sp)
    -- sp .. "[1]", not ffi.typeof("$[1]", ct): under busted (LuaJIT
    -- 2.1.0-beta3, JIT on or off) that gave "bool [1]" for every ct here
    local sz, cell = ffi.sizeof(ct), ffi.new(sp .. "[1]")
    cell[0] = 2
    local isbool = type(cell[0]) == "boolean"
    cell[0] = 0.5
    local isfloat = not isbool and cell[0] ~= 0
    local isint = not (isbool or isfloat)
    if isint then cell[0] = -1 end
    local signed = isint and cell[0] < 0
    local name = isbool and "bool" or isfloat and (sz == 4 and "float" or "double")
      or (signed and "int" or "uint") .. 8 * sz .. "_t"
    local e = by_name[name]
    if not e then
      e = { name = name, size = sz, align = ffi.alignof(ct), bits = isbool and 1 or 8 * sz,
            bool = isbool, int = isint, float = isfloat, signed = signed,
            int64 = isint and sz == 8, spellings = {} }
      by_name[name] = e
      list[#list + 1] = e
    end
    if sp ~= name then e.spellings[#e.spellings + 1] = sp end
  end
  return list
end

do
  local core = require("gpujit.loadcore").core
  if core and core.types then
    M.entries, M.source = core.types(), "core"
  else
    M.entries, M.source = M.ffi_entries(), "ffi"
  end
end

M.scalars = {}     -- canonical names, in the core's order (gj_scalar)
M.size = {}        -- name -> bytes
M.align = {}       -- name -> bytes
M.is_scalar = {}   -- name -> true
M.is_int = {}      -- integer kinds
M.is_float = {}    -- float, double
M.is_int64 = {}    -- the 64-bit integers (boxed cdata in LuaJIT)
M.aliases = {}     -- C spelling -> name ("int" -> "int32_t")
for i, e in ipairs(M.entries) do
  local n = e.name
  M.scalars[i], M.size[n], M.align[n], M.is_scalar[n] = n, e.size, e.align, true
  M.is_int[n], M.is_float[n], M.is_int64[n] = e.int or nil, e.float or nil, e.int64 or nil
  for _, sp in ipairs(e.spellings) do M.aliases[sp] = n end
end
local size, is_scalar, aliases = M.size, M.is_scalar, M.aliases

local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%s+", " "))
end

local function strip_quals(s)
  s = " " .. s .. " "
  s = s:gsub(" const ", " "):gsub(" volatile ", " ")
  s = s:gsub(" const ", " "):gsub(" volatile ", " ")
  return trim(s)
end

-- Canonical scalar name for a C spelling, or nil.
function M.scalar(name)
  if type(name) ~= "string" then return nil end
  local s = strip_quals(name)
  if is_scalar[s] then return s end
  return aliases[s]
end

-- Canonical name for a type name as a user writes it: "int" -> "int32_t",
-- "float*", "float[?]", "float[16]", "const float *" -> "float[]".
-- Returns name, or nil and a message.
function M.normalize(name)
  if type(name) ~= "string" then
    return nil, "type name must be a string, got " .. type(name)
  end
  local s = trim(name)
  local mbase, mdims = s:match("^(.-)%s*%[%s*[%d?]*%s*%](%s*%[[%d%s%[%]]+%])$")
  -- multi-dimensional: "float[?][4]" -> "float[][4]"
  if mbase and mdims:gsub("%s*%[%s*%d+%s*%]", "") == "" then
    local e = M.scalar(mbase) or (M.struct(mbase) and M.struct(mbase).name)
    if not e then
      return nil, "unknown array element type '" .. mbase .. "' in '" .. name .. "'"
    end
    return e .. "[]" .. mdims:gsub("%s+", "")
  end
  local base = s:match("^(.-)%s*%[%s*%]$") or s:match("^(.-)%s*%[%s*%?%s*%]$")
    or s:match("^(.-)%s*%[%s*%d+%s*%]$") or s:match("^(.-)%s*%*$")
  if base then
    local e = M.scalar(base)
    if not e then
      local st, why = M.struct(base)
      if st then return st.name .. "[]" end
      return nil, why or ("unknown array element type '" .. base .. "' in '" .. name .. "'")
    end
    return e .. "[]"
  end
  local e = M.scalar(s)
  if not e then
    if M.lnum[s] then return s end
    local st, why = M.struct(s)    -- a struct, passed by reference
    if st then return st.name end
    return nil, why or ("unknown type '" .. name .. "'")
  end
  return e
end

---------------------------------------------------------------------------
-- Lua numbers that hold whole values (docs/typing.md, "Whole numbers").
--
-- The classes are the core's (core.lnum_classes, src/gj_type.c), set by
-- gpujit at load; without the core there are none and every number is a
-- double.  A class is a type name ("lua_pos20") whose parameter the core
-- types as an integer standing for the double LuaJIT holds.

M.lnum = {}          -- name -> { name =, lo =, hi = }
local lnum_list = {} -- the classes a launch picks from (all but lua_int)

function M.set_lnum_classes(list)
  M.lnum, lnum_list = {}, {}
  for _, c in ipairs(list) do
    M.lnum[c.name] = c
    if c.name ~= "lua_int" then lnum_list[#lnum_list + 1] = c end
  end
end

-- The tag of a Lua number for the dispatch tree: its class name, or
-- "number" (a double: a fraction, -0, NaN, +-inf, a whole number outside
-- every class, or any number of a launch with a dimension of 2^31 or more,
-- `huge`, where the ids would not have the ranges the classes count on).
function M.numtag(a, huge)
  if huge or a % 1 ~= 0 then return "number" end   -- inf % 1 and NaN are NaN
  if a == 0 and 1 / a < 0 then return "number" end  -- -0
  for i = 1, #lnum_list do
    local c = lnum_list[i]
    if a >= c.lo and a <= c.hi then return c.name end
  end
  return "number"
end

-- Does class name `inner` lie within class name `outer`?
function M.lnum_within(inner, outer)
  local a, b = M.lnum[inner], M.lnum[outer]
  return a ~= nil and b ~= nil and a.lo >= b.lo and a.hi <= b.hi
end

-- Element of an array type name ("float[]" -> "float"), or nil.
function M.elem(tname)
  return tname:match("^(.-)%[%]$")
end

-- A signature: list of type names -> list of canonical names, or error.
function M.normalize_sig(sig, what)
  if type(sig) ~= "table" then
    error((what or "signature") .. " must be a list of type names, got " .. type(sig), 0)
  end
  local out = {}
  for i = 1, #sig do
    local t, err = M.normalize(sig[i])
    if not t then error((what or "signature") .. ": type #" .. i .. ": " .. err, 0) end
    out[i] = t
  end
  return out
end

function M.sig_key(types)
  return table.concat(types, ",")
end

---------------------------------------------------------------------------
-- FFI ctypes.

-- ctype id -> canonical scalar name, for the scalar ctypes themselves.
local scalar_by_id = {}
for _, s in ipairs(M.scalars) do
  scalar_by_id[tonumber(ffi.typeof(s))] = s
end
for a, s in each(aliases) do
  local ok, ct = pcall(ffi.typeof, a)
  if ok and scalar_by_id[tonumber(ct)] == nil then scalar_by_id[tonumber(ct)] = s end
end

local function scalar_of_ctext(text)
  local t = strip_quals(text)
  if is_scalar[t] then return t end
  if aliases[t] then return aliases[t] end
  local ok, ct = pcall(ffi.typeof, t)
  if ok then return scalar_by_id[tonumber(ct)] end
  return nil
end

-- gpu.array struct ctypes (filled by gpujit.array): ctype id -> element.
local garray_ids = {}
function M.register_garray(ctid, elem)
  garray_ids[ctid] = elem
end

-- Structs, through LuaJIT's ffi.typeinfo (lj_ctype.h: the kind is the top
-- 4 bits of info, the child id the low 16; a struct's fields are its sib
-- chain).  FFI prints a typedef'd anonymous struct as "struct 241"; this
-- finds the typedef's name.
local CT_STRUCT, CT_PTR, CT_ARRAY, CT_TYPEDEF = 1, 2, 3, 7
local CTF_UNION = 0x00800000

local function ct_kind(ti) return bit.rshift(ti.info, 28) end
local function ct_child(ti) return bit.band(ti.info, 0xffff) end

local function struct_label(sid, sti)
  local word = bit.band(sti.info, CTF_UNION) ~= 0 and "union" or "struct"
  if sti.name then return word .. " " .. sti.name end
  for id = 1, 65535 do
    local t = ffi.typeinfo(id)
    if t == nil then break end
    if ct_kind(t) == CT_TYPEDEF and ct_child(t) == sid and t.name then return t.name end
  end
  return word .. " " .. sid
end

-- Struct types (docs/typing.md, "Structs").  A struct is an entry of the
-- type table of its own, made from LuaJIT's layout when a kernel first sees
-- it: M.structs[name] = { name =, ctid =, size =, align =, fields = { { name
-- =, offset =, type = (a scalar name or a struct entry), count = (a fixed
-- array's length or nil) } ... }, spec = the layout text the core reads }
-- (src/gj_type.h: "{name;size;align;field:offset:type[count],...}").  Its
-- name is its C name ("particle", "struct vec"); M.size and M.align hold it
-- as they hold the scalars'.  A name that LuaJIT gives two structs (two
-- anonymous "struct {...}" that print alike never share one, as the name of
-- one without a typedef or tag is "struct <ctype id>") names one entry per
-- lua_State; the layout text, which holds every offset and field name, is
-- what the core and the disk cache key see.
local CTF_BOOL, CTF_FP, CTF_UNSIGNED = 0x08000000, 0x04000000, 0x00800000
local CTF_REF = 0x00800000   -- on a CT_PTR: a reference (what p[i] of a struct array is)
local CT_NUM = 0
M.structs = {}
local struct_memo = {}   -- struct ctype id -> entry, or false and a reason
local struct_why = {}

local function num_name(ti)
  local f, sz = ti.info, ti.size
  if bit.band(f, CTF_BOOL) ~= 0 then return "bool" end
  if bit.band(f, CTF_FP) ~= 0 then return sz == 4 and "float" or sz == 8 and "double" or nil end
  local n = (bit.band(f, CTF_UNSIGNED) ~= 0 and "uint" or "int") .. 8 * sz .. "_t"
  return is_scalar[n] and n or nil
end

local struct_entry

-- The type of a field (child ctype id cid): a scalar name or a struct
-- entry, and a fixed array's count; or nil and a reason.
local function field_type(cid, label, fname)
  local ti = ffi.typeinfo(cid)
  local k = ct_kind(ti)
  local count
  if k == CT_ARRAY then
    local eti = ffi.typeinfo(ct_child(ti))
    local esz = eti and eti.size
    if not esz or esz == 0 or not ti.size or ct_kind(eti) == CT_ARRAY then
      return nil, "field '" .. fname .. "' of " .. label .. " is a "
        .. (ct_kind(eti) == CT_ARRAY and "multi-dimensional" or "variable-length")
        .. " array, which kernels do not support"
    end
    count = ti.size / esz
    cid, ti, k = ct_child(ti), eti, ct_kind(eti)
  end
  if k == CT_NUM then
    local n = num_name(ti)
    if n then return n, count end
  elseif k == CT_STRUCT then
    local e, why = struct_entry(cid)
    if e then return e, count end
    return nil, why
  end
  return nil, "field '" .. fname .. "' of " .. label .. " has a type kernels do not support "
    .. "(fields are numbers, bools, structs and fixed arrays of them)"
end

-- The type-table entry of the struct with ctype id sid, made on first use;
-- or nil and a reason.
function struct_entry(sid)
  local e = struct_memo[sid]
  if e ~= nil then return e or nil, struct_why[sid] end
  local sti = ffi.typeinfo(sid)
  local label = struct_label(sid, sti)
  local why
  if bit.band(sti.info, CTF_UNION) ~= 0 then
    why = label .. ": unions are not supported in kernels"
  end
  local fields, f = {}, sti.sib and ffi.typeinfo(sti.sib)
  while f and not why do
    if ct_kind(f) ~= 9 then      -- CT_FIELD; a bitfield, a constant, ...
      why = label .. (f.name and (": field '" .. f.name .. "'") or "")
        .. " is a bit field or another member kernels do not support"
    else
      local t, count = field_type(ct_child(f), label, f.name or "?")
      if t == nil then why = count end
      fields[#fields + 1] = { name = f.name, offset = f.size, type = t, count = count }
    end
    f = f.sib and ffi.typeinfo(f.sib)
  end
  if not why and #fields == 0 then why = label .. " has no fields" end
  if why then
    struct_memo[sid], struct_why[sid] = false, why
    return nil, why
  end
  local parts = {}
  for i, fd in ipairs(fields) do
    local t = type(fd.type) == "table" and fd.type.spec or fd.type
    parts[i] = fd.name .. ":" .. fd.offset .. ":" .. t .. (fd.count and "[" .. fd.count .. "]" or "")
  end
  e = { name = label, ctid = sid, size = sti.size, align = 2 ^ bit.band(bit.rshift(sti.info, 16), 15),
        fields = fields }
  e.spec = "{" .. label .. ";" .. e.size .. ";" .. e.align .. ";" .. table.concat(parts, ",") .. "}"
  struct_memo[sid] = e
  M.structs[label], M.size[label], M.align[label] = e, e.size, e.align
  return e
end

-- The struct entry of a ctype, a cdata of it or a C name; or nil and a
-- reason (nil, nil: no struct at all).
function M.struct(ct)
  if not ffi.typeinfo then return nil end
  if type(ct) == "string" then
    if M.structs[ct] then return M.structs[ct] end
    local ok, t = pcall(ffi.typeof, ct)
    if not ok then return nil end
    ct = t
  elseif type(ct) == "cdata" then
    ct = ffi.typeof(ct)
  end
  local sid = tonumber(ct)
  local ti = ffi.typeinfo(sid)
  if ti == nil or ct_kind(ti) ~= CT_STRUCT then return nil end
  local e, why = struct_entry(sid)
  if e and not e.ct then e.ct = ct end
  return e, why
end

-- The struct entry of a struct cdata or of a reference to one (an element
-- of an FFI array of structs), or nil.
function M.struct_of_value(v)
  if type(v) ~= "cdata" or not ffi.typeinfo then return nil end
  local ti = ffi.typeinfo(tonumber(ffi.typeof(v)))
  if ti and ct_kind(ti) == CT_PTR then   -- a reference: its struct
    local cti = ffi.typeinfo(ct_child(ti))
    if cti and ct_kind(cti) == CT_STRUCT then return (struct_entry(ct_child(ti))) end
    return nil
  end
  return (M.struct(v))
end

-- The C name that gives struct entry e's own ctype (its typedef or its
-- tag), or nil for one that has none ("struct 97").
function M.struct_cname(e)
  if e.cname == nil then
    local ok, ct = pcall(ffi.typeof, e.name)
    e.cname = ok and tonumber(ct) == e.ctid and e.name or false
  end
  return e.cname or nil
end

-- The ctype of struct entry e (for FFI arrays of it on the host).
function M.struct_ctype(e)
  if not e.ct then
    local ok, ct = pcall(ffi.typeof, e.name)
    if not (ok and tonumber(ct) == e.ctid) then
      error("gpujit: no ctype at hand for " .. e.name .. "; pass the struct's ctype "
        .. "(ffi.typeof) instead of its name", 3)
    end
    e.ct = ct
  end
  return e.ct
end

-- The name the core compiles a canonical type name under: an array of
-- structs is its layout text with "[]"; every other name is itself.
function M.core_name(tname)
  local base, dims = tname:match("^(.-)(%[%].*)$")
  local e = M.structs[base or tname]
  return e and e.spec .. (dims or "") or tname
end

-- The dimensions below the first of a multi-dimensional array type name
-- ("float[][4][3]" -> { 4, 3 }), or nil for any other name.
function M.dims(tname)
  local rest = tname:match("^.-%[%](%[[%d%[%]]+%])$")
  if not rest or rest:gsub("%[%d+%]", "") ~= "" then return nil end
  local dims = {}
  for d in rest:gmatch("%[(%d+)%]") do dims[#dims + 1] = tonumber(d) end
  return dims
end

-- The one-dimensional name of a type name ("float[][4]" -> "float[]").
function M.flat(tname)
  return (tname:gsub("^(.-%[%])%[.*$", "%1"))
end

-- The reason an FFI struct (or an array of, or a pointer to, structs) cannot
-- be an argument, or nil when ctid is no struct.
function M.struct_reason(ctid, text)
  if not ffi.typeinfo then return nil end
  local ti = ffi.typeinfo(ctid)
  if ti == nil then return nil end
  local k, sid = ct_kind(ti), ctid
  if k == CT_ARRAY or k == CT_PTR then sid = ct_child(ti) end
  local sti = ffi.typeinfo(sid)
  if sti == nil or ct_kind(sti) ~= CT_STRUCT then return nil end
  local _, why = struct_entry(sid)
  return why and ("an FFI " .. (k == CT_PTR and "pointer to " or k == CT_ARRAY and "array of " or "")
    .. text .. ": " .. why)
end

-- Info for an FFI array of, or pointer to, structs, or nil.
-- A struct cdata (a value, or a reference such as p[i]) is passed as
-- LuaJIT passes it to a function: by reference, its type the struct's name
-- ("particle"); to the launcher it is an FFI array of one element (copied
-- in and back, if written, where the device does not share host memory).
local function struct_array_info(ctid, ct, text)
  if not ffi.typeinfo then return nil end
  local ti = ffi.typeinfo(ctid)
  local k = ti and ct_kind(ti)
  if k == CT_STRUCT or (k == CT_PTR and bit.band(ti.info, CTF_REF) ~= 0) then
    local e = struct_entry(k == CT_STRUCT and ctid or ct_child(ti))
    if not e then return nil end
    return { ctid = ctid, kind = "farray", type = e.name, elem = e.name, esize = e.size,
             struct = e, len = 1, text = text, byref = true }
  end
  if k ~= CT_ARRAY and k ~= CT_PTR then return nil end
  local sid = ct_child(ti)
  local sti = ffi.typeinfo(sid)
  if not sti or ct_kind(sti) ~= CT_STRUCT then return nil end
  local e = struct_entry(sid)
  if not e then return nil end
  local info = { ctid = ctid, kind = k == CT_PTR and "fptr" or "farray", type = e.name .. "[]",
                 elem = e.name, esize = e.size, struct = e, text = text }
  if k == CT_ARRAY and bit.band(ti.info, 0x00100000) == 0 then   -- not a VLA (CTF_VLA)
    info.len = ffi.sizeof(ct) / e.size
  end
  return info
end

-- ctype id -> info (memoized), or false when unsupported (reason in
-- unsupported[ctid]).  info = { ctid, kind = "scalar" | "farray" (VLA or
-- fixed array, len = fixed element count or nil for a VLA) | "fptr" |
-- "garray", type = canonical name, elem, esize, text = how FFI prints it }.
local memo = {}
local unsupported = {}

-- const: the elements of an array or pointer are const ("const float [4]"):
-- the kernel may read them, not write them (gpujit.dispatch checks).
local function const_of(base)
  return base:find("%f[%w_]const%f[^%w_]") ~= nil or nil
end

-- An FFI array of more than one dimension ("float [?][4]", "struct 97
-- [8][16]", "double (&)[3][3]", a row of one): info with dims (the
-- dimensions below the first), esize the bytes of a row (what the first
-- index steps over), ebytes an element's; nil when text is none, or nil
-- and a reason.
local function multidim_info(ctid, text)
  local base, outer, rest = text:match("^(.-)%s*%[([%d?]+)%](%[[%d%[%]]+%])$")
  if not base then base, outer, rest = text:match("^(.-)%s*%(&%)%[(%d+)%](%[[%d%[%]]+%])$") end
  if not base or rest:gsub("%[%d+%]", "") ~= "" then return nil end
  local dims, inner = {}, 1
  for d in rest:gmatch("%[(%d+)%]") do
    dims[#dims + 1] = tonumber(d)
    inner = inner * tonumber(d)
  end
  local e, st = scalar_of_ctext(base), nil
  if not e and ffi.typeinfo then
    local id = ctid
    local ti = ffi.typeinfo(id)
    if ti and ct_kind(ti) == CT_PTR then id = ct_child(ti); ti = ffi.typeinfo(id) end
    while ti and ct_kind(ti) == CT_ARRAY do id = ct_child(ti); ti = ffi.typeinfo(id) end
    if ti and ct_kind(ti) == CT_STRUCT then
      local why
      st, why = struct_entry(id)
      if not st then return nil, "an FFI multi-dimensional array of " .. base .. ": " .. why end
      e = st.name
    end
  end
  if not e then return nil end
  if #dims > 7 then
    return nil, "FFI type '" .. text .. "': at most 8 dimensions in a kernel argument"
  end
  local ebytes = st and st.size or size[e]
  if inner == 0 and outer == "?" then
    return nil, "FFI type '" .. text .. "': a variable-length array whose rows are empty (a "
      .. "dimension 0 after the first) has no element count; use a fixed size"
  end
  return { ctid = ctid, kind = "farray", type = e .. "[]" .. rest, elem = e, struct = st,
           esize = ebytes * inner, ebytes = ebytes, dims = dims, len = tonumber(outer),
           text = text, const = const_of(base) }
end

local function classify(ctid, ct)
  local text = tostring(ct):match("^ctype<(.*)>$") or tostring(ct)
  local ge = garray_ids[ctid]
  if ge then
    if type(ge) == "table" then   -- a shaped gpu.array (gpujit.array)
      return { ctid = ctid, kind = "garray", type = ge.type, elem = ge.elem,
               esize = ge.esize, ebytes = size[ge.elem], dims = ge.dims,
               struct = M.structs[ge.elem], text = "gpu.array<" .. ge.type .. ">" }
    end
    return { ctid = ctid, kind = "garray", type = ge .. "[]", elem = ge, esize = size[ge],
             text = "gpu.array<" .. ge .. ">" }
  end
  do
    local mi, why = multidim_info(ctid, text)
    if mi then return mi end
    if why then return nil, why end
  end
  local s = scalar_by_id[ctid]
  if s then
    return { ctid = ctid, kind = "scalar", type = s, elem = s, esize = size[s], text = text }
  end
  local base, n
  base = text:match("^(.-)%s*%[%?%]$")
  if base then
    local e = scalar_of_ctext(base)
    if e then
      return { ctid = ctid, kind = "farray", type = e .. "[]", elem = e, esize = size[e],
               text = text, const = const_of(base) }
    end
  end
  base, n = text:match("^(.-)%s*%[(%d+)%]$")
  if not base then base, n = text:match("^(.-)%s*%(&%)%[(%d+)%]$") end
  if base then
    local e = scalar_of_ctext(base)
    if e then
      return { ctid = ctid, kind = "farray", type = e .. "[]", elem = e, esize = size[e],
               len = tonumber(n), text = text, const = const_of(base) }
    end
  end
  base = text:match("^(.-)%s*%*$")
  if base then
    local e = scalar_of_ctext(base)
    if e then
      return { ctid = ctid, kind = "fptr", type = e .. "[]", elem = e, esize = size[e],
               text = text, const = const_of(base) }
    end
  end
  -- A scalar with qualifiers ("const int").
  local e = scalar_of_ctext(text)
  if e then
    return { ctid = ctid, kind = "scalar", type = e, elem = e, esize = size[e], text = text }
  end
  local si = struct_array_info(ctid, ct, text)
  if si then return si end
  local why = M.struct_reason(ctid, text)
  if why then return nil, why end
  return nil, "unsupported FFI type '" .. text .. "'"
end

-- Info for a ctype (a ctype object or a cdata of it), memoized per id.
function M.ctype_info(ct)
  if type(ct) == "cdata" then ct = ffi.typeof(ct) end
  local ctid = tonumber(ct)
  local info = memo[ctid]
  if info ~= nil then return info or nil, unsupported[ctid] end
  local why
  info, why = classify(ctid, ct)
  memo[ctid] = info or false
  if not info then unsupported[ctid] = why end
  return info, why
end

-- An FFI array of numbers (of any number of dimensions), or an FFI struct
-- value, a kernel reaches by name (an upvalue, a global), for the
-- compiler's constant data (docs/typing.md, "Constant tables"): the values
-- as LuaJIT reads them, copied into Lua tables.  An array becomes a table
-- of its elements, element 0 at [1] (a table of such tables for each
-- further dimension); an element of int64_t/uint64_t, which LuaJIT reads as
-- cdata, is its decimal text ("-5", "18446744073709551615").  A struct
-- becomes a table of its fields by name (a number or a boolean; a nested
-- struct a table of its own; a fixed array a table as an array is; an
-- int64_t/uint64_t field stays its cdata, which is not constant data, but an
-- array of them is copied as an array is).
-- Returns the copy, the list of the tables in it that copy arrays (indexed
-- from 0 in the kernel) and a table giving, for each of those that copy an
-- array of 64-bit integers, its element type; nil when v is none of these
-- (arrays of structs or of bool).
local function num_copy(x, t)
  if M.is_int64[t] or t == "bool" then return x end
  return tonumber(x)
end

-- A 64-bit integer element as its decimal text.
local function int64_text(x)
  return (tostring(x):gsub("U?LL$", ""))
end

local function array_elem_ok(e)
  return e and (M.is_int[e] or M.is_float[e]) and true or false
end

local function struct_copy(v, e, arrays, i64)
  local t = {}
  for _, f in ipairs(e.fields) do
    local x, ft = v[f.name], f.type
    local function one(y)
      if type(ft) == "table" then return struct_copy(y, ft, arrays, i64) end
      return num_copy(y, ft)
    end
    if f.count then
      local a = {}
      for i = 0, f.count - 1 do a[i + 1] = M.is_int64[ft] and int64_text(x[i]) or one(x[i]) end
      arrays[#arrays + 1] = a
      if M.is_int64[ft] then i64[a] = ft end
      t[f.name] = a
    else
      t[f.name] = one(x)
    end
  end
  return t
end

-- v's dimensions (the first from its size, for a VLA) and element, when v
-- is an FFI array of numbers of one or more dimensions.
local function array_dims(v)
  local text = tostring(ffi.typeof(v)):match("^ctype<(.*)>$") or ""
  local base = text:match("^([^%[%(]-)%s*%[")
  local e = base and scalar_of_ctext(base)
  if not array_elem_ok(e) then return nil end
  local dims, inner = {}, 1
  for d in text:gmatch("%[([%d?]*)%]") do dims[#dims + 1] = tonumber(d) or false end
  for k = 2, #dims do
    if not dims[k] then return nil end
    inner = inner * dims[k]
  end
  if #dims == 0 then return nil end
  dims[1] = ffi.sizeof(v) / (inner * size[e])
  return dims, e
end

local function array_copy(v, dims, d, e, arrays, i64)
  local t = {}
  for i = 0, dims[d] - 1 do
    if d < #dims then
      t[i + 1] = array_copy(v[i], dims, d + 1, e, arrays, i64)
    elseif M.is_int64[e] then
      t[i + 1] = int64_text(v[i])
    else
      t[i + 1] = tonumber(v[i])
    end
  end
  arrays[#arrays + 1] = t
  if M.is_int64[e] then i64[t] = e end
  return t
end

function M.const_data(v)
  local info = M.ctype_info(v)
  if info and info.struct and info.byref and not info.type:match("%[%]$") then   -- a struct
    local arrays, i64 = {}, {}
    return struct_copy(v, info.struct, arrays, i64), arrays, i64
  end
  if info and info.kind ~= "farray" then return nil end
  local dims, e = array_dims(v)
  if not dims then return nil end
  local arrays, i64 = {}, {}
  return array_copy(v, dims, 1, e, arrays, i64), arrays, i64
end

-- What a Lua value is as a kernel argument, for messages and cold paths:
-- returns a canonical type name or nil and a reason.
function M.of_value(v, precision)
  local tv = type(v)
  if tv == "number" then
    return precision == "single" and "float" or "double"
  elseif tv == "boolean" then
    return "bool"
  elseif tv == "cdata" then
    local info, why = M.ctype_info(v)
    if not info then return nil, why end
    return info.type
  elseif tv == "table" then
    return "double[]"
  elseif tv == "nil" then
    return nil, "got no value"
  end
  return nil, "unsupported argument type '" .. tv .. "'"
end

-- A short description of a value for messages ("FFI float[?]", "Lua table").
function M.describe(v)
  local tv = type(v)
  if tv == "cdata" then
    local info = M.ctype_info(v)
    if info then
      if info.kind == "garray" then return info.text end
      return "FFI " .. info.text
    end
    return "FFI " .. (tostring(ffi.typeof(v)):match("^ctype<(.*)>$") or "cdata")
  elseif tv == "table" then
    return "Lua table"
  elseif tv == "nil" then
    return "nil"
  end
  return "Lua " .. tv
end

-- A ctype for `T[?]` given a type name or a ctype (used by arrays and sim).
local vla_cache = {}
--
-- Types are made from C text where there is one ("float[?]", "particle[?]"):
-- LuaJIT 2.1.0-beta3's templates (ffi.typeof("$[?]", ct)) gave, in the full
-- suite under busted, the type of an earlier template call for a later ct
-- (a `float` shared array came back as an array of a struct a spec had
-- used); types.lua's header notes the same for "$[1]".  A template is left
-- only for what has no C name: a struct with neither typedef nor tag.
local function c_text(ctype)
  if type(ctype) ~= "string" then
    local st = M.struct(ctype)
    if st then return M.struct_cname(st) end
    return M.scalar(tostring(ctype):match("^ctype<(.*)>$") or "")
  end
  if M.scalar(ctype) then return M.scalar(ctype) end
  if M.structs[ctype] then return M.struct_cname(M.structs[ctype]) end
  return ctype
end

function M.vla(ctype)
  local key = ctype
  local ct = vla_cache[key]
  if ct then return ct end
  local text = c_text(ctype)
  if text then
    ct = ffi.typeof(text .. "[?]")
  elseif type(ctype) == "string" then
    ct = ffi.typeof("$[?]", M.struct_ctype(M.structs[ctype]))
  else
    ct = ffi.typeof("$[?]", ctype)
  end
  vla_cache[key] = ct
  return ct
end

-- A ctype for `T *` given a scalar or struct name (gpu.array's pointers).
local ptr_cache = {}
function M.ptr(elem)
  local ct = ptr_cache[elem]
  if ct then return ct end
  local text = c_text(elem)
  ct = text and ffi.typeof(text .. " *") or ffi.typeof("$ *", M.struct_ctype(M.structs[elem]))
  ptr_cache[elem] = ct
  return ct
end

-- Metatypes (docs/typing.md, "Metatypes").  LuaJIT keeps a metatype's
-- metatable where Lua cannot read it (getmetatable of a cdata gives "ffi"),
-- so the metamethod is found by doing the operation on two zeroed objects of
-- the struct with a call hook set: the first Lua function LuaJIT calls with
-- one of them as its first argument is the metamethod (a C function called
-- after the FFI's own C metamethod is one written in C), and the hook stops
-- it before its first instruction runs; the hook set before is restored.  The dispatch is LuaJIT's own (for
-- two objects of one type: the left operand's).  Returns the metamethod, or
-- for "__index" with key: the __index function (and true), or the value
-- the __index table gives for key (and false); nil when there is none.
local PROBE_STOP = {}
local probes = {
  __add = function(a, b) return a + b end, __sub = function(a, b) return a - b end,
  __mul = function(a, b) return a * b end, __div = function(a, b) return a / b end,
  __mod = function(a, b) return a % b end, __pow = function(a, b) return a ^ b end,
  __unm = function(a) return -a end, __len = function(a) return #a end,
  __eq = function(a, b) return a == b end, __lt = function(a, b) return a < b end,
  __le = function(a, b) return a <= b end, __index = function(a, _, key) return a[key] end,
  __new = function(_, _, _, ct) return ct() end,   -- __new(ct, ...)
}
for _, f in each(probes) do jit.off(f) end

function M.metamethod(name, mm, key)
  local e, probe = M.structs[name], probes[mm]
  if not (e and probe) then return nil end
  local okc, ct = pcall(M.struct_ctype, e)
  if not okc then return nil end
  local a, b = ffi.new(ct), ffi.new(ct)
  ffi.gc(a, nil)   -- a metatype's __gc never sees these
  ffi.gc(b, nil)
  local found, entered, done, ccalls = nil, false, false, 0
  local oh, om, oc = debug.gethook()
  debug.sethook(function()
    local info = debug.getinfo(2, "fS")
    if info.func == probe then entered = true; return end
    if not entered or done then return end
    if info.what == "C" then
      -- the first is the FFI's own metamethod (it dispatches to the
      -- metatype's); a second is the metatype's, written in C
      ccalls = ccalls + 1
      if ccalls < 2 then return end
      found = info.func
    else
      local _, first = debug.getlocal(2, 1)
      if rawequal(first, a) or rawequal(first, b) or rawequal(first, ct) then found = info.func end
    end
    error(PROBE_STOP, 0)
  end, "c")
  local ok, v = pcall(probe, a, b, key, ct)
  done = true   -- before the call that restores the hook
  debug.sethook(oh, om, oc)
  if found then return found, true end
  if mm == "__index" and ok then return v, false end
  return nil
end

return M
