-- luaopen_gpujit (src/gj_embed.c), the entry point for C hosts, called on
-- fresh lua_States made through LuaJIT's C API over the FFI: the same
-- table as require("gpujit"), usable as package.preload.gpujit, and clear
-- Lua errors (no crash) when the state lacks what it needs.
-- examples/embed/host.c is the full host; `make examples` runs it.

local ffi = require("ffi")
local H = require("spec.helpers")
local gpu = H.gpu

pcall(ffi.cdef, [[
  typedef struct lua_State lua_State;
  typedef int (*lua_CFunction)(lua_State *L);
  lua_State *luaL_newstate(void);
  void luaL_openlibs(lua_State *L);
  void lua_close(lua_State *L);
  int luaL_loadstring(lua_State *L, const char *s);
  int lua_pcall(lua_State *L, int nargs, int nresults, int errfunc);
  void lua_pushcclosure(lua_State *L, lua_CFunction fn, int n);
  const char *lua_tolstring(lua_State *L, int idx, size_t *len);
  void lua_settop(lua_State *L, int idx);
  void lua_setfield(lua_State *L, int idx, const char *k);
  int luaopen_gpujit(lua_State *L);
]])

local lib = gpu.core and ffi.load(gpu.core.path)
local GLOBALS = -10002   -- LUA_GLOBALSINDEX

-- A new state; with_libs: luaL_openlibs and the checkout's lua/ on
-- package.path.
local function new_state(with_libs)
  local L = ffi.C.luaL_newstate()
  if with_libs then
    ffi.C.luaL_openlibs(L)
    assert(ffi.C.luaL_loadstring(L, 'package.path = "lua/?.lua;lua/?/init.lua;" .. package.path') == 0)
    assert(ffi.C.lua_pcall(L, 0, 0, 0) == 0)
  end
  return L
end

-- luaopen_gpujit(L) under lua_pcall, stored as the global `gpu`; nil or the
-- error message.
local function open(L)
  ffi.C.lua_pushcclosure(L, lib.luaopen_gpujit, 0)
  if ffi.C.lua_pcall(L, 0, 1, 0) ~= 0 then
    local msg = ffi.string(ffi.C.lua_tolstring(L, -1, nil))
    ffi.C.lua_settop(L, -2)
    return msg
  end
  ffi.C.lua_setfield(L, GLOBALS, "gpu")
  return nil
end

-- Runs Lua source in L; its one result as a string, or the error.
local function run(L, src)
  assert(ffi.C.luaL_loadstring(L, src) == 0)
  local rc = ffi.C.lua_pcall(L, 0, 1, 0)
  local s = ffi.C.lua_tolstring(L, -1, nil)
  local out = s ~= nil and ffi.string(s) or "(not a string)"
  ffi.C.lua_settop(L, -2)
  return rc == 0, out
end

-- Runs src in L, closes L, and checks that src returned want.
local function expect(L, src, want)
  local ok, out = run(L, src)
  ffi.C.lua_close(L)
  assert.is_true(ok, out)
  assert.equals(want, out)
end

describe("luaopen_gpujit", function()
  if not lib then
    pending("needs the compiled core: " .. tostring(gpu.core_error))
    return
  end

  it("gives the same table as require('gpujit') and a working module", function()
    local L = new_state(true)
    assert.is_nil(open(L))
    expect(L, [[
      local ffi = require("ffi")
      assert(require("gpujit") == gpu, "require gives another table")
      gpu.use("cpu")
      local k = gpu.kernel(function(a, n)
        local i = gpu.global_id(0)
        if i < n then a[i] = i * i end
      end)
      local a = ffi.new("int32_t[?]", 10)
      k:launch(10, a, 10)
      return tostring(a[9]) .. " " .. gpu.backend()
    ]], "81 cpu")
  end)

  it("works as package.preload.gpujit, without recursing", function()
    local L = new_state(true)
    assert(ffi.C.luaL_loadstring(L, "return package.preload") == 0)
    assert(ffi.C.lua_pcall(L, 0, 1, 0) == 0)
    ffi.C.lua_pushcclosure(L, lib.luaopen_gpujit, 0)
    ffi.C.lua_setfield(L, -2, "gpujit")
    ffi.C.lua_settop(L, -2)
    expect(L, 'local g = require("gpujit"); return type(g.kernel) .. " " .. '
      .. 'tostring(require("gpujit") == g)', "function true")
  end)

  it("is a clear error without the standard libraries", function()
    local L = new_state(false)
    local err = open(L)
    ffi.C.lua_close(L)
    assert.is_truthy(err and err:find("open the package library first", 1, true), err)
  end)

  it("is a clear error when gpujit/init.lua is not on package.path", function()
    local L = new_state(false)
    ffi.C.luaL_openlibs(L)
    assert(ffi.C.luaL_loadstring(L, 'package.path = "/nonexistent/?.lua"') == 0)
    assert(ffi.C.lua_pcall(L, 0, 0, 0) == 0)
    local err = open(L)
    ffi.C.lua_close(L)
    assert.is_truthy(err and err:find("is not on package.path", 1, true), err)
    assert.is_truthy(err:find("/nonexistent/gpujit.lua", 1, true), err)
  end)
end)
