/*
** The opencl backend, part three: programs and launches.  `load` builds
** the artifact for one device (clCreateProgramWithBinary + clBuildProgram)
** and keeps a kernel object per entry point; `launch` picks the entry (the
** one without the global-size test when every work item is real), maps the
** argument block onto its arguments (layout in targets/spir.c) and runs it
** to completion.
**
** A launch sets only the arguments that changed since the program's last
** launch (each one's last value is kept in its arg slot), then
** clEnqueueNDRangeKernel, then (ocl_wait) clFinish and the record read
** back: the core waits right after each launch on the default stream, so
** those are synchronous for the caller (API.md).  A stream (gpu.stream) is
** a command queue of its own (opencl_stream.c): a launch on it enqueues
** the kernel (and its record's copies, launch_on_stream) and returns;
** ocl_wait on it is one clFinish.
*/
#include "opencl_int.h"

#include "dims.h"
#include "gj_watch.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One entry point of the program (opencl_int.h, OCL_ENTRY*), and the
** arguments last given to it: a launch sets only those that changed. */
typedef struct ocl_entry {
  cl_kernel kernel;        /* NULL: the program has no such entry */
  cl_mem *bufs;            /* per array parameter */
  unsigned char *bufs_set; /* bufs[i] holds what the kernel has */
  uint64_t *block;         /* the block (nblock slots; targets/spir.h) */
  int block_set;           /* block holds what the kernel has */
} ocl_entry;

struct gj_program {
  int dev;
  cl_program prog;
  ocl_entry entry[2];      /* guarded, exact (without barriers only) */
  gj_sig sig;
  size_t max_group;        /* CL_KERNEL_WORK_GROUP_SIZE, of both entries */
  cl_uint nbufs;           /* the array parameters, one buffer argument each */
  unsigned nblock;         /* the block's slots (ocl_block_slots) */
  cl_mem fault;            /* sig.faults: the fault record's buffer */
  size_t fault_bytes;      /* its size: the record, and a print area
                           ** (sig.prints) as large as the last launch's */
  cl_uint fault_arg;       /* its argument index */
  /* sig.cancel on a device that shares host memory: the record's buffer
  ** is made on this host block (CL_MEM_USE_HOST_PTR), where the launch
  ** writes the cancel word while the kernel runs; else NULL (the kernel
  ** cannot be stopped, and runs to its end) */
  gj_fault *shared_rec;
};

/* -- load ---------------------------------------------------------------- */

/* The build log of prog on device d, appended to err's message. */
static void add_build_log(gj_bstate *st, cl_program prog, cl_device_id d,
                          gj_err *err)
{
  size_t n = 0, used = strlen(err->msg);
  char *log;
  if (st->cl.GetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n)
      != CL_SUCCESS || n <= 1)
    return;
  log = malloc(n + 1);
  if (!log) return;
  if (st->cl.GetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, n, log,
                                 NULL) == CL_SUCCESS) {
    log[n] = '\0';
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == '\0')) log[--n] = 0;
    snprintf(err->msg + used, sizeof(err->msg) - used, "; build log:\n%s",
             log);
  }
  free(log);
}

/* The record's buffer, of at least `bytes` (the fault record and, for a
** kernel that prints, its print area), made anew when it must grow (the
** entries' argument is set again then).  With sig.cancel on a device that
** shares host memory it lives on shared_rec, page-aligned host memory
** where the launch writes the cancel word while the kernel runs. */
static int record_buffer(gj_bstate *st, gj_program *p, size_t bytes,
                         gj_err *err)
{
  ocl_device *d = &st->devs[p->dev];
  size_t size = (bytes + 4095) / 4096 * 4096;
  cl_int rc;
  int i;
  if (p->fault && p->fault_bytes >= bytes) return 0;
  if (p->fault) st->cl.ReleaseMemObject(p->fault);
  p->fault = NULL;
  free(p->shared_rec);
  p->shared_rec = NULL;
  p->fault_bytes = 0;
  if (p->sig.cancel && ocl_host_shares(st, p->dev)) {
    void *h = NULL;
    if (posix_memalign(&h, 4096, size) != 0)
      return gj_err_set(err, "opencl: out of memory");
    memset(h, 0, size);
    p->shared_rec = h;
  }
  p->fault = st->cl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE |
                                 (p->shared_rec ? CL_MEM_USE_HOST_PTR : 0),
                                 size, p->shared_rec, &rc);
  if (!p->fault) return ocl_fail(err, "clCreateBuffer (fault record)", rc);
  p->fault_bytes = size;
  for (i = 0; i < 2; i++) {
    if (!p->entry[i].kernel) continue;
    rc = st->cl.SetKernelArg(p->entry[i].kernel, p->fault_arg, sizeof(cl_mem), &p->fault);
    if (rc != CL_SUCCESS) return ocl_fail(err, "clSetKernelArg (fault record)", rc);
  }
  return 0;
}

