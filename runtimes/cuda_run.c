/*
** The cuda backend, part three: programs and launches.  `load` links the
** PTX into a cubin (cuLinkCreate/cuLinkAddData/cuLinkComplete; the cubin is
** kept, for the compile cache to store) and loads it (cuModuleLoadData,
** cuModuleGetFunction); `launch` runs the kernel with cuLaunchKernel and
** waits for it (launches on the default stream are synchronous, API.md).
** A stream (gpu.stream) is a CUstream: a launch on it enqueues the kernel
** and its record's copies and returns, `wait` synchronizes the stream
** (launch_on_stream, cu_wait; untested: no GPU here).
**
** Arguments: the entry's parameters mirror the argument block (layout in
** targets/ptx_cuda.c), so kernelParams is an array of pointers into the block,
** offsets computed once at load, then three pointers to the real global
** size, then (a bounds-checked kernel) one to the fault record's address.
**
** Fault records (src/gj_backend.h).  A program of a bounds-checked kernel
** owns a device buffer of one gj_fault, allocated at load: each launch
** writes the core's zeroed record into it before cuLaunchKernel and reads
** it back after the kernel has finished.  A kernel without checks has no
** buffer and no copies.  A kernel with a timeout (sig->cancel) has its
** record in mapped pinned host memory instead, so that the launch can set
** the cancel word while the kernel runs (untested: no GPU here).
*/
#include "cuda_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dims.h"

#define CU_DEFAULT_GROUP 256
#define CU_LOGSIZE 8192

struct gj_program {
  int dev;
  CUmodule mod;
  CUfunction fn;
  void *cubin;
  size_t cubin_len;
  int uses_barrier;
  gj_sig sig;              /* its record's size (prints) */
  int64_t max_group;       /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
  unsigned nparams;        /* the entry's, hidden ones included */
  unsigned nuser;          /* the user's (arrays count twice) */
  CUdeviceptr fault;       /* sig->faults: the fault record, else 0 */
  /* sig->cancel: the record lives in mapped, pinned host memory (fault is
  ** its device address), where the launch writes the cancel word while
  ** the kernel runs (src/gj_backend.h); else NULL */
  gj_fault *shared_rec;
  uint32_t *offsets;       /* of each user parameter in the block */
  void **params;           /* cuLaunchKernel's kernelParams */
  int64_t global[CU_HIDDEN_GLOBAL];
};

/* -- load ---------------------------------------------------------------- */

/* PTX -> cubin, copied into p (the link state owns its output).  A failed
** link appends the JIT's error log to err. */
static int link_cubin(const cu_api *a, gj_program *p, const char *ptx,
                      size_t len, gj_err *err)
{
  char log[CU_LOGSIZE];
  int opts[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
  void *vals[2] = { log, (void *)(uintptr_t)sizeof(log) };
  CUlinkState ls = NULL;
  void *cubin = NULL;
  size_t n = 0;
  CUresult r;
  const char *call = "cuLinkCreate";
  log[0] = '\0';
  r = a->LinkCreate(2, opts, vals, &ls);
  if (r == CUDA_SUCCESS) {
    call = "cuLinkAddData (PTX)";
    r = a->LinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx, len, "gj_kernel.ptx",
                       0, NULL, NULL);
  }
  if (r == CUDA_SUCCESS) {
    call = "cuLinkComplete";
    r = a->LinkComplete(ls, &cubin, &n);
  }
  if (r == CUDA_SUCCESS) {
    p->cubin = malloc(n ? n : 1);
    if (p->cubin) {
      memcpy(p->cubin, cubin, n);
      p->cubin_len = n;
    }
  }
  if (ls) a->LinkDestroy(ls);
  if (r != CUDA_SUCCESS) {
    size_t used;
    cu_fail(err, call, r);
    log[sizeof(log) - 1] = '\0';
    used = strlen(err->msg);
    if (log[0])
      snprintf(err->msg + used, sizeof(err->msg) - used, "; JIT log:\n%s",
               log);
    return -1;
  }
  return p->cubin ? 0 : gj_err_set(err, "cuda: out of memory");
}

