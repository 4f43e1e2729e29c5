-- gpujit.prims_mergesort: the stable merge sort behind gpu.sort and
-- gpu.argsort with a comparison function (opts.cmp; docs/api.md), written
-- as gpujit kernels.  cmp(a, b) is a device function: true when a must
-- come before b (a strict weak order, as table.sort's).
--
-- Algorithm: every work item insertion-sorts a run of R keys in place,
-- carrying their indices (stable: a key moves left only past keys it must
-- precede); then each pass merges pairs of sorted runs of width w into the
-- other buffer, w = R, 2R, ... until one run is left.  A pass is one
-- launch of ceil(n / R) work items, each writing R consecutive outputs of
-- one merge: it finds where its outputs start in the two runs by a binary
-- search on the merge path (the number i of keys taken from the left run
-- among the first k outputs), then merges R outputs sequentially, taking
-- the left key unless the right one must precede it (stable).  R divides
-- every 2w, so no work item straddles two merges.  Cost: ceil(log2(n/R))
-- passes, each reading and writing the keys and indices once, plus
-- O(log w) comparisons a work item for its search.
local P = require("gpujit.prims")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}
local i64 = P.i64

local R = 32   -- the run length of the first pass, and each work item's outputs
M.R = R

local function make_runs(cmp)
  return function()
    return function(k, idx, n)
      local t = gpu.global_id(0)
      local lo = t * R
      if lo < n then
        local hi = math.min(n, lo + R)
        for i = lo, hi - 1 do idx[i] = i end
        for i = lo + 1, hi - 1 do
          local x = k[i]
          local j = i - 1
          while j >= lo and cmp(x, k[j]) do
            k[j + 1] = k[j]
            idx[j + 1] = idx[j]
            j = j - 1
          end
          k[j + 1] = x
          idx[j + 1] = i
        end
      end
    end
  end
end

local function make_merge(cmp)
  return function()
    return function(ka, ia, kb, ib, n, w)
      local t = gpu.global_id(0)
      local k0 = t * R
      if k0 < n then
        local lo = k0 - k0 % (2 * w)
        local mid = math.min(n, lo + w)
        local hi = math.min(n, lo + 2 * w)
        local la = mid - lo
        local lb = hi - mid
        local k = k0 - lo
        local a0 = math.max(0, k - lb)
        local a1 = math.min(k, la)
        while a0 < a1 do
          local i = a0 + bit.rshift(a1 - a0, 1)
          if cmp(ka[mid + k - i - 1], ka[lo + i]) then a1 = i else a0 = i + 1 end
        end
        local i = a0
        local j = k - a0
        for o = k0, math.min(hi, k0 + R) - 1 do
          if i < la and (j >= lb or not cmp(ka[mid + j], ka[lo + i])) then
            kb[o] = ka[lo + i]
            ib[o] = ia[lo + i]
            i = i + 1
          else
            kb[o] = ka[mid + j]
            ib[o] = ia[mid + j]
            j = j + 1
          end
        end
      end
    end
  end
end

-- Sort the n keys of device array dk (element type kelem) in place by
-- cmp; returns a device array of n uint32_t: the original index of each
-- sorted key.
function M.sort(tgt, dk, kelem, n, cmp)
  local key = P.fkey(cmp) .. "_" .. kelem
  local ib = P.scratch(tgt, "uint32_t", n, "index2")
  local ia = P.scratch(tgt, "uint32_t", n, "index")
  local kb = P.scratch(tgt, kelem, n, "keys_merge")
  local items = math.ceil(n / R)
  P.kernel(tgt, "msort_runs_" .. key, make_runs(cmp)):launch(items, dk, ia, i64(n))
  local merge = P.kernel(tgt, "msort_merge_" .. key, make_merge(cmp))
  local ka = dk
  local w = R
  while w < n do
    merge:launch(items, ka, ia, kb, ib, i64(n), i64(w))
    ka, kb, ia, ib = kb, ka, ib, ia
    w = w * 2
  end
  if not rawequal(ka, dk) then
    P.kernel(tgt, "copy", P.make_copy):launch(n, dk, ka, i64(n))
  end
  return ia
end

return M