/* The kernel's local memory (gpu.shared) within the device's: a driver
** may abort the process on more (PoCL asserts) rather than fail. */
static int check_local_mem(gj_bstate *st, const gj_program *p,
                           const ocl_entry *e, gj_err *err)
{
  const ocl_device *d = &st->devs[p->dev];
  cl_ulong used = 0;
  if (d->local_mem == 0) return 0;
  if (st->cl.GetKernelWorkGroupInfo(e->kernel, d->id, CL_KERNEL_LOCAL_MEM_SIZE,
                                    sizeof(used), &used, NULL) != CL_SUCCESS)
    used = 0;
  if (used < p->sig.shared_bytes) used = p->sig.shared_bytes;
  if (used <= d->local_mem) return 0;
  return gj_err_set(err, "opencl: the kernel needs %llu bytes of local "
                    "memory (gpu.shared), beyond the device's limit of %llu "
                    "bytes (CL_DEVICE_LOCAL_MEM_SIZE)",
                    (unsigned long long)used, (unsigned long long)d->local_mem);
}

/* The kernel object of entry point `name`, with room for the arguments it
** was given, and the fault record set, which never changes (arguments:
** p->nbufs buffers, the block, the record; targets/spir.h). */
static int make_entry(gj_bstate *st, gj_program *p, const char *name,
                      ocl_entry *e, gj_err *err)
{
  cl_device_id id = st->devs[p->dev].id;
  cl_uint nargs = 0, want = p->nbufs + 1 + (p->sig.faults ? 1u : 0u);
  size_t wg = 0;
  cl_int rc;
  char what[96];
  e->kernel = st->cl.CreateKernel(p->prog, name, &rc);
  if (!e->kernel) {
    snprintf(what, sizeof(what), "clCreateKernel (%s)", name);
    return ocl_fail(err, what, rc);
  }
  rc = st->cl.GetKernelInfo(e->kernel, CL_KERNEL_NUM_ARGS, sizeof(nargs),
                            &nargs, NULL);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetKernelInfo", rc);
  if (nargs != want)
    return gj_err_set(err, "opencl: %s takes %u arguments, the signature "
                      "needs %u", name, nargs, want);
  rc = st->cl.GetKernelWorkGroupInfo(e->kernel, id, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof(wg), &wg, NULL);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetKernelWorkGroupInfo", rc);
  if (check_local_mem(st, p, e, err) != 0) return -1;
  if (p->max_group == 0 || wg < p->max_group) p->max_group = wg;
  e->bufs = calloc(p->nbufs + 1, sizeof(cl_mem));
  e->bufs_set = calloc(p->nbufs + 1, 1);
  e->block = calloc(p->nblock, sizeof(uint64_t));
  if (!e->bufs || !e->bufs_set || !e->block)
    return gj_err_set(err, "opencl: out of memory");
  p->fault_arg = p->nbufs + 1;
  if (p->fault) {
    rc = st->cl.SetKernelArg(e->kernel, p->fault_arg, sizeof(cl_mem), &p->fault);
    if (rc != CL_SUCCESS)
      return ocl_fail(err, "clSetKernelArg (fault record)", rc);
  }
  return 0;
}

