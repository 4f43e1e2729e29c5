-- gpujit.prims_sort: gpu.sort(keys [, values [, opts]]) and gpu.argsort,
-- written as gpujit kernels (docs/api.md, "Parallel primitives"): a stable
-- LSD radix sort, or with a comparison function (opts.cmp) the stable
-- merge sort of gpujit.prims_mergesort.  Several value arrays, and argsort,
-- sort an index along and gather by it.  Descending order complements the
-- ordered keys the radix passes see (a stable ascending sort of them is
-- the stable descending sort), or reverses the comparison.
--
-- The radix sort:
--
-- Keys are sorted on order-preserving unsigned bit patterns, 8 bits per
-- pass (1 pass for 8-bit keys, 2 for 16-bit, 4 for 32-bit, 8 for 64-bit).
-- Each pass: (1) every item counts the digits of its contiguous chunk into
-- hist[d * G + j]; (2) one item turns hist into exclusive offsets, digit
-- major, so that equal digits keep chunk order; (3) every item walks its
-- chunk in order and scatters each key (and its value) to the next offset
-- of its digit.  Stable, so the passes compose.
--
-- Integer keys are mapped in place (the sign bit flipped, through an
-- unsigned view of the same memory), sorted between the keys' memory and a
-- temporary (an even number of passes ends in the keys' memory), and
-- mapped back; values ride along.  Float keys are not mapped one to one
-- (every NaN sorts as one largest key, -0 and +0 as one key): a float is
-- sorted as a 64-bit word, its ordered key above its own bits (4 passes on
-- the upper word), values along; a double's ordered key is sorted with its
-- original index, and the keys and values are then gathered from copies by
-- that index.
local types = require("gpujit.types")
local P = require("gpujit.prims")
local MS = require("gpujit.prims_mergesort")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}

local argerr, i64 = P.argerr, P.i64
local UINT = { [1] = "uint8_t", [2] = "uint16_t", [4] = "uint32_t", [8] = "uint64_t" }

---------------------------------------------------------------------------
-- Kernels.  Items as in gpujit.prims: item j = gpu.global_id(1) owns the
-- chunk [j*C, min(n, (j+1)*C)).  kw is the digit view of the source keys
-- (W words per key, the digit in word w at bit shift).

local function make_hist()
  return function(kw, W, w, shift, hist, n, C, G)
    if gpu.global_id(0) == 0 then
      local j = gpu.global_id(1)
      local cnt = gpu.local_array("int64_t", 256)
      for d = 0, 255 do cnt[d] = 0 end
      local lo = j * C
      local hi = math.min(n, lo + C)
      for i = lo, hi - 1 do
        local d = bit.band(bit.rshift(kw[i * W + w], shift), 255)
        cnt[d] = cnt[d] + 1
      end
      for d = 0, 255 do hist[d * G + j] = cnt[d] end
    end
  end
end

-- Also flag[0] = 1 when one digit holds every key (its G counts sum to n):
-- the pass would not move anything, and is skipped.
local function make_offsets()
  return function(hist, m, G, n, flag)
    if gpu.global_id(0) == 0 and gpu.global_id(1) == 0 then
      local s = hist[0] - hist[0]
      for i = 0, m - 1 do
        local c = hist[i]
        hist[i] = s
        s = s + c
      end
      local one = 0
      for d = 0, 255 do
        local hi = n
        if d < 255 then hi = hist[(d + 1) * G] end
        if hi - hist[d * G] == n then one = 1 end
      end
      flag[0] = one
    end
  end
end

local function make_scatter(with_values)
  return function()
    return function(kw, W, w, shift, ksrc, kdst, vsrc, vdst, hist, n, C, G)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local off = gpu.local_array("int64_t", 256)
        for d = 0, 255 do off[d] = hist[d * G + j] end
        local lo = j * C
        local hi = math.min(n, lo + C)
        for i = lo, hi - 1 do
          local d = bit.band(bit.rshift(kw[i * W + w], shift), 255)
          local o = off[d]
          kdst[o] = ksrc[i]
          if with_values then vdst[o] = vsrc[i] end
          off[d] = o + 1
        end
      end
    end
  end
