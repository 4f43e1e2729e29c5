-- The differential fuzzer's gradient mode with a fixed seed (docs/fuzzing.md,
-- spec/fuzz/grad.lua): random kernels of the differentiable subset, their
-- gpu.grad gradients against central finite differences and against
-- forward mode (<v, J u> both ways), on every backend of
-- GPUJIT_SPEC_BACKENDS (sim: by dual numbers, gpujit.adsim).  24 kernels on
-- cpu, 96 on sim and 8 on the others (a kernel's derivatives are two more
-- compiles; PoCL's builds are slow here);
-- GPUJIT_FUZZ_SPEC_N sets one count for all.  `luajit spec/fuzz/main.lua
-- --grad N SEED` runs more.

local H = require("spec.helpers")
local GR = require("spec.fuzz.grad")

local SEED = 20261207
local COUNT = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N"))
local PER_BACKEND = { cpu = COUNT or 24, sim = COUNT or 96 }
local OTHERS = COUNT or 8
local REGRESSIONS = { 20261217, 30028, 30069 }

local function cases(n)
  local out = {}
  for s = SEED, SEED + n - 1 do out[#out + 1] = GR.generate(s) end
  return out
end

describe("fuzz --grad: generated kernels from seed " .. SEED, function()
  it("the generator makes kernels of the differentiable subset with loops, branches and calls", function()
    local text = {}
    for _, c in ipairs(cases(96)) do
      text[#text + 1] = c.body
      assert.is_truthy(load(GR.source({ c })), "seed " .. c.seed .. " does not load")
    end
    text = table.concat(text, "\n")
    for _, needle in ipairs({ "while ", "for j = 1", "gpu.atomic_add(z", "return\n", "local function f",
      "math.exp(", "math.abs(", "math.min(", "math.floor(", " ^ ", " % 0.7", " and ", "x[(i + j) % n]",
      "math.atan2(", "math.asin(" }) do
      assert.is_truthy(text:find(needle, 1, true), "no kernel has " .. needle)
    end
  end)

  for _, bk in ipairs(H.backends) do
    local n = PER_BACKEND[bk] or OTHERS
    local all = cases(n)
    for b = 1, n, GR.BATCH do
      local batch = { unpack(all, b, math.min(n, b + GR.BATCH - 1)) }
      it(bk .. ": seeds " .. batch[1].seed .. ".." .. batch[#batch].seed
        .. ": gradients agree with finite differences and forward mode", function()
        H.need(bk)
        local bad, compared = {}, 0
        for j, r in ipairs(GR.run_batch(batch, bk)) do
          local seed = batch[j].seed
          for _, f in ipairs(r.fails) do
            bad[#bad + 1] = ("seed %d on %s: %s\n  (luajit spec/fuzz/main.lua --grad 1 %d)")
              :format(seed, bk, f, seed)
          end
          if not (r.refused or r.skipped) then compared = compared + 1 end
        end
        assert(#bad == 0, table.concat(bad, "\n"))
        -- the set is chosen so that (nearly) every kernel is compared
        assert.is_true(compared >= #batch - 1, "kernels compared: " .. compared .. " of " .. #batch)
      end)
    end

    -- seeds that once failed somewhere, run alone (the SPIR-V run checks
    -- every module with spirv-val): 20261217's reverse pass switches to
    -- one block by two edges, which gave a phi two entries from one block
    -- (invalid SPIR-V until targets/spirv.c split the second edge); 30028
    -- and 30069 merge blocks into a select of a pointer and undef, which
    -- crashed llvm-spirv-15
    it(bk .. ": seeds that once failed", function()
      H.need(bk)
      local bad = {}
      for _, seed in ipairs(REGRESSIONS) do
        local case = GR.generate(seed)
        local r = GR.run_alone({ case }, bk)[1]
        for _, f in ipairs(r.fails) do bad[#bad + 1] = ("seed %d on %s: %s"):format(seed, bk, f) end
        assert.is_false(r.refused or false, "seed " .. seed .. " refused")
      end
      assert(#bad == 0, table.concat(bad, "\n"))
    end)

    it(bk .. ": the checker finds a wrong gradient", function()
      H.need(bk)
      local case = GR.generate(SEED)
      local k, g, jv = GR.compile({ case }, bk)
      -- a gpu.grad whose x adjoint is off by 1e-4 in element 3
      local wrong = { launch = function(_, cfg, which, a, ga, x, gx, ...)
        g:launch(cfg, which, a, ga, x, gx, ...)
        gx[3] = gx[3] + 1e-4
      end }
      local r = GR.check_one(case, 1, k, wrong, jv)
      local text = table.concat(r.fails, "\n")
      assert.matches("dx[3]: gpu.grad", text, 1, true)
      assert.matches("<v, J u>: forward mode", text, 1, true)
    end)
  end
end)