static void program_free(gj_bstate *st, gj_program *p);

/* What load_binary is given: the device's own binary (PTX, or what
** CL_PROGRAM_BINARIES gave), SPIR bitcode, or SPIR-V. */
enum { LOAD_BINARY, LOAD_SPIR, LOAD_IL };

/* Make a program of art (what says which kind it is), build it and make
** its kernel objects. */
static int load_binary(gj_bstate *st, int dev, const char *art, size_t len,
                       int what, const gj_sig *sig, gj_program **out,
                       gj_err *err)
{
  ocl_device *d;
  gj_program *p;
  const unsigned char *bin = (const unsigned char *)art;
  cl_int rc, status = CL_SUCCESS;
  int i;
  *out = NULL;
  if (ocl_ready(st, dev, err) != 0) return -1;
  d = &st->devs[dev];
  p = calloc(1, sizeof(*p));
  if (!p) return gj_err_set(err, "opencl: out of memory");
  p->dev = dev;
  p->sig = *sig;
  if (what == LOAD_IL) {
    if (!st->CreateProgramWithIL) {
      gj_err_set(err, "opencl: the OpenCL loader has no clCreateProgramWithIL "
                 "(OpenCL 2.1), which SPIR-V needs");
      goto fail;
    }
    p->prog = st->CreateProgramWithIL(d->ctx, art, len, &rc);
  } else {
    p->prog = st->cl.CreateProgramWithBinary(d->ctx, 1, &d->id, &len, &bin,
                                             &status, &rc);
  }
  if (!p->prog || rc != CL_SUCCESS || status != CL_SUCCESS) {
    ocl_fail(err, what == LOAD_IL ? "clCreateProgramWithIL" :
             "clCreateProgramWithBinary", rc != CL_SUCCESS ? rc : status);
    goto fail;
  }
  {
    ocl_sigs sigs;   /* (opencl_int.h) */
    ocl_sigs_save(&sigs);
    rc = st->cl.BuildProgram(p->prog, 1, &d->id,
                             what == LOAD_SPIR ? "-x spir -spir-std=1.2" : "",
                             NULL, NULL);
    ocl_sigs_restore(&sigs);
  }
  if (rc != CL_SUCCESS) {
    ocl_fail(err, "clBuildProgram", rc);
    add_build_log(st, p->prog, d->id, err);
    goto fail;
  }
  for (i = 0; i < sig->nparams; i++) p->nbufs += sig->params[i].is_array;
  p->nblock = ocl_block_slots(sig);
  if (sig->faults && record_buffer(st, p, gj_record_size(sig), err) != 0)
    goto fail;                         /* the fault record, once */
  if (make_entry(st, p, OCL_ENTRY, &p->entry[0], err) != 0 ||
      (!sig->uses_barrier &&
       make_entry(st, p, OCL_ENTRY_EXACT, &p->entry[1], err) != 0))
    goto fail;
  *out = p;
  return 0;
fail:
  program_free(st, p);
  return -1;
}

int ocl_load(gj_bstate *st, int dev, const char *art, size_t len,
             const gj_sig *sig, gj_program **out, gj_err *err)
{
  ocl_device *d;
  char *bc;
  size_t bclen;
  int rc;
  if (ocl_ready(st, dev, err) != 0) return -1;
  d = &st->devs[dev];
  if (d->format != OCL_SPIRV)
    return load_binary(st, dev, art, len,
                       d->format == OCL_SPIR ? LOAD_SPIR : LOAD_BINARY, sig,
                       out, err);
  if (!d->spirv_via_spir)
    return load_binary(st, dev, art, len, LOAD_IL, sig, out, err);
  if (ocl_spirv_to_spir(&st->spirv, art, len, &bc, &bclen, err) != 0) return -1;
  rc = load_binary(st, dev, bc, bclen, LOAD_SPIR, sig, out, err);
  free(bc);
  return rc;
}

int ocl_cache_load(gj_bstate *st, int dev, const char *bin, size_t len,
                   const gj_sig *sig, gj_program **out, gj_err *err)
{
  return load_binary(st, dev, bin, len, LOAD_BINARY, sig, out, err);
}

