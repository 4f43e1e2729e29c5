-- A plugin's own contribution to the compile cache key (docs/plugins.md,
-- "Cache"): a Lua plugin whose hook reads an upvalue, and a C plugin whose
-- hook reads the environment, give fresh code when that value changes,
-- with the disk cache on (a fresh GPUJIT_CACHE_DIR per test).
local H = require("spec.helpers")
local gpu, ffi = H.gpu, H.ffi

local fresh_dir = H.scratch_dirs(after_each)   -- a fresh directory, removed after the test

local with_dir = H.with_cache_dir   -- the cache at dir while fn runs

local function ones(y)
  local i = gpu.global_id()
  y[i] = 1.0
end

-- A new kernel object (nothing compiled in memory) launched once: y[0].
local function run(bk, plugin)
  local k = H.kernel(bk, ones, { plugins = { plugin }, cache = true })
  local y = ffi.new("float[4]")
  k:launch(4, y)
  return y[0]
end

local function counts(s0)
  local s = gpu.cache.stats()
  return { s.compiles - s0.compiles, s.hits - s0.hits }
end

for _, bk in ipairs(H.compilers) do
  describe("a plugin's key on " .. bk, function()
    after_each(function() gpu.remove_plugin("scale") end)

    it("keeps the disk cache from serving a Lua plugin's code built with another upvalue", function()
      H.need(bk)
      local v, seen = 1, {}
      -- the optimized hook writes v where the kernel stores 1.0: its result
      -- depends on the upvalue, not on anything the core hashes
      gpu.plugin({
        name = "scale",
        optimized = function(text) return (text:gsub("1%.000000e%+00", ("%.6e"):format(v))) end,
        key = function(info)
          -- (no error here: cuda_spec's PTX check compiles every kernel for cuda too)
          seen[info.backend] = info.name
          return tostring(v)
        end,
      })
      with_dir(fresh_dir(), function()
        local s0 = gpu.cache.stats()
        assert.equal(1, run(bk, "scale"))
        assert.same({ 1, 0 }, counts(s0))
        assert.is_string(seen[bk])              -- the key saw the kernel's description
        v = 3
        s0 = gpu.cache.stats()
        assert.equal(3, run(bk, "scale"))          -- before: 1, from the disk cache
        assert.same({ 1, 0 }, counts(s0))
        v = 1
        s0 = gpu.cache.stats()
        assert.equal(1, run(bk, "scale"))          -- the first entry, found again
        assert.same({ 0, 1 }, counts(s0))
      end)
    end)

    it("takes a key string, and names the plugin when a key function fails", function()
      H.need(bk)
      assert.has_error(function() gpu.plugin({ name = "scale", key = 5 }) end,
        "gpu.plugin: 'key' must be a string or a function returning one")
      gpu.plugin({ name = "scale", key = "fixed", optimize = function(p) return p end })
      with_dir(fresh_dir(), function()
        assert.equal(1, run(bk, "scale"))
        gpu.remove_plugin("scale")
        gpu.plugin({ name = "scale", key = function() return {} end })
        local ok, err = pcall(run, bk, "scale")
        assert.is_false(ok)
        assert.truthy(tostring(err):find("plugin scale, stage key: must be (or return) a string or nil",
          1, true), err)
        gpu.remove_plugin("scale")
        gpu.plugin({ name = "scale", key = function() error("no key today") end })
        ok, err = pcall(run, bk, "scale")
        assert.is_false(ok)
        assert.truthy(tostring(err):find("plugin scale, stage key: .*no key today"), err)
        gpu.remove_plugin("scale")
        gpu.plugin({ name = "scale", key = "fixed", optimize = function(p) return p end })
        assert.equal(1, run(bk, "scale"))        -- the module goes on
      end)
    end)
  end)
end

-- A C plugin whose optimized hook reads GJ_KEYTEST_MODE (a setting outside
-- the shared object) and whose key callback returns it.
local C_PLUGIN = [[
#include <stdlib.h>
#include <string.h>
#include "gpujit_plugin.h"

static const char *mode(void)
{
  const char *m = getenv("GJ_KEYTEST_MODE");
  return m ? m : "";
}

/* mode "double": every store of a float constant c stores 2c instead */
static int optimized(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
                     char *err, size_t errlen)
{
  LLVMValueRef f, i;
  LLVMBasicBlockRef b;
  (void)ud; (void)k; (void)err; (void)errlen;
  if (strcmp(mode(), "double") != 0) return 0;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
      for (i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
        LLVMValueRef v;
        LLVMBool lost;
        if (LLVMGetInstructionOpcode(i) != LLVMStore) continue;
        v = LLVMGetOperand(i, 0);
        if (!LLVMIsAConstantFP(v)) continue;
        LLVMSetOperand(i, 0, LLVMConstReal(LLVMTypeOf(v),
                                           2 * LLVMConstRealGetDouble(v, &lost)));
      }
  return 0;
}

static int key(void *ud, const gpujit_kernel_desc *k, char *buf, size_t cap,
               char *err, size_t errlen)
{
  (void)ud; (void)k; (void)err; (void)errlen;
  strncpy(buf, mode(), cap - 1);
  return 0;
}

int gpujit_plugin_init(gpujit_plugin *p, char *err, size_t errlen)
{
  (void)err; (void)errlen;
  p->name = "keytest";
  p->version = "1";
  p->optimized = optimized;
  if (p->abi >= 2) p->key = key;
  return 0;
}
]]

describe("a C plugin's key callback", function()
  local so
  setup(function()
    so = H.build_plugin("keytest", C_PLUGIN)
  end)
  teardown(function()
    gpu.remove_plugin("keytest")
    ffi.C.setenv("GJ_KEYTEST_MODE", "", 1)
    if so then os.execute("rm -rf '" .. so:match("^(.*)/") .. "'") end
  end)

  for _, bk in ipairs(H.compilers) do
    it("keeps the disk cache from serving code built with another setting on " .. bk, function()
      H.need(bk)
      gpu.load_plugin(so)
      with_dir(fresh_dir(), function()
        ffi.C.setenv("GJ_KEYTEST_MODE", "plain", 1)
        local s0 = gpu.cache.stats()
        assert.equal(1, run(bk, "keytest"))
        assert.same({ 1, 0 }, counts(s0))
        ffi.C.setenv("GJ_KEYTEST_MODE", "double", 1)
        s0 = gpu.cache.stats()
        assert.equal(2, run(bk, "keytest"))        -- before: 1, from the disk cache
        assert.same({ 1, 0 }, counts(s0))
        ffi.C.setenv("GJ_KEYTEST_MODE", "plain", 1)
        s0 = gpu.cache.stats()
        assert.equal(1, run(bk, "keytest"))
        assert.same({ 0, 1 }, counts(s0))
      end)
    end)
  end
end)
