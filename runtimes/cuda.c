/*
** The cuda backend: kernels compiled to PTX by LLVM's NVPTX target, linked
** to a cubin and run through the CUDA Driver API (no runtime library, no
** nvcc at run time).
**
** The driver is loaded at run time: dlopen("libcuda.so.1") and dlsym of
** each entry point into a table (cu_api in cuda_int.h), once per process
** under a mutex; every lua_State shares the table and the device list.
** Without the library, or with no device, `open` still succeeds with zero
** devices and the reason in err: the backend then compiles "offline" (PTX
** for GPUJIT_CUDA_ARCH, default sm_80, so inspect_asm works anywhere), the
** core lists it as unavailable for launching, and allocations, loads and
** launches fail with "no CUDA device" and that reason.
**
** Contexts.  Each device has one primary context for the whole process
** (cuDevicePrimaryCtxRetain), retained the first time any state uses the
** device and released when the last state that used it closes (a
** refcount under the same mutex).  Every entry point that calls the
** driver makes it current first (cu_enter: pushed only when another
** context is current, popped again in cu_leave), so that a host program's
** own current context is left as it was.
**
** Code generation is in targets/ptx_cuda.c (entry point, libdevice, emit);
** programs and launches in cuda_run.c.  Device memory is cuMemAlloc'ed;
** each state remembers its live allocations and frees them when it closes.
**
** Sticky errors.  A kernel that faults (CUDA_ERROR_ILLEGAL_ADDRESS and the
** others of is_sticky) leaves its context unusable: NVIDIA's documentation
** says every later call returns the same error and the process must be
** restarted.  The backend marks the device's primary context lost (for the
** process: every state shares it), says so in the error, and from then on
** fails at once in cu_enter with that reason instead of whatever the
** driver would answer; the rest of gpujit (other devices, other backends)
** keeps working.  It does not reset the context (cuDevicePrimaryCtxReset)
** by itself: the context is shared with every other lua_State and with the
** host program's own CUDA code, whose allocations a reset would destroy
** under them; and a gpu.array holds a raw device pointer, so after a reset
** an old array's finalizer could free a new allocation that got the same
** address.  When the last state using the device closes, the context is
** released, the mark cleared, and the next state retains a new context
** (if the driver still refuses it, that is detected again).
**
** Invariant: a gj_bstate belongs to one lua_State and is used by one thread
** at a time (launches are synchronous, API.md); only the driver table and
** the primary-context refcounts are process-wide.
*/
#include "cuda_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_cache.h"
#include "../targets/ptx.h"
#include "gj_target.h"

#define DEFAULT_OFFLINE_SM 80

/* -- The process-wide driver ----------------------------------------------- */

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static int drv_state;            /* 0 not tried, 1 loaded, -1 failed */
static gj_err drv_why;           /* drv_state -1: why */
static cu_driver drv;
static CUcontext *prim_ctx;      /* per device, retained while refs > 0 */
static int *prim_refs;
static CUresult *prim_lost;      /* per device: the sticky error that made
                                 ** its context unusable, 0 while usable */

