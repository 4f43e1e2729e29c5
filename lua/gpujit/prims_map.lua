-- gpujit.prims_map: the elementwise primitives, one work item per element:
-- gpu.map (a Lua function of scalars applied across arrays), gpu.fill,
-- gpu.copy, gpu.iota and gpu.arange, written as gpujit kernels (docs/api.md,
-- "Parallel primitives").
--
-- gpu.map(fn, out, a, b, ...) makes, once per function and per pattern of
-- its arguments (an array or a scalar each), the kernel
--   function(out, n, x1, x2, ...) local i = gpu.global_id(0)
--     if i < n then out[i] = fn(x1[i], x2, ...) end end
-- (generated source, fn its upvalue: a device function), kept like the
-- other primitives' kernels per device; gpujit compiles it per argument
-- types on first use, and the disk cache keeps it.
local ffi = require("ffi")
local types = require("gpujit.types")
local P = require("gpujit.prims")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}
local argerr, i64, classify = P.argerr, P.i64, P.classify

local function make_fill()
  return function(a, v, n)
    local i = gpu.global_id(0)
    if i < n then a[i] = v end
  end
end

-- int64_t/uint64_t: the value from a 1-element array (a scalar argument is
-- a Lua number on sim, which rounds beyond 2^53)
local function make_fill64()
  return function(a, v, n)
    local i = gpu.global_id(0)
    if i < n then a[i] = v[0] end
  end
end


-- gpu.fill(a, v)
function M.fill(a, v)
  local fname = "fill"
  local A = classify(a, 1, fname, 2)
  A.argn = 1
  local ok_v
  if A.elem == "bool" then ok_v = type(v) == "boolean" else
    ok_v = type(v) == "number" or (type(v) == "cdata" and types.ctype_info(v) ~= nil
      and types.ctype_info(v).kind == "scalar")
  end
  if not ok_v then
    argerr(2, fname, (A.elem == "bool" and "boolean" or "number") .. " expected, got "
      .. types.describe(v), 2)
  end
  if A.n == 0 then return a end
  local tgt = P.pick_target({ A }, fname, 2)
  local list = { A }
  local mark = P.open_views()
  local ok, res = pcall(function()
    local d = P.to_dev(A, tgt, fname)
    if types.is_int64[A.elem] then
      local x = P.env_gpu().to_device(ffi.new(A.elem .. "[1]", v), A.elem, tgt.entry)
      P.elementwise(tgt, "fill64", make_fill64, A.n, d, x, i64(A.n))
      x:free()
    else
      -- a scalar of the element type, so that every value shares one
      -- compiled kernel and the store is a plain one (the kernel reading
      -- v[0] from memory that may alias a[] was not vectorized, 2x slower)
      P.elementwise(tgt, "fill", make_fill, A.n, d, A.elem == "bool" and v or ffi.new(A.elem, v),
        i64(A.n))
    end
    A.back()
  end)
  P.done(list, mark)
  if not ok then error(res, 2) end
  return a
end

-- gpu.copy(dst, src): the #src elements of src into dst[0 .. #src - 1].
function M.copy(dst, src)
  local fname = "copy"
  local D = classify(dst, 1, fname, 2)
  D.argn = 1
  local S = classify(src, 2, fname, 2)
  S.argn = 2
  if D.n < S.n then
    argerr(1, fname, "dst has " .. D.n .. " elements, src has " .. S.n, 2)
  end
  if (D.elem == "bool") ~= (S.elem == "bool") then
    argerr(2, fname, "cannot copy " .. S.elem .. " elements into " .. D.elem, 2)
  end
  if S.n == 0 or rawequal(dst, src) then return dst end
  local tgt = P.pick_target({ D, S }, fname, 2)
  local list = { D, S }
  local mark = P.open_views()
  local ok, res = pcall(function()
    local dd = P.to_dev(D, tgt, fname)
    local ds = P.to_dev(S, tgt, fname)
    P.elementwise(tgt, "copy", P.make_copy, S.n, dd, ds, i64(S.n))
    D.back()
  end)
  P.done(list, mark)
  if not ok then error(res, 2) end
  return dst
end

---------------------------------------------------------------------------
-- iota and arange.

local function check_num(v, argn, fname, what)
  if type(v) ~= "number" then
    argerr(argn, fname, what .. ": number expected, got " .. types.describe(v), 3)
  end
