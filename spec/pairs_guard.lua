-- busted's helper (.busted: helper), run before any spec file: a workaround
-- for the LuaJIT bug of docs/reliability.md, "pairs loops".  On LuaJIT 2.1
-- before upstream commit 119fd1fa (2023-08; Debian 12 ships git 2022-03-20),
-- a loop the parser turns into BC_ISNEXT/BC_ITERN (`for k, v in pairs(t)`,
-- `for k, v in next, t`) can spin for ever, without a system call, once its
-- compiled trace exits back to the loop's head.  gpujit's own code has no
-- such loop (spec/pairs_guard_spec.lua checks its bytecode); busted's and
-- the specs' have many.  BC_ISNEXT checks at run time that the iterator is
-- the builtin next; when it is another function it turns the loop into a
-- plain iterator call (BC_ITERC) for good, which the bug does not touch.  So
-- here the iterator becomes a Lua function with next's results:
--   - pairs stays the builtin (a kernel that calls it still gets "unknown
--     function 'pairs'" at its own line) and returns that function: it is
--     the upvalue that the builtin returns, in the interpreter and in traces;
--   - the global next is that function (a kernel that calls next compiles it
--     and fails inside it, naming 'next' in this file).
-- Error messages still name 'pairs' and 'next'.
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

assert(debug.setupvalue(pairs, 1, guarded_next) ~= nil, "pairs has no upvalue")
assert(pairs({}) == guarded_next, "pairs does not return its upvalue")
rawset(_G, "next", guarded_next)
-- the builtin next, for spec/pairs_guard_spec.lua
rawset(_G, "GJ_PAIRS_GUARD", builtin)