/* Names of the codes a driver may give before cuGetErrorName works (the
** stub library answers every call with CUDA_ERROR_STUB_LIBRARY). */
static const struct { CUresult code; const char *name; } known_errors[] = {
  { 1, "CUDA_ERROR_INVALID_VALUE" }, { 2, "CUDA_ERROR_OUT_OF_MEMORY" },
  { 3, "CUDA_ERROR_NOT_INITIALIZED" }, { 4, "CUDA_ERROR_DEINITIALIZED" },
  { 34, "CUDA_ERROR_STUB_LIBRARY" }, { 35, "CUDA_ERROR_INSUFFICIENT_DRIVER" },
  { 100, "CUDA_ERROR_NO_DEVICE" }, { 101, "CUDA_ERROR_INVALID_DEVICE" },
  { 201, "CUDA_ERROR_INVALID_CONTEXT" }, { 218, "CUDA_ERROR_INVALID_PTX" },
  { 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" },
  { 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
  { 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" },
  { 702, "CUDA_ERROR_LAUNCH_TIMEOUT" },
  { 714, "CUDA_ERROR_HARDWARE_STACK_ERROR" },
  { 715, "CUDA_ERROR_ILLEGAL_INSTRUCTION" },
  { 716, "CUDA_ERROR_MISALIGNED_ADDRESS" },
  { 717, "CUDA_ERROR_INVALID_ADDRESS_SPACE" },
  { 718, "CUDA_ERROR_INVALID_PC" },
  { 719, "CUDA_ERROR_LAUNCH_FAILED" }, { 999, "CUDA_ERROR_UNKNOWN" },
};

/* The sticky errors: a kernel's fault that the driver's documentation says
** "leaves the process in an inconsistent state and any further CUDA work
** will return the same error" (CUDA 12/13 driver API, CUresult). */
static int is_sticky(CUresult r)
{
  return r == 700 || r == 702 || (r >= 714 && r <= 719);
}

int cu_fail(gj_err *err, const char *call, CUresult r)
{
  const char *name = NULL, *desc = NULL;
  size_t i;
  if (drv.api.GetErrorName && drv.api.GetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (drv.api.GetErrorString &&
      drv.api.GetErrorString(r, &desc) != CUDA_SUCCESS)
    desc = NULL;
  for (i = 0; !name && i < sizeof(known_errors) / sizeof(known_errors[0]);
       i++)
    if (known_errors[i].code == r) name = known_errors[i].name;
  if (name && desc)
    return gj_err_set(err, "cuda: %s failed: %s (%s)", call, name, desc);
  if (name) return gj_err_set(err, "cuda: %s failed: %s", call, name);
  return gj_err_set(err, "cuda: %s failed: CUDA error %d", call, (int)r);
}

/* After a sticky error: why device dev's context is unusable. */
static int lost_error(int dev, CUresult r, gj_err *err)
{
  gj_err why;
  cu_fail(&why, "an earlier call", r);
  return gj_err_set(err, "cuda: device %d's context is unusable after a "
                    "sticky error (%s): its arrays and kernels are lost and "
                    "the driver refuses further work in it until every "
                    "lua_State using the device has closed; restart the "
                    "process", dev, why.msg + 6);
}

int cu_fail_dev(int dev, gj_err *err, const char *call, CUresult r)
{
  size_t used;
  cu_fail(err, call, r);
  if (!is_sticky(r)) return -1;
  pthread_mutex_lock(&drv_lock);
  if (!prim_lost[dev]) prim_lost[dev] = r;
  pthread_mutex_unlock(&drv_lock);
  used = strlen(err->msg);
  snprintf(err->msg + used, sizeof(err->msg) - used, "; a sticky error: "
           "device %d's context is now unusable, its arrays and kernels are "
           "lost (restart the process)", dev);
  return -1;
}

static void describe(cu_device *d)
{
  const cu_api *a = &drv.api;
  gj_device_info *i = &d->info;
  int v = 0, maj = 0, min = 0, k;
  size_t mem = 0;
  if (a->DeviceGetName(i->name, (int)sizeof(i->name) - 1, d->id) !=
      CUDA_SUCCESS)
    snprintf(i->name, sizeof(i->name), "CUDA device");
  snprintf(i->vendor, sizeof(i->vendor), "NVIDIA");
  snprintf(i->type, sizeof(i->type), "gpu");
  i->rank = GJ_RANK_CUDA;
  if (a->DeviceTotalMem(&mem, d->id) == CUDA_SUCCESS)
    i->memory = (int64_t)mem;
  if (a->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                            d->id) == CUDA_SUCCESS)
    i->compute_units = v;
  if (a->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                            d->id) == CUDA_SUCCESS)
    i->max_group = v;
  for (k = 0; k < 3; k++) {
    v = 1;
    a->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + k, d->id);
    i->max_group_dim[k] = v;
    v = 65535;
    a->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + k, d->id);
    d->max_grid[k] = v;
  }
  a->DeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                        d->id);
  a->DeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                        d->id);
  d->sm = maj * 10 + min;
  snprintf(i->arch, sizeof(i->arch), "sm_%d", d->sm);
  snprintf(i->format, sizeof(i->format), "ptx");
}

