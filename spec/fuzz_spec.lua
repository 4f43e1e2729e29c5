-- Differential fuzzing with a fixed seed (docs/fuzzing.md): kernels made by
-- spec/fuzz/gen.lua run on every compiling backend of GPUJIT_SPEC_BACKENDS
-- and on LuaJIT's interpreter (the sim backend, JIT off); every array must
-- end up the same (bitwise for integers and doubles, within the documented
-- tolerance for float).  Kernels are compiled C.BATCH at a time
-- (check.lua, run_batch); `make fuzz N=1 SEED=<seed>` runs a failing seed
-- alone, shrinks it and writes a reproducer.
--
-- One seed in three makes a kernel of spec/fuzz/gen_groups.lua (work groups,
-- 2-D and 3-D launches, Lua-table and gpu.array arguments).
--
-- 504 kernels run on the cpu backend; on the others the first 64 without
-- work groups and the first two batches with them (PoCL's build of a kernel
-- takes ~0.5 s here, the cpu backend's compile ~0.05 s, and PoCL builds a
-- kernel with barriers again for each group size); the suite should stay
-- near a minute and a half.  `make fuzz` runs every kernel on every backend.
-- GPUJIT_FUZZ_SPEC_N sets one count for all (and every work-group batch).
-- On a device without host_math (its math library is not the host's) only
-- the kernels that call no transcendental function are compared.

local H = require("spec.helpers")
local GG = require("spec.fuzz.gen_groups")
local C = require("spec.fuzz.check")

local SEED = 20261121
local COUNT = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N")) or 504
local PER_BACKEND = { cpu = COUNT }
local OTHERS = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N")) or 64
-- ... and the first WG_OTHERS batches with work groups (gen_groups.lua: such
-- a batch fills late, its cases share a group shape)
local WG_OTHERS = os.getenv("GPUJIT_FUZZ_SPEC_N") and math.huge or 2

-- The cases in batches of one kind each (GG.batch_key: precision, and
-- gen_groups.lua's cases apart), in seed order.
local function batches(count)
  local out, pending = {}, {}
  for _, key in ipairs(GG.batch_keys) do pending[key] = {} end
  for seed = SEED, SEED + (count or COUNT) - 1 do
    local case = GG.generate(seed)
    local key = GG.batch_key(case)
    local list = pending[key]
    list[#list + 1] = case
    if #list == C.BATCH then
      out[#out + 1] = list
      pending[key] = {}
    end
  end
  for _, key in ipairs(GG.batch_keys) do
    if #pending[key] > 0 then out[#out + 1] = pending[key] end
  end
  return out
end

-- The cases of a batch that call no transcendental function: the only ones
-- whose results can match LuaJIT's bit for bit on a device whose math
-- library is not the host's (host_math false: OpenCL builtins, libdevice).
local TRANSCENDENTAL = { "math%.exp", "math%.log", "math%.sin", "math%.cos", "math%.tan", "math%.asin",
  "math%.acos", "math%.atan", "math%.pow", "%^" }
local function exact_only(batch)
  local out = {}
  for _, case in ipairs(batch) do
    local src, inexact = GG.source(case), false
    for _, pat in ipairs(TRANSCENDENTAL) do inexact = inexact or src:find(pat) ~= nil end
    if not inexact then out[#out + 1] = case end
  end
  return out
end

local function seeds(batch)
  local s = {}
  for j, c in ipairs(batch) do s[j] = c.seed end
  return table.concat(s, ",")
end

describe("fuzz: " .. COUNT .. " generated kernels from seed " .. SEED, function()
  local all = batches()

  it("the generator makes valid kernels: each loads and runs on the oracle", function()
    local n, bad = 0, {}
    for _, batch in ipairs(all) do
      for _, case in ipairs(batch) do
        n = n + 1
        local fn, why = C.kernel_fn(case)
        if fn then
          local ok
          ok, why = C.oracle(case, fn)
          if ok then why = nil end
        end
        if why then bad[#bad + 1] = "seed " .. case.seed .. ": " .. why end
      end
    end
    assert.are.equal(COUNT, n)
    assert(#bad == 0, table.concat(bad, "\n"))
  end)

  it("mixes both precisions, device functions, loops and every array", function()
    local single, fns, src = 0, 0, {}
    for _, batch in ipairs(all) do
      for _, case in ipairs(batch) do
        if case.precision == "single" then single = single + 1 end
        fns = fns + #case.fns
        src[#src + 1] = GG.source(case)
      end
    end
    local text = table.concat(src)
    assert.is_true(single > COUNT / 20 and single < COUNT / 2, "single-precision kernels: " .. single)
    assert.is_true(fns > COUNT / 2, "device functions: " .. fns)
    for _, needle in ipairs({ "while ", "repeat", "for ", "break", "goto ", "math.fmod", "bit.arshift",
      "oi[", "ol[", "ou[", "oh[", "of[", "od[", " % ", " ^ ", " / " }) do
      assert.is_truthy(text:find(needle, 1, true), "no kernel has " .. needle)
    end
  end)

  it("has work groups, 2-D and 3-D launches, Lua-table and gpu.array arguments (gen_groups.lua)", function()
    local n, src = {}, {}
    local function count(what) n[what] = (n[what] or 0) + 1 end
    -- the default set's constructs, also when GPUJIT_FUZZ_SPEC_N runs fewer
    -- (make check): generating a case is cheap, running it is not
    for _, batch in ipairs(COUNT < 504 and batches(504) or all) do
      for _, case in ipairs(batch) do
        if case.launch then
          count("new")
          local g = case.launch.global
          count(type(g) == "number" and "1-D" or #g .. "-D")
          if case.wg then count("work groups") end
          if case.launch.group == nil then count("no group") end
          src[#src + 1] = GG.source(case)
        end
      end
    end
    for _, what in ipairs({ "1-D", "2-D", "3-D", "work groups", "no group" }) do
      assert.is_true((n[what] or 0) >= 3, what .. ": " .. tostring(n[what]))
    end
    assert.is_true(n.new > math.max(COUNT, 504) / 5, "gen_groups.lua cases: " .. tostring(n.new))
    local text = table.concat(src)
    for _, needle in ipairs({ "gpu.shared(", "gpu.barrier()", "isrc, idst = idst, isrc", "sc[l] = ",
      "gpu.atomic_add(ac", "gpu.atomic_sub(ac", "gpu.atomic_min(ac", "gpu.atomic_max(ac",
      "gpu.atomic_and(", "gpu.atomic_or(", "gpu.atomic_xor(", "gpu.atomic_add(af", "gpu.atomic_add(ad",
      "gpu.atomic_xchg(ax", "gpu.atomic_cas(ax", "(sc, ", "for t", "+ 1] = ", "rd[", "ru[",
      "oi[", "of[", "gpu.num_groups(" }) do
      assert.is_truthy(text:find(needle, 1, true), "no gen_groups.lua kernel has " .. needle)
    end
  end)

  for _, bk in ipairs(H.compilers) do
    local limit, n, nwg = PER_BACKEND[bk] or OTHERS, 0, 0
    for _, whole in ipairs(all) do
      local take
      if PER_BACKEND[bk] then
        take = true
      elseif whole[1].wg then
        nwg = nwg + 1
        take = nwg <= WG_OTHERS
      else
        n = n + #whole
        take = n <= limit
      end
      if take then
        local batch = H.host_math(bk) and whole or exact_only(whole)
        it(bk .. ": seeds " .. seeds(batch), function()
          H.need(bk)
          local bad = {}
          for j, r in ipairs(C.run_batch(batch, { bk })) do
            local seed = batch[j].seed
            if r.invalid then bad[#bad + 1] = "seed " .. seed .. ": invalid: " .. r.invalid end
            for _, f in ipairs(r.fails or {}) do
              bad[#bad + 1] = string.format("seed %d on %s: %s: %s\n  (shrink it: make fuzz N=1 SEED=%d)",
                seed, bk, f.class, f.msg:sub(1, 300), seed)
            end
          end
          assert(#bad == 0, table.concat(bad, "\n"))
        end)
      end
    end
  end
end)