/* kernelParams: offsets of the user's parameters, pointers to the hidden
** ones (the fault record's address is filled at load). */
static int setup_params(gj_program *p, const gj_sig *sig, gj_err *err)
{
  unsigned n = 0, i;
  int j;
  for (j = 0; j < sig->nparams; j++) n += sig->params[j].is_array ? 2 : 1;
  p->nuser = n;
  p->nparams = n + CU_HIDDEN_GLOBAL + (sig->faults ? 1u : 0u);
  p->offsets = calloc(n ? n : 1, sizeof(uint32_t));
  p->params = calloc(p->nparams, sizeof(void *));
  if (!p->offsets || !p->params) return gj_err_set(err, "cuda: out of memory");
  for (j = 0, i = 0; j < sig->nparams; j++) {
    p->offsets[i++] = sig->params[j].offset;
    if (sig->params[j].is_array) p->offsets[i++] = sig->params[j].offset + 8;
  }
  for (i = 0; i < CU_HIDDEN_GLOBAL; i++) p->params[n + i] = &p->global[i];
  if (sig->faults) p->params[n + CU_HIDDEN_GLOBAL] = &p->fault;
  return 0;
}

/* A program from PTX (linked here) or from a cubin the cache kept. */
static int load_program(gj_bstate *st, int dev, const char *art, size_t len,
                        int is_cubin, const gj_sig *sig, gj_program **out,
                        gj_err *err)
{
  const cu_api *a;
  gj_program *p;
  CUresult r;
  int pushed, v = 0, rc = -1;
  *out = NULL;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  a = &st->drv->api;
  p = calloc(1, sizeof(*p));
  if (!p) {
    cu_leave(st, pushed);
    return gj_err_set(err, "cuda: out of memory");
  }
  p->dev = dev;
  p->uses_barrier = sig->uses_barrier;
  p->sig = *sig;
  if (setup_params(p, sig, err) != 0) goto done;
  if (is_cubin) {
    p->cubin = malloc(len ? len : 1);
    if (!p->cubin) {
      gj_err_set(err, "cuda: out of memory");
      goto done;
    }
    memcpy(p->cubin, art, len);
    p->cubin_len = len;
  } else if (link_cubin(a, p, art, len, err) != 0) {
    goto done;
  }
  if ((r = a->ModuleLoadData(&p->mod, p->cubin)) != CUDA_SUCCESS) {
    p->mod = NULL;
    cu_fail_dev(dev, err, "cuModuleLoadData", r);
    goto done;
  }
  if ((r = a->ModuleGetFunction(&p->fn, p->mod, "gj_kernel")) !=
      CUDA_SUCCESS) {
    cu_fail(err, "cuModuleGetFunction (gj_kernel)", r);
    goto done;
  }
  r = a->FuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, p->fn);
  if (r != CUDA_SUCCESS) {
    cu_fail(err, "cuFuncGetAttribute", r);
    goto done;
  }
  p->max_group = v;
  if (sig->cancel) {
    void *h = NULL;
    r = a->MemHostAlloc(&h, gj_record_size(sig),
                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) {
      cu_fail(err, "cuMemHostAlloc (fault record)", r);
      goto done;
    }
    p->shared_rec = h;
    memset(h, 0, gj_record_size(sig));
    if ((r = a->MemHostGetDevicePointer(&p->fault, h, 0)) != CUDA_SUCCESS) {
      p->fault = 0;
      cu_fail(err, "cuMemHostGetDevicePointer (fault record)", r);
      goto done;
    }
  } else if (sig->faults &&
             (r = a->MemAlloc(&p->fault, gj_record_size(sig))) != CUDA_SUCCESS) {
    p->fault = 0;
    cu_fail(err, "cuMemAlloc (fault record)", r);
    goto done;
  }
  rc = 0;
