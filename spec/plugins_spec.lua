-- Plugins and compile jobs (docs/plugins.md): the stages in order, what
-- each hook sees and may change, composition, opt-in, buffers and reports,
-- bitcode libraries in the job, errors that name the plugin and the stage,
-- the cache key, and a C plugin built here.

local H = require("spec.helpers")
local gpu = H.gpu

local STAGES = { "job", "frontend", "ir", "optimize", "optimized", "emit" }

local function saxpy(y, x, a)
  local i = gpu.global_id()
  y[i] = a * x[i] + y[i]
end

-- A Lua ir hook that makes each work item store `value` into its slot of
-- the plugin's buffer (named %<plugin>.<buffer>): before gj_body's ret.
local function store_hook(plugin, buffer, value, call)
  return function(text, info)
    local as = info.job.address_spaces.global
    local ptr = "ptr addrspace(" .. as .. ")"
    local body_done = false
    text = text:gsub("(define internal void @gj_body%b()[^{]*{.-\n)(  ret void)", function(body, ret)
      body_done = true
      local code = "  %pl.gid = call i64 @gj.global_id(ptr %0, i32 0)\n"
      if call then
        code = code .. "  call void @" .. call .. "(" .. ptr .. " %" .. plugin .. "." .. buffer
          .. ", i64 %pl.gid)\n"
      else
        code = code .. "  %pl.p = getelementptr i32, " .. ptr .. " %" .. plugin .. "." .. buffer
          .. ", i64 %pl.gid\n  store i32 " .. value .. ", " .. ptr .. " %pl.p\n"
      end
      return body .. code .. ret
    end, 1)
    assert(body_done, "gj_body not found")
    if not text:find("declare i64 @gj.global_id", 1, true) then
      text = text .. "\ndeclare i64 @gj.global_id(ptr, i32)\n"
    end
    if call then text = text .. "\ndeclare void @" .. call .. "(" .. ptr .. ", i64)\n" end
    return text
  end
end

local function sum_report(b, launch)
  local s = 0
  for i = 0, b.lengths[1] - 1 do s = s + b[1][i] end
  return { sum = s, items = launch.items, n = b.lengths[1] }
end

