-- Malformed bytecode (docs/fuzzing.md): instructions whose operands point
-- outside the function's frame, constants, upvalues or code are refused
-- with "malformed bytecode", never read out of bounds.  Each case is what
-- spec/fuzz/frontend_fuzz.c (the libFuzzer target) does: the words that
-- gpujit's frontend reads through jit.util.funcbc are patched, the
-- function itself is never run.

local H = require("spec.helpers")
local ju = require("jit.util")
local gpu = H.gpu

local function kernel_fn(o, a, n)
  local i = gpu.global_id(0)
  if i < n then o[i] = a[i] * 2 + 1 end
end

-- Run fn with jit.util.funcbc answering word w at pc of kernel_fn.
local function with_patch(pc, w, fn)
  local W = setmetatable({
    funcbc = function(f, p)
      local ins, m = ju.funcbc(f, p)
      if f == kernel_fn and p == pc then return w, m end
      return ins, m
    end,
  }, { __index = ju })
  package.loaded["jit.util"] = W
  local ok, err = pcall(fn)
  package.loaded["jit.util"] = ju
  if not ok then error(err, 0) end
end

-- The first pc whose op is `name`, and its word.
local function find(name)
  local names = require("jit.vmdef").bcnames
  for pc = 1, ju.funcinfo(kernel_fn).bytecodes - 1 do
    local ins = ju.funcbc(kernel_fn, pc)
    if names:sub((ins % 256) * 6 + 1, (ins % 256) * 6 + 6):match("^%S+") == name then return pc, ins end
  end
  error("no " .. name .. " in kernel_fn")
end

local function opnum(name)
  local names = require("jit.vmdef").bcnames
  for op = 0, #names / 6 - 1 do
    if names:sub(op * 6 + 1, op * 6 + 6):match("^%S+") == name then return op end
  end
end

for _, bk in ipairs(H.compilers) do
  describe("malformed bytecode on " .. bk, function()
    local cases = {
      { "a slot beyond the frame", function()
        local pc, ins = find("MULVN")
        return pc, ins - bit.band(ins, 0xff00) + 200 * 256   -- A = 200
      end },
      { "a missing number constant", function()
        local pc, ins = find("MULVN")
        return pc, bit.bor(bit.band(ins, 0xff00ffff), bit.lshift(250, 16))   -- C = 250
      end },
      { "a missing constant", function()
        local pc, ins = find("TGETS")
        return pc, bit.bor(bit.band(ins, 0xff00ffff), bit.lshift(250, 16))   -- C = 250
      end },
      { "a missing upvalue", function()
        local pc, ins = find("UGET")
        return pc, bit.bor(bit.band(ins, 0xffff), bit.lshift(77, 16))   -- D = 77
      end },
      { "a jump outside the function", function()
        local pc, ins = find("JMP")
        return pc, bit.bor(bit.band(ins, 0xffff), bit.lshift(0xffff, 16))
      end },
      { "an op that cannot be in a body", function()
        local pc, ins = find("MULVN")
        return pc, bit.bor(opnum("FUNCF"), bit.band(ins, 0xffffff00))
      end },
    }
    for _, c in ipairs(cases) do
      it(c[1] .. ": an error, and the module works after it", function()
        local pc, w = c[2]()
        local err
        with_patch(pc, w, function()
          local k = H.kernel(bk, kernel_fn, { name = "malformed" })
          err = H.error_of(k.inspect_llvm, k, { "double[]", "double[]", "int32_t" })
        end)
        assert.is_truthy(err:find("malformed bytecode", 1, true), err)
        assert.is_truthy(err:find("fuzz_frontend_spec.lua", 1, true), err)
        H.sanity(bk)
      end)
    end
  end)
end
