-- print in kernels: after a launch, the records the kernel's print calls
-- left (src/gj_cg_print.c; the layout is src/gj_backend.h's gj_print_rec)
-- become lines, written by the global `print` exactly as Lua's print would
-- (tostring of each value, tab-separated): in work-item order (the linear
-- global id), each work item's calls in the order it made them.  Then, when
-- records did not fit in the kernel's print buffer, one line saying how
-- many were dropped.  docs/api.md, "print in kernels".
local ffi = require("ffi")

local M = {}

-- Where the lines go: M.write when set (the fuzzer's checker keeps them
-- there), else the global print as it is at the time.  A kernel's global
-- `print` compiles as the kernel print whatever function the global holds
-- (src/gj_kv_lua.c, kv_global), so a host's own print gets the lines.
M.write = nil
function M.out() return M.write or _G.print end

require("gpujit.cdefs")

local RECP = ffi.typeof("const gj_print_rec *")
local U8P = ffi.typeof("const uint8_t *")
local DP = ffi.typeof("const double *")
local I64P = ffi.typeof("const int64_t *")
local U64P = ffi.typeof("const uint64_t *")
local i64, u64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local written, dropped = ffi.new("uint64_t[1]"), ffi.new("uint64_t[1]")
local unpack, sort, tonumber = unpack, table.sort, tonumber

-- The values of the record at p for site s, into vals; their count.
local function values(p, s, vals)
  local slots = p + ffi.sizeof("gj_print_rec")
  local kinds, k = s.kinds, 0
  for j = 1, #kinds do
    local c = kinds:byte(j)
    if c == 115 then            -- 's': a string constant
      vals[j] = s.strs[j]
    elseif c == 48 then         -- '0': nil
      vals[j] = nil
    else
      local at = slots + 8 * k
      k = k + 1
      if c == 110 then          -- 'n': a double
        vals[j] = ffi.cast(DP, at)[0]
      elseif c == 105 then      -- 'i': an integer that stands for a Lua number
        vals[j] = tonumber(ffi.cast(I64P, at)[0])
      elseif c == 108 then      -- 'l': a C int64_t (cdata: tostring gives 5LL)
        vals[j] = i64(ffi.cast(I64P, at)[0])
      elseif c == 117 then      -- 'u': a C uint64_t (5ULL)
        vals[j] = u64(ffi.cast(U64P, at)[0])
      else                      -- 'b'
        vals[j] = ffi.cast(I64P, at)[0] ~= 0
      end
    end
  end
  return #kinds
end

-- Print the records a launch of kernel K (compiled with print sites
-- `sites`) left at base (written[0] of them, dropped[0] dropped).
local function show(K, base, sites)
  local n, nd = tonumber(written[0]), tonumber(dropped[0])
  if base ~= nil and n > 0 then
    local p = ffi.cast(U8P, base)
    local recs, off = {}, 0
    for r = 1, n do
      local rec = ffi.cast(RECP, p + off)
      recs[r] = { item = tonumber(rec.item), seq = r, off = off, site = rec.site }
      off = off + ffi.sizeof("gj_print_rec") + 8 * rec.nslots
    end
    sort(recs, function(a, b)
      if a.item ~= b.item then return a.item < b.item end
      return a.seq < b.seq
    end)
    -- every record decoded before the first line is written: a `print`
    -- that launches the kernel again (re-entry) reuses its print buffer
    local lines = {}
    for r = 1, n do
      local rec = recs[r]
      local vals = {}
      vals.n = values(p + rec.off, sites[rec.site + 1], vals)
      lines[r] = vals
    end
    local out = M.out()
    for r = 1, n do out(unpack(lines[r], 1, lines[r].n)) end
  end
  if nd > 0 then
    M.out()(("gpujit: kernel '%s': %d print record%s dropped: the print buffer is full"
      .. " (the kernel's print_buffer option sets its bytes)"):format(K.name, nd, nd == 1 and "" or "s"))
  end
end

-- Print what the last launch H of kernel K left.
function M.flush(K, lib, H, sites)
  show(K, lib.gj_prints(H, written, dropped), sites)
end

-- Print what launch i (0-based) of stream Q left (gpujit.stream).
function M.flush_stream(K, lib, Q, i, sites)
  show(K, lib.gj_stream_prints(Q, i, written, dropped), sites)
end

return M
