-- Differential fuzzing with a fixed seed (docs/fuzzing.md): kernels made by
-- spec/fuzz/gen.lua run on every compiling backend of GPUJIT_SPEC_BACKENDS
-- and on LuaJIT's interpreter (the sim backend, JIT off); every array must
-- end up the same (bitwise for integers and doubles, within the documented
-- tolerance for float).  Kernels are compiled C.BATCH at a time
-- (check.lua, run_batch); `make fuzz N=1 SEED=<seed>` runs a failing seed
-- alone, shrinks it and writes a reproducer.
--
-- 504 kernels run on the cpu backend, the first 64 of them on the others:
-- PoCL's build of a kernel takes ~0.5 s here (the cpu backend's compile
-- ~0.05 s), and the suite should stay near a minute.  `make fuzz` runs every
-- kernel on every backend.  GPUJIT_FUZZ_SPEC_N sets one count for all.
-- On a device without host_math (its math library is not the host's) only
-- the kernels that call no transcendental function are compared.

local H = require("spec.helpers")
local G = require("spec.fuzz.gen")
local C = require("spec.fuzz.check")

local SEED = 20261121
local COUNT = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N")) or 504
local PER_BACKEND = { cpu = COUNT }
local OTHERS = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N")) or 64

-- The cases in batches of one precision each, in seed order.
local function batches()
  local out, pending = {}, { double = {}, single = {} }
  for seed = SEED, SEED + COUNT - 1 do
    local case = G.generate(seed)
    local list = pending[case.precision]
    list[#list + 1] = case
    if #list == C.BATCH then
      out[#out + 1] = list
      pending[case.precision] = {}
    end
  end
  for _, p in ipairs({ "double", "single" }) do
    if #pending[p] > 0 then out[#out + 1] = pending[p] end
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
    local src, inexact = G.source(case), false
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
        src[#src + 1] = G.source(case)
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

  for _, bk in ipairs(H.compilers) do
    local limit, n = PER_BACKEND[bk] or OTHERS, 0
    for _, whole in ipairs(all) do
      n = n + #whole
      if n > limit then break end
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
end)