/* Free p's objects; p was never launched (load's failures: they may run on
** the compile worker, which must not read the device's pending launch). */
static void program_free(gj_bstate *st, gj_program *p)
{
  int i;
  for (i = 0; i < 2; i++) {
    if (p->entry[i].kernel) st->cl.ReleaseKernel(p->entry[i].kernel);
    free(p->entry[i].bufs);
    free(p->entry[i].bufs_set);
    free(p->entry[i].block);
  }
  if (p->prog) st->cl.ReleaseProgram(p->prog);
  if (p->fault) st->cl.ReleaseMemObject(p->fault);
  free(p->shared_rec);
  free(p);
}

void ocl_unload(gj_bstate *st, gj_program *p)
{
  if (!p || OCL_IN_CHILD(st)) return;   /* the parent's (ocl_forked) */
  if (st->devs[p->dev].pending.p == p) {   /* its launch, finished first */
    gj_err e;
    int failed;
    ocl_wait(st, p->dev, NULL, &failed, &e);
  }
  program_free(st, p);
}

int ocl_cache_save(gj_bstate *st, gj_program *p, char **out, size_t *len,
                   gj_err *err)
{
  size_t n = 0;
  unsigned char *bin;
  cl_int rc;
  *out = NULL;
  *len = 0;
  rc = st->cl.GetProgramInfo(p->prog, CL_PROGRAM_BINARY_SIZES, sizeof(n), &n,
                             NULL);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetProgramInfo", rc);
  bin = malloc(n ? n : 1);
  if (!bin) return gj_err_set(err, "opencl: out of memory");
  rc = st->cl.GetProgramInfo(p->prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin,
                             NULL);
  if (rc != CL_SUCCESS) {
    free(bin);
    return ocl_fail(err, "clGetProgramInfo", rc);
  }
  *out = (char *)bin;
  *len = n;
  return 0;
}

/* -- launch -------------------------------------------------------------- */

/* Buffer argument i (array parameter i's) to mem unless it is already. */
static int set_buf(gj_bstate *st, ocl_entry *e, cl_uint i, cl_mem mem,
                   gj_err *err)
{
  cl_int rc;
  if (e->bufs_set[i] && e->bufs[i] == mem) return 0;
  rc = st->cl.SetKernelArg(e->kernel, i, sizeof(mem), &mem);
  if (rc != CL_SUCCESS) {
    char what[64];
    snprintf(what, sizeof(what), "clSetKernelArg (argument %u)", i);
    e->bufs_set[i] = 0;
    return ocl_fail(err, what, rc);
  }
  e->bufs[i] = mem;
  e->bufs_set[i] = 1;
  return 0;
}

/* The block argument (after the buffers) to the bytes v unless it holds
** them: the block itself, or (in_process devices) its address. */
static int set_block(gj_bstate *st, const gj_program *p, ocl_entry *e,
                     const void *v, size_t bytes, gj_err *err)
{
  cl_int rc;
  if (e->block_set && memcmp(e->block, v, bytes) == 0) return 0;
  rc = st->cl.SetKernelArg(e->kernel, p->nbufs, bytes, v);
  if (rc != CL_SUCCESS) {
    e->block_set = 0;
    return ocl_fail(err, "clSetKernelArg (the argument block)", rc);
  }
  memcpy(e->block, v, bytes);
  e->block_set = 1;
  return 0;
}

#define OCL_DEFAULT_GROUP 256
/* Work groups in one launch, all dimensions together: PoCL counts them in
** 32 bits (2^32 stops the process with SIGILL, more with an assertion),
** and OpenCL has no query for it. */
#define OCL_MAX_GROUPS INT32_MAX