end

-- gpu.iota(a [, start [, step]]): a[i] = start + i * step; returns a
function M.iota(a, start, step)
  local fname = "iota"
  local A = P.arg(a, 1, fname, false, 2)
  if not (types.is_int[A.elem] or types.is_float[A.elem]) then
    argerr(1, fname, "elements of type " .. A.elem .. " are not supported: expected an integer "
      .. "or float type", 2)
  end
  start, step = start or 0, step or 1
  check_num(start, 2, fname, "start")
  check_num(step, 3, fname, "step")
  if A.n == 0 then return a end
  P.run({ A }, fname, function(tgt)
    local d = P.to_dev(A, tgt, fname)
    P.elementwise(tgt, "iota", P.make_iota, A.n, d, start, step, i64(A.n))
    A.back()
  end)
  return a
end

-- gpu.arange(n [, ctype [, device]]): a new gpu.array 0, 1, ..., n-1
function M.arange(n, ctype, device)
  local fname = "arange"
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    argerr(1, fname, "a whole number of elements expected, got " .. types.describe(n), 2)
  end
  ctype = ctype or "int32_t"
  if not (types.is_int[ctype] or types.is_float[ctype]) then
    argerr(2, fname, "an integer or float element type expected, got " .. tostring(ctype), 2)
  end
  local e = P.env_gpu().array(ctype, n, device)
  if n > 0 then M.iota(e) end
  return e
end

---------------------------------------------------------------------------
-- map.

local makers = {}   -- pattern -> function(fn, gpu) -> kernel function
local function maker(pattern)
  local m = makers[pattern]
  if m == nil then
    local params, args = {}, {}
    for i = 1, #pattern do
      params[i] = ", x" .. i
      args[i] = "x" .. i .. (pattern:sub(i, i) == "a" and "[i]" or "")
    end
    local src = "local fn, gpu = ...\nreturn function(out, n" .. table.concat(params)
      .. ")\n  local i = gpu.global_id(0)\n  if i < n then out[i] = fn("
      .. table.concat(args, ", ") .. ") end\nend\n"
    local chunk = assert(loadstring(src, "=gpu.map"))
    m = function(fn) return chunk(fn, gpu) end
    makers[pattern] = m
  end
  return m
end

local MAX_MAP_ARGS = 32

-- gpu.map(fn, out, a, b, ...) -> out
function M.map(fn, out, ...)
  local fname = "map"
  if type(fn) ~= "function" then
    argerr(1, fname, "a Lua function of scalars expected, got " .. types.describe(fn), 2)
  end
  local O = P.arg(out, 2, fname, false, 2)
  local nin = select("#", ...)
  if nin > MAX_MAP_ARGS then
    argerr(3 + MAX_MAP_ARGS, fname, "at most " .. MAX_MAP_ARGS .. " inputs", 2)
  end
  local ins, pattern, list = { ... }, {}, { O }
  for i = 1, nin do
    local v = ins[i]
    local tv = type(v)
    local scalar = tv == "number" or tv == "boolean" or (tv == "cdata"
      and types.ctype_info(v) and types.ctype_info(v).kind == "scalar")
    if scalar then
      pattern[i] = "s"
    else
      local A = P.arg(v, i + 2, fname, false, 2)
      if A.n ~= O.n then
        argerr(i + 2, fname, "the array has " .. A.n .. " elements, out has " .. O.n, 2)
      end
      ins[i] = A
      pattern[i] = "a"
      if not rawequal(v, out) then list[#list + 1] = A end
    end
  end
  pattern = table.concat(pattern)
  if O.n == 0 then return out end
  P.run(list, fname, function(tgt)
    local dout = P.to_dev(O, tgt, fname)
    local args = {}
    for i = 1, nin do
      local A = ins[i]
      if pattern:sub(i, i) == "s" then
        args[i] = A
      elseif rawequal(A.value, out) then
        args[i] = dout
      else
        args[i] = P.to_dev(A, tgt, fname)
      end
    end
    local make = maker(pattern)
    P.elementwise(tgt, "map_" .. P.fkey(fn) .. "_" .. pattern, function() return make(fn) end,
      O.n, dout, i64(O.n), unpack(args, 1, nin))
    O.back()
  end)
  return out
end

M.api = { fill = M.fill, copy = M.copy, iota = M.iota, arange = M.arange, map = M.map }

return M
