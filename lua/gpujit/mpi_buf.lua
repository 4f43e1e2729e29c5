-- gpujit.mpi_buf: what MPI sends and receives for a gpujit.mpi buffer
-- argument (docs/distributed.md, "Buffers").
--
-- A buffer is an FFI array (or pointer, in a view with a count), a Lua
-- table of numbers (as doubles, 1-based), a gpu.array, or a view of one of
-- them: mpi.view(buf, offset, count), the count elements after the first
-- `offset` (offset is a number of elements, 0 the start, for every kind).
--
--   local b = buf.open(v, "mpi.send", 1, "in")   -- "in": MPI reads it,
--                                               -- "out": MPI writes it, "inout"
--   b.ptr, b.count, b.elem, b.esize   -- what MPI gets (count elements of elem)
--   b:finish()                        -- after MPI is done: copy back what it wrote
--
-- How each kind reaches MPI:
--   FFI array     in place (a pointer to its first element of the range);
--   table         through a double buffer: filled from the table ("in"),
--                 copied back into it by finish ("out");
--   gpu.array     first every stream's pending work is synchronized
--                 (gpu.synchronize), so that MPI never sees memory a launch
--                 is still writing; then in place where the host addresses
--                 the device's memory (cpu, sim) or MPI is CUDA-aware and the
--                 array is on cuda; else staged through a host buffer with
--                 the core's copies (gj_mem_copy), only the range.
local ffi = require("ffi")
local types = require("gpujit.types")
local array = require("gpujit.array")
require("gpujit.cdefs")

local M = {}

local VIEW = {}   -- the metatable of views
local view_mt = { __index = VIEW, __metatable = "gpujit.mpi.view" }
view_mt.__tostring = function(v)
  return "mpi.view(" .. types.describe(v.buf) .. ", " .. v.offset .. ", " .. v.count .. ")"
end

local function is_view(v) return type(v) == "table" and getmetatable(v) == "gpujit.mpi.view" end
M.is_view = is_view

local function fail(msg, level) error(msg, level + 1) end

local function whole(n, what, fname, level)
  if type(n) ~= "number" or n ~= math.floor(n) or n < 0 or n >= 2 ^ 31 then
    fail(fname .. ": " .. what .. " must be a whole number in [0, 2^31), got "
      .. (type(n) == "number" and tostring(n) or type(n)), level + 1)
  end
end

-- mpi.view(buf, offset [, count]): count defaults to the rest of buf.
function M.view(buf, offset, count)
  whole(offset, "the offset", "mpi.view", 2)
  if count ~= nil then whole(count, "the count", "mpi.view", 2) end
  if is_view(buf) then
    fail("mpi.view: buf is a view already: take a view of its buffer", 2)
  end
  return setmetatable({ buf = buf, offset = offset, count = count }, view_mt)
end

-- The core's copy functions (for staged gpu.arrays), loaded on first use.
local corelib
local function core()
  if corelib == nil then
    local c = require("gpujit.loadcore").core
    local path = c and (c.path or package.searchpath("gpujit.core", package.cpath))
    corelib = path and ffi.load(path) or false
  end
  return corelib or nil
end

local function length(v, info)
  if info.kind == "garray" then return tonumber(v.n) end
  return array.ffi_len(v, info)   -- nil for a pointer
end

-- The backends whose device pointers a CUDA-aware MPI takes.
local CUDA_AWARE = { cuda = true }

local Buf = {}
Buf.__index = Buf
function Buf.finish(b)
  if b.back then b.back() end
end

-- The count of the range [offset, offset + count), checked against len.
local function range(len, offset, count, fname, argn, level)
  count = count or (len and len - offset)
  if count == nil then
    fail(fname .. ": argument #" .. argn .. " is an FFI pointer: give its count, "
      .. "mpi.view(p, offset, count)", level + 1)
  end
  if len and offset + count > len then
    fail(fname .. ": argument #" .. argn .. ": the range [" .. offset .. ", " .. offset + count
      .. ") is past its " .. len .. " elements", level + 1)
  end
  return count
