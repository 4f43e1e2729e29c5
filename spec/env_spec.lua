-- The environment (lua/gpujit/env.lua, docs/api.md "Environment
-- variables"): every GPUJIT_* variable gpujit reads is in one table with
-- its parser; an invalid value is an error naming it (never ignored), the
-- defaults apply on every path to gpu.kernel, and the disk cache never
-- lands in the current directory.  Each case runs in a child process with
-- the variable set (issue 33, items 3 and 13).
local H = require("spec.helpers")
local gpuenv = require("gpujit.env")

local fresh_dir = H.scratch_dirs(after_each)   -- removed after each test

-- Run code in a child luajit (gpu loaded, on backend bk) with env set and
-- the variables of unset removed, in directory cwd when given, under
-- `timeout` (a timeout that is not honoured must fail, not hang); returns
-- ok, output.
local function child(bk, code, env, unset, cwd)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use(", string.format("%q", bk),
    ")\n", code, "\n")
  f:close()
  local pre = "timeout 120 env"
  for _, name in ipairs(unset or {}) do pre = pre .. " -u " .. name end
  local cmd = H.luajit_cmd(env)
  if cwd then   -- the module's paths made absolute (the later ones win), then into cwd
    local here = assert(os.getenv("PWD"))
    local function abs(list)
      return "'" .. list:gsub("[^;]+", function(e)
        return e:sub(1, 1) == "/" and e or (here .. "/" .. e:gsub("^%./", ""))
      end) .. "'"
    end
    cmd = cmd:gsub(" luajit$", "") .. " LUA_PATH=" .. abs(package.path) .. " LUA_CPATH=" .. abs(package.cpath)
      .. " luajit"
    pre = "cd '" .. cwd .. "' && " .. pre
  end
  local p = io.popen(pre .. " " .. cmd .. " " .. path .. " 2>&1; echo \"exit status $?\"")
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return tonumber(out:match("exit status (%d+)%s*$")) == 0, out
end

-- Every way to make a kernel (init.lua's gpu.kernel; gpu.* primitives
-- make theirs through it with an options table).
local PATHS = {
  { "gpu.kernel(fn)", "gpu.kernel(f)" },
  { "gpu.kernel(fn, {})", "gpu.kernel(f, {})" },
  { "gpu.kernel(sig, fn)", "gpu.kernel({ 'double[]', 'int32_t' }, f)" },
  { "gpu.kernel(sig, fn, opts)", "gpu.kernel({ 'double[]', 'int32_t' }, f, { name = 'k' })" },
}

describe("environment defaults on every path to gpu.kernel", function()
  for _, bk in ipairs(H.backends) do
    for _, p in ipairs(PATHS) do
      it(p[1] .. " honours GPUJIT_BOUNDSCHECK=1 on " .. bk, function()
        H.need(bk)
        local ok, out = child(bk, [[
          local f = function(a, n) a[gpu.global_id() + n] = 1 end
          local k = ]] .. p[2] .. [[

          print("launch", pcall(k.launch, k, 4, ffi.new("double[4]"), 1))
          local off = gpu.kernel(f, { boundscheck = false })
          print("off", pcall(off.launch, off, 3, ffi.new("double[4]"), 1))
        ]], { GPUJIT_BOUNDSCHECK = "1" })
        assert.is_true(ok, out)
        assert.is_truthy(out:find("launch\tfalse", 1, true), out)
        assert.is_truthy(out:find("index 4 is out of bounds for argument 1 'a' (length 4", 1, true), out)
        assert.is_truthy(out:find("off\ttrue", 1, true), out)
      end)

      it(p[1] .. " honours GPUJIT_TIMEOUT on " .. bk, function()
        H.need(bk)
        local ok, out = child(bk, [[
          local f = function(a, n)
            local s = 0
            while s >= 0 do s = s + n end   -- n = 1: for ever
            a[gpu.global_id()] = s
          end
          local k = ]] .. p[2] .. [[

          print("launch", pcall(k.launch, k, 1, ffi.new("double[1]"), 1))
        ]], { GPUJIT_TIMEOUT = "0.2" })
        assert.is_true(ok, out)
        assert.is_truthy(out:find("launch\tfalse", 1, true), out)
        assert.is_truthy(out:find("timed out after", 1, true), out)
      end)

      it(p[1] .. " refuses GPUJIT_TIMEOUT=abc on " .. bk, function()
        H.need(bk)
        local ok, out = child(bk, [[
          local f = function(a, n) a[gpu.global_id()] = n end
          print("kernel", pcall(function() return ]] .. p[2] .. [[ end))
        ]], { GPUJIT_TIMEOUT = "abc" })
        assert.is_true(ok, out)
        assert.is_truthy(out:find("kernel\tfalse", 1, true), out)
        assert.is_truthy(out:find("gpu.kernel: GPUJIT_TIMEOUT='abc' is not valid: it takes a number of "
          .. "seconds > 0", 1, true), out)
      end)
    end
  end
end)

-- Values each variable must refuse, and one it takes.
local BAD = {
  GPUJIT_THREADS = { "true", "-1", "2.5", "4097", "lots" },
  GPUJIT_VECTORIZE = { "true-ish", "2", "off!" },
  GPUJIT_CACHE = { "disabled", "2" },
  GPUJIT_PRECOMPILE = { "yes please", "2" },
  GPUJIT_BOUNDSCHECK = { "always", "2" },
  GPUJIT_VERBOSE = { "loud", "-1" },
  GPUJIT_CACHE_MAX = { "12Q", "-5", "5MB" },
  GPUJIT_DUMP = { "ir", "llvm,foo" },
  GPUJIT_OPENCL_FORMAT = { "spirv2", "SPIR" },
  GPUJIT_CUDA_ARCH = { "volta", "sm80" },
  GPUJIT_TIMEOUT = { "abc", "0", "1s" },
}
local GOOD = {
  GPUJIT_THREADS = "2", GPUJIT_VECTORIZE = "false", GPUJIT_CACHE = "true", GPUJIT_PRECOMPILE = "0",
  GPUJIT_BOUNDSCHECK = "on", GPUJIT_VERBOSE = "0", GPUJIT_CACHE_MAX = "64M", GPUJIT_DUMP = "",
  GPUJIT_OPENCL_FORMAT = "spir", GPUJIT_CUDA_ARCH = "sm_80", GPUJIT_TIMEOUT = "2",
}

describe("GPUJIT_* variables are validated alike", function()
  local bk = H.compilers[1]   -- one that compiles (sim never reads GPUJIT_VECTORIZE)

  it("the table lists every GPUJIT_* variable the module and the core read, and docs/api.md each",
    function()
      local found = {}
      local p = io.popen("grep -rhoE 'getenv\\(\"GPUJIT_[A-Z_]+\"' lua src runtimes")
      for name in p:read("*a"):gmatch("GPUJIT_[A-Z_]+") do found[name] = true end
      p:close()
      local f = assert(io.open("docs/api.md"))
      local doc = f:read("*a")
      f:close()
      assert.is_not_nil(next(found))
      for name in pairs(found) do
        assert.is_not_nil(gpuenv.vars[name], name .. " is read but not in lua/gpujit/env.lua")
      end
      for name in pairs(gpuenv.vars) do
        assert.is_truthy(doc:find("| `" .. name, 1, true), name .. " is not in docs/api.md's table")
      end
    end)

  for name, values in pairs(BAD) do
    for _, v in ipairs(values) do
      it("refuses " .. name .. "=" .. v .. " with an error naming it", function()
        H.need(bk)
        local d = gpuenv.vars[name]
        local ok, out = child(bk, [[
          local k = gpu.kernel(function(a) a[gpu.global_id()] = 1 end)
          k:launch(1, ffi.new("double[1]"))
          print("ran")
        ]], { [name] = v })
        assert.is_false(ok, out)
        assert.is_nil(out:find("ran", 1, true), out)
        assert.is_truthy(out:find(name .. "='" .. v .. "' is not valid: it takes ", 1, true), out)
        if d.when == "load" then
          assert.is_truthy(out:find("require('gpujit'): " .. name, 1, true), out)
        end
      end)
    end
    it("takes " .. name .. "=" .. GOOD[name], function()
      H.need(bk)
      local ok, out = child(bk, [[
        local k = gpu.kernel(function(a) a[gpu.global_id()] = 1 end, { timeout = false })
        k:launch(1, ffi.new("double[1]"))
        print("ran")
      ]], { [name] = GOOD[name] })
      assert.is_true(ok, out)
      assert.is_truthy(out:find("ran", 1, true), out)
    end)
  end

  it("warns about a GPUJIT_* name it does not read, with the name meant", function()
    H.need(bk)
    local ok, out = child(bk, [[print("loaded")]], { GPUJIT_BOUNDCHECK = "1", GPUJIT_FOO = "x" })
    assert.is_true(ok, out)
    assert.is_truthy(out:find("loaded", 1, true), out)
    assert.is_truthy(out:find("gpujit: warning: GPUJIT_BOUNDCHECK is not a variable gpujit reads (did you "
      .. "mean GPUJIT_BOUNDSCHECK?); it is ignored", 1, true), out)
    assert.is_truthy(out:find("gpujit: warning: GPUJIT_FOO is not a variable gpujit reads; it is ignored",
      1, true), out)
    -- the repository's own (GPUJIT_SPEC_BACKENDS is set for this very run) and the known ones: no word
    ok, out = child(bk, [[print("loaded")]], { GPUJIT_SPEC_BACKENDS = "cpu", GPUJIT_BOUNDSCHECK = "0" })
    assert.is_true(ok, out)
    assert.is_nil(out:find("warning", 1, true), out)
  end)

  it("takes the boolean words alike (1/0, true/false, yes/no, on/off)", function()
    H.need(bk)
    for _, v in ipairs({ "1", "true", "YES", "on" }) do
      local ok, out = child(bk, [[print("cache", gpu.cache.enabled())]], { GPUJIT_CACHE = v })
      assert.is_true(ok, out)
      assert.is_truthy(out:find("cache\ttrue", 1, true), out)
    end
    for _, v in ipairs({ "0", "false", "no", "Off" }) do
      local ok, out = child(bk, [[print("cache", gpu.cache.enabled())]], { GPUJIT_CACHE = v })
      assert.is_true(ok, out)
      assert.is_truthy(out:find("cache\tfalse", 1, true), out)
    end
  end)
end)

describe("the disk cache's directory", function()
  local bk = H.backends[1]
  it("is never the current directory: XDG_CACHE_HOME, then HOME, then none (no disk cache)", function()
    H.need(bk)
    local code = [[print("dir=" .. gpu.cache.dir())]]
    local ok, out = child(bk, code, { XDG_CACHE_HOME = "/x/cache" }, { "GPUJIT_CACHE_DIR" })
    assert.is_true(ok, out)
    assert.is_truthy(out:find("dir=/x/cache/gpujit\n", 1, true), out)
    ok, out = child(bk, code, { HOME = "/x/home" }, { "GPUJIT_CACHE_DIR", "XDG_CACHE_HOME" })
    assert.is_true(ok, out)
    assert.is_truthy(out:find("dir=/x/home/.cache/gpujit\n", 1, true), out)
    -- neither: no directory and no disk cache; kernels compile and run, nothing
    -- is written under the current directory (the child runs in an empty one)
    local cwd = fresh_dir()
    ok, out = child(bk, [[
      print("dir=" .. tostring(gpu.cache.dir()), "enabled=" .. tostring(gpu.cache.enabled()))
      local k = gpu.kernel(function(a) a[gpu.global_id()] = 7 end)
      local a = ffi.new("double[2]")
      k:launch(2, a)
      local s = gpu.cache.stats()
      print("ran", a[1], s.writes, s.dir, s.enabled, gpu.cache.clear())
      print("export", pcall(gpu.cache.export, "x.gjb"))
    ]], {}, { "GPUJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME" }, cwd)
    assert.is_true(ok, out)
    assert.is_truthy(out:find("dir=nil\tenabled=false", 1, true), out)
    assert.is_truthy(out:find("ran\t7\t0\tnil\tfalse\t0", 1, true), out)
    assert.is_truthy(out:find("export\tfalse\tgpu.cache.export: no disk cache directory", 1, true), out)
    assert.are.same({}, H.ls("-A '" .. cwd .. "'"))
  end)
end)