/* Load libcuda.so.1 and list the devices; under drv_lock, once. */
static int load_driver(gj_err *err)
{
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CUresult r;
  int n = 0, i;
  if (!lib) {
    const char *why = dlerror();
    return gj_err_set(err, "cuda: cannot load libcuda.so.1 (the NVIDIA "
                      "driver): %s", why ? why : "not found");
  }
#define CU_LOAD(f, sym, args)                                            \
  if (!(*(void **)&drv.api.f = dlsym(lib, sym)))                         \
    return gj_err_set(err, "cuda: libcuda.so.1 has no %s (a driver older " \
                      "than CUDA 11?)", sym);
  CU_FUNCS(CU_LOAD)
#undef CU_LOAD
  *(void **)&drv.api.GetErrorName = dlsym(lib, "cuGetErrorName");
  *(void **)&drv.api.GetErrorString = dlsym(lib, "cuGetErrorString");
  /* The library stays loaded: the driver keeps threads of its own. */
  r = drv.api.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return gj_err_set(err, "cuda: no CUDA device (cuInit: "
                      "CUDA_ERROR_NO_DEVICE)");
  if (r != CUDA_SUCCESS) return cu_fail(err, "cuInit", r);
  r = drv.api.DeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return cu_fail(err, "cuDeviceGetCount", r);
  if (n <= 0) return gj_err_set(err, "cuda: no CUDA device");
  drv.devs = calloc((size_t)n, sizeof(cu_device));
  prim_ctx = calloc((size_t)n, sizeof(CUcontext));
  prim_refs = calloc((size_t)n, sizeof(int));
  prim_lost = calloc((size_t)n, sizeof(CUresult));
  if (!drv.devs || !prim_ctx || !prim_refs || !prim_lost)
    return gj_err_set(err, "cuda: out of memory");
  for (i = 0; i < n; i++) {
    r = drv.api.DeviceGet(&drv.devs[i].id, i);
    if (r != CUDA_SUCCESS) return cu_fail(err, "cuDeviceGet", r);
    describe(&drv.devs[i]);
  }
  drv.ndevs = n;
  return 0;
}

static const cu_driver *driver(gj_err *err)
{
  const cu_driver *d = NULL;
  pthread_mutex_lock(&drv_lock);
  if (drv_state == 0) drv_state = load_driver(&drv_why) == 0 ? 1 : -1;
  if (drv_state > 0) d = &drv;
  else *err = drv_why;
  pthread_mutex_unlock(&drv_lock);
  return d;
}

static int retain(int dev, CUcontext *out, gj_err *err)
{
  CUresult r = CUDA_SUCCESS, lost;
  pthread_mutex_lock(&drv_lock);
  lost = prim_lost[dev];
  if (lost) r = lost;
  else if (prim_refs[dev] == 0)
    r = drv.api.PrimaryCtxRetain(&prim_ctx[dev], drv.devs[dev].id);
  if (r == CUDA_SUCCESS) {
    prim_refs[dev]++;
    *out = prim_ctx[dev];
  }
  pthread_mutex_unlock(&drv_lock);
  if (lost) return lost_error(dev, lost, err);
  return r == CUDA_SUCCESS ? 0 : cu_fail(err, "cuDevicePrimaryCtxRetain", r);
}

static void release(int dev)
{
  pthread_mutex_lock(&drv_lock);
  if (prim_refs[dev] > 0 && --prim_refs[dev] == 0) {
    /* The last user is gone: the driver destroys the context, and the
    ** next retain gets a new one (whether the driver then accepts work
    ** after a sticky error is its decision: a new one is detected again). */
    drv.api.PrimaryCtxRelease(drv.devs[dev].id);
    prim_ctx[dev] = NULL;
    prim_lost[dev] = 0;
  }
  pthread_mutex_unlock(&drv_lock);
}

/* -- Contexts ---------------------------------------------------------------- */