for _, bk in ipairs(H.compilers) do
  describe("plugins on " .. bk, function()
    H.use_in_block(bk)
    local registered = {}
    local function plugin(def)
      registered[#registered + 1] = def.name
      return gpu.plugin(def)
    end
    after_each(function()
      for _, n in ipairs(registered) do gpu.remove_plugin(n) end
      registered = {}
    end)

    it("run their hooks at the six stages, in order, with the kernel's description", function()
      if os.getenv("GPUJIT_SPEC_PTX_DIR") then   -- cuda_spec's run compiles each kernel twice
        return pending("counts hook calls: the suite-wide PTX run compiles every kernel twice")
      end
      local calls, seen = {}, {}
      local def = { name = "order", version = "1" }
      for _, s in ipairs(STAGES) do
        def[s] = function(a, info)
          calls[#calls + 1] = s
          seen[s] = s == "frontend" and a or info
        end
      end
      plugin(def)
      local k = H.kernel(bk, saxpy, { plugins = { "order" }, name = "sx" })
      local y, x = H.array("float", { 1, 2, 3 }), H.array("float", { 1, 1, 1 })
      k:launch(3, y, x, 2)
      assert.same(STAGES, calls)
      assert.same({ 3, 4, 5 }, { y[0], y[1], y[2] })
      local info = seen.ir
      assert.equal("sx", info.name)
      assert.equal(bk, info.backend)
      assert.same({ "float[]", "float[]", "lua_pos20" }, info.types)   -- a = 2
      assert.same({ "y", "x", "a" }, info.argnames)
      assert.truthy(info.source:find("plugins_spec.lua", 1, true))
      assert.equal(-1, info.buffer_param)
      local fe = seen.frontend.functions
      assert.equal("kernel", fe[1].name)
      assert.same({ "float[]", "float[]", "lua_pos20" }, fe[1].params)
      -- inspecting compiles up to the optimized module: no emit
      calls = {}
      k:inspect_llvm({ "float[]", "float[]", "double" })
      assert.same({ "job", "frontend", "ir", "optimize", "optimized" }, calls)
    end)

    it("see every typed device function at the frontend stage", function()
      local fns
      plugin({ name = "fe", frontend = function(info) fns = info.functions end })
      local function twice(v) return 2 * v end
      local k = H.kernel(bk, function(y) local i = gpu.global_id(); y[i] = twice(y[i]) end,
        { plugins = { "fe" } })
      local y = H.array("int32_t", { 1, 2 })
      k:launch(2, y)
      assert.same({ 2, 4 }, { y[0], y[1] })
      assert.equal(2, #fns)
      assert.equal("twice", fns[2].name:match("twice"))
      assert.equal(1, #fns[2].params)
      assert.truthy(fns[2].params[1]:match("^u?int%d+_t$"))
      assert.equal(1, #fns[2].returns)
    end)

    it("compose in registration order, each seeing what the one before returned", function()
      if os.getenv("GPUJIT_SPEC_PTX_DIR") then   -- cuda_spec's run compiles each kernel twice
        return pending("counts hook calls: the suite-wide PTX run compiles every kernel twice")
      end
      local got = {}
      plugin({ name = "first",
        optimize = function(p) got[#got + 1] = "first:" .. p; return p .. ",instnamer" end })
      plugin({ name = "second", optimize = function(p) got[#got + 1] = "second:" .. p; return p end })
      local k = H.kernel(bk, saxpy, { plugins = { "second", "first" } })
      local y, x = H.array("float", { 0 }), H.array("float", { 1 })
      k:launch(1, y, x, 3)
      assert.equal(3, y[0])
      assert.equal(2, #got)
      assert.truthy(got[1]:match("^first:"))
      assert.truthy(got[2]:match("^second:.*,instnamer$"))
    end)

    it("apply only to kernels that name them, unless registered with all = true", function()
      if os.getenv("GPUJIT_SPEC_PTX_DIR") then   -- cuda_spec's run compiles each kernel twice
        return pending("counts hook calls: the suite-wide PTX run compiles every kernel twice")
      end
      local n = 0
      plugin({ name = "optin", ir = function() n = n + 1 end })
      local y, x = H.array("float", { 0 }), H.array("float", { 1 })
      H.kernel(bk, saxpy):launch(1, y, x, 1)
      assert.equal(0, n)
      H.kernel(bk, saxpy, { plugins = { "optin" } }):launch(1, y, x, 1)
      assert.equal(1, n)
      local m = 0
      plugin({ name = "every", all = true, ir = function() m = m + 1 end })
      H.kernel(bk, saxpy):launch(1, y, x, 1)
      assert.equal(1, m)
      local names = {}
      for _, p in ipairs(gpu.plugins()) do names[#names + 1] = p.name end
      assert.truthy(table.concat(names, " "):find("optin every", 1, true))
    end)

    it("give buffers to every launch, zeroed and sized for its work items, and report", function()
      plugin({
        name = "mark", buffers = { { name = "hits", elem = "int32_t", per_item = 2, fixed = 3 } },
        ir = store_hook("mark", "hits", 7), report = sum_report,
      })
      local k = H.kernel(bk, saxpy, { plugins = { "mark" } })
      local y, x = H.array("float", { 1, 2, 3, 4, 5 }), H.array("float", { 1, 1, 1, 1, 1 })
      k:launch(5, y, x, 1)
      assert.same({ sum = 35, items = 5, n = 13 }, k:report("mark"))
      k:launch(3, y, x, 1)           -- zeroed again, fewer items
      assert.same({ sum = 21, items = 3, n = 9 }, k:report("mark"))
      assert.same({ 3, 4, 5, 5, 6 }, { y[0], y[1], y[2], y[3], y[4] })
      -- 2-D: items is the product; the hook marks the first dimension's ids
      local k2 = H.kernel(bk, function(z) local i = gpu.global_id(0); z[i] = 1 end,
        { plugins = { "mark" } })
      k2:launch({ global = { 4, 3 } }, y)
      assert.equal(12, k2:report("mark").items)
      assert.equal(2 * 12 + 3, k2:report("mark").n)
      assert.is_nil(H.kernel(bk, saxpy):report("mark"))
    end)

    it("link the bitcode libraries of the job, and hash them into the key", function()
      local as = gpu.job(H.kernel(bk, saxpy), { "float[]", "float[]", "double" }).address_spaces.global
      local lib = os.tmpname() .. ".ll"
      local f = assert(io.open(lib, "w"))
      f:write(([[
define void @plug_fill(ptr addrspace(%d) %%p, i64 %%i) {
  %%q = getelementptr i32, ptr addrspace(%d) %%p, i64 %%i
  store i32 42, ptr addrspace(%d) %%q
  ret void
}
]]):format(as, as, as))
      f:close()
      plugin({
        name = "libuser", buffers = { { name = "out", elem = "int32_t", per_item = 1 } },
        ir = store_hook("libuser", "out", nil, "plug_fill"), report = sum_report,
      })
      local k = H.kernel(bk, saxpy, { plugins = { "libuser" },
        job = { libraries = { { path = lib, prefix = "plug_" } } } })
      local y, x = H.array("float", { 0, 0, 0, 0 }), H.array("float", { 1, 1, 1, 1 })
      k:launch(4, y, x, 1)
      assert.equal(4 * 42, k:report("libuser").sum)
      local job = gpu.job(k, { "float[]", "float[]", "double" })
      assert.equal(lib, job.libraries[#job.libraries].path)
      assert.equal("plug_", job.libraries[#job.libraries].prefix)
      os.remove(lib)
      -- a library that is missing when it is needed: an error naming it
      local k2 = H.kernel(bk, saxpy, { plugins = { "libuser" },
        job = { libraries = { { path = lib, prefix = "plug_" } } } })
      local ok, err = pcall(k2.launch, k2, 4, y, x, 1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cannot read library " .. lib, 1, true))
    end)

    it("name the kernel, the plugin and the stage when a hook fails, and the module goes on", function()
      plugin({ name = "boom", ir = function() error("no luck") end })
      local k = H.kernel(bk, saxpy, { plugins = { "boom" }, name = "bk1" })
      local y, x = H.array("float", { 0 }), H.array("float", { 1 })
      local ok, err = pcall(k.launch, k, 1, y, x, 1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("kernel bk1: plugin boom, stage ir: .*no luck"))
      plugin({ name = "badir", ir = function() return "this is not IR" end })
      local kbad = H.kernel(bk, saxpy, { plugins = { "badir" } })
      ok, err = pcall(kbad.launch, kbad, 1, y, x, 1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("plugin badir, stage ir: the IR it returned does not parse", 1, true))
      plugin({ name = "badpass", optimize = function() return "no-such-pass" end })
      local kb = H.kernel(bk, saxpy, { plugins = { "badpass" } })
      ok, err = pcall(kb.launch, kb, 1, y, x, 1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("no-such-pass", 1, true))
      local knope = H.kernel(bk, saxpy, { plugins = { "nope" } })
      ok, err = pcall(knope.launch, knope, 1, y, x, 1)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("plugin 'nope' is not loaded", 1, true))
      H.kernel(bk, saxpy):launch(1, y, x, 5)
      assert.equal(5, y[0])
    end)

    it("name the kernel, the plugin and the stage when a report or an emit hook fails", function()
      plugin({ name = "badrep", buffers = { { name = "hits", elem = "int32_t", per_item = 1 } },
               ir = store_hook("badrep", "hits", 1), report = function() error("report broke") end })
      -- a table argument: what the kernel wrote is copied back although the report fails
      local k = H.kernel(bk, function(y, x, a)
        local i = gpu.global_id() + 1
        y[i] = a * x[i] + y[i]
      end, { plugins = { "badrep" }, name = "rk" })
      local y = { 1, 2 }
      local ok, err = pcall(k.launch, k, 2, y, { 1, 1 }, 2)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("kernel rk: plugin badrep, stage report: .*report broke"), err)
      assert.same({ 3, 4 }, y)
      assert.is_nil(k:report("badrep"))
      local ya, xa = H.array("float", { 0 }), H.array("float", { 1 })
      for _, c in ipairs({ { "emptyemit", "" }, { "junkemit", "this is no object file" } }) do
        plugin({ name = c[1], emit = function() return c[2] end })
        local ke = H.kernel(bk, saxpy, { plugins = { c[1] }, name = "ek" })
        ok, err = pcall(ke.launch, ke, 1, ya, xa, 1)
        assert.is_false(ok)
        assert.truthy(tostring(err):find("kernel ek: plugin " .. c[1] .. ", stage emit: ", 1, true), err)
      end
      H.kernel(bk, saxpy):launch(1, ya, xa, 5)
      assert.equal(5, ya[0])
    end)

    it("refuse malformed plugins and job changes the backend cannot follow", function()
      assert.error_matches(function() gpu.plugin({ name = "has space" }) end, "letters, digits")
      assert.error_matches(function() gpu.plugin({ name = "x", ir = 3 }) end, "'ir' must be a function")
      assert.error_matches(function() gpu.plugin({ name = "x", bogus = 1 }) end, "unknown field 'bogus'")
      assert.error_matches(function()
        gpu.plugin({ name = "x", buffers = { { name = "b", elem = "bool", per_item = 1 } } })
      end, "numeric element type")
      assert.error_matches(function() gpu.kernel(saxpy, { job = 3 }) end, "option 'job'")
      assert.error_matches(function() gpu.kernel(saxpy, { plugins = "count" }) end, "option 'plugins'")
      local k = H.kernel(bk, saxpy, { job = { triple = "x86_64-unknown-nowhere" } })
      assert.error_matches(function() gpu.job(k, { "float[]", "float[]", "double" }) end,
        "job.triple cannot be changed")
      plugin({ name = "as", job = function(j) j.address_spaces.global = 7 end })
      local k2 = H.kernel(bk, saxpy, { plugins = { "as" } })
      assert.error_matches(function() gpu.job(k2, { "float[]", "float[]", "double" }) end,
        "plugin as, stage job: .*address_spaces.global cannot be changed")
      -- fields that change the entry point after the key is taken are read-only too
      local k3 = H.kernel(bk, saxpy, { job = function(j) j.block_by_address = not j.block_by_address end })
      assert.error_matches(function() gpu.job(k3, { "float[]", "float[]", "double" }) end,
        "job.block_by_address cannot be changed")
      local k4 = H.kernel(bk, saxpy, { job = { reloc = 99 } })
      assert.error_matches(function() gpu.job(k4, { "float[]", "float[]", "double" }) end,
        "job.reloc cannot be changed")
      assert.error_matches(function() gpu.load_plugin("no_such_plugin_here") end,
        "no plugin 'no_such_plugin_here'")
      assert.error_matches(function() gpu.load_plugin("/nonexistent/x.so") end, "cannot read plugin")
    end)

    it("describe the compile job, which the job option adjusts", function()
      local k = H.kernel(bk, saxpy)
      local tl = { "float[]", "float[]", "double" }
      local j = gpu.job(k, tl)
      assert.truthy(#j.triple > 0 and #j.datalayout > 0 and #j.passes > 0)
      assert.truthy(#j.intrinsics > 0 and j.intrinsics:find("gj.global_id", 1, true))
      assert.is_number(j.address_spaces.global)
      assert.is_boolean(j.serial_groups)
      local k1 = H.kernel(bk, saxpy, { job = { passes = "default<O1>", opt_level = "less" } })
      local j1 = gpu.job(k1, tl)
      assert.equal("default<O1>", j1.passes)
      assert.equal("less", j1.opt_level)
      local k2 = H.kernel(bk, saxpy, { job = function(job) job.passes = "default<O0>" end })
      assert.equal("default<O0>", gpu.job(k2, tl).passes)
      local y, x = H.array("float", { 1 }), H.array("float", { 2 })
      k2:launch(1, y, x, 3)
      assert.equal(7, y[0])
    end)

    it("give the same job from C, gj_job_from_backend, as gpu.job for a plain kernel", function()
      local ffi = require("ffi")
      pcall(ffi.cdef, [[
        typedef struct { char path[512]; char prefix[32]; } spec_gj_job_lib;
        typedef struct {
          char triple[64]; char datalayout[256]; char cpu[64]; char features[1024];
          char target_id[256]; unsigned as_global, as_shared, as_local; int serial_groups;
          const char *intrinsics_ir; int nlibs; spec_gj_job_lib libs[4]; char passes[1024];
          int codegen_opt, reloc, code_model; char format[16]; int join_barriers;
          int vectorize, block_by_address, narrow_ints;
        } spec_gj_job;
        size_t gj_job_size(void);
        typedef struct { const char *name, *lua; size_t offset, size; int flags; } spec_gj_job_field;
        const spec_gj_job_field *gj_job_fields(int *n);
        int gj_job_from_backend(void *ctx, const char *backend, int dev, spec_gj_job *job);
        const char *gj_errmsg(void *ctx);
      ]])
      local lib = ffi.load(gpu.core.path)
      -- a declaration shorter than the C struct would let the call write past
      -- the LuaJIT allocation (a field added to gj_job corrupted the heap so)
      assert.equal(tonumber(lib.gj_job_size()), ffi.sizeof("spec_gj_job"))
      -- member by member against the core's one list (gj_job.h: GJ_JOBDEF),
      -- so that a field added there and not here fails, wherever it is
      local n = ffi.new("int[1]")
      local fields = lib.gj_job_fields(n)
      assert.is_true(n[0] >= 20)
      local dummy = ffi.new("spec_gj_job")
      local lua_names = {}
      for i = 0, n[0] - 1 do
        local f = fields[i]
        local name = ffi.string(f.name)
        assert.equal(tonumber(f.offset), ffi.offsetof("spec_gj_job", name), name)
        local v = dummy[name]   -- arrays and pointers are cdata; the mirror's numbers are 4 bytes
        assert.equal(tonumber(f.size), type(v) == "cdata" and ffi.sizeof(v) or 4, name)
        -- writable (2) only when keyed (1): what changes code is in the key
        if bit.band(f.flags, 2) ~= 0 then assert.equal(1, bit.band(f.flags, 1), name) end
        if f.lua ~= nil then lua_names[#lua_names + 1] = ffi.string(f.lua) end
      end
      local job = ffi.new("spec_gj_job")
      assert.equal(0, lib.gj_job_from_backend(gpu.core.ctx, bk, 0, job))
      local j = gpu.job(H.kernel(bk, saxpy), { "float[]", "float[]", "double" })
      -- every field the list names for Lua is in gpu.job's table
      for _, ln in ipairs(lua_names) do
        local v = j
        for part in ln:gmatch("[^.]+") do v = v[part] end
        assert.is_not_nil(v, ln)
      end
      assert.equal(j.block_by_address, job.block_by_address ~= 0)
      assert.equal(j.join_barriers, job.join_barriers ~= 0)
      assert.equal(j.narrow_ints, job.narrow_ints ~= 0)
      assert.equal(j.triple, ffi.string(job.triple))
      assert.equal(j.passes, ffi.string(job.passes))
      assert.equal(j.format, ffi.string(job.format))
      assert.equal(j.address_spaces.global, job.as_global)
      assert.equal(#j.libraries, job.nlibs)
      assert.equal(-1, lib.gj_job_from_backend(gpu.core.ctx, "nosuch", 0, job))
      assert.equal("no backend 'nosuch'", ffi.string(lib.gj_errmsg(gpu.core.ctx)))
    end)

    it("key every field GJ_JOBDEF marks keyed: changing any one changes the job's key", function()
      -- A field that changes code and is left out of the cache key gives stale
      -- binaries (issue 35: block_by_address changes the entry point after the
      -- key is taken); each keyed member is changed here, one at a time.
      local ffi = require("ffi")
      pcall(ffi.cdef, "void gj_job_key_hex(const spec_gj_job *job, char *hex);")
      local lib = ffi.load(gpu.core.path)
      local n = ffi.new("int[1]")
      local fields = lib.gj_job_fields(n)
      local job = ffi.new("spec_gj_job")
      assert.equal(0, lib.gj_job_from_backend(gpu.core.ctx, bk, 0, job))
      local hex = ffi.new("char[65]")
      local function key(j)
        lib.gj_job_key_hex(j, hex)
        return ffi.string(hex)
      end
      local other_text = ffi.new("char[?]", 16, "; another text")
      local keyed = 0
      for i = 0, n[0] - 1 do
        local f = fields[i]
        local name = ffi.string(f.name)
        if bit.band(f.flags, 1) ~= 0 then
          local base, changed = ffi.new("spec_gj_job"), ffi.new("spec_gj_job")
          ffi.copy(base, job, ffi.sizeof(job))
          if name == "libs" then base.nlibs = 1 end   -- only the first nlibs are read
          ffi.copy(changed, base, ffi.sizeof(base))
          local v = changed[name]
          if type(v) == "number" then
            changed[name] = v == 0 and 1 or v == 1 and 0 or v + 1
          elseif ffi.istype("const char *", v) then
            changed[name] = other_text
          else   -- a char array, or the libraries: the first byte of its text
            local p = ffi.cast("uint8_t *", changed) + f.offset
            p[0] = p[0] == 65 and 66 or 65
          end
          assert.are_not.equal(key(base), key(changed), "job." .. name .. " is not in the key")
          keyed = keyed + 1
        end
      end
      assert.is_true(keyed >= 20)
    end)

    it("are part of the cache key: another plugin version is another entry", function()
      local dir = os.tmpname()
      os.remove(dir)
      os.execute("mkdir -p '" .. dir .. "'")
      -- one script file for every run: the kernel's source is part of what
      -- it computes (its !gj.loc tags name it), and so is the hook's bytecode
      local script = dir .. "/child.lua"
      local f = assert(io.open(script, "w"))
      f:write(([[
        local ffi = require("ffi")
        local gpu = require("gpujit")
        gpu.use(%q)
        gpu.plugin({ name = "ver", version = os.getenv("PV"), optimize = function(p) return p end })
        local k = gpu.kernel(function(y) local i = gpu.global_id(); y[i] = y[i] + 1 end,
          { plugins = { "ver" } })
        local y = ffi.new("float[4]")
        k:launch(4, y)
        assert(y[3] == 1)
        local s = gpu.cache.stats()
        print("compiles=" .. s.compiles .. " hits=" .. s.hits)
      ]]):format(bk))
      f:close()
      local function run(version)
        local p = io.popen(H.luajit_cmd({ GPUJIT_CACHE_DIR = dir .. "/cache", PV = version })
          .. " " .. script .. " 2>&1")
        local out = p:read("*a")
        p:close()
        local c, h = out:match("compiles=(%d+) hits=(%d+)")
        assert(c, out)
        return c, h
      end
      assert.same({ "1", "0" }, { run("1") })
      assert.same({ "0", "1" }, { run("1") })
      assert.same({ "1", "0" }, { run("2") })
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end)
end

-- A C plugin built here: its optimize hook adds a pass, its optimized hook
-- tags every function, and its ir hook fails for a kernel named "refused".
local C_PLUGIN = [[
#include <string.h>
#include "gpujit_plugin.h"

static int optimize(void *ud, const gpujit_kernel_desc *k, char *passes,
                    size_t cap, char *err, size_t errlen)
{
  (void)ud; (void)k; (void)err; (void)errlen;
  if (strlen(passes) + 20 >= cap) return 1;
  strcat(passes, ",function(instnamer)");
  return 0;
}

static int optimized(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
                     char *err, size_t errlen)
{
  LLVMValueRef f;
  (void)ud; (void)err; (void)errlen;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
          LLVMCreateStringAttribute(LLVMGetModuleContext(m), "ctest", 5,
                                    k->backend, (unsigned)strlen(k->backend)));
  return 0;
}

static int ir(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
              char *err, size_t errlen)
{
  (void)ud; (void)m;
  if (strcmp(k->name, "refused") == 0) {
    strncpy(err, "kernels named refused are refused", errlen - 1);
    return 1;
  }
  return 0;
}

/* a kernel named "ro" gets a job whose read-only field changed */
static int job(void *ud, const gpujit_kernel_desc *k, gj_job *j, char *err,
               size_t errlen)
{
  (void)ud; (void)err; (void)errlen;
  if (strcmp(k->name, "ro") == 0) j->block_by_address = !j->block_by_address;
  return 0;
}

int gpujit_plugin_init(gpujit_plugin *p, char *err, size_t errlen)
{
  (void)err; (void)errlen;
  p->name = "ctest";
  p->version = "1.0";
  p->job = job;
  p->ir = ir;
  p->optimize = optimize;
  p->optimized = optimized;
  return 0;
}
]]

describe("a C plugin built by the spec", function()
  local so
  setup(function()
    so = H.build_plugin("ctest", C_PLUGIN)
  end)
  teardown(function()
    gpu.remove_plugin("ctest")
    if so then os.execute("rm -rf '" .. so:match("^(.*)/") .. "'") end
  end)

  for _, bk in ipairs(H.compilers) do
    it("adds a pass whose effect k:inspect_llvm shows on " .. bk, function()
      local p = gpu.load_plugin(so)
      assert.equal("ctest", p.name)
      assert.equal("1.0", p.version)
      assert.equal(p, gpu.load_plugin(so))   -- the same file again: the same plugin
      local tl = { "float[]", "float[]", "double" }
      local plain = H.kernel(bk, saxpy):inspect_llvm(tl)
      local k = H.kernel(bk, saxpy, { plugins = { "ctest" } })
      local ir = k:inspect_llvm(tl)
      assert.falsy(plain:find('"ctest"', 1, true))
      assert.truthy(ir:find('"ctest"="' .. bk .. '"', 1, true))
      -- instnamer names every value: no numbered values are left
      assert.truthy(plain:find("\n  %%%d+ = ") or plain:find("\n  %%[%w.]+ = "))
      assert.falsy(ir:find("\n  %%%d+ = "))
      local y, x = H.array("float", { 1, 2 }), H.array("float", { 1, 1 })
      k:launch(2, y, x, 2)
      assert.same({ 3, 4 }, { y[0], y[1] })
      local r = H.kernel(bk, saxpy, { plugins = { "ctest" }, name = "refused" })
      local ok, err = pcall(r.launch, r, 2, y, x, 2)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("kernel refused: plugin ctest, stage ir: kernels named refused "
        .. "are refused", 1, true))
      -- a read-only field (gj_job.h: GJ_JOBDEF) a C plugin changed is refused, as from Lua
      local ro = H.kernel(bk, saxpy, { plugins = { "ctest" }, name = "ro" })
      ok, err = pcall(ro.launch, ro, 2, y, x, 2)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("plugin ctest, stage job: job.block_by_address cannot be changed",
        1, true), tostring(err))
    end)
  end
end)
