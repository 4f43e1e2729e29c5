-- Reproducers of bugs that differential fuzzing found (spec/fuzz/repro/*.lua,
-- written by spec/fuzz/shrink.lua; docs/fuzzing.md): each runs on every
-- compiling backend of GPUJIT_SPEC_BACKENDS and must agree with LuaJIT's
-- interpreter.  A new reproducer is picked up by dropping its file there.

local H = require("spec.helpers")
local C = require("spec.fuzz.check")

local function list() return H.ls("spec/fuzz/repro/*.lua") end

describe("fuzz reproducers", function()
  local files = list()

  it("there are reproducers", function()
    assert.is_true(#files >= 1)
  end)

  for _, path in ipairs(files) do
    for _, bk in ipairs(H.compilers) do
      it(path .. " on " .. bk, function()
        H.need(bk)
        local case = dofile(path)
        case.chunkname = path
        local fails, why = C.run_all(case, { bk })
        assert(fails, "not a valid kernel (the oracle fails): " .. tostring(why))
        for _, f in ipairs(fails) do error(f.class .. ": " .. f.msg, 0) end
      end)
    end
  end
end)
