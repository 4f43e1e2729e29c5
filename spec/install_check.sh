#!/bin/sh
# The two ways to install gpujit, each checked from /tmp with LuaJIT's
# search paths pointing only at what was installed (no checkout paths):
#   1. make install install-embed DESTDIR=..., the embedding host built
#      against that; make uninstall removes it all;
#   2. luarocks make rockspec/gpujit-scm-1.rockspec --tree <private tree>.
# Usage: sh spec/install_check.sh BUILD_DIR    (run from the checkout)
set -eu
build=$(cd "${1:-build}" && pwd)
top=$(pwd)
stage=$build/stage
tree=$build/rocktree
rm -rf "$stage" "$tree"

# A kernel run on the cpu backend, and the core loaded from where expected.
probe() {  # probe WHERE LUA_PATH LUA_CPATH
  (cd /tmp && GJ_WANT_CORE="$1" LUA_PATH="$2" LUA_CPATH="$3" luajit -e '
    local gpu = require("gpujit")
    local ffi = require("ffi")
    assert(gpu.core, "gpujit.core not loaded: " .. tostring(gpu.core_error))
    local want = os.getenv("GJ_WANT_CORE")
    assert(gpu.core.path == want, "core from " .. gpu.core.path .. ", not " .. want)
    -- the shipped plugins, found by name beside the installed core
    for _, name in ipairs({ "count", "nancheck" }) do
      local p = gpu.load_plugin(name)
      local at = want:gsub("core%.so$", "plugins/" .. name .. ".so")
      assert(p.path == at, name .. " from " .. p.path .. ", not " .. at)
    end
    gpu.use("cpu")
    local k = gpu.kernel(function(a, n)
      local i = gpu.global_id(0)
      if i < n then a[i] = 2 * i end
    end)
    local a = ffi.new("int32_t[?]", 100)
    k:launch(100, a, 100)
    for i = 0, 99 do assert(a[i] == 2 * i) end
    -- the public helper module is installed beside init.lua
    local util = require("gpujit.util")
    local lua_dir = want:gsub("lib/lua/5%.1/gpujit/core%.so$", "share/lua/5.1/gpujit/")
    assert(package.searchpath("gpujit.util", package.path) == lua_dir .. "util.lua",
      "gpujit.util from " .. tostring(package.searchpath("gpujit.util", package.path)))
    util.check("int32_t", a, function(i) return 2 * i end, 100)
    print("install_check: require\"gpujit\" from /tmp loads " .. gpu.core.path)
  ')
}

make -s install install-embed DESTDIR="$stage" PREFIX=/usr/local BUILD="$build" >/dev/null
lua=$stage/usr/local/share/lua/5.1
lib=$stage/usr/local/lib/lua/5.1
test -f "$stage/usr/local/lib/libgpujit.so"
test -f "$stage/usr/local/include/gpujit/gpujit.h"
test -x "$stage/usr/local/bin/gpujit-precompile"
probe "$lib/gpujit/core.so" "$lua/?.lua;$lua/?/init.lua" "$lib/?.so"
# The embedding host built against the installed headers and library only.
inc=$stage/usr/local/include/gpujit
cc -std=c11 -Wall -Wextra -Werror -I/usr/include/luajit-2.1 -I"$inc" -o "$stage/host" \
  examples/embed/host.c -L"$stage/usr/local/lib" -lgpujit -Wl,-rpath,"$stage/usr/local/lib" \
  -lluajit-5.1 -lm
"$stage/host" "$top/examples/embed/particles.lua" "$lua" >/dev/null 2>&1 ||
  { echo "install_check: the embedding host fails against the installed library"; exit 1; }
rm -f "$stage/host"
echo "install_check: examples/embed/host.c builds and runs against make install-embed"
make -s uninstall DESTDIR="$stage" PREFIX=/usr/local BUILD="$build" >/dev/null
left=$(find "$stage" -type f)
if [ -n "$left" ]; then echo "install_check: make uninstall left $left"; exit 1; fi
echo "install_check: make uninstall removed every file"

luarocks make --tree "$tree" "$top/rockspec/gpujit-scm-1.rockspec" >"$build/luarocks.log" 2>&1 ||
  { cat "$build/luarocks.log"; exit 1; }
probe "$tree/lib/lua/5.1/gpujit/core.so" \
  "$tree/share/lua/5.1/?.lua;$tree/share/lua/5.1/?/init.lua" "$tree/lib/lua/5.1/?.so"
# The installed gpujit-precompile runs under LuaJIT (it needs the FFI): the
# rockspec asks LuaRocks not to wrap it for the default Lua.
head -n 1 "$tree/bin/gpujit-precompile" | grep -q '^#!/usr/bin/env luajit$' ||
  { echo "install_check: $tree/bin/gpujit-precompile is not the LuaJIT script"; exit 1; }
# luarocks show names the command by its path in the tree (LuaRocks before
# 3.10 prints a second path with the bin directory twice: README.md, "Installing").
tab=$(printf '\t')
luarocks show --tree "$tree" --porcelain gpujit | grep -q "^command$tab$tree/bin/gpujit-precompile$tab" ||
  { echo "install_check: luarocks show does not name $tree/bin/gpujit-precompile:";
    luarocks show --tree "$tree" --porcelain gpujit | grep '^command'; exit 1; }
cat >"$build/precompile_probe.lua" <<'LUA'
local gpu = require("gpujit")
gpu.use("cpu")
local k = gpu.kernel(function(a, n)
  local i = gpu.global_id(0)
  if i < n then a[i] = 3 * i end
end)
k:launch(8, require("ffi").new("int32_t[8]"), 8)
LUA
pcdir=$build/precompile_cache
rm -rf "$pcdir"
pc=$(cd /tmp && GPUJIT_CACHE_DIR="$pcdir" \
  LUA_PATH="$tree/share/lua/5.1/?.lua;$tree/share/lua/5.1/?/init.lua" \
  LUA_CPATH="$tree/lib/lua/5.1/?.so" "$tree/bin/gpujit-precompile" "$build/precompile_probe.lua" 2>&1) ||
  { echo "install_check: the installed gpujit-precompile fails:"; echo "$pc"; exit 1; }
echo "$pc" | grep -q ": 1 compiled, 0 already in the cache, 1 stored in $pcdir" ||
  { echo "install_check: unexpected gpujit-precompile output:"; echo "$pc"; exit 1; }
echo "install_check: the rock's gpujit-precompile runs under LuaJIT ($pc)"
rm -rf "$pcdir" "$build/precompile_probe.lua"
rm -rf "$stage" "$tree"