/* A kernel with cancellation checks on a device that shares host memory:
** wait for its event, and pass the host's cancel word (set by the core's
** watchdog) on to the record the kernel reads, which lives in shared_rec.
** Polls: yielding the CPU for the first 64 looks (short kernels end
** there), then sleeping 20 us growing to at most 1 ms between looks.
** The timeout's clock starts when the event says CL_RUNNING (gj_watch.h):
** PoCL builds the work-group function before that, on a first launch.
** Errors of the event are left to the clFinish after it. */
static void wait_cancellable(gj_bstate *st, ocl_device *d, cl_event ev,
                             gj_fault *fault, gj_fault *shared_rec)
{
  long ns = 20000;
  int sent = 0, looks = 0, running = 0;
  st->cl.Flush(d->queue);
  for (;; looks++) {
    cl_int status = CL_QUEUED;
    struct timespec ts;
    if (st->cl.GetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                            &status, NULL) != CL_SUCCESS || status <= CL_COMPLETE)
      break;
    if (!running && status <= CL_RUNNING) {
      gj_watch_running();
      running = 1;
    }
    if (!sent && __atomic_load_n(&fault->cancel, __ATOMIC_RELAXED)) {
      __atomic_store_n(&shared_rec->cancel, 1, __ATOMIC_RELAXED);
      sent = 1;
    }
    if (looks < 64) {
      sched_yield();
      continue;
    }
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
    if (ns < 1000000) ns *= 2;
  }
  st->cl.ReleaseEvent(ev);
}

/* Cancellation between chunks (docs/reliability.md, "Runaway kernels"): a
** launch on the default stream of more than OCL_CHUNK_ITEMS work items is
** enqueued as NDRanges of whole groups, cut along its outermost dimension
** (global_work_offset: the kernel still sees the whole launch's ids,
** targets/spir.c IR_GROUPS), about OCL_CHUNK_ITEMS each, one after the
** other; between two the launch looks whether it was cancelled (the
** record's cancel word, set by a timeout's watchdog, or a SIGINT) and
** starts no further chunk.  A chunk of 2^20 work items runs for a
** millisecond or more on PoCL, against ~20 us for an enqueue and a wait;
** smaller launches keep their single enqueue.  PTX programs (NVIDIA's
** OpenCL) ignore a global offset, and are not cut. */
#define OCL_CHUNK_ITEMS (INT64_C(1) << 20)
/* A chunked launch that has run this long installs the SIGINT handler
** (gj_watch.h) until it returns, as runtimes/cpu.c does (CPU_SIGINT_AFTER):
** shorter launches never pay the two sigaction calls. */
#define OCL_SIGINT_AFTER 0.02

static double ocl_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run entry e (its arguments set, the record written) over global gl in
** chunks on the default queue (the top of this section).  The last chunk
** enqueued is left pending for ocl_wait (its record read back then), also
** when a timeout stopped the launch (the core reports the timeout); a
** SIGINT without one is this launch's error, after the device is idle. */
static int launch_chunks(gj_bstate *st, gj_program *p, ocl_entry *e,
                         cl_uint nd, const size_t *gl, const size_t *lo,
                         gj_fault *fault, gj_err *err)
{
  ocl_device *d = &st->devs[p->dev];
  cl_uint o = nd - 1, i;
  size_t off[3] = { 0, 0, 0 }, cg[3], row = lo[o], step;
  double t0 = ocl_now();
  int sig = 0, cancellable = fault && p->shared_rec, stopped = 0;
  long sigints = 0;
  cl_event ev = NULL;
  cl_int rc = CL_SUCCESS;
  const char *what = "clEnqueueNDRangeKernel (chunk)";
  for (i = 0; i < o; i++) row *= gl[i];   /* items in one row of groups */
  step = (size_t)OCL_CHUNK_ITEMS / row;   /* rows of groups per chunk */
  step = (step < 1 ? 1 : step) * lo[o];
  for (i = 0; i < nd; i++) cg[i] = gl[i];
  /* a timed kernel: its clock starts when the first chunk runs */
  if (cancellable) gj_watch_defer();
  for (off[o] = 0; off[o] < gl[o]; off[o] += step) {
    if (off[o] > 0) {          /* the chunk before has run */
      if (ev) wait_cancellable(st, d, ev, fault, p->shared_rec);
      ev = NULL;
      if ((rc = st->cl.Finish(d->queue)) != CL_SUCCESS) {
        what = "clFinish (chunk)";
        break;
      }
      if (fault && __atomic_load_n(&fault->cancel, __ATOMIC_RELAXED)) break;
      if (sig == 1 && gj_sigint_count() != sigints) {
        stopped = 1;
        break;
      }
      if (sig == 0 && ocl_now() - t0 >= OCL_SIGINT_AFTER) {
        sig = gj_sigint_begin() == 0 ? 1 : -1;
        sigints = gj_sigint_count();
      }
    }
    cg[o] = gl[o] - off[o] < step ? gl[o] - off[o] : step;
    rc = st->cl.EnqueueNDRangeKernel(d->queue, e->kernel, nd, off, cg, lo, 0,
                                     NULL, cancellable ? &ev : NULL);
    if (rc != CL_SUCCESS) break;
  }
  if (sig == 1) gj_sigint_end();
  if (rc != CL_SUCCESS || stopped) {
    if (ev) wait_cancellable(st, d, ev, fault, p->shared_rec);
    st->cl.Finish(d->queue);
    if (rc != CL_SUCCESS) return ocl_fail(err, what, rc);
    return gj_err_set(err, "launch interrupted (Ctrl-C): no work group started "
                      "after the SIGINT");
  }
  /* finished, and the record read back, by ocl_wait */
  d->pending.p = p;
  d->pending.fault = fault;
  d->pending.ev = ev;
  return 0;
}

