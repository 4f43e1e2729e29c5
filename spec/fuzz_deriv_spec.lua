-- The differential fuzzer's mode for derivatives inside kernels with a fixed
-- seed (docs/fuzzing.md, spec/fuzz/grad_inner.lua): random device functions
-- of the differentiable subset, their gpu.gradient inside a kernel against
-- central finite differences and (compiled backends) against sim's dual
-- numbers, on every backend of GPUJIT_SPEC_BACKENDS.  24 kernels on cpu and
-- sim, 8 on the others; GPUJIT_FUZZ_SPEC_N sets one count for all.
-- `luajit spec/fuzz/main.lua --deriv N SEED` runs more.

local H = require("spec.helpers")
local GI = require("spec.fuzz.grad_inner")

local SEED = 20261208
local COUNT = tonumber(os.getenv("GPUJIT_FUZZ_SPEC_N"))
local PER_BACKEND = { cpu = COUNT or 24, sim = COUNT or 24 }
local OTHERS = COUNT or 8

local function cases(n)
  local out = {}
  for s = SEED, SEED + n - 1 do out[#out + 1] = GI.generate(s) end
  return out
end

describe("fuzz --deriv: generated device functions from seed " .. SEED, function()
  it("the generator makes functions with loops, branches, early returns and calls", function()
    local text = {}
    for _, c in ipairs(cases(96)) do
      text[#text + 1] = c.body
      assert.is_truthy(load(GI.source({ c })), "seed " .. c.seed .. " does not load")
    end
    text = table.concat(text, "\n")
    for _, needle in ipairs({ "while ", "for j = 1", "    return ", "local function f1",
      "gpu.gradient(F, x[i], a)", "math.exp(", "math.abs(", "math.floor(", " ^ ", " and " }) do
      assert.is_truthy(text:find(needle, 1, true), "no function has " .. needle)
    end
    assert.is_falsy(text:find("gpu.atomic_add", 1, true))   -- F writes no memory
  end)

  for _, bk in ipairs(H.backends) do
    local n = PER_BACKEND[bk] or OTHERS
    local all = cases(n)
    for b = 1, n, GI.BATCH do
      local batch = { unpack(all, b, math.min(n, b + GI.BATCH - 1)) }
      it(bk .. ": seeds " .. batch[1].seed .. ".." .. batch[#batch].seed
        .. ": partials agree with finite differences and with sim", function()
        H.need(bk)
        local bad, compared = {}, 0
        for j, r in ipairs(GI.run_batch(batch, bk)) do
          local seed = batch[j].seed
          for _, f in ipairs(r.fails) do
            bad[#bad + 1] = ("seed %d on %s: %s\n  (luajit spec/fuzz/main.lua --deriv 1 %d)")
              :format(seed, bk, f, seed)
          end
          if not (r.refused or r.skipped) then compared = compared + 1 end
        end
        assert(#bad == 0, table.concat(bad, "\n"))
        assert.is_true(compared >= #batch - 1, "functions compared: " .. compared .. " of " .. #batch)
      end)
    end

    it(bk .. ": the checker finds a wrong partial", function()
      H.need(bk)
      local case = GI.generate(SEED)
      local k, ref = GI.compile({ case }, bk)
      -- a kernel whose d/dx at item 3 is off by 1e-4
      local wrong = { launch = function(_, cfg, which, a, x, y, ...)
        k:launch(cfg, which, a, x, y, ...)
        y[GI.N + 3] = y[GI.N + 3] + 1e-4
      end }
      local r = GI.check_one(case, 1, wrong, ref)
      assert.matches("d/dx at item 3: gpu.gradient", table.concat(r.fails, "\n"), 1, true)
    end)
  end
end)