end

-- Signed integer keys <-> unsigned order: flip the top bit of the word
-- that holds it (uw: the unsigned view, W words per key, the top one last).
local function make_flip(half)
  return function()
    return function(uw, W, n)
      local i = gpu.global_id(0)
      if i < n then
        local x = uw[i * W + W - 1]
        if x >= half then uw[i * W + W - 1] = x - half else uw[i * W + W - 1] = x + half end
      end
    end
  end
end

-- Descending order: every ordered key complemented (m words of the view
-- uw, W apart from word w; top: the word's largest value).
local function make_compl()
  return function(uw, W, w, top, m)
    local i = gpu.global_id(0)
    if i < m then uw[i * W + w] = top - uw[i * W + w] end
  end
end

-- float keys -> 64-bit words: the ordered key above (NaN: all ones; -0 and
-- +0: the same key), the key's own bits below, so that the sort on the
-- upper word carries the exact key along (uk: the uint32 view, 2 a key).
local function make_fpack32()
  return function(kf, kb, uk, n)
    local i = gpu.global_id(0)
    if i < n then
      local x = kf[i]
      local b = kb[i]
      local u
      if x ~= x then
        u = 4294967295
      elseif x == 0 then
        u = 2147483648
      elseif x < 0 then
        u = 4294967295 - b
      else
        u = b + 2147483648
      end
      uk[2 * i] = b
      uk[2 * i + 1] = u
    end
  end
end

local function make_unpack32()
  return function(dst, src, n)
    local i = gpu.global_id(0)
    if i < n then dst[i] = src[2 * i] end
  end
end

-- double keys -> ordered unsigned words (two, low first), and idx[i] = i.
local function make_fmap64()
  return function(kf, kb, uk, idx, n)
    local i = gpu.global_id(0)
    if i < n then
      local x = kf[i]
      local lo = kb[2 * i]
      local hi = kb[2 * i + 1]
      if x ~= x then
        lo = 4294967295
        hi = 4294967295
      elseif x == 0 then
        lo = 0
        hi = 2147483648
      elseif x < 0 then
        lo = 4294967295 - lo
        hi = 4294967295 - hi
      else
        hi = hi + 2147483648
      end
      uk[2 * i] = lo
      uk[2 * i + 1] = hi
      idx[i] = i
    end
  end
end

local function make_gather()
  return function(dst, src, idx, n)
    local i = gpu.global_id(0)
    if i < n then dst[i] = src[idx[i]] end
  end
end

---------------------------------------------------------------------------

-- Radix passes over the keys in kA (move view mA, digit view wA, W words a
-- key), ping-ponging with kB; values in vA/vB or nil.  A pass whose digit
-- is the same for every key moves nothing and is skipped (one element read
-- back per pass says so).  Returns whether the result ended in B.
local function passes(tgt, n, bytes, A, B, vA, vB, word)
  local npass = word and 4 or bytes
  local G = P.sort_items(tgt, n)
  local C = math.ceil(n / G)
  local cfg = P.items_cfg(tgt, G)
  local hist = P.scratch(tgt, "int64_t", 256 * G, "hist")
  local flag = P.env_gpu().array("int64_t", 1, tgt.entry)
  local kh = P.kernel(tgt, "sort_hist", make_hist)
  local ko = P.kernel(tgt, "sort_offsets", make_offsets)
  local ks = P.kernel(tgt, vA and "sort_scatter_kv" or "sort_scatter_k", make_scatter(vA ~= nil))
  local src, dst, vs, vd = A, B, vA, vB
  local inB = false
  local nn, CC, GG = i64(n), i64(C), i64(G)
  for p = 0, npass - 1 do
    local w, shift = math.floor(p / 4), (p % 4) * 8
    if bytes <= 2 then w = 0 end
    if word then w = word end
    local WW, ww, sh = i64(src.W), i64(w), i64(shift)
    kh:launch(cfg, src.w, WW, ww, sh, hist, nn, CC, GG)
    ko:launch(P.items_cfg(tgt, 1), hist, i64(256 * G), GG, nn, flag)
    if P.read1(flag, "int64_t") ~= 1 then
      ks:launch(cfg, src.w, WW, ww, sh, src.m, dst.m, vs or src.m, vd or dst.m, hist, nn, CC, GG)
      src, dst, vs, vd = dst, src, vd, vs
      inB = not inB
    end
  end
  flag:free()
  return inB
end

-- Views of the memory of device array e (n keys of `bytes` bytes) for the
-- radix passes: m moves whole keys, w reads digits (W words per key).
local function key_views(e, n, bytes, tgt)
  if bytes <= 4 then
    local m = P.alias(e, UINT[bytes], n, tgt)
    return { m = m, w = m, W = 1 }
  end
  return { m = P.alias(e, "uint64_t", n, tgt), w = P.alias(e, "uint32_t", 2 * n, tgt), W = 2 }
end

-- The radix sort of the n keys of device array dk (element type kelem) in
-- place, with the device array dv (or nil) permuted along; descending: the
-- order reversed (on complemented ordered keys: stable, NaNs first).
local function radix(tgt, dk, kelem, n, dv, velem, desc)
  local bytes = types.size[kelem]
  local ut = UINT[bytes]
  local cp = function(dst, src)
    P.kernel(tgt, "copy", P.make_copy):launch(n, dst, src, i64(n))
  end
  -- complement the m words of view uw (W words apart from word w): the
  -- ordered keys of a descending sort
  local function compl(uw, W, w, m, top)
    if desc then
      P.kernel(tgt, "sort_compl", make_compl):launch(m, uw, i64(W), i64(w), top, i64(m))
    end
  end
  if types.is_int[kelem] then
    local signed = kelem:sub(1, 1) == "i"
    local W = bytes == 8 and 2 or 1
    local flipw = P.alias(dk, bytes == 8 and "uint32_t" or ut, n * W, tgt)
    local half = bytes == 8 and 2 ^ 31 or 2 ^ (8 * bytes - 1)
    local top = bytes == 8 and 2 ^ 32 - 1 or 2 ^ (8 * bytes) - 1
    local flip = signed and P.kernel(tgt, "sort_flip" .. bytes, make_flip(half))
    if flip then flip:launch(n, flipw, i64(W), i64(n)) end
    compl(flipw, 1, 0, n * W, top)
    local tmp = P.scratch(tgt, ut, n, "keys")
    local vtmp = dv and P.scratch(tgt, velem, n, "values")
    local A, B = key_views(dk, n, bytes, tgt), key_views(tmp, n, bytes, tgt)
    local inB = passes(tgt, n, bytes, A, B, dv, vtmp)
    if inB then
      cp(A.m, B.m)
      if dv then cp(dv, vtmp) end
    end
    compl(flipw, 1, 0, n * W, top)
    if flip then flip:launch(n, flipw, i64(W), i64(n)) end
  elseif bytes == 4 then
    -- float: (ordered key, bits) pairs sorted on the upper word, values along
    local kb = P.alias(dk, "uint32_t", n, tgt)
    local pA = P.scratch(tgt, "uint64_t", n, "keys")
    local pB = P.scratch(tgt, "uint64_t", n, "keys2")
    local vtmp = dv and P.scratch(tgt, velem, n, "values")
    local A, B = key_views(pA, n, 8, tgt), key_views(pB, n, 8, tgt)
    P.kernel(tgt, "sort_fpack32", make_fpack32):launch(n, dk, kb, A.w, i64(n))
    compl(A.w, 2, 1, n, 2 ^ 32 - 1)
    local inB = passes(tgt, n, 8, A, B, dv, vtmp, 1)
    P.kernel(tgt, "sort_unpack32", make_unpack32):launch(n, kb, inB and B.w or A.w, i64(n))
    if inB and dv then cp(dv, vtmp) end
  else
    local kb = P.alias(dk, "uint32_t", n * (bytes / 4), tgt)
    local ukA = P.scratch(tgt, ut, n, "keys")
    local ukB = P.scratch(tgt, ut, n, "keys2")
    local iA = P.scratch(tgt, "uint32_t", n, "index")
    local iB = P.scratch(tgt, "uint32_t", n, "index2")
    local ukw = P.alias(ukA, "uint32_t", n * (bytes / 4), tgt)
    P.kernel(tgt, "sort_fmap64", make_fmap64):launch(n, dk, kb, ukw, iA, i64(n))
    compl(ukw, 1, 0, 2 * n, 2 ^ 32 - 1)
    local A, B = key_views(ukA, n, bytes, tgt), key_views(ukB, n, bytes, tgt)
    local inB = passes(tgt, n, bytes, A, B, iA, iB)
    local idx = inB and iB or iA
    local g = P.kernel(tgt, "sort_gather", make_gather)
    local kcopy = P.scratch(tgt, kelem, n, "keycopy")
    cp(kcopy, dk)
    g:launch(n, dk, kcopy, idx, i64(n))
    if dv then
      local vcopy = P.scratch(tgt, velem, n, "values")
      cp(vcopy, dv)
      g:launch(n, dv, vcopy, idx, i64(n))
    end
  end
end

-- The comparison's descending form, once per function (a stable sort by
-- it keeps equal keys in their order).
local reversed = setmetatable({}, { __mode = "k" })
local function reverse(cmp)
  local r = reversed[cmp]
  if r == nil then
    r = function(a, b) return cmp(b, a) end
    reversed[cmp] = r
  end
  return r