done:
  cu_leave(st, pushed);
  if (rc) cu_unload(st, p);
  else *out = p;
  return rc;
}

void cu_unload(gj_bstate *st, gj_program *p)
{
  int pushed;
  gj_err e;
  if (!p) return;
  if ((p->mod || p->fault || p->shared_rec) &&
      cu_enter(st, p->dev, &pushed, &e) == 0) {
    if (p->shared_rec) st->drv->api.MemFreeHost(p->shared_rec);
    else if (p->fault) st->drv->api.MemFree(p->fault);
    if (p->mod) st->drv->api.ModuleUnload(p->mod);
    cu_leave(st, pushed);
  }
  free(p->cubin);
  free(p->offsets);
  free(p->params);
  free(p);
}

int cu_load(gj_bstate *st, int dev, const char *art, size_t len,
            const gj_sig *sig, gj_program **out, gj_err *err)
{
  return load_program(st, dev, art, len, 0, sig, out, err);
}

int cu_cache_load(gj_bstate *st, int dev, const char *bin, size_t len,
                  const gj_sig *sig, gj_program **out, gj_err *err)
{
  return load_program(st, dev, bin, len, 1, sig, out, err);
}

int cu_cache_save(gj_bstate *st, gj_program *p, char **out, size_t *len,
                  gj_err *err)
{
  (void)st;
  *out = malloc(p->cubin_len ? p->cubin_len : 1);
  if (!*out) return gj_err_set(err, "cuda: out of memory");
  memcpy(*out, p->cubin, p->cubin_len);
  *len = p->cubin_len;
  return 0;
}

/* -- launch -------------------------------------------------------------- */

/* A kernel with cancellation checks (untested: no GPU here): wait for the
** legacy stream to drain, passing the host's cancel word (set by the core's
** watchdog) on to the mapped record the kernel reads.  Polls like the
** opencl backend (20 us growing to 1 ms); errors are left to the
** cuCtxSynchronize after it. */
/* The fault record and, for a kernel that prints, its print area's head:
** what a launch writes to the device before and reads back first. */
static size_t head_bytes(const gj_sig *sig)
{
  return sizeof(gj_fault) + (sig->prints ? sizeof(gj_print_head) : 0);
}

/* The bytes of print records in the record rec (after the head). */
static size_t print_bytes(const gj_sig *sig, const gj_fault *rec)
{
  const gj_print_head *h = (const gj_print_head *)(const void *)(rec + 1);
  if (!sig->prints) return 0;
  return h->used < h->cap ? (size_t)h->used : (size_t)h->cap;
}

static void wait_cancellable(const cu_api *a, gj_fault *fault,
                             gj_fault *shared_rec)
{
  long ns = 20000;
  int sent = 0;
  while (a->StreamQuery(NULL) == CUDA_ERROR_NOT_READY) {
    struct timespec ts;
    if (!sent && __atomic_load_n(&fault->cancel, __ATOMIC_RELAXED)) {
      __atomic_store_n(&shared_rec->cancel, 1, __ATOMIC_SEQ_CST);
      sent = 1;
    }
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
    if (ns < 1000000) ns *= 2;
  }
}

/* -- streams (untested: no GPU here) -------------------------------------- */

/* One launch's record on a stream: a device buffer the kernel writes, and
** pinned host memory it is copied back into on the stream (a copy into
** the core's pageable record would not return before the kernel ends);
** cu_wait moves it into the core's record. */
typedef struct cu_srec {
  CUdeviceptr dev;
  void *pinned;
  gj_fault *core;
  size_t bytes;
} cu_srec;

struct gj_bstream {
  int dev;
  CUstream cs;
  cu_srec *recs;           /* the launches' since the last wait */
  int nrecs, caprecs;
};

