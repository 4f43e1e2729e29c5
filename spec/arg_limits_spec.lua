-- The argument-count limit (docs/api.md, "Limits"): every count up to 64
-- works for every kind of argument, with and without a stream, on every
-- backend (before, 49 tables or 51 FFI arrays on opencl made the generated
-- launcher pass Lua's 200 locals, an internal error of 20-80 KB); a kernel
-- of more parameters is refused at gpu.kernel with an error naming the
-- limit (before, 120 parameters failed in the generated entry).
local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- A kernel of n parameters: a1 is the output, out[i] = a2[i] + ... + an[i]
-- (from 1 for tables, 0 for FFI arrays).
local function many_fn(n, base)
  local ps, sum = {}, {}
  for i = 1, n do ps[i] = "a" .. i end
  for i = 2, n do sum[#sum + 1] = ("a%d[i + %d]"):format(i, base) end
  local src = ("return function(%s) local i = gpu.global_id(0); a1[i + %d] = %s end")
    :format(table.concat(ps, ", "), base, table.concat(sum, " + "))
  return assert(load(src, "=many" .. n, "t", setmetatable({ gpu = gpu }, { __index = _G })))()
end

local makers = {
  table = function(v) return { v, v } end,
  ffi = function(v) return ffi.new("double[2]", v, v) end,
}

local function args_of(kind, n)
  local a = {}
  for i = 1, n do a[i] = makers[kind](i == 1 and 0 or i) end
  return a
end

local function first(kind, a) return kind == "table" and a[1] or a[0] end

-- 2 + 3 + ... + n
local function want(n) return n * (n + 1) / 2 - 1 end

for _, bk in ipairs(H.backends) do
  describe("kernels of many arguments on " .. bk, function()
    for _, kind in ipairs({ "table", "ffi" }) do
      for _, n in ipairs({ 49, 51, 64 }) do
        it(n .. " " .. kind .. " arguments", function()
          local k = H.kernel(bk, many_fn(n, kind == "table" and 1 or 0))
          local a = args_of(kind, n)
          k:launch(2, unpack(a, 1, n))
          assert.are.equal(want(n), first(kind, a[1]))
          -- again: the launcher's state reused
          local b = args_of(kind, n)
          k:launch(2, unpack(b, 1, n))
          assert.are.equal(want(n), first(kind, b[1]))
          -- on a stream
          H.with_backend(bk, function()
            local s = gpu.stream()
            local c = args_of(kind, n)
            k:launch({ global = 2, stream = s }, unpack(c, 1, n))
            s:synchronize()
            assert.are.equal(want(n), first(kind, c[1]))
          end)
        end)
      end
    end

    it("64 arguments of every kind at once", function()
      local ps, sum = {}, {}
      for i = 1, 64 do ps[i] = "a" .. i end
      for i = 2, 64 do
        sum[#sum + 1] = i % 3 == 0 and ("a%d"):format(i)
          or i % 3 == 1 and ("a%d[i + 1]"):format(i) or ("a%d[i]"):format(i)
      end
      local src = ("return function(%s) local i = gpu.global_id(0); a1[i + 1] = %s end")
        :format(table.concat(ps, ", "), table.concat(sum, " + "))
      local fn = assert(load(src, "=mixed", "t", setmetatable({ gpu = gpu }, { __index = _G })))()
      local k = H.kernel(bk, fn)
      local a, total = { { 0, 0 } }, 0
      for i = 2, 64 do
        a[i] = i % 3 == 0 and i or i % 3 == 1 and { i, i } or ffi.new("double[2]", i, i)
        total = total + i
      end
      k:launch(2, unpack(a, 1, 64))
      assert.are.same({ total, total }, a[1])
    end)

    it("more than 64 parameters are refused at gpu.kernel, naming the limit", function()
      H.need(bk)
      for _, n in ipairs({ 65, 120 }) do
        local msg = H.error_of(function() H.kernel(bk, many_fn(n, 0), { name = "huge" .. n }) end)
        assert.matches("gpu.kernel: a kernel takes at most 64 arguments, huge" .. n .. " has "
          .. n .. " parameters", msg, 1, true)
        assert.is_true(#msg < 400, msg)
      end
    end)
  end)
end

if H.testing("opencl") then
  describe("kernels of many arguments on opencl staged through device buffers", function()
    it("64 tables and 64 FFI arrays, with and without a stream", function()
      H.need("opencl")
      local ok, out = H.run_isolated("opencl", H.OPENCL_STAGED .. [[
for _, kind in ipairs({ "table", "ffi" }) do
  local ps, sum = {}, {}
  local base = kind == "table" and 1 or 0
  for i = 1, 64 do ps[i] = "a" .. i end
  for i = 2, 64 do sum[#sum + 1] = ("a%d[i + %d]"):format(i, base) end
  local src = ("return function(%s) local i = gpu.global_id(0); a1[i + %d] = %s end")
    :format(table.concat(ps, ", "), base, table.concat(sum, " + "))
  local k = gpu.kernel(assert(load(src, "=many", "t", setmetatable({ gpu = gpu }, { __index = _G })))(),
    { cache = false })
  local s = gpu.stream()
  for round = 1, 3 do
    local a = {}
    for i = 1, 64 do
      local v = i == 1 and 0 or i
      a[i] = kind == "table" and { v, v } or ffi.new("double[2]", v, v)
    end
    if round == 3 then
      k:launch({ global = 2, stream = s }, unpack(a, 1, 64))
      s:synchronize()
    else
      k:launch(2, unpack(a, 1, 64))
    end
    local got = kind == "table" and a[1][2] or a[1][1]
    assert(got == 64 * 65 / 2 - 1, kind .. ": " .. tostring(got))
  end
end
print("DONE")
]])
      assert.is_true(ok and out:find("DONE") ~= nil, out)
    end)
  end)
end