/* After a launch of a kernel that prints: the records in the print area
** (the head is already in the host's copy). */
static cl_int read_prints(gj_bstate *st, ocl_device *d, gj_program *p,
                          gj_fault *fault)
{
  gj_print_head *h = (gj_print_head *)(void *)(fault + 1);
  size_t n = h->used < h->cap ? (size_t)h->used : (size_t)h->cap;
  if (n == 0) return CL_SUCCESS;
  return st->cl.EnqueueReadBuffer(d->queue, p->fault, CL_TRUE,
                                  sizeof(*fault) + sizeof(*h), n, h + 1, 0,
                                  NULL, NULL);
}

/* Enqueue entry e (its arguments set) on stream s without waiting.  A
** bounds-checked kernel's record gets a buffer of its own for this launch
** (the program's is the default stream's, and another stream's launch of
** the same program may run meanwhile): the host record written into it
** before the kernel and the whole record (print area included) read back
** after it, both without blocking, into the core's record of the launch,
** which lives until the wait.  The buffer is released at once: OpenCL
** frees it when the commands that use it have finished. */
static int launch_on_stream(gj_bstate *st, gj_program *p, ocl_entry *e,
                            gj_bstream *s, cl_uint nd, const size_t *gl,
                            const size_t *lo, gj_fault *fault, gj_err *err)
{
  ocl_device *d = &st->devs[p->dev];
  size_t bytes = gj_record_size(&p->sig);
  cl_mem rec = NULL;
  cl_int rc;
  const char *what = "clEnqueueNDRangeKernel (stream)";
  if (fault && p->fault) {
    rec = st->cl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (!rec) return ocl_fail(err, "clCreateBuffer (fault record)", rc);
    rc = st->cl.EnqueueWriteBuffer(s->q, rec, CL_FALSE, 0,
                                   p->sig.prints ? sizeof(*fault) + sizeof(gj_print_head)
                                                 : sizeof(*fault),
                                   fault, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
      rc = st->cl.SetKernelArg(e->kernel, p->fault_arg, sizeof(cl_mem), &rec);
    if (rc != CL_SUCCESS) {
      st->cl.ReleaseMemObject(rec);
      return ocl_fail(err, "clEnqueueWriteBuffer (fault record)", rc);
    }
  }
  rc = st->cl.EnqueueNDRangeKernel(s->q, e->kernel, nd, NULL, gl, lo, 0, NULL,
                                   NULL);
  if (rec) {
    cl_int r2 = st->cl.SetKernelArg(e->kernel, p->fault_arg, sizeof(cl_mem),
                                    &p->fault);
    if (rc == CL_SUCCESS)
      rc = st->cl.EnqueueReadBuffer(s->q, rec, CL_FALSE, 0, bytes, fault, 0,
                                    NULL, NULL);
    if (rc == CL_SUCCESS && r2 != CL_SUCCESS) {
      rc = r2;
      what = "clSetKernelArg (fault record)";
    }
    st->cl.ReleaseMemObject(rec);
  }
  if (rc == CL_SUCCESS && !d->starts_on_enqueue)
    rc = st->cl.Flush(s->q);   /* start it now */
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, what, rc);
}