int cu_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err)
{
  gj_bstream *s;
  CUresult r;
  int pushed;
  *out = NULL;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  s = calloc(1, sizeof(*s));
  if (!s) {
    cu_leave(st, pushed);
    return gj_err_set(err, "cuda: out of memory");
  }
  s->dev = dev;
  r = st->drv->api.StreamCreate(&s->cs, 0);
  cu_leave(st, pushed);
  if (r != CUDA_SUCCESS) {
    free(s);
    return cu_fail_dev(dev, err, "cuStreamCreate", r);
  }
  *out = s;
  return 0;
}

/* Synchronize s (in the device's context), then give each launch's record
** to the core and free the buffers. */
static CUresult stream_drain(gj_bstate *st, gj_bstream *s)
{
  const cu_api *a = &st->drv->api;
  CUresult r = a->StreamSynchronize(s->cs);
  int i;
  for (i = 0; i < s->nrecs; i++) {
    cu_srec *x = &s->recs[i];
    if (r == CUDA_SUCCESS) memcpy(x->core, x->pinned, x->bytes);
    a->MemFree(x->dev);
    a->MemFreeHost(x->pinned);
  }
  s->nrecs = 0;
  return r;
}

void cu_stream_free(gj_bstate *st, int dev, gj_bstream *s)
{
  gj_err e;
  int pushed;
  if (!s) return;
  if (cu_enter(st, dev, &pushed, &e) == 0) {
    stream_drain(st, s);
    st->drv->api.StreamDestroy(s->cs);
    cu_leave(st, pushed);
  }
  free(s->recs);
  free(s);
}

int cu_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed, gj_err *err)
{
  CUresult r;
  int pushed;
  *failed = -1;
  if (!s) return 0;        /* the default stream: launch finished it */
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  r = stream_drain(st, s);
  cu_leave(st, pushed);
  return r == CUDA_SUCCESS ? 0 : cu_fail_dev(dev, err, "cuStreamSynchronize", r);
}

struct gj_bevent {
  int dev;
  CUevent ev;
};

int cu_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                    gj_err *err)
{
  const cu_api *a;
  gj_bevent *e;
  CUresult r;
  int pushed;
  *out = NULL;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  a = &st->drv->api;
  e = calloc(1, sizeof(*e));
  if (!e) {
    cu_leave(st, pushed);
    return gj_err_set(err, "cuda: out of memory");
  }
  e->dev = dev;
  r = a->EventCreate(&e->ev, 0);
  if (r == CUDA_SUCCESS) {
    r = a->EventRecord(e->ev, s->cs);
    if (r != CUDA_SUCCESS) a->EventDestroy(e->ev);
  }
  cu_leave(st, pushed);
  if (r != CUDA_SUCCESS) {
    free(e);
    return cu_fail_dev(dev, err, "cuEventRecord", r);
  }
  *out = e;
  return 0;
}

int cu_event_query(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  CUresult r = st->drv->api.EventQuery(e->ev);
  if (r == CUDA_SUCCESS) return 1;
  if (r == CUDA_ERROR_NOT_READY) return 0;
  return cu_fail_dev(e->dev, err, "cuEventQuery", r);
}

int cu_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  CUresult r = st->drv->api.EventSynchronize(e->ev);
  return r == CUDA_SUCCESS ? 0 : cu_fail_dev(e->dev, err, "cuEventSynchronize", r);
}

int cu_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                  gj_err *err)
{
  CUresult r;
  int pushed;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  r = st->drv->api.StreamWaitEvent(s->cs, e->ev, 0);
  cu_leave(st, pushed);
  return r == CUDA_SUCCESS ? 0 : cu_fail_dev(dev, err, "cuStreamWaitEvent", r);
}

int cu_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                     gj_err *err)
{
  float f = 0;
  CUresult r = st->drv->api.EventElapsedTime(&f, a->ev, b->ev);
  if (r != CUDA_SUCCESS) return cu_fail_dev(a->dev, err, "cuEventElapsedTime", r);
  *ms = f;
  return 0;
}

void cu_event_free(gj_bstate *st, gj_bevent *e)
{
  if (!e) return;
  st->drv->api.EventDestroy(e->ev);
  free(e);
}