end

local function stage_table(t, offset, count, mode)
  local data = ffi.new("double[?]", count > 0 and count or 1)
  local b = setmetatable({ ptr = data, count = count, elem = "double", esize = 8, keep = data }, Buf)
  if mode ~= "out" then
    for i = 1, count do
      local x = t[offset + i]
      if type(x) ~= "number" then return nil, i end
      data[i - 1] = x
    end
  end
  if mode ~= "in" then
    b.back = function() for i = 1, count do t[offset + i] = data[i - 1] end end
  end
  return b
end

local function garray_buf(e, elem, offset, count, mode, fname, level, cuda_aware)
  if e.ptr == nil then fail(fname .. ": use of a freed gpu.array", level + 1) end
  require("gpujit").synchronize()
  local esize = types.size[elem]
  local p = e.ptr + offset
  local b = setmetatable({ count = count, elem = elem, esize = esize, keep = e }, Buf)
  local direct = array.host_accessible(e)
  if cuda_aware and not direct then
    for _, be in ipairs(require("gpujit").backends()) do
      if be.index == e.bk and CUDA_AWARE[be.name] then direct = true end
    end
  end
  if direct then
    b.ptr = p
    return b
  end
  local lib, bytes = core(), count * esize
  local host = ffi.new("uint8_t[?]", bytes > 0 and bytes or 1)
  b.ptr, b.host = ffi.cast(types.ptr(elem), host), host
  local function copy(dir)
    if bytes > 0 and lib.gj_mem_copy(e.ctx, e.bk, e.dev, dir == 1 and host or p,
                                     dir == 1 and p or host, bytes, dir) ~= 0 then
      error(fname .. ": the copy of the gpu.array's range "
        .. (dir == 1 and "to" or "from") .. " the host failed: "
        .. ffi.string(lib.gj_errmsg(e.ctx)), 0)
    end
  end
  if mode ~= "out" then copy(1) end
  if mode ~= "in" then b.back = function() copy(0) end end
  return b
end

-- The buffer for argument #argn of fname (see the header).
function M.open(v, fname, argn, mode, cuda_aware, level)
  level = (level or 1) + 1
  local offset, count = 0, nil
  if is_view(v) then v, offset, count = v.buf, v.offset, v.count end
  local tv = type(v)
  if tv == "table" then
    count = range(#v, offset, count, fname, argn, level)
    local b, bad = stage_table(v, offset, count, mode)
    if not b then
      fail(fname .. ": argument #" .. argn .. ": table element [" .. (offset + bad)
        .. "] is " .. types.describe(v[offset + bad]) .. ", expected a number", level)
    end
    return b
  elseif tv == "cdata" then
    local info = types.ctype_info(v)
    if info and (info.kind == "farray" or info.kind == "fptr" or info.kind == "garray") then
      count = range(length(v, info), offset, count, fname, argn, level)
      if info.kind == "garray" then
        return garray_buf(v, info.elem, offset, count, mode, fname, level, cuda_aware)
      end
      local p = ffi.cast(types.ptr(info.elem), v) + offset
      return setmetatable({ ptr = p, count = count, elem = info.elem,
                            esize = types.size[info.elem], keep = v }, Buf)
    end
  end
  fail(fname .. ": argument #" .. argn .. " must be an FFI array, a Lua table of numbers, "
    .. "a gpu.array or an mpi.view of one, got " .. types.describe(v), level)
end

-- A new buffer of n elements like v's kind: a table for a table, else an
-- FFI array of v's element type (gather, allgather).
function M.like(v, n)
  if is_view(v) then v = v.buf end
  if type(v) == "table" then
    local t = {}
    for i = 1, n do t[i] = 0 end
    return t
  end
  local info = types.ctype_info(v)
  return types.vla(info.elem)(n > 0 and n or 1)
end

return M