/* cppcheck-suppress constParameter ; the stream is enqueued on (gj_backend.h) */
int ocl_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed, gj_err *err)
{
  ocl_device *d = &st->devs[dev];
  gj_program *p = d->pending.p;
  gj_fault *fault = d->pending.fault;
  cl_event ev = d->pending.ev;
  cl_int rc;
  *failed = -1;
  if (ocl_forked(st, err)) return -1;
  if (s) {
    rc = st->cl.Finish(s->q);
    if (rc != CL_SUCCESS) return ocl_fail(err, "clFinish (stream)", rc);
    ocl_stream_blocks_reset(s);   /* only once every launch has run */
    return 0;
  }
  if (!p) return 0;
  d->pending.p = NULL;
  d->pending.fault = NULL;
  d->pending.ev = NULL;
  if (ev) wait_cancellable(st, d, ev, fault, p->shared_rec);
  rc = st->cl.Finish(d->queue);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clFinish", rc);
  if (fault && p->fault) {
    rc = st->cl.EnqueueReadBuffer(d->queue, p->fault, CL_TRUE, 0,
                                  p->sig.prints ? sizeof(*fault) + sizeof(gj_print_head)
                                                : sizeof(*fault),
                                  fault, 0, NULL, NULL);
    if (rc == CL_SUCCESS && p->sig.prints)    /* the records written */
      rc = read_prints(st, d, p, fault);
    if (rc != CL_SUCCESS) return ocl_fail(err, "clEnqueueReadBuffer (fault record)", rc);
  }
  return 0;
}