int cu_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                   const void *src, size_t n, int dir, gj_err *err)
{
  const cu_api *a;
  CUresult r;
  int pushed;
  if (n == 0) return 0;
  if (cu_enter(st, dev, &pushed, err) != 0) return -1;
  a = &st->drv->api;
  if (dir == GJ_COPY_TO_DEVICE)
    r = a->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, s->cs);
  else
    r = a->MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, s->cs);
  cu_leave(st, pushed);
  if (r == CUDA_SUCCESS) return 0;
  return cu_fail_dev(dev, err, dir == GJ_COPY_TO_DEVICE ? "cuMemcpyHtoDAsync"
                                                        : "cuMemcpyDtoHAsync", r);
}

/* Enqueue p on stream s (the context entered; params filled but the
** record's): a bounds-checked kernel gets a record of its own (device
** buffer and pinned host copy, cu_srec), written before the kernel and read
** back whole (print area included) after it, on the stream. */
static CUresult launch_on_stream(const cu_api *a, gj_program *p, gj_bstream *s,
                                 const int64_t *grid, const int64_t *group,
                                 gj_fault *fault, const char **call)
{
  cu_srec x = { 0, NULL, fault, 0 };
  void **slot = p->sig.faults ? &p->params[p->nparams - 1] : NULL;
  CUresult r;
  if (fault && p->sig.faults) {
    x.bytes = gj_record_size(&p->sig);
    if (s->nrecs == s->caprecs) {
      int cap = s->caprecs ? 2 * s->caprecs : 8;
      cu_srec *v = realloc(s->recs, (size_t)cap * sizeof(*v));
      if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
      s->recs = v;
      s->caprecs = cap;
    }
    *call = "cuMemAlloc (fault record)";
    if ((r = a->MemAlloc(&x.dev, x.bytes)) != CUDA_SUCCESS) return r;
    *call = "cuMemHostAlloc (fault record)";
    if ((r = a->MemHostAlloc(&x.pinned, x.bytes, 0)) != CUDA_SUCCESS) {
      a->MemFree(x.dev);
      return r;
    }
    memcpy(x.pinned, fault, head_bytes(&p->sig));
    *call = "cuMemcpyHtoDAsync (fault record)";
    r = a->MemcpyHtoDAsync(x.dev, x.pinned, head_bytes(&p->sig), s->cs);
    if (r != CUDA_SUCCESS) {
      a->MemFreeHost(x.pinned);
      a->MemFree(x.dev);
      return r;
    }
    *slot = &x.dev;        /* read by cuLaunchKernel, which copies it */
  }
  *call = "cuLaunchKernel (stream)";
  r = a->LaunchKernel(p->fn, (unsigned)grid[0], (unsigned)grid[1],
                      (unsigned)grid[2], (unsigned)group[0], (unsigned)group[1],
                      (unsigned)group[2], 0, s->cs, p->params, NULL);
  if (x.dev) {
    *slot = &p->fault;
    if (r == CUDA_SUCCESS) {
      *call = "cuMemcpyDtoHAsync (fault record)";
      r = a->MemcpyDtoHAsync(x.pinned, x.dev, x.bytes, s->cs);
    }
    if (r != CUDA_SUCCESS) {    /* nothing of it is waited for */
      a->StreamSynchronize(s->cs);
      a->MemFreeHost(x.pinned);
      a->MemFree(x.dev);
      return r;
    }
    s->recs[s->nrecs++] = x;
  }
  return r;
}

