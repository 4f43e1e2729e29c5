-- The fuzzer's shrinker and reproducer format (spec/fuzz/shrink.lua,
-- docs/fuzzing.md), with a failure that is a property of the source, so
-- that no backend is needed.

local G = require("spec.fuzz.gen")
local C = require("spec.fuzz.check")
local S = require("spec.fuzz.shrink")
local GG = require("spec.fuzz.gen_groups")

-- The first generated case from seed 1 whose source has `needle`.
local function case_with(needle)
  for seed = 1, 500 do
    local c = G.generate(seed)
    if G.source(c):find(needle, 1, true) then return c end
  end
  error("no generated kernel has " .. needle)
end

local function valid(c)
  local fn = C.kernel_fn(c)
  return fn ~= nil and C.oracle(c, fn) ~= nil
end

describe("fuzz shrinker", function()
  for _, needle in ipairs({ "bit.ror(", "while ", "math.fmod(" }) do
    it("cuts a kernel down to what keeps '" .. needle .. "', still a valid kernel", function()
      local c = case_with(needle)
      local fails = function(x) return valid(x) and G.source(x):find(needle, 1, true) ~= nil end
      assert.is_true(fails(c))
      local small = S.shrink(c, fails)
      local before, after = G.source(c), G.source(small)
      assert.is_true(fails(small))
      assert.is_true(#after < #before / 2 or #after < 400,
        "from " .. #before .. " to " .. #after .. " characters:\n" .. after)
      assert.are.equal(1, small.N)
    end)
  end

  it("cuts a work-group kernel down, keeping its shared writes and their barriers", function()
    local c
    for seed = 3, 3000, 3 do
      c = GG.generate(seed)
      if c.wg and c.N > 4 and GG.source(c):find("gpu.atomic_xor(sc", 1, true) then break end
    end
    local needle = "gpu.atomic_xor(sc"
    local fails = function(x) return valid(x) and GG.source(x):find(needle, 1, true) ~= nil end
    assert.is_true(fails(c))
    local small = S.shrink(c, fails, 300)
    local after = GG.source(small)
    assert.is_true(fails(small))
    assert.is_true(small.N < c.N, "work items: " .. small.N)
    -- the keep statements stay: every slot written before the barrier that
    -- its readers wait at
    for _, needle2 in ipairs({ "isrc[l] = ", "xsrc[l] = ", "sc[l] = ", "gpu.barrier()" }) do
      assert.is_truthy(after:find(needle2, 1, true), needle2 .. " dropped:\n" .. after)
    end
    local path = os.tmpname()
    S.write(path, small, "a work-group case")
    local r = dofile(path)
    os.remove(path)
    assert.are.same(small.launch, r.launch)
    assert.are.equal(after, r.source)
    for _, sp in ipairs(GG.layout(small)) do assert.are.same(small.data[sp.name], r.data[sp.name]) end
    assert.is_true(valid(r))
  end)

  it("writes a reproducer that loads back with the same source and data", function()
    local c = G.generate(4242)
    local path = os.tmpname()
    S.write(path, c, "a note\non two lines")
    local r = dofile(path)
    local text = io.open(path):read("*a")
    os.remove(path)
    assert.is_truthy(text:find("\n-- on two lines\n", 1, true))
    assert.are.equal(G.source(c), r.source)
    assert.are.equal(c.N, r.N)
    assert.are.equal(c.precision, r.precision)
    for _, name in ipairs(G.arrays) do assert.are.same(c.data[name], r.data[name]) end
    assert.are.equal(c.data.s, r.data.s)
    assert.is_true(valid(r))
  end)
end)