end

-- Sort dk in place carrying dv along, by the radix sort or, with cmp, the
-- merge sort (whose index permutes dv).
local function sort_dev(tgt, dk, kelem, n, dv, velem, o)
  if o.cmp then
    local c = o.descending and reverse(o.cmp) or o.cmp
    local idx = MS.sort(tgt, dk, kelem, n, c)
    if dv then
      local vcopy = P.scratch(tgt, velem, n, "values")
      P.kernel(tgt, "copy", P.make_copy):launch(n, vcopy, dv, i64(n))
      P.kernel(tgt, "sort_gather", make_gather):launch(n, dv, vcopy, idx, i64(n))
    end
  else
    radix(tgt, dk, kelem, n, dv, velem, o.descending == true)
  end
end

local SORT_OPTS = { descending = true, cmp = true }
local ARGSORT_OPTS = { descending = true, cmp = true, out = true }

local function check_keys(K, o, fname, level)
  if o.descending ~= nil and type(o.descending) ~= "boolean" then
    argerr(K.optn, fname, "option descending: boolean expected, got "
      .. types.describe(o.descending), level + 1)
  end
  if o.cmp ~= nil and type(o.cmp) ~= "function" then
    argerr(K.optn, fname, "option cmp: a Lua function cmp(a, b) (a before b) expected, got "
      .. types.describe(o.cmp), level + 1)
  end
  if not (types.is_int[K.elem] or types.is_float[K.elem]) then
    argerr(1, fname, "keys of type " .. K.elem .. " cannot be sorted: expected an integer or "
      .. "float type", level + 1)
  end
  if (K.elem == "double" or o.cmp) and K.n > 2 ^ 32 - 1 then   -- the index is a uint32_t
    argerr(1, fname, ("%.0f keys: at most 2^32 - 1 can be sorted %s"):format(K.n,
      o.cmp and "by a comparison" or "as double"), level + 1)
  end