/* cppcheck-suppress constParameter ; the stream is enqueued on (gj_backend.h) */
int cu_launch(gj_bstate *st, gj_program *p, gj_bstream *s, const gj_dims *dm,
              void *args, gj_fault *fault, gj_err *err)
{
  const cu_device *d;
  gj_group_limits lim = { 0 };   /* the grid is checked below */
  int64_t group[3], grid[3], items;
  const cu_api *a;
  unsigned i;
  CUresult r;
  char b1[96], b2[96], call[256];
  int pushed, k;
  if (!p || !p->fn) return gj_err_set(err, "cuda: launch of no program");
  d = &st->drv->devs[p->dev];
  if (s && s->dev != p->dev)
    return gj_err_set(err, "cuda: the stream is on device %d, the kernel on %d",
                      s->dev, p->dev);
  for (k = 0; k < 3; k++) lim.max_dim[k] = d->info.max_group_dim[k];
  lim.max_group = p->max_group;
  lim.default_group = CU_DEFAULT_GROUP;
  if (gj_dims_group(dm, p->uses_barrier, &lim, group, &items, err) != 0)
    return -1;
  if (items == 0) return 0;
  for (k = 0; k < 3; k++) {
    p->global[k] = k < dm->ndim ? dm->global[k] : 1;
    grid[k] = (p->global[k] + group[k] - 1) / group[k];
    if (grid[k] > d->max_grid[k])
      return gj_err_set(err, "launch: global size %s needs %lld groups of %s "
                        "in dimension %d, more than the device's %lld",
                        gj_dims_str(b1, sizeof(b1), dm->global, dm->ndim),
                        (long long)grid[k],
                        gj_dims_str(b2, sizeof(b2), group, dm->ndim), k + 1,
                        (long long)d->max_grid[k]);
  }
  for (i = 0; i < p->nuser; i++) p->params[i] = (char *)args + p->offsets[i];
  if (cu_enter(st, p->dev, &pushed, err) != 0) return -1;
  a = &st->drv->api;
  if (s) {
    const char *what = "cuLaunchKernel (stream)";
    r = launch_on_stream(a, p, s, grid, group, fault, &what);
    cu_leave(st, pushed);
    return r == CUDA_SUCCESS ? 0 : cu_fail_dev(p->dev, err, what, r);
  }
  r = CUDA_SUCCESS;
  if (fault && p->shared_rec) {
    memcpy(p->shared_rec, fault, head_bytes(&p->sig));
  } else if (fault && p->fault) {
    snprintf(call, sizeof(call), "cuMemcpyHtoD (fault record)");
    r = a->MemcpyHtoD(p->fault, fault, head_bytes(&p->sig));
  }
  if (r == CUDA_SUCCESS) {
    r = a->LaunchKernel(p->fn, (unsigned)grid[0], (unsigned)grid[1],
                        (unsigned)grid[2], (unsigned)group[0],
                        (unsigned)group[1], (unsigned)group[2], 0, NULL,
                        p->params, NULL);
    if (r != CUDA_SUCCESS)
      snprintf(call, sizeof(call), "cuLaunchKernel (global %s, group %s)",
               gj_dims_str(b1, sizeof(b1), dm->global, dm->ndim),
               gj_dims_str(b2, sizeof(b2), group, dm->ndim));
  }
  if (r == CUDA_SUCCESS && fault && p->shared_rec)
    wait_cancellable(a, fault, p->shared_rec);
  if (r == CUDA_SUCCESS) {
    r = a->CtxSynchronize();
    snprintf(call, sizeof(call), "the kernel (cuCtxSynchronize after "
             "cuLaunchKernel)");
  }
  if (r == CUDA_SUCCESS && fault && p->shared_rec) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(fault, p->shared_rec, head_bytes(&p->sig) + print_bytes(&p->sig, p->shared_rec));
  } else if (r == CUDA_SUCCESS && fault && p->fault) {
    snprintf(call, sizeof(call), "cuMemcpyDtoH (fault record)");
    r = a->MemcpyDtoH(fault, p->fault, head_bytes(&p->sig));
    if (r == CUDA_SUCCESS && print_bytes(&p->sig, fault))
      r = a->MemcpyDtoH((char *)fault + head_bytes(&p->sig),
                        p->fault + head_bytes(&p->sig), print_bytes(&p->sig, fault));
  }
  cu_leave(st, pushed);
  return r == CUDA_SUCCESS ? 0 : cu_fail_dev(p->dev, err, call, r);
}
