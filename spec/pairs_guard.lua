-- busted's helper (.busted: helper), run before any spec file: a workaround
-- for the LuaJIT bug of docs/reliability.md, "pairs loops".  On LuaJIT 2.1
-- before upstream commit 119fd1fa (2023-08; Debian 12 ships git 2022-03-20),
-- a loop the parser turns into BC_ISNEXT/BC_ITERN (`for k, v in pairs(t)`,
-- `for k, v in next, t`) can spin for ever, without a system call, once its
-- compiled trace exits back to the loop's head.  gpujit's own code has no
-- such loop (spec/pairs_guard_spec.lua checks its bytecode); busted's and
-- the specs' have many.  So here the global pairs and next become Lua
-- functions with the same results: BC_ISNEXT, which checks at run time that
-- the iterator is the builtin next, finds another function and turns the
-- loop into a plain iterator call (BC_ITERC) for good, which the bug does not
-- touch.  Error messages still name 'pairs' and 'next'.
if rawget(_G, "GJ_PAIRS_GUARD") then return end

local builtin = { pairs = pairs, next = next }

local guarded_next
do
  local next = builtin.next
  -- not a tail call: an error then names 'next', not '?'
  function guarded_next(t, k)
    local k2, v = next(t, k)
    return k2, v
  end
end

local function guarded_pairs(t)
  local pairs = builtin.pairs
  local _, s, c = pairs(t)
  return guarded_next, s, c
end

rawset(_G, "pairs", guarded_pairs)
rawset(_G, "next", guarded_next)
-- the builtins, for spec/pairs_guard_spec.lua
rawset(_G, "GJ_PAIRS_GUARD", builtin)
