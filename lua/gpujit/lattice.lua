-- gpujit.lattice: the Lua-number classes of a lazily typed kernel as a
-- lattice, not a key (docs/typing.md, "Value classes"; cold: on a dispatch
-- miss only).
--
--   lua_pos20, lua_pos31, lua_zero, lua_neg20, lua_neg31  <  lua_int  <  double
--
-- A parameter compiled as a type runs exactly every value of the classes
-- below it: `double` is LuaJIT's number itself, `lua_int` an integer on
-- -2^31 .. 2^31-1 (the classes' union).  `float` (precision = "single")
-- rounds whole numbers past 2^24 and covers none: it is no element.
--
--   local L = require("gpujit.lattice")
--   L.pick(per, tl, suffix) -> types, how
--     per: the kernel's compiled overloads on a target (key -> ov), tl: the
--     launch's types (classes for Lua numbers), suffix: the key's suffix
--     past types.sig_key (boundscheck's 1-based flags) or "".  Returns the
--     types of a compiled overload that covers tl (the one with the most
--     parameters of tl's own types), or else the join of tl with every
--     compiled overload that differs from it only in Lua-number parameters
--     (so that a scalar that wanders widens once or twice and stays).
--     how: "cover" (a compiled overload of other types runs the launch),
--     "join" (the types to compile are wider than tl), or nil (tl itself).
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local types = require("gpujit.types")

local M = {}

local function is_num(t)
  return t == "double" or types.lnum[t] ~= nil
end

-- Does a parameter of type `outer` run every value of type `inner` exactly?
local function covers(outer, inner)
  if outer == inner then return true end
  if types.lnum[inner] == nil then return false end
  return outer == "double" or types.lnum_within(inner, outer)
end
M.covers = covers

-- The join of two types of one parameter, or nil when they have none.
local function join(a, b)
  if a == b then return a end
  if not (is_num(a) and is_num(b)) then return nil end
  if a == "double" or b == "double" then return "double" end
  if types.lnum_within(a, b) then return b end
  if types.lnum_within(b, a) then return a end
  return "lua_int"
end
M.join = join

function M.pick(per, tl, suffix)
  local n = #tl
  local best, best_score, best_key
  local acc = nil
  for key, ov in each(per or {}) do
    local t = ov.types
    if #t == n and key == types.sig_key(t) .. suffix then
      local score, j = 0, {}
      for i = 1, n do
        if score and covers(t[i], tl[i]) then
          if t[i] == tl[i] then score = score + 1 end
        else
          score = nil
        end
        if j then j[i] = join(t[i], tl[i]) end
        if j and j[i] == nil then j = nil end
      end
      -- pairs' order is not fixed: ties go to the smaller key
      if score and (best == nil or score > best_score or (score == best_score and key < best_key)) then
        best, best_score, best_key = t, score, key
      end
      if j then
        acc = acc or {}
        for i = 1, n do acc[i] = join(acc[i] or j[i], j[i]) end
      end
    end
  end
  if best then return best, best_score < n and "cover" or nil end
  if acc then
    for i = 1, n do
      if acc[i] ~= tl[i] then return acc, "join" end
    end
  end
  return tl, nil
end

return M
