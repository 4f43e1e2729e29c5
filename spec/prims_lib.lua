-- What the specs of the library's primitives share (prims_select_spec,
-- prims_segment_spec, sort_family_spec, prims_map_spec, hashgrid_spec):
-- the element types, the sizes per backend, deterministic inputs, arrays
-- of each kind (FFI array, Lua table, gpu.array) and reading them back.
local ffi = require("ffi")
local H = require("spec.helpers")
local gpu = H.gpu

local L = {}

L.ALL = { "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
  "uint64_t", "float", "double" }
L.KINDS = { "ffi", "table", "garray" }
L.unsigned = { uint8_t = true, uint16_t = true, uint32_t = true, uint64_t = true }

-- Sizes: empty, one, odd, around powers of two, past one item's chunk; sim
-- runs kernels item by item in Lua, so it stops earlier.
function L.sizes(bk)
  if bk == "sim" then return { 0, 1, 7, 33, 257 } end
  return { 0, 1, 7, 33, 257, 4097 }
end

-- n pseudo-random whole numbers in [lo, hi], from seed.
function L.gen(n, lo, hi, seed)
  local out, s = {}, seed or 1
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = lo + s % (hi - lo + 1)
  end
  return out
end

-- Small values for type ct, signed ones for signed types.
function L.vals(ct, n, seed, span)
  span = span or 9
  if L.unsigned[ct] then return L.gen(n, 0, span, seed) end
  return L.gen(n, -span, span, seed)
end

-- An array of kind "ffi", "table" or "garray" of ct holding vals (a Lua
-- list; a table holds doubles).
function L.make(kind, ct, vals, n)
  n = n or #vals
  if kind == "table" then
    local t = {}
    for i = 1, n do t[i] = vals[i] or 0 end
    return t
  end
  local a = ffi.new(ct .. "[?]", n)
  for i = 1, n do a[i - 1] = vals[i] or 0 end
  if kind == "garray" then return gpu.to_device(a, ct) end
  return a
end

-- The element type an array of kind holds.
function L.elem(kind, ct) return kind == "table" and "double" or ct end

-- The first n values of an array of any kind as a Lua list (64-bit
-- integers stay cdata).
function L.list(a, n)
  local out = {}
  if type(a) == "table" then
    for i = 1, n do out[i] = a[i] end
    return out
  end
  local h = a
  local ok, isg = pcall(function() return a.to_host ~= nil end)
  if ok and isg then h = a:to_host() end
  for i = 0, n - 1 do
    local v = h[i]
    if type(v) == "cdata" and not ffi.istype("int64_t", v) and not ffi.istype("uint64_t", v) then
      v = tonumber(v)
    end
    out[i + 1] = v
  end
  return out
end

-- Values as the element type stores them (a float rounds, a narrow
-- integer wraps; 64-bit integers as cdata).
function L.as(ct, v)
  if ct == "double" then return v end
  if ct == "int64_t" or ct == "uint64_t" then return ffi.new(ct, v) end
  return tonumber(ffi.new(ct, v))
end

-- Equal as the element type's bits (NaN equals NaN, -0 is not +0).
function L.same(x, y)
  if type(x) == "number" and type(y) == "number" then
    if x ~= x then return y ~= y end
    return x == y and (x ~= 0 or 1 / x == 1 / y)
  end
  return x == y
end

-- Assert two lists are equal element by element (L.same), naming where.
function L.assert_list(want, got, what)
  assert(#want == #got, ("%s: %d elements, expected %d"):format(what, #got, #want))
  for i = 1, #want do
    if not L.same(want[i], got[i]) then
      error(("%s: element %d is %s, expected %s"):format(what, i - 1, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end

return L
