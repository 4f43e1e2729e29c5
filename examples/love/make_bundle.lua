-- Makes examples/love/kernels.gjb, the bundle of precompiled kernels that the
-- LÖVE example ships and imports at start (docs/caching.md):
--
--   luajit examples/love/make_bundle.lua [OUT.gjb] [CACHE_DIR]
--
-- (with gpujit on LuaJIT's paths; `make love-example` runs it).  Each kernel
-- is launched once on small data of the types the game passes (FFI pointers
-- into LÖVE's memory, Lua numbers), in an empty cache directory, which is
-- then exported.  A bundle holds code for this build of gpujit and this CPU
-- only (docs/caching.md, "The content key"): it is made at build time, not
-- kept in git.
local ffi = require("ffi")
local dir = (arg[0]:match("^(.*)/[^/]*$") or ".")
local out = arg[1] or dir .. "/kernels.gjb"
local cache = arg[2]
if not cache then cache = os.tmpname(); os.remove(cache) end   -- a fresh name for a directory

ffi.cdef("int setenv(const char *name, const char *value, int overwrite);")
ffi.C.setenv("GPUJIT_CACHE_DIR", cache, 1)
local gpu = require("gpujit")
gpu.cache.clear()
local K = dofile(dir .. "/kernels.lua")(gpu)

local n, w, h = 64, 16, 8
local s, v = ffi.new("double[?]", 4 * n), ffi.new("float[?]", 6 * n)
K.particles:launch(n, ffi.cast("double *", s), ffi.cast("float *", v), n, 1 / 60, 300, 960, 540, 0.9)
local img = ffi.new("uint8_t[?]", 4 * w * h)
K.mandel:launch({ global = { w, h } }, ffi.cast("uint8_t *", img), w, h, 50)

local st = gpu.cache.stats()
local m = gpu.cache.export(out)
gpu.cache.clear()
os.remove(cache)
print(string.format("make_bundle: %d kernel(s) compiled, %d exported to %s", st.compiles, m, out))
os.exit(m >= 2 and 0 or 1, true)
