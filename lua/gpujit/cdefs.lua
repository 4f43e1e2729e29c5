-- The C declarations of the compiled core's FFI entry points (the GJ_API
-- functions of src/gpujit.h that the launch path calls: launches and memory
-- in src/gj_ctx.c, streams and events in src/gj_stream.c, the SIGINT count
-- in src/gj_watch.c, the cache's size parser in src/gj_cache.c) and of the
-- structs they share with Lua, in one place.
-- Each is declared on its own, so that a declaration this LuaJIT state has
-- already seen (a second copy of the module) does not stop the others.
-- Returns the list; spec/architecture_spec.lua checks each function against
-- its GJ_API declaration in src/gpujit.h (opaque pointers are void * here).
local ffi = require("ffi")

local decls = {
  -- a launch's shape (src/gj_type.h, gj_dims)
  "typedef struct gj_dims { int64_t global[3]; int64_t group[3]; int32_t ndim; int32_t pad_; } gj_dims;",
  -- one print record's head (src/gj_backend.h, gj_print_rec)
  "typedef struct gj_print_rec { int64_t item; int32_t site; int32_t nslots; } gj_print_rec;",
  "int gj_launch(void *k, const gj_dims *dims, void *args);",
  "const void *gj_prints(void *k, uint64_t *written, uint64_t *dropped);",
  "const char *gj_errmsg(void *ctx);",
  "void *gj_mem_alloc(void *ctx, int bk, int dev, uint64_t bytes);",
  "void gj_mem_free(void *ctx, int bk, int dev, void *p);",
  "int gj_mem_copy(void *ctx, int bk, int dev, void *dst, const void *src, uint64_t bytes, int dir);",
  "int gj_sync(void *ctx, int bk, int dev);",
  "void *gj_mem_host_register(void *ctx, int bk, int dev, void *host, uint64_t bytes, int written);",
  "int gj_mem_host_release(void *ctx, int bk, int dev, void *p, int quiet);",
  "void *gj_stream_new(void *ctx, int bk, int dev);",
  "void gj_stream_free(void *q);",
  "int gj_stream_launch(void *q, void *k, const gj_dims *dims, void *args);",
  "int gj_stream_copy(void *q, void *dst, const void *src, uint64_t bytes, int dir);",
  "int gj_stream_wait(void *q);",
  "int gj_stream_status(void *q, int i);",
  "const void *gj_stream_prints(void *q, int i, uint64_t *written, uint64_t *dropped);",
  "void gj_stream_done(void *q);",
  "void *gj_event_record(void *q);",
  "void gj_event_free(void *e);",
  "int gj_event_query(void *e);",
  "int gj_event_sync(void *e);",
  "int gj_stream_wait_event(void *q, void *e);",
  "int gj_event_elapsed(void *a, void *b, double *ms);",
  "int gj_sigint_begin(void);",
  "void gj_sigint_end(void);",
  "long gj_sigint_count(void);",
  "int gj_cache_parse_size(const char *s, uint64_t *out);",
}

for _, decl in ipairs(decls) do
  pcall(ffi.cdef, decl)
end

return decls
