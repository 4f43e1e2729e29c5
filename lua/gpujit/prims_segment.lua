-- gpujit.prims_segment: work by keys, gpu.reduce_by_key, gpu.scan_by_key
-- and gpu.histogram, written as gpujit kernels (docs/api.md, "Parallel
-- primitives").
--
-- Segments.  A segment is a run of consecutive equal keys (keys[i] ==
-- keys[i-1]; so a NaN key is a segment of its own).  Both by-key
-- primitives run in the items of gpujit.prims (item j owns the chunk
-- [j*C, min(n, (j+1)*C))): (1) every item folds, left to right, the values
-- from the last segment head in its chunk (or the chunk's start) to its
-- end, its "tail", and counts the heads in its chunk; (2) one work item
-- walks the G tails in order and turns them into carries (carry[j]: the
-- fold of the segment still open where chunk j starts, from its head) and
-- the head counts into offsets, storing the segment count; (3) every item
-- walks its chunk from its carry: reduce_by_key writes each segment's key
-- at its head and its fold where it ends, scan_by_key writes the running
-- fold.  A segment that spans chunks is folded chunk by chunk: its part in
-- each chunk left to right, the parts left to right.
--
-- Histogram.  Every item counts its chunk into its own row of nbins
-- counters (int64_t scratch), then one work item per bin sums the rows.
local types = require("gpujit.types")
local P = require("gpujit.prims")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}
local argerr, i64 = P.argerr, P.i64

local OPS = {
  ["+"] = function(x, y) return x + y end,
  ["*"] = function(x, y) return x * y end,
  min = function(x, y) if y < x then return y end return x end,
  max = function(x, y) if y > x then return y end return x end,
}
local OPNAMES = { ["+"] = "add", ["*"] = "mul", min = "min", max = "max" }

---------------------------------------------------------------------------
-- Kernels.

local function make_tails(ACC, op)
  return function()
    return function(keys, vals, tail, nh, n, C)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local acc = gpu.local_array(ACC, 1)
          local h = 0
          acc[0] = vals[lo]
          if lo == 0 or keys[lo] ~= keys[lo - 1] then h = 1 end
          for i = lo + 1, hi - 1 do
            if keys[i] ~= keys[i - 1] then
              h = h + 1
              acc[0] = vals[i]
            else
              acc[0] = op(acc[0], vals[i])
            end
          end
          tail[j] = acc[0]
          nh[j] = h
        end
      end
    end
  end
end

-- tail[j] becomes chunk j's carry, nh[j] the heads before chunk j; cnt[0]
-- the number of segments.
local function make_carries(ACC, op)
  return function()
    return function(tail, nh, g, cnt)
      if gpu.global_id(0) == 0 and gpu.global_id(1) == 0 then
        local acc = gpu.local_array(ACC, 1)
        acc[0] = tail[0]
        local s = nh[0]
        nh[0] = 0
        for j = 1, g - 1 do
          local t = tail[j]
          local h = nh[j]
          tail[j] = acc[0]
          nh[j] = s
          s = s + h
          if h > 0 then acc[0] = t else acc[0] = op(acc[0], t) end
        end
        cnt[0] = s
      end
    end
  end
end

local function make_reduce_by_key(ACC, op)
  return function()
    return function(keys, vals, kout, vout, tail, nh, n, C)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local acc = gpu.local_array(ACC, 1)
          local s = nh[j]
          if lo == 0 or keys[lo] ~= keys[lo - 1] then
            if lo > 0 then vout[s - 1] = tail[j] end
            kout[s] = keys[lo]
            s = s + 1
            acc[0] = vals[lo]
          else
            acc[0] = op(tail[j], vals[lo])
          end
          for i = lo + 1, hi - 1 do
            if keys[i] ~= keys[i - 1] then
              vout[s - 1] = acc[0]
              kout[s] = keys[i]
              s = s + 1
              acc[0] = vals[i]
            else
              acc[0] = op(acc[0], vals[i])
            end
          end
          if hi == n then vout[s - 1] = acc[0] end
        end
      end
    end
  end
end

local function make_scan_by_key(ACC, op, exclusive)
  return function()
    return function(keys, vals, out, tail, n, C, id)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local acc = gpu.local_array(ACC, 1)
          local head = lo == 0 or keys[lo] ~= keys[lo - 1]
          if exclusive then
            if head then acc[0] = id[0] else acc[0] = tail[j] end
            for i = lo, hi - 1 do
              if i > lo and keys[i] ~= keys[i - 1] then acc[0] = id[0] end
              local x = vals[i]
              out[i] = acc[0]
              acc[0] = op(acc[0], x)
            end
          else
            if head then acc[0] = vals[lo] else acc[0] = op(tail[j], vals[lo]) end
            out[lo] = acc[0]
            for i = lo + 1, hi - 1 do
              if keys[i] ~= keys[i - 1] then
                acc[0] = vals[i]
              else
                acc[0] = op(acc[0], vals[i])
              end
              out[i] = acc[0]
            end
          end
        end
      end
    end
  end
end

---------------------------------------------------------------------------
-- Arguments.

local function check_num(A, what, fname, level)
  if not (types.is_int[A.elem] or types.is_float[A.elem]) then
    argerr(A.argn, fname, what .. " of type " .. A.elem .. " are not supported: expected an "
      .. "integer or float type", level + 1)
  end
end

local function check_op(op, fname, level)
  if type(op) == "function" then return end
  if type(op) ~= "string" or not OPS[op] then
    argerr(3, fname, "unknown op '" .. tostring(op) .. "': expected + * min max or a function",
      level + 1)
  end
end

local function check_len(A, B, fname, level)
  if A.n ~= B.n then
    argerr(B.argn, fname, B.name .. " has " .. B.n .. " elements, " .. A.name .. " has " .. A.n,
      level + 1)
  end
end

local function keyed(keys, values, op, fname)
  local K = P.arg(keys, 1, fname, false, 3)
  K.name = "keys"
  check_num(K, "keys", fname, 3)
  local V = P.arg(values, 2, fname, false, 3)
  V.name = "values"
  check_num(V, "values", fname, 3)
  check_len(K, V, fname, 3)
  check_op(op, fname, 3)
  return K, V
end

-- Passes 1 and 2 on the device arrays dk, dv; returns the chunking, tail
-- and nh scratch arrays and the segment count's device array.
local function carries(tgt, ACC, f, key, dk, dv, n)
  local G, C, g = P.chunking(tgt, n)
  local tail = P.scratch(tgt, ACC, G, "seg_tail")
  local nh = P.scratch(tgt, "int64_t", G, "seg_heads")
  local cnt = P.scratch(tgt, "int64_t", 1, "seg_count")
  P.kernel(tgt, "seg_tails_" .. key, make_tails(ACC, f)):launch(P.items_cfg(tgt, G), dk, dv,
    tail, nh, i64(n), i64(C))
  P.kernel(tgt, "seg_carries_" .. key, make_carries(ACC, f)):launch(P.items_cfg(tgt, 1), tail,
    nh, i64(g), cnt)
  return G, C, tail, nh, cnt
end

local function opkey(op, ACC)
  return (type(op) == "function" and P.fkey(op) or OPNAMES[op]) .. "_" .. ACC
end

local RBK_OPTS = { keys_out = true, values_out = true }

-- gpu.reduce_by_key(keys, values, op [, opts]) -> count, keys_out, values_out
function M.reduce_by_key(keys, values, op, opts)
  local fname = "reduce_by_key"
  local K, V = keyed(keys, values, op, fname)
  local o = P.options(opts, 4, fname, RBK_OPTS, 2)
  local KO = P.arg(o.keys_out, 4, fname, true, 2)
  local VO = P.arg(o.values_out, 4, fname, true, 2)
  if KO then
    KO.name = "keys_out"
    if KO.elem ~= K.elem then
      argerr(4, fname, "keys_out must have the keys' element type " .. K.elem .. ", got "
        .. KO.elem, 2)
    end
    if KO.n < K.n then argerr(4, fname, "keys_out has " .. KO.n .. " elements, keys has " .. K.n, 2) end
  end
  if VO then
    VO.name = "values_out"
    check_num(VO, "values_out", fname, 2)
    if VO.n < K.n then argerr(4, fname, "values_out has " .. VO.n .. " elements, keys has " .. K.n, 2) end
  end
  local ACC = VO and VO.elem or V.elem
  local count, ko, vo = P.run({ K, V, KO, VO }, fname, function(tgt)
    local n = K.n
    if n == 0 then
      return 0, KO and o.keys_out or P.result_like(K, nil, K.elem, 0, tgt),
        VO and o.values_out or P.result_like(V, nil, ACC, 0, tgt)
    end
    local dk, dv = P.to_dev(K, tgt, fname), P.to_dev(V, tgt, fname)
    local dko = KO and P.to_dev(KO, tgt, fname) or P.scratch(tgt, K.elem, n, "rbk_keys")
    local dvo = VO and P.to_dev(VO, tgt, fname) or P.scratch(tgt, ACC, n, "rbk_values")
    local f = type(op) == "function" and op or OPS[op]
    local key = opkey(op, ACC)
    local G, C, tail, nh, cnt = carries(tgt, ACC, f, key, dk, dv, n)
    P.kernel(tgt, "reduce_by_key_" .. key, make_reduce_by_key(ACC, f)):launch(
      P.items_cfg(tgt, G), dk, dv, dko, dvo, tail, nh, i64(n), i64(C))
    local c = tonumber(P.read1(cnt, "int64_t"))
    if KO then KO.back() end
    if VO then VO.back() end
    return c, KO and o.keys_out or P.result_like(K, dko, K.elem, c, tgt),
      VO and o.values_out or P.result_like(V, dvo, ACC, c, tgt)
  end)
  return count, ko, vo
end

-- gpu.scan_by_key(keys, values, op, out [, opts])
function M.scan_by_key(keys, values, op, out, opts)
  local fname = "scan_by_key"
  local K, V = keyed(keys, values, op, fname)
  local O = P.arg(out, 4, fname, false, 2)
  O.name = "out"
  check_num(O, "out", fname, 2)
  check_len(K, O, fname, 2)
  local o = P.options(opts, 5, fname, { exclusive = true }, 2)
  if o.exclusive ~= nil and type(o.exclusive) ~= "boolean" then
    argerr(5, fname, "option exclusive: boolean expected, got " .. types.describe(o.exclusive), 2)
  end
  if o.exclusive and type(op) == "function" then
    argerr(5, fname, "an exclusive scan starts from the op's identity, which a function op "
      .. "does not have: use an inclusive scan", 2)
  end
  if K.n == 0 then return out end
  local ACC = O.elem
  P.run({ K, V, O }, fname, function(tgt)
    local n = K.n
    local dk, dv = P.to_dev(K, tgt, fname), P.to_dev(V, tgt, fname)
    local dout = rawequal(out, values) and dv or P.to_dev(O, tgt, fname)
    local f = type(op) == "function" and op or OPS[op]
    local key = opkey(op, ACC)
    local G, C, tail = carries(tgt, ACC, f, key, dk, dv, n)
    local id = P.scratch(tgt, ACC, 1, "seg_id")
    if o.exclusive then
      P.env_gpu().fill(id, P.identity(op, ACC))
    end
    P.kernel(tgt, (o.exclusive and "scan_by_key_excl_" or "scan_by_key_") .. key,
      make_scan_by_key(ACC, f, o.exclusive == true)):launch(P.items_cfg(tgt, G), dk, dv, dout,
      tail, i64(n), i64(C), id)
    if rawequal(out, values) then V.back() else O.back() end
  end)
  return out
end

---------------------------------------------------------------------------
-- Histogram.

local function make_hcount(ranged)
  return function()
    return function(a, hist, nb, n, C, lo, hi, scale)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local row = j * nb
        for b = 0, nb - 1 do hist[row + b] = 0 end
        local first = j * C
        local last = math.min(n, first + C)
        local xd = gpu.local_array("double", 1)
        for i = first, last - 1 do
          local x = a[i]
          if ranged then
            xd[0] = x     -- in double (int64_t arithmetic would truncate the scale)
            x = xd[0]
            if x >= lo and x <= hi then
              local b = math.floor((x - lo) * scale)
              if b >= nb then b = nb - 1 end
              hist[row + b] = hist[row + b] + 1
            end
          elseif x >= 0 and x < nb then
            hist[row + x] = hist[row + x] + 1
          end
        end
      end
    end
  end
end

local function make_hsum()
  return function(hist, out, nb, g)
    local b = gpu.global_id(0)
    if b < nb then
      local s = hist[b]
      for j = 1, g - 1 do s = s + hist[j * nb + b] end
      out[b] = s
    end
  end
end

local HIST_OPTS = { lo = true, hi = true, out = true }

-- gpu.histogram(a, nbins [, opts]) -> counts
function M.histogram(a, nbins, opts)
  local fname = "histogram"
  local A = P.arg(a, 1, fname, false, 2)
  check_num(A, "elements", fname, 2)
  if type(nbins) ~= "number" or nbins < 1 or nbins % 1 ~= 0 or nbins >= 2 ^ 31 then
    argerr(2, fname, "the number of bins must be a whole number in [1, 2^31), got "
      .. types.describe(nbins), 2)
  end
  local o = P.options(opts, 3, fname, HIST_OPTS, 2)
  local ranged = o.lo ~= nil or o.hi ~= nil
  if ranged then
    if type(o.lo) ~= "number" or type(o.hi) ~= "number" or o.lo >= o.hi or o.lo ~= o.lo or o.hi ~= o.hi then
      argerr(3, fname, "options lo and hi must be numbers with lo < hi", 2)
    end
  elseif not types.is_int[A.elem] then
    argerr(3, fname, A.elem .. " elements need the options lo and hi (the range of the bins)", 2)
  end
  local OUT = P.arg(o.out, 3, fname, true, 2)
  if OUT then
    check_num(OUT, "out", fname, 2)
    if OUT.n ~= nbins then
      argerr(3, fname, "out has " .. OUT.n .. " elements, expected " .. nbins .. " (the bins)", 2)
    end
  end
  local res = P.run({ A, OUT }, fname, function(tgt)
    local dout = OUT and P.to_dev(OUT, tgt, fname) or P.scratch(tgt, "int64_t", nbins, "hist_out")
    local d = P.to_dev(A, tgt, fname)
    local G = P.sort_items(tgt, A.n)
    G = math.max(1, math.min(G, math.floor(2 ^ 24 / nbins)))
    local C = math.max(1, math.ceil(A.n / G))
    G = math.max(1, math.ceil(A.n / C))
    local hist = P.scratch(tgt, "int64_t", G * nbins, "hist_rows")
    local lo, hi = o.lo or 0, o.hi or 1
    P.kernel(tgt, (ranged and "hist_range_" or "hist_") .. A.elem, make_hcount(ranged)):launch(
      P.items_cfg(tgt, G), d, hist, i64(nbins), i64(A.n), i64(C), lo, hi, nbins / (hi - lo))
    P.elementwise(tgt, "hist_sum", make_hsum, nbins, hist, dout, i64(nbins), i64(G))
    if OUT then
      OUT.back()
      return o.out
    end
    return P.result_like(A.kind == "garray" and A or { kind = A.kind }, dout, "int64_t", nbins, tgt)
  end)
  return res
end

M.api = { reduce_by_key = M.reduce_by_key, scan_by_key = M.scan_by_key, histogram = M.histogram }

return M
