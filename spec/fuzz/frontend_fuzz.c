/*
** libFuzzer target on gpujit's bytecode frontend, typer and codegen
** (`make fuzz-frontend`; docs/fuzzing.md).
**
** LuaJIT's bytecode loader trusts its input (a malformed string.dump can
** crash LuaJIT itself), so the target does not load mutated bytecode.  It
** loads a few sample kernels from Lua source, and the fuzz input patches the
** instruction words that gpujit's frontend reads: jit.util.funcbc is
** replaced (package.loaded["jit.util"]) by a wrapper that answers the
** patched word for the sample's pcs.  gpujit then reads exactly what it
** would read from that bytecode in memory, while LuaJIT never runs it.  Each
** input is compiled with k:inspect_llvm (frontend, typer, codegen, LLVM's
** verifier and optimizer, no launch) inside a pcall: a Lua error is a fine
** answer, a crash or a sanitizer report is a bug.
**
** The core is the instrumented build/fuzz-frontend/gpujit/core.so, found
** through LUA_CPATH (the Lua side loads it with the FFI too).
**
** Input: byte 0 picks the sample and its signature; then records of 6
** bytes: [what][pc][4 bytes, little-endian], what % 6 choosing to replace
** the whole word, only the opcode (reduced modulo the number of LuaJIT
** opcodes, so that every word names a real op), or only A, B, C or D.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static lua_State *L;

static const char *setup =
  "package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path\n"
  "local ju = require('jit.util')\n"
  "local vmdef = require('jit.vmdef')\n"
  "local W = setmetatable({}, { __index = ju })\n"
  "FUZZ = { fn = false, patch = {}, nops = #vmdef.bcnames / 6 }\n"
  "function W.funcbc(f, pc)\n"
  "  local ins, m = ju.funcbc(f, pc)\n"
  "  if f == FUZZ.fn and ins and FUZZ.patch[pc] then return FUZZ.patch[pc], m end\n"
  "  return ins, m\n"
  "end\n"
  "package.loaded['jit.util'] = W\n"
  "local gpu = require('gpujit')\n"
  "local function sq(x) return x * x, x end\n"
  "local function clampi(v, lo, hi) if v < lo then return lo end\n"
  "  if v > hi then return hi end return v end\n"
  "FUZZ.samples = {\n"
  "  { function(a, x, y, n)\n"
  "      local i = gpu.global_id(0)\n"
  "      if i < n then y[i] = a * x[i] + y[i] end\n"
  "    end, { 'double', 'float[]', 'float[]', 'int32_t' } },\n"
  "  { function(o, a, n)\n"
  "      local i = gpu.global_id(0)\n"
  "      local s, j = 0, 0\n"
  "      while j < n do\n"
  "        if a[j] % 3 == 0 then s = s + bit.band(a[j], 7) else s = s - 1 end\n"
  "        if s > 100 then break end\n"
  "        j = j + 1\n"
  "      end\n"
  "      repeat s = s * 2 until s > 1000 or s <= 0\n"
  "      o[i] = clampi(s, -5, 5) + math.floor(sq(i + 0.5))\n"
  "    end, { 'int64_t[]', 'int32_t[]', 'int32_t' } },\n"
  "  { function(o, a, b, m)\n"
  "      local i = gpu.global_id(0)\n"
  "      local acc = 0.0\n"
  "      for k = 0, m - 1, 2 do\n"
  "        local v = a[k] ~= a[k] and 0 or math.sin(a[k]) ^ 2\n"
  "        if k == 4 then goto skip end\n"
  "        acc = acc + math.fmod(v, 3) + (b[k % 4] and 1 or 0)\n"
  "        ::skip::\n"
  "      end\n"
  "      local sh = gpu.shared('float', 64)\n"
  "      sh[gpu.local_id(0)] = acc\n"
  "      gpu.barrier()\n"
  "      o[i] = sh[0] + gpu.atomic_add(o, 0, 1)\n"
  "    end, { 'double[]', 'double[]', 'bool[]', 'int64_t' } },\n"
  "}\n"
  "function FUZZ.run(which)\n"
  "  local s = FUZZ.samples[which]\n"
  "  FUZZ.fn = s[1]\n"
  "  local k = gpu.kernel(s[1], { backend = 'cpu', cache = false, name = 'fz' })\n"
  "  local ok, err = pcall(k.inspect_llvm, k, s[2])\n"
  "  FUZZ.fn = false\n"
  "  return ok, err\n"
  "end\n";

static int nsamples, nops;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dostring(L, setup)) {
    fprintf(stderr, "frontend_fuzz: setup failed: %s\n", lua_tostring(L, -1));
    exit(1);
  }
  luaL_dostring(L, "return #FUZZ.samples, FUZZ.nops");
  nsamples = (int)lua_tointeger(L, -2);
  nops = (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return 0;
}

/* The instruction word of sample fn at pc, as LuaJIT has it. */
static uint32_t original(int fidx, int pc)
{
  uint32_t w;
  luaL_dostring(L, "return require('jit.util').funcbc");
  lua_pushvalue(L, fidx);
  lua_pushinteger(L, pc);
  lua_call(L, 2, 1);
  w = (uint32_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  int which, top = lua_gettop(L), fidx, patch, nbc;
  size_t at;
  if (size < 1) return 0;
  which = data[0] % nsamples + 1;
  lua_getglobal(L, "FUZZ");
  lua_getfield(L, -1, "samples");
  lua_rawgeti(L, -1, which);
  lua_rawgeti(L, -1, 1);
  fidx = lua_gettop(L);
  luaL_dostring(L, "return require('jit.util').funcinfo");
  lua_pushvalue(L, fidx);
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "bytecodes");
  nbc = (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  lua_newtable(L);
  patch = lua_gettop(L);
  for (at = 1; at + 6 <= size && nbc > 1; at += 6) {
    int pc = 1 + data[at + 1] % (nbc - 1);
    uint32_t v = (uint32_t)data[at + 2] | (uint32_t)data[at + 3] << 8 |
                 (uint32_t)data[at + 4] << 16 | (uint32_t)data[at + 5] << 24;
    uint32_t w;
    lua_rawgeti(L, patch, pc);
    w = lua_isnil(L, -1) ? original(fidx, pc) : (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    switch (data[at] % 6) {
    case 0: w = v; break;
    case 1: w = (w & ~0xffu) | (v & 0xffu); break;
    case 2: w = (w & ~0xff00u) | (v & 0xff00u); break;
    case 3: w = (w & ~0xff000000u) | (v & 0xff000000u); break;
    case 4: w = (w & ~0xff0000u) | (v & 0xff0000u); break;
    default: w = (w & 0xffffu) | (v & 0xffff0000u); break;
    }
    w = (w & ~0xffu) | ((w & 0xffu) % (uint32_t)nops);
    lua_pushinteger(L, (lua_Integer)w);
    lua_rawseti(L, patch, pc);
  }
  lua_getglobal(L, "FUZZ");
  lua_pushvalue(L, patch);
  lua_setfield(L, -2, "patch");
  lua_getfield(L, -1, "run");
  lua_pushinteger(L, which);
  if (lua_pcall(L, 1, 2, 0)) {
    fprintf(stderr, "frontend_fuzz: harness error: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, top);
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
