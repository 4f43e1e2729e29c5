-- The disk cache (src/gj_cache.c, stage 4 of src/gj_pipeline.c): keys that
-- change with what the kernel computes, entries that are never trusted,
-- several processes, eviction, bundles and precompilation.  Every test uses
-- a directory of its own; what other processes do is checked through
-- gpu.cache.stats() printed by them.
local H = require("spec.helpers")
local gpu, ffi = H.gpu, H.ffi

-- A fresh cache directory, removed after the test.
local fresh_dir = H.scratch_dirs(after_each)

local function entries_of(dir)
  return H.ls("'" .. dir .. "'/*.gjc")
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write_file(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- The body of a child process: define saxpy, launch it, check the result,
-- print the cache counters on one line.
local SAXPY = [[
local k = gpu.kernel(function(a, x, y, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end, { name = "saxpy" })
local n = 100
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do x[i] = i; y[i] = 1 end
k:launch(n, 2.0, x, y, n)
for i = 0, n - 1 do assert(y[i] == 2 * i + 1, "wrong result at " .. i) end
]]
local STATS = [[
local s = gpu.cache.stats()
print(string.format("STATS hits=%d misses=%d rejected=%d writes=%d compiles=%d entries=%d bytes=%d",
  s.hits, s.misses, s.rejected, s.writes, s.compiles, s.entries, s.bytes))
]]

-- Run code (then STATS) in a new process with the cache in dir.
local function child(bk, dir, code, env)
  local e = { GPUJIT_CACHE_DIR = dir }
  for k, v in pairs(env or {}) do e[k] = v end
  local ok, out = H.run_isolated(bk, code .. "\n" .. STATS, e)
  assert(ok, "child process failed:\n" .. out)
  local s = {}
  local line = assert(out:match("STATS ([^\n]*)"), out)
  for k, v in line:gmatch("(%w+)=(%d+)") do s[k] = tonumber(v) end
  return s, out
end

local with_dir = H.with_cache_dir   -- the cache at dir while fn runs

local function delta(before, after)
  local d = {}
  for k, v in pairs(after) do
    if type(v) == "number" and before[k] then d[k] = v - before[k] end
  end
  return d
end

for _, bk in ipairs(H.compilers) do
  describe("disk cache on " .. bk, function()
    it("a second process launching the same kernel compiles nothing", function()
      H.need(bk)
      local dir = fresh_dir()
      local s1 = child(bk, dir, SAXPY)
      assert.are.equal(1, s1.compiles)
      assert.are.equal(1, s1.writes)
      assert.are.equal(0, s1.hits)
      assert.are.equal(1, s1.entries)
      local s2 = child(bk, dir, SAXPY)
      assert.are.equal(0, s2.compiles)
      assert.are.equal(1, s2.hits)
      assert.are.equal(0, s2.writes)
      assert.are.equal(1, s2.entries)
    end)

    it("finds the entry of the same kernel defined at other lines (branch lines are not keyed)", function()
      H.need(bk)
      local dir = fresh_dir()
      assert.are.equal(1, child(bk, dir, SAXPY).compiles)
      -- SAXPY's `if` (a conditional branch that codegen tags with its Lua line) three lines down
      local s = child(bk, dir, "\n\n\n" .. SAXPY)
      assert.are.same({ 1, 0, 1 }, { s.hits, s.compiles, s.entries })
    end)

    it("is off with GPUJIT_CACHE=0 and for a kernel with cache = false", function()
      H.need(bk)
      local dir = fresh_dir()
      local s = child(bk, dir, SAXPY, { GPUJIT_CACHE = "0" })
      assert.are.equal(1, s.compiles)
      assert.are.equal(0, s.writes + s.hits + s.misses)
      assert.are.equal(0, #entries_of(dir))
      s = child(bk, dir, (SAXPY:gsub('name = "saxpy"', 'name = "saxpy", cache = false')))
      assert.are.equal(0, s.writes + s.hits + s.misses)
      assert.are.equal(0, #entries_of(dir))
    end)

    -- A kernel whose device function g (two calls deep: kernel -> f -> g)
    -- has body gbody and reads the upvalue c.
    local function make(gbody, c)
      local src = ([[
        local gpu, c = ...
        local function g(x) return %s end
        local function f(x) return g(x) + 1 end
        return function(a, n)
          local i = gpu.global_id(0)
          if i < n then a[i] = f(i) end
        end
      ]]):format(gbody)
      return gpu.kernel(assert(load(src, "=cache_key_kernel"))(gpu, c), { backend = bk })
    end

    local function run(k, want)
      local n = 16
      local a = ffi.new("int32_t[?]", n)
      k:launch(n, a, n)
      for i = 0, n - 1 do assert.are.equal(want(i), a[i]) end
    end

    it("gives a new key when a device function two calls deep or an upvalue changes", function()
      H.need(bk)
      with_dir(fresh_dir(), function()
        local s0 = gpu.cache.stats()
        run(make("x * 2", 3), function(i) return 2 * i + 1 end)
        local d = delta(s0, gpu.cache.stats())
        assert.are.same({ 1, 1, 0 }, { d.compiles, d.writes, d.hits })

        s0 = gpu.cache.stats()        -- the same source again: a hit
        run(make("x * 2", 3), function(i) return 2 * i + 1 end)
        d = delta(s0, gpu.cache.stats())
        assert.are.same({ 0, 1 }, { d.compiles, d.hits })

        s0 = gpu.cache.stats()        -- g changed
        run(make("x * 3", 3), function(i) return 3 * i + 1 end)
        d = delta(s0, gpu.cache.stats())
        assert.are.same({ 1, 0 }, { d.compiles, d.hits })

        s0 = gpu.cache.stats()        -- g reads the upvalue c: 5, then 6
        run(make("x * c", 5), function(i) return 5 * i + 1 end)
        run(make("x * c", 6), function(i) return 6 * i + 1 end)
        d = delta(s0, gpu.cache.stats())
        assert.are.same({ 2, 0 }, { d.compiles, d.hits })

        -- an upvalue is a constant of the code: c = 3 is the code of "x * 3"
        s0 = gpu.cache.stats()
        run(make("x * c", 6), function(i) return 6 * i + 1 end)
        run(make("x * c", 3), function(i) return 3 * i + 1 end)
        d = delta(s0, gpu.cache.stats())
        assert.are.same({ 0, 2 }, { d.compiles, d.hits })
        assert.are.equal(4, gpu.cache.stats().entries)
      end)
    end)

    -- Damage the only entry of a fresh directory, then compile the same
    -- kernel again: a miss that replaces the entry, and a hit after that.
    local damages = {
      ["a truncated entry"] = function(s) return s:sub(1, math.floor(#s / 2)) end,
      ["a garbage entry"] = function(s)
        local r, t = H.rng(7), {}
        for i = 1, #s do t[i] = string.char(r(0, 255)) end
        return table.concat(t)
      end,
      ["an entry of another format version"] = function(s)
        return s:sub(1, 8) .. "\99\0\0\0" .. s:sub(13)
      end,
      ["an entry whose payload does not match its checksum"] = function(s)
        local at = #s - 10
        return s:sub(1, at - 1) .. string.char((s:byte(at) + 1) % 256) .. s:sub(at + 1)
      end,
      ["an empty entry"] = function() return "" end,
    }
    for what, damage in pairs(damages) do
      it("treats " .. what .. " as a miss and replaces it", function()
        H.need(bk)
        local dir = fresh_dir()
        with_dir(dir, function()
          run(make("x * 5", 1), function(i) return 5 * i + 1 end)
          local files = entries_of(dir)
          assert.are.equal(1, #files)
          local good = read_file(files[1])
          write_file(files[1], damage(good))
          local s0 = gpu.cache.stats()
          run(make("x * 5", 1), function(i) return 5 * i + 1 end)
          local d = delta(s0, gpu.cache.stats())
          assert.are.same({ 1, 1, 1, 1, 0 }, { d.misses, d.rejected, d.compiles, d.writes, d.hits })
          s0 = gpu.cache.stats()
          run(make("x * 5", 1), function(i) return 5 * i + 1 end)
          d = delta(s0, gpu.cache.stats())
          assert.are.same({ 1, 0 }, { d.hits, d.compiles })
        end)
      end)
    end

    it("compiles a redefined kernel function anew, in memory and on disk", function()
      H.need(bk)
      with_dir(fresh_dir(), function()
        -- the same global name, redefined: each gpu.kernel sees its own code
        local env = { gpu = gpu }
        local function define(body)
          local chunk = assert(load("function scale(x) return " .. body .. " end\n"
            .. "return function(a, n) local i = gpu.global_id(0) if i < n then a[i] = scale(i) end end",
            "=redefined"))
          setfenv(chunk, env)
          return gpu.kernel(chunk(), { backend = bk })
        end
        local k1 = define("x * 2")
        run(k1, function(i) return 2 * i end)
        local k2 = define("x * 9")
        run(k2, function(i) return 9 * i end)
        -- k1 keeps what it compiled: globals are read once, at compile time
        run(k1, function(i) return 2 * i end)
        assert.are.equal(2, gpu.cache.stats().entries)
      end)
    end)

    it("reports a bounds fault of a kernel loaded from disk with its line", function()
      H.need(bk)
      local dir = fresh_dir()
      local code = [[
        local k = gpu.kernel(function(a, n)
          local i = gpu.global_id(0)
          if i < n then a[i + 1] = i end
        end, { boundscheck = true, name = "shifted" })
        local a = ffi.new("int32_t[4]")
        local ok, err = pcall(k.launch, k, 4, a, 4)
        assert(not ok, "the launch must fail")
        print("ERR " .. tostring(err))
      ]]
      local s1, out1 = child(bk, dir, code)
      local s2, out2 = child(bk, dir, code)
      assert.are.same({ 1, 0 }, { s1.compiles, s1.hits })
      assert.are.same({ 0, 1 }, { s2.compiles, s2.hits })
      local e1, e2 = out1:match("ERR ([^\n]*)"), out2:match("ERR ([^\n]*)")
      assert.truthy(e1:find("out of bounds", 1, true), e1)
      assert.truthy(e1:find(":6:", 1, true), e1)   -- run_isolated adds 3 lines above the code
      assert.are.equal(e1:gsub("[^:]*:%d+: ", "", 1), e2:gsub("[^:]*:%d+: ", "", 1))
    end)

    it("lets two processes compile the same kernel at once", function()
      H.need(bk)
      local dir = fresh_dir()
      local script = os.tmpname()
      write_file(script, "local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use('" .. bk
        .. "')\n" .. SAXPY .. STATS)
      local run1 = H.luajit_cmd({ GPUJIT_CACHE_DIR = dir }) .. " " .. script
      local p = io.popen("(" .. run1 .. " > " .. script .. ".1 2>&1; echo $? >> " .. script .. ".1) & ("
        .. run1 .. " > " .. script .. ".2 2>&1; echo $? >> " .. script .. ".2) & wait")
      p:read("*a")
      p:close()
      for i = 1, 2 do
        local out = read_file(script .. "." .. i)
        assert.truthy(out:match("STATS") and out:match("\n0\n$"), "process " .. i .. ":\n" .. out)
        os.remove(script .. "." .. i)
      end
      os.remove(script)
      assert.are.equal(1, #entries_of(dir))
      local s = child(bk, dir, SAXPY)
      assert.are.same({ 1, 0 }, { s.hits, s.compiles })
    end)

    it("evicts the least recently used entries above GPUJIT_CACHE_MAX", function()
      H.need(bk)
      local dir = fresh_dir()
      local function kernel_code(c)
        return ([[
          local k = gpu.kernel(function(a, n)
            local i = gpu.global_id(0)
            if i < n then a[i] = i * %d end
          end)
          local a = ffi.new("int32_t[4]")
          k:launch(4, a, 4)
          assert(a[3] == 3 * %d)
        ]]):format(c, c)
      end
      local one = child(bk, dir, kernel_code(1)).bytes
      local two = child(bk, dir, kernel_code(2)).bytes
      assert.are.equal(2, #entries_of(dir))
      -- room for these two and half of one more (entries differ in size: a
      -- device binary is not always the same length)
      local max = math.floor(two + one / 2)
      local env = { GPUJIT_CACHE_MAX = tostring(max) }
      local s = child(bk, dir, kernel_code(1), env)      -- a hit: 1 is now the most recent
      assert.are.equal(1, s.hits)
      s = child(bk, dir, kernel_code(3), env)            -- 2 goes
      assert.are.equal(2, s.entries)
      assert.is_true(s.bytes <= max)
      assert.are.equal(1, child(bk, dir, kernel_code(1), env).hits)
      assert.are.equal(1, child(bk, dir, kernel_code(3), env).hits)
      assert.are.equal(0, child(bk, dir, kernel_code(2), env).hits)
    end)

    it("exports a bundle and imports it into another directory", function()
      H.need(bk)
      local a, b = fresh_dir(), fresh_dir()
      child(bk, a, SAXPY)
      local bundle = os.tmpname()
      with_dir(a, function() assert.are.equal(1, gpu.cache.export(bundle)) end)
      with_dir(b, function()
        local n, rejected = gpu.cache.import(bundle)
        assert.are.same({ 1, 0 }, { n, rejected })
      end)
      assert.are.same({ 1, 0 }, (function(s) return { s.hits, s.compiles } end)(child(bk, b, SAXPY)))

      -- a damaged entry inside a bundle is rejected, the bundle's others kept
      local c = fresh_dir()
      local s = read_file(bundle)
      write_file(bundle, s:sub(1, #s - 5) .. "XXXXX")
      with_dir(c, function()
        local n, rejected = gpu.cache.import(bundle)
        assert.are.same({ 0, 1 }, { n, rejected })
        assert.are.equal(0, gpu.cache.stats().entries)
      end)
      write_file(bundle, "not a bundle at all")
      with_dir(c, function()
        local msg = H.error_of(gpu.cache.import, bundle)
        assert.truthy(msg:find("not a gpujit cache bundle", 1, true), msg)
        msg = H.error_of(gpu.cache.import, "/nonexistent/bundle")
        assert.truthy(msg:find("cannot read", 1, true), msg)
        msg = H.error_of(gpu.cache.export, 42)
        assert.truthy(msg:find("expected a file name", 1, true), msg)
      end)
      os.remove(bundle)
    end)

    it("k:precompile stores the kernel for the next process", function()
      H.need(bk)
      local dir = fresh_dir()
      local s = child(bk, dir, [[
        local k = gpu.kernel(function(a, x, y, n)
          local i = gpu.global_id(0)
          if i < n then y[i] = a * x[i] + y[i] end
        end, { name = "saxpy" })
        k:precompile({ "lua_pos20", "float[]", "float[]", "lua_pos20" })   -- SAXPY's 2.0 and 100
      ]])
      assert.are.same({ 1, 1 }, { s.compiles, s.writes })
      s = child(bk, dir, SAXPY)
      assert.are.same({ 1, 0 }, { s.hits, s.compiles })
    end)

    it("bin/gpujit-precompile compiles a script's kernels without running them", function()
      H.need(bk)
      local dir = fresh_dir()
      local script = os.tmpname()
      write_file(script, [[
        local ffi = require("ffi")
        local gpu = require("gpujit")
        local eager = gpu.kernel({ "int32_t[]", "int32_t" }, function(a, n)
          local i = gpu.global_id(0)
          if i < n then a[i] = 7 * i end
        end)
        local lazy = gpu.kernel(function(a, x, y, n)
          local i = gpu.global_id(0)
          if i < n then y[i] = a * x[i] + y[i] end
        end, { name = "saxpy" })
        local y = ffi.new("float[4]", 1, 1, 1, 1)
        lazy:launch(4, 2.0, ffi.new("float[4]", 1, 2, 3, 4), y, 4)
        print("Y0=" .. y[0])
        assert(eager)
      ]])
      local p = io.popen(H.luajit_cmd({ GPUJIT_BACKEND = bk, GPUJIT_CACHE_DIR = dir })
        .. " bin/gpujit-precompile " .. script .. " 2>&1; echo \"exit $?\"")
      local out = p:read("*a")
      p:close()
      os.remove(script)
      assert.truthy(out:match("exit 0"), out)
      assert.truthy(out:match("Y0=1\n"), "the launch must not run:\n" .. out)
      assert.truthy(out:match("2 compiled, 0 already in the cache, 2 stored"), out)
      assert.are.equal(2, #entries_of(dir))
      local s = child(bk, dir, SAXPY)
      assert.are.same({ 1, 0 }, { s.hits, s.compiles })
    end)

    it("gpu.cache.clear removes the entries and stats counts them", function()
      H.need(bk)
      local dir = fresh_dir()
      child(bk, dir, SAXPY)
      with_dir(dir, function()
        local s = gpu.cache.stats()
        assert.are.equal(dir, s.dir)
        assert.are.equal(1, s.entries)
        assert.is_true(s.bytes > 0)
        assert.are.equal(256 * 2 ^ 20, s.max_bytes)
        assert.are.equal(1, gpu.cache.clear())
        assert.are.equal(0, gpu.cache.stats().entries)
      end)
    end)
  end)
end

-- The cpu backend's entries are shared objects, linked when compiled
-- (targets/native_link.c) and dlopened on a hit (runtimes/cpu.c): a hit
-- needs no linker, and a compile without one says which is missing.
local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end
if has(H.compilers, "cpu") then
  describe("disk cache on cpu, shared objects", function()
    it("a hit loads without the linker; a miss without one names it", function()
      H.need("cpu")
      local dir = fresh_dir()
      assert.are.equal(1, child("cpu", dir, SAXPY).compiles)
      local nold = { GPUJIT_LD = "/nonexistent/gpujit-no-ld" }
      local s = child("cpu", dir, SAXPY, nold)
      assert.are.same({ 1, 0 }, { s.hits, s.compiles })
      local ok, out = H.run_isolated("cpu", [[
        local k = gpu.kernel(function(x, n)
          local i = gpu.global_id(0)
          if i < n then x[i] = 3 * x[i] end
        end, { name = "triple" })
        local x = ffi.new("double[4]")
        k:launch(4, x, 4)
      ]], { GPUJIT_CACHE_DIR = dir, GPUJIT_LD = "/nonexistent/gpujit-no-ld" })
      assert.is_false(ok, out)
      assert.truthy(out:find("GPUJIT_LD=/nonexistent/gpujit-no-ld is not an executable file", 1, true), out)
      assert.truthy(out:find("triple", 1, true), out)
    end)
  end)
end