/* cppcheck-suppress constParameter ; the stream is enqueued on (gj_backend.h) */
int ocl_launch(gj_bstate *st, gj_program *p, gj_bstream *s, const gj_dims *dm,
               void *args, gj_fault *fault, gj_err *err)
{
  ocl_device *d;
  ocl_entry *e;
  gj_group_limits lim = { 0 };
  int64_t group[3], items;
  size_t gl[3], lo[3];
  uint64_t blk[OCL_BLOCK_MAX];
  cl_uint a = 0;
  unsigned k = 0;
  cl_int rc;
  cl_event ev = NULL;
  char b1[96], b2[96];
  int i, failed, nd = dm->ndim;
  if (!p || !p->entry[0].kernel)
    return gj_err_set(err, "opencl: launch of no program");
  if (ocl_forked(st, err)) return -1;
  d = &st->devs[p->dev];
  if (!s && d->pending.p && ocl_wait(st, p->dev, NULL, &failed, err) != 0)
    return -1;
  /* Below 2^31 per dimension, which the !range of local ids assumes
  ** (targets/spir.c); devices report far less. */
  for (i = 0; i < 3; i++)
    lim.max_dim[i] = d->info.max_group_dim[i] < INT32_MAX
                         ? d->info.max_group_dim[i] : INT32_MAX;
  lim.max_group = (int64_t)p->max_group;
  lim.default_group = OCL_DEFAULT_GROUP;
  /* a size_t of the device's; 64 bits: gpujit's own 2^51 is lower */
  lim.max_global = d->addr_bits > 0 && d->addr_bits < 63
                       ? (int64_t)((UINT64_C(1) << d->addr_bits) - 1) : 0;
  lim.max_groups = OCL_MAX_GROUPS;
  if (gj_dims_group(dm, p->sig.uses_barrier, &lim, group, &items, err) != 0)
    return -1;
  if (items == 0) return 0;
  /* Every work item real (the global size a multiple of the group): the
  ** entry without the test, when the program has it. */
  e = &p->entry[0];
  if (p->entry[1].kernel) {
    int exact = 1;
    for (i = 0; i < nd; i++) exact &= dm->global[i] % group[i] == 0;
    if (exact) e = &p->entry[1];
  }

  /* The user's arguments: the buffers, and the block (targets/spir.h). */
  memset(blk, 0, p->nblock * sizeof(uint64_t));
  for (i = 0; i < p->sig.nparams; i++) {
    const gj_param *pa = &p->sig.params[i];
    const char *slot = (const char *)args + pa->offset;
    if (pa->is_array) {
      void *ptr;
      int64_t off, len;
      size_t size;
      cl_mem mem;
      memcpy(&ptr, slot, sizeof(ptr));
      memcpy(&len, slot + 8, sizeof(len));
      if (ocl_map(st, p->dev, ptr, &mem, &off, &size, err) != 0)
        return gj_err_prefix(err, "launch: argument %d: ", i + 1);
      if (set_buf(st, e, a++, mem, err)) return -1;
      memcpy(&blk[k++], &off, sizeof(off));
      memcpy(&blk[k++], &len, sizeof(len));
    } else {
      memcpy(&blk[k++], slot, pa->size);
    }
  }
  /* The real global size; the launch's is rounded up to the group. */
  for (i = 0; i < 3; i++) {
    int64_t g = i < nd ? dm->global[i] : 1;
    memcpy(&blk[k++], &g, sizeof(g));
    lo[i] = (size_t)group[i];
    gl[i] = (size_t)((g + group[i] - 1) / group[i] * group[i]);
  }
  if (d->host_libm) blk[k] = (uint64_t)(uintptr_t)st->libm;
  if (d->in_process) {         /* its address; kept until the launch has run */
    const uint64_t *kept = d->block;
    uint64_t addr;
    if (s) kept = ocl_stream_block(s, blk, p->nblock);
    else memcpy(d->block, blk, p->nblock * sizeof(uint64_t));
    if (!kept) return gj_err_set(err, "opencl: out of memory");
    addr = (uint64_t)(uintptr_t)kept;
    if (set_block(st, p, e, &addr, sizeof(addr), err)) return -1;
  } else if (set_block(st, p, e, blk, p->nblock * sizeof(uint64_t), err)) {
    return -1;
  }
  if (s) return launch_on_stream(st, p, e, s, (cl_uint)nd, gl, lo, fault, err);
  if (fault && p->fault) {   /* zeroed (the core's copy) before the run */
    rc = st->cl.EnqueueWriteBuffer(d->queue, p->fault, CL_TRUE, 0,
                                   p->sig.prints ? sizeof(*fault) + sizeof(gj_print_head)
                                                 : sizeof(*fault),
                                   fault, 0, NULL, NULL);
    if (rc != CL_SUCCESS) return ocl_fail(err, "clEnqueueWriteBuffer (fault record)", rc);
  }
  if (items > OCL_CHUNK_ITEMS && d->format != OCL_PTX)
    return launch_chunks(st, p, e, (cl_uint)nd, gl, lo, fault, err);
  /* a timed kernel: its clock starts when the event runs (wait_cancellable) */
  if (fault && p->shared_rec) gj_watch_defer();
  rc = st->cl.EnqueueNDRangeKernel(d->queue, e->kernel, (cl_uint)nd, NULL,
                                   gl, lo, 0, NULL,
                                   fault && p->shared_rec ? &ev : NULL);
  if (rc != CL_SUCCESS) {
    char what[160];
    snprintf(what, sizeof(what), "clEnqueueNDRangeKernel (global %s, group "
             "%s)", gj_dims_str(b1, sizeof(b1), dm->global, nd),
             gj_dims_str(b2, sizeof(b2), group, nd));
    return ocl_fail(err, what, rc);
  }
  /* finished, and the record read back, by ocl_wait */
  d->pending.p = p;
  d->pending.fault = fault;
  d->pending.ev = ev;
  return 0;
}
