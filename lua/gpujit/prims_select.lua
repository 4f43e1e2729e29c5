-- gpujit.prims_select: selection, gpu.compact (gpu.filter), gpu.partition
-- and gpu.unique, written as gpujit kernels (docs/api.md, "Parallel
-- primitives").
--
-- One algorithm for the three, stable, in the items of gpujit.prims (item
-- j owns the contiguous chunk [j*C, min(n, (j+1)*C))): (1) every item
-- counts the kept elements of its chunk; (2) one work item turns the G
-- counts into exclusive offsets and stores the total; (3) every item walks
-- its chunk in order and writes each kept element to the next offset (and,
-- for partition, each other one after all the kept ones, at total + the
-- number of rejected elements before it).  "Kept" is a device function
-- keep(a, i): pred(a[i]) for compact and partition, i == 0 or a[i] ~=
-- a[i-1] for unique.  The count is read back (one element).
local types = require("gpujit.types")
local P = require("gpujit.prims")
local sim = require("gpujit.sim")

local gpu = {}
for _, name in ipairs(sim.intrinsics) do gpu[name] = sim[name] end

local M = {}
local argerr, i64 = P.argerr, P.i64

local function make_count(keep)
  return function()
    return function(a, part, n, C)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local c = 0
          for i = lo, hi - 1 do
            if keep(a, i) then c = c + 1 end
          end
          part[j] = c
        end
      end
    end
  end
end

-- part[j] = the kept elements before chunk j; cnt[0] = all of them.
local function make_offsets()
  return function(part, g, cnt)
    if gpu.global_id(0) == 0 and gpu.global_id(1) == 0 then
      local s = part[0] - part[0]
      for j = 0, g - 1 do
        local c = part[j]
        part[j] = s
        s = s + c
      end
      cnt[0] = s
    end
  end
end
M.make_offsets = make_offsets

local function make_scatter(keep, partition)
  return function()
    return function(a, dst, part, n, C, cnt)
      if gpu.global_id(0) == 0 then
        local j = gpu.global_id(1)
        local lo = j * C
        if lo < n then
          local hi = math.min(n, lo + C)
          local o = part[j]
          local r = cnt[0] + lo - o
          for i = lo, hi - 1 do
            if keep(a, i) then
              dst[o] = a[i]
              o = o + 1
            elseif partition then
              dst[r] = a[i]
              r = r + 1
            end
          end
        end
      end
    end
  end
end

local function unique_keep(a, i)
  return i == 0 or a[i] ~= a[i - 1]
end

-- The keep function of a predicate, made once per predicate.
local keeps = setmetatable({}, { __mode = "k" })
local function pred_keep(pred)
  local k = keeps[pred]
  if k == nil then
    k = function(a, i) return pred(a[i]) end
    keeps[pred] = k
  end
  return k
end

-- The three passes over the n elements of device array d into device
-- array dst; returns the count.
local function select(tgt, name, keep, partition, d, dst, n)
  local G, C, g = P.chunking(tgt, n)
  local cfg = P.items_cfg(tgt, G)
  local part = P.scratch(tgt, "int64_t", G, "sel_part")
  local cnt = P.scratch(tgt, "int64_t", 1, "sel_count")
  P.kernel(tgt, "select_count_" .. name, make_count(keep)):launch(cfg, d, part, i64(n), i64(C))
  P.kernel(tgt, "select_offsets", make_offsets):launch(P.items_cfg(tgt, 1), part, i64(g), cnt)
  P.kernel(tgt, (partition and "partition_" or "compact_") .. name,
    make_scatter(keep, partition)):launch(cfg, d, dst, part, i64(n), i64(C), cnt)
  return tonumber(P.read1(cnt, "int64_t"))
end

-- The common body: src classified as S (argument 1), dst optional
-- (argument dn); returns count, the output.
local function run(fname, S, dst, dn, name, keep, partition)
  local D = P.arg(dst, dn, fname, true, 3)
  if D then
    if D.elem ~= S.elem then
      argerr(dn, fname, "dst must have src's element type " .. S.elem .. ", got " .. D.elem, 3)
    end
    if D.n < S.n then
      argerr(dn, fname, "dst has " .. D.n .. " elements, src has " .. S.n, 3)
    end
    if rawequal(dst, S.value) then argerr(dn, fname, "dst must be another array than src", 3) end
  end
  if S.n == 0 and D then return 0, dst end
  local count, out = P.run({ S, D }, fname, function(tgt)
    if S.n == 0 then return 0, P.result_like(S, nil, S.elem, 0, tgt) end
    local d = P.to_dev(S, tgt, fname)
    if D then
      local dd = P.to_dev(D, tgt, fname)
      local count = select(tgt, name, keep, partition, d, dd, S.n)
      D.back()
      return count, dst
    end
    local tmp = P.scratch(tgt, S.elem, S.n, "sel_out")
    local count = select(tgt, name, keep, partition, d, tmp, S.n)
    return count, P.result_like(S, tmp, S.elem, partition and S.n or count, tgt)
  end, 4)
  return count, out
end

local function check_pred(pred, fname)
  if type(pred) ~= "function" then
    argerr(2, fname, "predicate expected (a Lua function of an element returning a boolean), "
      .. "got " .. types.describe(pred), 3)
  end
end

local function source(src, fname)
  local S = P.arg(src, 1, fname, false, 3)
  if S.elem == "bool" then
    argerr(1, fname, "elements of type bool are not supported: expected a number or struct type", 3)
  end
  return S
end

-- gpu.compact(src, pred [, dst]) -> count, dst
function M.compact(src, pred, dst)
  local S = source(src, "compact")
  check_pred(pred, "compact")
  local count, out = run("compact", S, dst, 3, P.fkey(pred) .. "_" .. S.elem, pred_keep(pred), false)
  return count, out
end

function M.filter(src, pred, dst)
  local S = source(src, "filter")
  check_pred(pred, "filter")
  local count, out = run("filter", S, dst, 3, P.fkey(pred) .. "_" .. S.elem, pred_keep(pred), false)
  return count, out
end

-- gpu.partition(src, pred [, dst]) -> count, dst
function M.partition(src, pred, dst)
  local S = source(src, "partition")
  check_pred(pred, "partition")
  local count, out = run("partition", S, dst, 3, P.fkey(pred) .. "_" .. S.elem, pred_keep(pred), true)
  return count, out
end

-- gpu.unique(src [, dst]) -> count, dst
function M.unique(src, dst)
  local S = source(src, "unique")
  if not (types.is_int[S.elem] or types.is_float[S.elem]) then
    argerr(1, "unique", "elements of type " .. S.elem .. " cannot be compared: expected an "
      .. "integer or float type", 2)
  end
  local count, out = run("unique", S, dst, 2, "unique_" .. S.elem, unique_keep, false)
  return count, out
end

M.api = { compact = M.compact, filter = M.filter, partition = M.partition, unique = M.unique }

return M
