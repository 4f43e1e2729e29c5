-- LuaRocks: `luarocks make rockspec/gpujit-scm-1.rockspec` from a checkout
-- builds with the Makefile and installs the Lua module (lua/gpujit) and its
-- compiled core (gpujit/core.so) into the rocks tree.  No network is needed:
-- `make` builds from the checkout and nothing is fetched.
rockspec_format = "3.0"
package = "gpujit"
version = "scm-1"

source = {
  -- Used only by `luarocks install`/`build` of a published rock; `luarocks
  -- make` builds the checkout it is run in.
  url = "git+https://github.com/gpujit/gpujit.git",
}

description = {
  summary = "Ordinary LuaJIT functions compiled to GPU and CPU kernels through LLVM",
  detailed = [[
    gpujit reads a Lua function's LuaJIT bytecode, infers a type for every
    value from the launch arguments, emits LLVM 15 IR and runs it on a
    backend: the CPU (LLVM ORC JIT and a thread pool), any OpenCL device,
    or an NVIDIA GPU through CUDA.  Lua tables, LuaJIT FFI arrays and device
    arrays are marshaled for you.  Needs LuaJIT 2.1 and LLVM 15.
  ]],
  homepage = "https://github.com/gpujit/gpujit",
  license = "MIT",
  labels = { "gpu", "jit", "llvm", "luajit", "opencl", "cuda" },
}

-- LuaJIT 2.1 is a Lua 5.1.  Its headers are declared below rather than taken
-- from LUA_INCDIR, which on Debian names PUC Lua 5.1's.
dependencies = {
  "lua >= 5.1, < 5.2",
}

-- Found by header; the library itself comes from llvm-config-15.  The
-- OpenCL and CUDA drivers are not dependencies: gpujit loads them at run
-- time and works without them (the cpu backend).
external_dependencies = {
  LUAJIT = { header = "luajit-2.1/luajit.h" },
  LLVM = { header = "llvm-c-15/llvm-c/Core.h" },
}

build = {
  type = "make",
  -- bin/gpujit-precompile is a LuaJIT script (it needs the FFI): installed
  -- as it is, run by its "#!/usr/bin/env luajit" line.  LuaRocks' wrapper
  -- would run it with the default Lua (PUC 5.1 on Debian), which has no FFI.
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    LUA_INC = "$(LUAJIT_INCDIR)/luajit-2.1",
    LLVM_CONFIG = "llvm-config-15",
  },
  install_variables = {
    PREFIX = "$(PREFIX)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
  },
}

-- `luarocks show gpujit` of LuaRocks before 3.10 prints the command's path
-- with the bin directory twice (LuaRocks' show, luarocks/luarocks#1482,
-- fixed by #1583); the rock installs TREE/bin/gpujit-precompile, the first
-- path it prints (spec/install_check.sh).
deploy = {
  wrap_bin_scripts = false,
}