end

-- A list of value arrays: a Lua table whose first element is not a number.
local function is_list(v)
  return type(v) == "table" and #v > 0 and type(v[1]) ~= "number"
end

-- gpu.sort(keys [, values [, opts]]): values an array or a list of arrays
function M.sort(keys, values, opts)
  local fname = "sort"
  local K = P.arg(keys, 1, fname, false, 2)
  K.optn = 3
  local o = P.options(opts, 3, fname, SORT_OPTS, 2)
  check_keys(K, o, fname, 2)
  local vals = {}
  if is_list(values) then
    for i, v in ipairs(values) do vals[i] = P.arg(v, 2, fname, false, 2) end
  elseif values ~= nil then
    vals[1] = P.arg(values, 2, fname, false, 2)
  end
  for i, V in ipairs(vals) do
    local what = #vals > 1 and "values[" .. i .. "]" or "values"
    if V.n ~= K.n then
      argerr(2, fname, what .. " has " .. V.n .. " elements, keys has " .. K.n, 2)
    end
    if rawequal(V.value, keys) then
      argerr(2, fname, what .. " must be another array than keys", 2)
    end
    for j = 1, i - 1 do
      if rawequal(V.value, vals[j].value) then
        argerr(2, fname, what .. " is values[" .. j .. "] again", 2)
      end
    end
  end
  local n = K.n
  if n <= 1 then return keys, values end
  local list = { K }
  for _, V in ipairs(vals) do list[#list + 1] = V end
  P.run(list, fname, function(tgt)
    local dk = P.to_dev(K, tgt, fname)
    if #vals <= 1 then
      local V = vals[1]
      sort_dev(tgt, dk, K.elem, n, V and P.to_dev(V, tgt, fname), V and V.elem, o)
    else
      -- several value arrays: sort an index along, then gather each
      local idx = P.scratch(tgt, "uint32_t", n, "perm")
      P.kernel(tgt, "iota", P.make_iota):launch(n, idx, 0, 1, i64(n))
      sort_dev(tgt, dk, K.elem, n, idx, "uint32_t", o)
      for _, V in ipairs(vals) do
        local dv = P.to_dev(V, tgt, fname)
        local vcopy = P.scratch(tgt, V.elem, n, "values")
        P.kernel(tgt, "copy", P.make_copy):launch(n, vcopy, dv, i64(n))
        P.kernel(tgt, "sort_gather", make_gather):launch(n, dv, vcopy, idx, i64(n))
        V.back()
      end
    end
    K.back()
    if #vals == 1 then vals[1].back() end
  end)
  return keys, values
end

-- gpu.argsort(keys [, opts]) -> the permutation that sorts keys (keys not
-- written)
function M.argsort(keys, opts)
  local fname = "argsort"
  local K = P.arg(keys, 1, fname, false, 2)
  K.optn = 2
  local o = P.options(opts, 2, fname, ARGSORT_OPTS, 2)
  check_keys(K, o, fname, 2)
  local OUT = P.arg(o.out, 2, fname, true, 2)
  if OUT then
    if not types.is_int[OUT.elem] or types.size[OUT.elem] < 4 then
      argerr(2, fname, "option out: an array of 32- or 64-bit integers expected, got "
        .. OUT.elem .. " elements", 2)
    end
    if OUT.n ~= K.n then
      argerr(2, fname, "option out has " .. OUT.n .. " elements, keys has " .. K.n, 2)
    end
  end
  local ielem = OUT and OUT.elem or (K.n < 2 ^ 31 and "int32_t" or "int64_t")
  local res = P.run({ K, OUT }, fname, function(tgt)
    local n = K.n
    local didx = OUT and P.to_dev(OUT, tgt, fname) or P.scratch(tgt, ielem, n, "argsort")
    if n > 0 then
      P.kernel(tgt, "iota", P.make_iota):launch(n, didx, 0, 1, i64(n))
      if n > 1 then
        local dk = P.to_dev(K, tgt, fname)
        local kcopy = P.scratch(tgt, K.elem, n, "argsort_keys")
        P.kernel(tgt, "copy", P.make_copy):launch(n, kcopy, dk, i64(n))
        sort_dev(tgt, kcopy, K.elem, n, didx, ielem, o)
      end
    end
    if OUT then
      OUT.back()
      return o.out
    end
    return P.result_like(K, didx, ielem, n, tgt)
  end)
  return res
end

M.api = { sort = M.sort, argsort = M.argsort }

return M