int cu_check_dev(gj_bstate *st, int dev, gj_err *err)
{
  if (!st->drv)
    return gj_err_set(err, "cuda: no CUDA device: %s", st->offline_why.msg);
  if (dev < 0 || dev >= st->drv->ndevs)
    return gj_err_set(err, "cuda: no device %d (%d CUDA device%s)", dev,
                      st->drv->ndevs, st->drv->ndevs == 1 ? "" : "s");
  return 0;
}

int cu_enter(gj_bstate *st, int dev, int *pushed, gj_err *err)
{
  CUcontext cur = NULL;
  CUresult r;
  *pushed = 0;
  if (cu_check_dev(st, dev, err) != 0) return -1;
  /* The state's reference to the device's primary context, taken on first
  ** use; a background compile (src/gj_bg.c) loads on its worker thread,
  ** so two threads of one state may get here at once: the first to store
  ** its reference keeps it, the other gives its own back. */
  if (!__atomic_load_n(&st->ctx[dev], __ATOMIC_ACQUIRE)) {
    CUcontext c = NULL, none = NULL;
    if (retain(dev, &c, err) != 0) return -1;
    if (!__atomic_compare_exchange_n(&st->ctx[dev], &none, c, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      release(dev);
  }
  pthread_mutex_lock(&drv_lock);
  r = prim_lost[dev];
  pthread_mutex_unlock(&drv_lock);
  if (r) return lost_error(dev, r, err);
  if (drv.api.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == st->ctx[dev])
    return 0;
  r = drv.api.CtxPushCurrent(st->ctx[dev]);
  if (r != CUDA_SUCCESS) return cu_fail(err, "cuCtxPushCurrent", r);
  *pushed = 1;
  return 0;
}

void cu_leave(gj_bstate *st, int pushed)
{
  CUcontext c;
  (void)st;
  if (pushed) drv.api.CtxPopCurrent(&c);
}

/* -- Allocation sets ---------------------------------------------------------- */

#define PS_EMPTY 0
#define PS_GONE 1     /* a deleted slot; device pointers are never 0 or 1 */

static size_t ps_hash(CUdeviceptr p, size_t cap)
{
  return (size_t)(((p >> 8) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int ps_add(cu_ptrset *s, CUdeviceptr p)
{
  size_t i;
  if (2 * (s->used + 1) > s->cap) {
    cu_ptrset n = { NULL, s->cap ? 2 * s->cap : 64, 0, 0 };
    if (s->live * 4 < s->cap) n.cap = s->cap ? s->cap : 64;  /* tombstones */
    n.slots = calloc(n.cap, sizeof(CUdeviceptr));
    if (!n.slots) return -1;
    for (i = 0; i < s->cap; i++)
      if (s->slots[i] > PS_GONE) ps_add(&n, s->slots[i]);
    free(s->slots);
    *s = n;
  }
  for (i = ps_hash(p, s->cap); s->slots[i] > PS_GONE; i = (i + 1) & (s->cap - 1))
    ;
  if (s->slots[i] == PS_EMPTY) s->used++;
  s->slots[i] = p;
  s->live++;
  return 0;
}

/* Remove p; 0 when it was there. */
static int ps_del(cu_ptrset *s, CUdeviceptr p)
{
  size_t i;
  if (!s->cap) return -1;
  for (i = ps_hash(p, s->cap); s->slots[i] != PS_EMPTY;
       i = (i + 1) & (s->cap - 1))
    if (s->slots[i] == p) {
      s->slots[i] = PS_GONE;
      s->live--;
      return 0;
    }
  return -1;
}

/* -- open, close, devices, job ---------------------------------------------- */

/* GPUJIT_CUDA_ARCH: "sm_80", "compute_80" or "80". */
static int offline_arch(int *sm, gj_err *err)
{
  const char *e = getenv("GPUJIT_CUDA_ARCH"), *p;
  char *end;
  long v;
  *sm = DEFAULT_OFFLINE_SM;
  if (!e || !e[0]) return 0;
  p = strncmp(e, "sm_", 3) == 0 ? e + 3 :
      strncmp(e, "compute_", 8) == 0 ? e + 8 : e;
  v = strtol(p, &end, 10);
  if (end == p || *end || v < 30 || v > 999)
    return gj_err_set(err, "cuda: GPUJIT_CUDA_ARCH='%s' is not an "
                      "architecture such as sm_80", e);
  *sm = (int)v;
  return 0;
}

static void cu_close(gj_bstate *st);

/* libdevice's identity for the cache key: the hash of its bytes (a toolkit
** update that changes it must not reuse code linked with the old one). */
static int cu_open(gj_bstate **out, gj_err *err)
{
  gj_bstate *st = calloc(1, sizeof(*st));
  gj_err why;
  int n;
  *out = NULL;
  if (!st) return gj_err_set(err, "cuda: out of memory");
  if (gj_target_init(err) != 0 || offline_arch(&st->offline_sm, err) != 0) {
    free(st);
    return -1;
  }
  st->libdevice.found = gj_ptx_find_libdevice(st->libdevice.path,
                                              sizeof(st->libdevice.path)) == 0;
  if (st->libdevice.found &&
      gj_cache_file_hex(st->libdevice.path, st->libdevice.hash) != 0)
    snprintf(st->libdevice.hash, sizeof(st->libdevice.hash), "unreadable");
  st->drv = driver(&why);
  if (!st->drv) {
    /* Offline: compiles, runs nothing; err says why. */
    st->offline_why = why;
    gj_err_set(err, "%s (kernels still compile to PTX for sm_%d: "
               "inspect_asm)", why.msg, st->offline_sm);
    *out = st;
    return 0;
  }
  n = st->drv->ndevs;
  st->ctx = calloc((size_t)n, sizeof(CUcontext));
  st->mem = calloc((size_t)n, sizeof(cu_ptrset));
  if (!st->ctx || !st->mem) {
    cu_close(st);
    return gj_err_set(err, "cuda: out of memory");
  }
  *out = st;
  return 0;
}

/* Programs must have been unloaded before (the core unloads every kernel
** before it closes a backend). */
static void cu_close(gj_bstate *st)
{
  int d;
  size_t i;
  if (!st) return;
  for (d = 0; st->drv && d < st->drv->ndevs; d++) {
    cu_ptrset *s = st->mem ? &st->mem[d] : NULL;
    if (st->ctx && st->ctx[d]) {
      int pushed = 0;
      gj_err e;
      if (s && s->live && cu_enter(st, d, &pushed, &e) == 0) {
        for (i = 0; i < s->cap; i++)
          if (s->slots[i] > PS_GONE) drv.api.MemFree(s->slots[i]);
        cu_leave(st, pushed);
      }
      release(d);
    }
    if (s) free(s->slots);
  }
  free(st->ctx);
  free(st->mem);
  free(st);
}

static int cu_ndevices(gj_bstate *st)
{
  return st->drv ? st->drv->ndevs : 0;
}

static int cu_device_info(gj_bstate *st, int dev, gj_device_info *out)
{
  if (!st->drv || dev < 0 || dev >= st->drv->ndevs) return -1;
  *out = st->drv->devs[dev].info;
  return 0;
}

static int cu_job(gj_bstate *st, int dev, gj_job *j, gj_err *err)
{
  int sm = st->offline_sm;
  if (st->drv) {
    if (cu_check_dev(st, dev, err) != 0) return -1;
    sm = st->drv->devs[dev].sm;
  } else if (dev != 0) {
    return gj_err_set(err, "cuda: no device %d: compiling without a device "
                      "targets device 0 (sm_%d)", dev, sm);
  }
  memset(j, 0, sizeof(*j));
  j->intrinsics_ir = st->libdevice.found ? gj_ptx_ir_libdevice : gj_ptx_ir_base;
  if (gj_ptx_job(j, sm, err) != 0) return -1;
  if (st->libdevice.found) {   /* linked by the core when a __nv_ is called */
    j->nlibs = 1;
    snprintf(j->libs[0].path, sizeof(j->libs[0].path), "%s", st->libdevice.path);
    snprintf(j->libs[0].prefix, sizeof(j->libs[0].prefix), "__nv_");
  }
  {
    int version = 0;
    if (st->drv) st->drv->api.DriverGetVersion(&version);
    snprintf(j->target_id, sizeof(j->target_id), "cuda driver %d|libdevice %s",
             version, st->libdevice.found ? st->libdevice.hash : "none");
  }
  return 0;
}

/* -- Memory ---------------------------------------------------------------- */

static void *cu_alloc(gj_bstate *st, int dev, size_t bytes, gj_err *err)
{
  CUdeviceptr p = 0;
  CUresult r;
  int pushed;
  if (cu_enter(st, dev, &pushed, err) != 0) return NULL;
  r = drv.api.MemAlloc(&p, bytes ? bytes : 1);
  if (r == CUDA_SUCCESS && ps_add(&st->mem[dev], p) != 0) {
    drv.api.MemFree(p);
    cu_leave(st, pushed);
    gj_err_set(err, "cuda: out of memory");
    return NULL;
  }
  cu_leave(st, pushed);
  if (r != CUDA_SUCCESS) {
    char call[64];
    snprintf(call, sizeof(call), "cuMemAlloc of %zu bytes", bytes);
    cu_fail_dev(dev, err, call, r);
    return NULL;
  }
  return (void *)(uintptr_t)p;
}

static void cu_free(gj_bstate *st, int dev, void *ptr)
{
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
  int pushed;
  gj_err e;
  /* Only a pointer that alloc returned and that is live frees anything:
  ** free cannot report an error, so anything else is ignored. */
  if (!st->drv || dev < 0 || dev >= st->drv->ndevs ||
      ps_del(&st->mem[dev], p) != 0)
    return;
  if (cu_enter(st, dev, &pushed, &e) != 0) return;
  drv.api.MemFree(p);
  cu_leave(st, pushed);
}

static int cu_copy(gj_bstate *st, int dev, void *dst, const void *src,
                   size_t n, int dir, gj_err *err)
{
  CUresult r;
  int pushed;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  if (n == 0) {
    cu_leave(st, pushed);
    return 0;
  }
  if (dir == GJ_COPY_TO_DEVICE)
    r = drv.api.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n);
  else
    r = drv.api.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, n);
  cu_leave(st, pushed);
  if (r == CUDA_SUCCESS) return 0;
  return cu_fail_dev(dev, err, dir == GJ_COPY_TO_DEVICE ? "cuMemcpyHtoD"
                                                        : "cuMemcpyDtoH", r);
}

static int cu_sync(gj_bstate *st, int dev, gj_err *err)
{
  CUresult r;
  int pushed;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  r = drv.api.CtxSynchronize();
  cu_leave(st, pushed);
  return r == CUDA_SUCCESS ? 0 : cu_fail_dev(dev, err, "cuCtxSynchronize", r);
}

static const gj_codegen *cu_target(gj_bstate *st, const gj_job *job,
                                   void **ts)
{
  (void)job;
  *ts = &st->libdevice;
  return &gj_codegen_ptx_cuda;
}

const gj_backend gj_backend_cuda = {
  .name = "cuda",
  .open = cu_open, .close = cu_close, .ndevices = cu_ndevices,
  .device_info = cu_device_info, .job = cu_job,
  .target = cu_target, .load = cu_load, .unload = cu_unload,
  .launch = cu_launch, .wait = cu_wait, .default_finishes = 1,
  .stream_new = cu_stream_new, .stream_free = cu_stream_free,
  .copy_async = cu_stream_copy,
  .event_record = cu_event_record, .event_query = cu_event_query,
  .event_sync = cu_event_sync, .event_wait = cu_event_wait,
  .event_elapsed = cu_event_elapsed, .event_free = cu_event_free,
  .alloc = cu_alloc, .free = cu_free, .copy = cu_copy, .sync = cu_sync,
  .cache_save = cu_cache_save, .cache_load = cu_cache_load,
  /* host_shares, host_register, host_release: none, host arrays are
  ** staged (cuMemHostRegister: later) */
};
