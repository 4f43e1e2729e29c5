-- The workaround for LuaJIT's pairs-loop hang (docs/reliability.md, "pairs
-- loops"): on LuaJIT 2.1 before upstream commit 119fd1fa (2023-08), which
-- Debian 12 ships, a loop compiled to BC_ISNEXT/BC_ITERN can spin for ever
-- once its trace exits back to the loop's head (seen in make test: an
-- arg_limits_spec part that ran for 10 minutes in lattice.pick's loop, and
-- under -Ohotloop=5 -Ohotexit=2 in busted's own loops).  Whether a run hits
-- it depends on addresses (hot counters are hashed by bytecode address), so
-- the check here is on the bytecode, which is deterministic: no function of
-- gpujit's Lua modules has such a loop (they iterate with each(t), a local
-- alias of pairs that the parser does not specialize), and the spec
-- runner's guard (spec/pairs_guard.lua, .busted's helper) is on.
local H = require("spec.helpers")
local jutil = require("jit.util")
local vmdef = require("jit.vmdef")

local function opname(ins)
  local op = bit.band(ins, 0xff)
  return (vmdef.bcnames:sub(op * 6 + 1, op * 6 + 6):gsub(" ", ""))
end

-- Every "file:line (OP)" where fn or a function nested in it has a
-- specialized pairs/next loop (BC_ISNEXT, BC_ITERN).
local function itern_sites(fn, file, out)
  out = out or {}
  local pc = 1
  while true do
    local ins = jutil.funcbc(fn, pc)
    if ins == nil then break end
    local name = opname(ins)
    if name == "ISNEXT" or name == "ITERN" then
      out[#out + 1] = ("%s:%d (%s)"):format(file, jutil.funcinfo(fn, pc).currentline, name)
    end
    pc = pc + 1
  end
  local i = -1
  while true do
    local k = jutil.funck(fn, i)
    if k == nil then break end
    if type(k) == "proto" then itern_sites(k, file, out) end
    i = i - 1
  end
  return out
end

describe("pairs loops (LuaJIT's ITERN hang)", function()
  it("the bytecode check finds a pairs or next loop, also in a nested function", function()
    local src = "local t = {}\nreturn function()\n  for _ in pairs(t) do end\n"
      .. "  return function() for _ in next, t do end end\nend"
    local sites = itern_sites(assert(loadstring(src, "=sample")), "sample")
    assert.are.same({ "sample:3 (ISNEXT)", "sample:3 (ITERN)", "sample:4 (ISNEXT)", "sample:4 (ITERN)" },
      sites)
    -- each(t), a local alias by another name, is a plain iterator call
    local plain = "local each = pairs\nreturn function(t) for _ in each(t) do end end"
    assert.are.same({}, itern_sites(assert(loadstring(plain, "=plain")), "plain"))
  end)

  it("no function of gpujit's Lua modules has one", function()
    local files = H.ls("lua/gpujit/*.lua")
    assert.is_true(#files > 20, "lua/gpujit/*.lua: " .. #files .. " files")
    local sites = {}
    for _, f in ipairs(files) do itern_sites(assert(loadfile(f)), f, sites) end
    assert.are.same({}, sites)
  end)

  it("the spec runner's guard is on: pairs' iterator and next are not the builtin next", function()
    local builtin = rawget(_G, "GJ_PAIRS_GUARD")
    assert.is_table(builtin, "spec/pairs_guard.lua did not run (.busted's helper)")
    assert.are.equal(builtin.pairs, pairs)
    local it = pairs({})
    assert.are_not.equal(builtin.next, it)
    assert.are.equal(next, it)
    local t = { 10, 20, x = "a", [2.5] = true }
    local want, k = {}, nil
    repeat
      local v
      k, v = builtin.next(t, k)
      if k ~= nil then want[k] = v end
    until k == nil
    local by_pairs, by_next = {}, {}
    for key, v in pairs(t) do by_pairs[key] = v end
    for key, v in next, t do by_next[key] = v end
    assert.are.same({ 10, 20, x = "a", [2.5] = true }, want)
    assert.are.same(want, by_pairs)
    assert.are.same(want, by_next)
    -- errors name the functions, as the builtins' do
    assert.matches("bad argument #1 to 'pairs' (table expected, got nil)",
      H.error_of(function() local r = pairs(nil) return r end), 1, true)
    assert.matches("bad argument #1 to 'next' (table expected, got nil)",
      H.error_of(function() local r = next(nil) return r end), 1, true)
  end)
end)
