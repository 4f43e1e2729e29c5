-- GPUJIT_VERBOSE=1 (a line on stderr per compile) and gpu.on_compile(fn)
-- (a callback before and after each compile), issue 18.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Run code in a child luajit with env; its stdout and stderr together.
local function child(code, env)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(code)
  f:close()
  local p = io.popen(H.luajit_cmd(env) .. " " .. path .. " 2>&1; echo \"exit status $?\"")
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out
end

local SCRIPT = [[
local ffi = require("ffi")
local gpu = require("gpujit")
gpu.use(%q)
local k = gpu.kernel(function(a, n)
  local i = gpu.global_id(0)
  if i < n then a[i] = 2 * i end
end, { name = "vfill" })
k:launch(8, ffi.new("int32_t[8]"), 8)
k:launch(8, ffi.new("int32_t[8]"), 8)   -- the same signature: no compile
k:launch(8, ffi.new("float[8]"), 8)
print("done")
]]

local function verbose_lines(out)
  local lines = {}
  for l in out:gmatch("[^\n]+") do
    if l:match("^gpujit: ") then lines[#lines + 1] = l end
  end
  return lines
end

for _, bk in ipairs(H.compilers) do
  describe("GPUJIT_VERBOSE [" .. bk .. "]", function()
    it("prints one line per compile: name, file:line, types, backend, stages, cache", function()
      H.need(bk)
      local dir = H.tmpdir()
      local out = child(SCRIPT:format(bk), { GPUJIT_VERBOSE = "1", GPUJIT_CACHE_DIR = dir })
      assert.is_truthy(out:find("done\n", 1, true), out)
      local lines = verbose_lines(out)
      assert.are.equal(2, #lines, out)
      local l = lines[1]
      assert.is_truthy(l:find("gpujit: compiled vfill at ", 1, true), l)
      assert.is_truthy(l:match(":4 %(int32_t%[%], lua_pos20%) on " .. bk .. ":0 in [%d.]+ ms %["), l)
      for _, st in ipairs({ "job", "frontend", "codegen", "cache", "link", "finish", "optimize", "emit",
                            "load", "store" }) do
        assert.is_truthy(l:match("[%[ ]" .. st .. " [%d.]+[,%]]"), st .. " in: " .. l)
      end
      -- then the target's note, if any: on cpu what the vectorizer did
      assert.is_truthy(l:match("; cache written$") or l:match("; cache written; [^;]+$"), l)
      if bk == "cpu" then assert.is_truthy(l:match("; cache written; n?o?t? ?vectorized"), l) end
      assert.is_truthy(lines[2]:find("(float[], lua_pos20)", 1, true), lines[2])
      -- a second process finds both in the disk cache
      out = child(SCRIPT:format(bk), { GPUJIT_VERBOSE = "1", GPUJIT_CACHE_DIR = dir })
      lines = verbose_lines(out)
      assert.are.equal(2, #lines, out)
      assert.is_truthy(lines[1]:match("; cache hit$"), lines[1])
      assert.is_truthy(lines[2]:match("; cache hit$"), lines[2])
      -- with the cache off
      out = child(SCRIPT:format(bk), { GPUJIT_VERBOSE = "1", GPUJIT_CACHE = "0" })
      lines = verbose_lines(out)
      assert.are.equal(2, #lines, out)
      assert.is_truthy(lines[1]:match("; cache off$") or lines[1]:match("; cache off; [^;]+$"),
        lines[1])
      os.execute("rm -rf '" .. dir .. "'")
    end)

    it("says nothing without it (or with GPUJIT_VERBOSE=0)", function()
      H.need(bk)
      local out = child(SCRIPT:format(bk), { GPUJIT_VERBOSE = "0", GPUJIT_CACHE = "0" })
      assert.is_truthy(out:find("done\n", 1, true), out)
      assert.are.equal(0, #verbose_lines(out), out)
    end)

    it("reports a compile that fails", function()
      H.need(bk)
      local out = child(([[
local gpu = require("gpujit")
gpu.use(%q)
local k = gpu.kernel(function(a) a[0] = "s" end, { name = "vbad" })
print(pcall(k.launch, k, 1, require("ffi").new("int32_t[1]")))
]]):format(bk), { GPUJIT_VERBOSE = "1", GPUJIT_CACHE = "0" })
      local lines = verbose_lines(out)
      assert.are.equal(1, #lines, out)
      assert.is_truthy(lines[1]:find("gpujit: compile of vbad at ", 1, true), lines[1])
      assert.is_truthy(lines[1]:find("failed after", 1, true), lines[1])
      assert.is_truthy(lines[1]:find("strings are not supported", 1, true), lines[1])
    end)
  end)

  describe("GPUJIT_VERBOSE names [" .. bk .. "]", function()
    it("a kernel with its default name is named once, by file:line", function()
      H.need(bk)
      local out = child(([[
local gpu = require("gpujit")
gpu.use(%q)
local function kern(a)
  a[gpu.global_id(0)] = 1
end
gpu.kernel(kern):launch(2, require("ffi").new("int32_t[2]"))
gpu.kernel(kern, { name = "named" }):launch(2, require("ffi").new("int32_t[2]"))
]]):format(bk), { GPUJIT_VERBOSE = "1", GPUJIT_CACHE = "0" })
      local lines = verbose_lines(out)
      assert.are.equal(2, #lines, out)
      assert.is_truthy(lines[1]:match("^gpujit: compiled [^ ]*lua_[%w_]+:3 %(int32_t%[%]%) on "), lines[1])
      assert.is_truthy(lines[2]:match("^gpujit: compiled named at [^ ]*lua_[%w_]+:3 %(int32_t%[%]%) on "),
        lines[2])
    end)
  end)

  describe("gpu.on_compile [" .. bk .. "]", function()
    it("calls back before and after each compile with the facts", function()
      local evs = {}
      local off = gpu.on_compile(function(e)
        local c = {}
        for k, v in pairs(e) do c[k] = v end
        evs[#evs + 1] = c
      end)
      local k = H.kernel(bk, function(a, n)
        local i = gpu.global_id(0)
        if i < n then a[i] = i end
      end, { name = "oncomp" })
      local line = debug.getinfo(1, "l").currentline - 4
      k:launch(4, ffi.new("double[4]"), 4)
      k:launch(4, ffi.new("double[4]"), 4)
      assert.is_true(off())
      assert.is_false(off())
      k:launch(4, ffi.new("float[4]"), 4)       -- no longer called
      assert.are.equal(2, #evs)
      local s, d = evs[1], evs[2]
      assert.are.equal("start", s.phase)
      assert.are.equal("done", d.phase)
      for _, e in ipairs(evs) do
        assert.are.equal("oncomp", e.kernel)
        assert.are.equal(line, e.line)
        assert.is_truthy(e.source:find("verbose_spec.lua", 1, true), e.source)
        assert.are.same({ "double[]", "lua_pos20" }, e.types)
        assert.are.equal(bk, e.backend)
        assert.are.equal(0, e.device)
      end
      assert.are.equal("off", d.cache)          -- H.kernel compiles with cache = false
      assert.is_true(d.total_ms > 0)
      local sum = 0
      for _, st in ipairs(d.stages) do
        assert.is_number(d.ms[st], st)
        sum = sum + d.ms[st]
      end
      assert.is_true(sum <= d.total_ms + 1e-6, sum .. " > " .. d.total_ms)
      assert.is_true(d.ms.optimize > 0)
    end)

    it("an error in the callback is the launch's error", function()
      local off = gpu.on_compile(function() error("progress bar broke") end)
      local k = H.kernel(bk, function(a) a[gpu.global_id(0)] = 1 end, { name = "oncomp_err" })
      local msg = H.error_of(function() k:launch(1, ffi.new("double[1]")) end)
      off()
      assert.is_truthy(msg:find("gpu.on_compile callback: ", 1, true), msg)
      assert.is_truthy(msg:find("progress bar broke", 1, true), msg)
      H.sanity(bk)
    end)
  end)
end

describe("gpu.on_compile's argument", function()
  it("must be a function", function()
    local msg = H.error_of(function() gpu.on_compile(42) end)
    assert.is_truthy(msg:find("bad argument #1 to 'on_compile' (function expected, got number)",
      1, true), msg)
  end)
end)

-- The cpu vectorizer's note gives the line of what stopped it.
if H.testing("cpu") then
  describe("the cpu vectorizer's note", function()
    -- vectorize = true: the option wins over GPUJIT_VECTORIZE=0 (the PTX run's)
    it("names the line of a branch, loop or if that varies with the work item", function()
      -- (varying control flow is linearized with masks now: what still stays
      -- scalar is named with the line of its branch, or of the branch whose
      -- mask holds it)
      local notes = H.notes_of(function()
        H.kernel("cpu", function(o)
          local i = gpu.global_id(0)
          local s = 0
          while s < i do --@varying
            if o[s] > 3 then s = s + 2 else s = s + 1 end
          end
          o[i] = s
        end, { name = "vary", vectorize = true }):launch(16, ffi.new("double[16]"))
        H.kernel("cpu", function(o)
          local i = gpu.global_id(0)
          local k = 0
          while k < i % 3 do --@atomloop
            gpu.atomic_add(o, 16, 0.5)
            k = k + 1
          end
          o[i] = k
        end, { name = "atomloop", vectorize = true }):launch(16, ffi.new("double[17]"))
        H.kernel("cpu", function(o)
          local i = gpu.global_id(0)
          local s = gpu.shared("double", 8)
          s[gpu.local_id(0)] = i
          gpu.barrier()
          local v = s[7 - gpu.local_id(0)]
          if v > 2 then --@barvary
            if v > 4 then v = v * 2 end
            o[i] = v
          end
        end, { name = "barvary", vectorize = true }):launch({ global = 16, group = 8 },
          ffi.new("double[16]"))
      end)
      assert.matches("^vectorized: %d+ lanes %(linearized with masks%)$", notes.vary)
      assert.are.equal("not vectorized: an atomic whose result depends on the work items' order in"
        .. " a loop under linearization at line " .. H.line_of("--@atomloop"), notes.atomloop)
      assert.are.equal("not vectorized: a branch that varies with the work item (of a shape not handled)"
        .. " at line " .. H.line_of("--@barvary"), notes.barvary)
    end)
  end)
end
