/*
** The cpu backend: kernels compiled to native code for the host, linked
** into shared objects (targets/native_link.c) and loaded with dlopen,
** work-groups spread over a thread pool.  Loading needs no LLVM: a kernel
** from the disk cache or a bundle is a dlopen (cpu_load).
**
** Execution model.  The core's @gj_body computes one work item.  `wrap`
** adds @gj_entry(args, launch), which runs a range of work-groups: for each
** group it loops over z, y, x work items (x innermost) and calls the body,
** which is always inlined, so that LLVM sees a plain counted loop and can
** vectorize across x.  The work-item state (ids and sizes, see WI_* in
** targets/native.h) lives in an alloca of gj_entry; after inlining SROA
** turns it back into SSA values, so reading an id in the body costs
** nothing.  `wrap` and the intrinsics IR are the native target
** (targets/native.c, targets/native_split.c).
**
** Work items past the global size never run: the per-group loop bounds are
** clamped (min(group, global - base)) instead of testing every item, which
** keeps the inner loop free of control flow.
**
** Launches on the default stream are synchronous: gj_entry has returned
** on every thread when launch returns, so sync is a no-op and memory is
** plain host memory.  A stream (gpu.stream) is a worker thread that runs
** its launches one after another, each driving the pool as the default
** stream does (cpu_stream.c); `wait` is the worker's.
**
** Work groups (job.serial_groups): one thread runs all the work items of a
** group.  gpu.shared arrays are slices of a per-thread scratch block; a
** kernel with barriers is compiled by the core as a resumable function and
** gj_entry runs a group in passes, each pass taking every work item to its
** next barrier (the work item's state lives in its frame in the scratch
** block).  Design and limits: docs/backends.md.
*/
#include "gj_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "pool.h"
#include "cpu_stream.h"
#include "gj_fork.h"
#include "gj_target.h"
#include "gj_watch.h"
#include "../targets/native.h"

typedef void (*cpu_entry_fn)(void *args, const cpu_launch *launch);

#define CPU_MAX_GROUP 4096
/* Launches with fewer work items than this run on the calling thread:
** waking the pool costs more than it saves. */
#define CPU_SERIAL_ITEMS 4096

/* -- State --------------------------------------------------------------- */

struct gj_bstate {
  pthread_mutex_t mu;          /* guards everything below but `pool` */
  gj_pool *_Atomic pool;       /* made on the first launch that needs it */
  unsigned pool_gen;           /* gj_fork_gen() when it was made (atomic) */
  int nthreads;                /* the pool's size, decided at open */
  int have_job;
  gj_job job;                  /* the host's job, made once */
  gj_device_info info;
};

struct gj_program {
  cpu_entry_fn entry;
  uint32_t shared_bytes;         /* from the kernel's gj_sig */
  uint32_t frame_bytes;
  uint32_t argsize;              /* the argument block's bytes */
  int uses_barrier;
  void *dl;                      /* the kernel's shared object (dlopen) */
};

/* "key<tabs>: value" from /proc/cpuinfo into out (trimmed); 0 if found. */
static int cpuinfo_field(const char *key, char *out, size_t n)
{
  char line[512];
  size_t klen = strlen(key);
  int found = -1;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return -1;
  while (fgets(line, sizeof(line), f)) {
    char *v, *e;
    if (strncmp(line, key, klen) != 0 || (line[klen] != '\t' &&
                                          line[klen] != ' ' &&
                                          line[klen] != ':'))
      continue;
    v = strchr(line, ':');
    if (!v) continue;
    for (v++; *v == ' ' || *v == '\t'; v++) ;
    e = v + strlen(v);
    while (e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
    if (!*v) continue;
    snprintf(out, n, "%s", v);
    found = 0;
    break;
  }
  fclose(f);
  return found;
}

static void cpu_fill_info(gj_bstate *st)
{
  gj_device_info *d = &st->info;
  char vendor[128];
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  memset(d, 0, sizeof(*d));
  snprintf(d->format, sizeof(d->format), "object");
  d->host_math = 1;
  d->host_shared = 1;      /* the device is this process */
  d->rank = GJ_RANK_CPU;
  d->parallel_items = CPU_SERIAL_ITEMS;
  if (cpuinfo_field("model name", d->name, sizeof(d->name)) != 0) {
    struct utsname u;   /* no model name (not x86): the machine's kind */
    snprintf(d->name, sizeof(d->name), "%s",
             uname(&u) == 0 ? u.machine : "cpu");
  }
  if (cpuinfo_field("vendor_id", vendor, sizeof(vendor)) == 0)
    snprintf(d->vendor, sizeof(d->vendor), "%s",
             strcmp(vendor, "GenuineIntel") == 0 ? "Intel" :
             strcmp(vendor, "AuthenticAMD") == 0 ? "AMD" : vendor);
  else
    snprintf(d->vendor, sizeof(d->vendor), "unknown");
  snprintf(d->type, sizeof(d->type), "cpu");
  d->memory = pages > 0 && psize > 0 ? (int64_t)pages * psize : 0;
  d->compute_units = st->nthreads;
  d->max_group = CPU_MAX_GROUP;
  d->max_group_dim[0] = d->max_group_dim[1] = d->max_group_dim[2] =
      CPU_MAX_GROUP;
}

static void cpu_close(gj_bstate *st);

static int cpu_open(gj_bstate **out, gj_err *err)
{
  gj_bstate *st;
  *out = NULL;
  st = calloc(1, sizeof(*st));
  if (!st) return gj_err_set(err, "cpu: out of memory");
  pthread_mutex_init(&st->mu, NULL);
  atomic_init(&st->pool, NULL);
  st->nthreads = gj_pool_default_size();
  cpu_fill_info(st);
  *out = st;
  return 0;
}

/* Programs are unloaded before (each dlclose'd by cpu_unload). */
static void cpu_close(gj_bstate *st)
{
  if (!st) return;
  if (st->pool_gen == gj_fork_gen())   /* else the parent's: no threads here */
    gj_pool_free(atomic_load(&st->pool));
  pthread_mutex_destroy(&st->mu);
  free(st);
}

static int cpu_ndevices(gj_bstate *st)
{
  (void)st;
  return 1;
}

static int cpu_device_info(gj_bstate *st, int dev, gj_device_info *out)
{
  if (dev != 0) return -1;
  *out = st->info;
  return 0;
}

/* -- Compile job --------------------------------------------------------- */

/* Code model and relocation: position-independent code in the small code
** model, as any shared object: the linker gives calls to outside functions
** (libm) PLT entries and the dynamic loader resolves them from the
** process; the kernel's sections are mapped together, so RIP-relative
** constant pool loads stay in range.  The LLVM targets are initialized
** here, on the first compile: opening the backend needs no LLVM. */
static int cpu_make_job(gj_bstate *st, gj_err *err)
{
  gj_job *j = &st->job;
  LLVMTargetMachineRef tm;
  LLVMTargetDataRef td;
  char *dl;
  memset(j, 0, sizeof(*j));
  if (gj_target_init(err) != 0) return -1;
  if (gj_target_host(j->triple, sizeof(j->triple), j->cpu, sizeof(j->cpu),
                     j->features, sizeof(j->features)) != 0)
    return gj_err_set(err, "cpu: the host's target description is too long");
  j->as_global = j->as_shared = j->as_local = 0;
  j->serial_groups = 1;
  snprintf(j->format, sizeof(j->format), "object");
  j->intrinsics_ir = cpu_intrinsics_ir;
  snprintf(j->passes, sizeof(j->passes), "default<O3>");
  j->codegen_opt = LLVMCodeGenLevelAggressive;
  j->reloc = LLVMRelocPIC;
  j->code_model = LLVMCodeModelDefault;
  if (gj_target_machine(j, &tm, err) != 0) return -1;
  td = LLVMCreateTargetDataLayout(tm);
  dl = LLVMCopyStringRepOfTargetData(td);
  if (strlen(dl) >= sizeof(j->datalayout)) {
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);
    LLVMDisposeTargetMachine(tm);
    return gj_err_set(err, "cpu: the host's data layout is too long");
  }
  strcpy(j->datalayout, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  LLVMDisposeTargetMachine(tm);
  return 0;
}

static int cpu_job(gj_bstate *st, int dev, gj_job *job, gj_err *err)
{
  int r = 0;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  pthread_mutex_lock(&st->mu);
  if (!st->have_job) {
    r = cpu_make_job(st, err);
    st->have_job = r == 0;
  }
  if (r == 0) *job = st->job;
  pthread_mutex_unlock(&st->mu);
  return r;
}

/* -- target, load -------------------------------------------------------- */

static const gj_codegen *cpu_target(gj_bstate *st, const gj_job *job,
                                    void **ts)
{
  (void)st;
  (void)job;
  *ts = NULL;
  return &gj_codegen_native;
}

/* The shared object so[0..len) into a file of its own for dlopen: a new
** name each time, since dlopen answers a name it has loaded already with
** that object; removed once loaded (the mapping keeps it). */
static void *cpu_dlopen(const char *so, size_t len, gj_err *err)
{
  const char *dir = getenv("TMPDIR");
  char path[4096];
  size_t done = 0;
  void *dl;
  int fd;
  if (!dir || !*dir) dir = "/tmp";
  if ((size_t)snprintf(path, sizeof(path), "%s/gpujit-kernel-XXXXXX.so",
                       dir) >= sizeof(path)) {
    gj_err_set(err, "cpu: TMPDIR is too long");
    return NULL;
  }
  fd = mkostemps(path, 3, O_CLOEXEC);
  if (fd < 0) {
    gj_err_set(err, "cpu: cannot make a file for the kernel in %s: %s", dir,
               strerror(errno));
    return NULL;
  }
  while (done < len) {
    ssize_t w = write(fd, so + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      gj_err_set(err, "cpu: cannot write the kernel to %s: %s", path,
                 w < 0 ? strerror(errno) : "no space");
      close(fd);
      unlink(path);
      return NULL;
    }
    done += (size_t)w;
  }
  close(fd);
  dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    gj_err_set(err, "cpu: cannot load the kernel: %s", why ? why : "?");
  }
  unlink(path);
  return dl;
}

/* art: the native target's shared object (a fresh compile's, or the disk
** cache's); no LLVM here. */
static int cpu_load(gj_bstate *st, int dev, const char *art, size_t len,
                    const gj_sig *sig, gj_program **out, gj_err *err)
{
  gj_program *p;
  void *entry;
  (void)st;
  *out = NULL;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  p = calloc(1, sizeof(*p));
  if (!p) return gj_err_set(err, "cpu: out of memory");
  p->shared_bytes = sig->shared_bytes;
  p->frame_bytes = sig->uses_barrier ? (sig->frame_bytes + 15) / 16 * 16 : 0;
  p->uses_barrier = sig->uses_barrier;
  p->argsize = sig->argsize;
  if (!(p->dl = cpu_dlopen(art, len, err))) {
    free(p);
    return -1;
  }
  entry = dlsym(p->dl, "gj_entry");
  if (!entry) {
    dlclose(p->dl);
    free(p);
    return gj_err_set(err, "cpu: the kernel's shared object has no gj_entry");
  }
  /* POSIX: a function's address from dlsym converts to a function pointer */
  memcpy(&p->entry, &entry, sizeof(entry));
  *out = p;
  return 0;
}

static void cpu_unload(gj_bstate *st, gj_program *p)
{
  (void)st;
  if (!p) return;
  dlclose(p->dl);
  free(p);
}

/* -- launch -------------------------------------------------------------- */

/* Cancellation between chunks (docs/reliability.md, "Runaway kernels"):
** a call of gj_entry covers at most this many work items' worth of whole
** groups, and between two calls the task looks whether the launch was
** cancelled (a timeout's cancel word, or a SIGINT during a long launch).
** No new group starts after that; a check costs a clock read and a few
** loads per 4096 work items, nothing per work item. */
#define CPU_CANCEL_ITEMS 4096
/* A launch that has run this long gets the SIGINT handler (gj_watch.h)
** until it returns: two sigaction calls (about 1.5 us here) are nothing
** then, and launches shorter than this never pay them.  A Ctrl-C before
** it reaches the program's own SIGINT action, as it would without gpujit. */
#define CPU_SIGINT_AFTER 0.02

enum { SIG_NONE, SIG_BUSY, SIG_ON, SIG_FAILED };   /* cpu_task.sigstate */

typedef struct cpu_task {
  cpu_entry_fn entry;
  void *args;
  const cpu_launch *launch;
  size_t scratch;              /* bytes of scratch each call needs */
  int64_t step;                /* cpu_task_chunks: groups per call (>= 1) */
  const int32_t *cancel;       /* the record's cancel word, or NULL */
  double t0;                   /* CLOCK_MONOTONIC seconds at the start */
  _Atomic int sigstate;        /* SIG_*: the handler, once installed, is
                               ** SIG_ON (release: sigints is set) */
  long sigints;                /* gj_sigint_count() when it was installed */
  _Atomic int oom;             /* a call could not get its scratch */
} cpu_task;

/* CLOCK_MONOTONIC, in seconds. */
static double cpu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether the launch of t was cancelled; installs the SIGINT handler once
** the launch has run CPU_SIGINT_AFTER seconds (any thread may: the first
** to see the time). */
static int cpu_task_cancelled(cpu_task *t)
{
  int s = atomic_load_explicit(&t->sigstate, memory_order_acquire);
  if (t->cancel && __atomic_load_n(t->cancel, __ATOMIC_RELAXED)) return 1;
  if (s == SIG_ON) return gj_sigint_count() != t->sigints;
  if (s == SIG_NONE && cpu_now() - t->t0 >= CPU_SIGINT_AFTER &&
      atomic_compare_exchange_strong(&t->sigstate, &s, SIG_BUSY)) {
    if (gj_sigint_begin() == 0) {
      t->sigints = gj_sigint_count();
      atomic_store_explicit(&t->sigstate, SIG_ON, memory_order_release);
    } else {
      atomic_store_explicit(&t->sigstate, SIG_FAILED, memory_order_release);
    }
  }
  return 0;
}

/* One call of gj_entry over groups [begin, end), with its own scratch: a
** launch of fewer than CPU_SERIAL_ITEMS work items, which is not checked
** for cancellation between groups (the cost of the common small launch
** stays what it was). */
static void cpu_task_run(void *arg, int64_t begin, int64_t end)
{
  cpu_task *t = arg;
  cpu_launch l = *t->launch;
  l.first = begin;
  l.last = end;
  l.scratch = NULL;
  if (t->scratch) {
    l.scratch = calloc(1, t->scratch);
    if (!l.scratch) {
      atomic_store(&t->oom, 1);
      return;
    }
  }
  t->entry(t->args, &l);
  free(l.scratch);
}

/* Calls of gj_entry over groups [begin, end), t->step groups each, with
** one scratch; stops between calls when the launch was cancelled. */
static void cpu_task_chunks(void *arg, int64_t begin, int64_t end)
{
  cpu_task *t = arg;
  cpu_launch l = *t->launch;
  int64_t b;
  if (cpu_task_cancelled(t)) return;
  l.scratch = NULL;
  if (t->scratch) {
    l.scratch = calloc(1, t->scratch);
    if (!l.scratch) {
      atomic_store(&t->oom, 1);
      return;
    }
  }
  for (b = begin; b < end; b += t->step) {
    if (b > begin && cpu_task_cancelled(t)) break;
    l.first = b;
    l.last = end - b > t->step ? b + t->step : end;
    t->entry(t->args, &l);
  }
  free(l.scratch);
}

/* The pool, made on first use, and made again in a fork() child (whose
** pool has no threads; the parent's is left, never joined: gj_fork.h). */
static gj_pool *cpu_pool(gj_bstate *st)
{
  unsigned gen = gj_fork_gen();
  gj_pool *p = atomic_load_explicit(&st->pool, memory_order_acquire);
  if (p && __atomic_load_n(&st->pool_gen, __ATOMIC_RELAXED) == gen) return p;
  pthread_mutex_lock(&st->mu);
  p = atomic_load_explicit(&st->pool, memory_order_relaxed);
  if (!p || st->pool_gen != gen) {
    p = gj_pool_new(st->nthreads);
    __atomic_store_n(&st->pool_gen, gen, __ATOMIC_RELAXED);
    atomic_store_explicit(&st->pool, p, memory_order_release);
  }
  pthread_mutex_unlock(&st->mu);
  return p;     /* NULL when out of memory: the caller runs alone */
}

/* The group a launch without one gets.  On a CPU a group only decides how
** the work is cut up: its x loop is the loop LLVM vectorizes, and groups
** are what the pool's threads take.  So the default fills 256 work items
** x first: x = min(global x, 256), then y and z take what is left of the
** 256 (clamped to their global sizes), e.g. 256x1 for a 2048x2048 launch,
** 100x2 for 100x3000.  Whole rows beat the GPU habit of square tiles:
** each thread then streams through memory in one run per array, which the
** prefetchers follow, and a 16-wide row leaves an AVX-512 loop (16 lanes x
** 4 unrolled) no full vector iteration.  Measured on a 2-core AVX-512 EPYC,
** 2-D saxpy 4096x4096: 256x1 4.8 ms, 128x2 5.1, 64x4 8.0, 16x16 8.2;
** 2048x2048: 256x1 0.50 ms, 64x4 1.07, 16x16 1.17. */
#define CPU_DEFAULT_GROUP 256

static void cpu_default_group(const gj_dims *d, int64_t group[3])
{
  int64_t left = CPU_DEFAULT_GROUP;
  int i;
  for (i = 0; i < 3; i++) {
    int64_t n = i < d->ndim ? d->global[i] : 1;
    group[i] = n < left ? n : left;
    left /= group[i];
    if (left < 1) left = 1;
  }
}

/* With barriers a group may not be cut by global: per dimension the
** largest divisor of the global size that fits in what is left of 256. */
static void cpu_barrier_group(const gj_dims *d, int64_t group[3])
{
  int64_t left = CPU_DEFAULT_GROUP;
  int i;
  for (i = 0; i < 3; i++) {
    int64_t n = i < d->ndim ? d->global[i] : 1, g = n < left ? n : left;
    while (g > 1 && n % g != 0) g--;
    group[i] = g < 1 ? 1 : g;
    left /= group[i];
  }
}

/* A launch planned: its shape checked and cut into groups, ready to run
** now (the default stream) or later on a stream's worker. */
typedef struct cpu_plan {
  cpu_launch l;
  cpu_entry_fn entry;
  size_t scratch;              /* bytes of scratch each call needs */
  int64_t items, groups;
} cpu_plan;

/* Check the launch's shape and fill pl; 0, or -1 with err. */
static int cpu_plan_launch(const gj_program *p, const gj_dims *d,
                           gj_fault *record, cpu_plan *pl, gj_err *err)
{
  cpu_launch *l = &pl->l;
  int64_t items = 1, groups = 1, gsize = 1;
  char b1[96], b2[96];
  int i, nd = d->ndim;
  if (!p || !p->entry) return gj_err_set(err, "cpu: launch of no program");
  if (nd < 1 || nd > 3)
    return gj_err_set(err, "launch: ndim must be 1, 2 or 3 (got %d)", nd);
  for (i = 0; i < nd; i++) {
    if (d->global[i] < 0)
      return gj_err_set(err, "launch: global size %s has a negative "
                        "dimension", gj_dims_str(b1, sizeof(b1), d->global, nd));
    if (__builtin_mul_overflow(items, d->global[i], &items))
      return gj_err_set(err, "launch: global size %s is too large",
                        gj_dims_str(b1, sizeof(b1), d->global, nd));
  }
  if (d->group[0] != 0) {
    for (i = 0; i < nd; i++) {
      if (d->group[i] <= 0)
        return gj_err_set(err, "launch: work-group size %s must be positive "
                          "in every dimension",
                          gj_dims_str(b1, sizeof(b1), d->group, nd));
      if (d->group[i] > CPU_MAX_GROUP ||
          (gsize *= d->group[i]) > CPU_MAX_GROUP)
        return gj_err_set(err, "launch: work-group size %s exceeds the "
                          "device maximum %d",
                          gj_dims_str(b1, sizeof(b1), d->group, nd),
                          CPU_MAX_GROUP);
    }
  }
  pl->items = items;
  if (items == 0) return 0;
  for (i = 0; i < 3; i++) {
    l->global[i] = i < nd ? d->global[i] : 1;
    l->group[i] = i < nd ? d->group[i] : 1;
  }
  if (d->group[0] == 0) {
    if (p->uses_barrier) cpu_barrier_group(d, l->group);
    else cpu_default_group(d, l->group);
  }
  for (i = 0; i < 3; i++) {
    if (p->uses_barrier && l->global[i] % l->group[i] != 0)
      return gj_err_set(err, "launch: the kernel calls gpu.barrier() and must "
                        "be launched with global a multiple of group in every "
                        "dimension (global %s, group %s)",
                        gj_dims_str(b1, sizeof(b1), d->global, nd),
                        gj_dims_str(b2, sizeof(b2), l->group, nd));
    l->ngroups[i] = l->global[i] / l->group[i] +
                    (l->global[i] % l->group[i] != 0);
    groups *= l->ngroups[i];       /* <= items: no overflow */
  }
  pl->groups = groups;
  l->first = 0;
  l->last = groups;
  l->scratch = NULL;
  l->fault = NULL;
  l->record = record;
  pl->entry = p->entry;
  pl->scratch = 0;
  if (p->shared_bytes || p->uses_barrier)
    pl->scratch = CPU_SHARED_ROUND(p->shared_bytes) +
                  (size_t)p->frame_bytes * (size_t)(l->group[0] * l->group[1] * l->group[2]);
  return 0;
}

/* Run a planned launch (items > 0) to its end on the calling thread and
** the pool. */
static int cpu_run_plan(gj_bstate *st, cpu_plan *pl, void *args, gj_err *err)
{
  cpu_task t;
  int64_t fault = 0, gitems;
  gj_fault *record = pl->l.record;
  int interrupted = 0;
  pl->l.fault = &fault;
  t.entry = pl->entry;
  t.args = args;
  t.launch = &pl->l;
  t.scratch = pl->scratch;
  atomic_init(&t.oom, 0);
  if (pl->items >= CPU_SERIAL_ITEMS && pl->groups > 1) {
    /* chunks, checked for cancellation between them; a SIGINT stops it
    ** once it has run CPU_SIGINT_AFTER (a timeout's watchdog, when the
    ** kernel has one, reports it first) */
    gj_pool *pool = cpu_pool(st);
    gitems = pl->l.group[0] * pl->l.group[1] * pl->l.group[2];
    t.step = gitems >= CPU_CANCEL_ITEMS ? 1 : CPU_CANCEL_ITEMS / gitems;
    t.cancel = record ? &record->cancel : NULL;
    t.t0 = cpu_now();
    atomic_init(&t.sigstate, SIG_NONE);
    t.sigints = 0;
    if (pool && gj_pool_size(pool) > 1) gj_pool_run(pool, pl->groups, cpu_task_chunks, &t);
    else cpu_task_chunks(&t, 0, pl->groups);
    /* every chunk has returned: nobody installs the handler any more */
    if (atomic_load(&t.sigstate) == SIG_ON) {
      interrupted = gj_sigint_count() != t.sigints;
      gj_sigint_end();
    }
  } else {
    cpu_task_run(&t, 0, pl->groups);
  }
  pl->l.fault = NULL;
  if (atomic_load(&t.oom))
    return gj_err_set(err, "launch: out of memory for the work groups' shared "
                      "memory and state (%zu bytes per thread)", t.scratch);
  if (interrupted)
    return gj_err_set(err, "launch interrupted (Ctrl-C): no work group started "
                      "after the SIGINT");
  /* stopped (a timeout) or failed (assert, error): work items that
  ** returned early left others at a barrier; the core reports why */
  if (fault && !(record && (__atomic_load_n(&record->cancel, __ATOMIC_RELAXED) ||
                            __atomic_load_n(&record->fail, __ATOMIC_RELAXED))))
    return gj_err_set(err, "launch: the work items of a group stopped at "
                      "different gpu.barrier() calls, or some finished while "
                      "others waited at one: a barrier must be reached by "
                      "every work item of its group (control flow around it "
                      "must be the same for the whole group)");
  return 0;
}

/* A launch on a stream: the plan and a copy of the argument block, run by
** the stream's worker (cpu_stream.c). */
typedef struct cpu_sjob {
  gj_bstate *st;
  cpu_plan plan;
  uint64_t args[];             /* sig.argsize bytes (a multiple of 8) */
} cpu_sjob;

static int cpu_sjob_run(void *job, gj_err *err)
{
  cpu_sjob *j = job;
  return cpu_run_plan(j->st, &j->plan, j->args, err);
}

/* On the default stream: runs the kernel to its end (no `wait`: the pool's
** threads are the device, and the launch returns when they have
** finished).  On another stream: checks the shape now and posts the rest
** to the stream's worker. */
static int cpu_launch_run(gj_bstate *st, gj_program *p, gj_bstream *s,
                          const gj_dims *d, void *args, gj_fault *record,
                          gj_err *err)
{
  cpu_plan pl;
  cpu_sjob *j;
  if (cpu_plan_launch(p, d, record, &pl, err)) return -1;
  if (pl.items == 0) return 0;
  if (!s) return cpu_run_plan(st, &pl, args, err);
  j = malloc(sizeof(*j) + p->argsize);
  if (!j) return gj_err_set(err, "cpu: out of memory");
  j->st = st;
  j->plan = pl;
  memcpy(j->args, args, p->argsize);
  if (cpu_stream_post(s, cpu_sjob_run, free, j, err)) {
    free(j);
    return -1;
  }
  return 0;
}

/* -- memory -------------------------------------------------------------- */

static void *cpu_alloc(gj_bstate *st, int dev, size_t bytes, gj_err *err)
{
  void *p = NULL;
  if (dev != 0) {
    gj_err_set(err, "cpu: no device %d", dev);
    return NULL;
  }
  if (st->info.memory > 0 && bytes > (uint64_t)st->info.memory) {
    gj_err_set(err, "cpu: cannot allocate %zu bytes: the host has %lld bytes "
               "of memory", bytes, (long long)st->info.memory);
    return NULL;
  }
  /* 64 bytes: a cache line, and the widest vector (AVX-512). */
  if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
    gj_err_set(err, "cpu: out of memory allocating %zu bytes", bytes);
    return NULL;
  }
  return p;
}

static void cpu_free(gj_bstate *st, int dev, void *ptr)
{
  (void)st;
  (void)dev;
  free(ptr);
}

static int cpu_copy(gj_bstate *st, int dev, void *dst, const void *src,
                    size_t n, int dir, gj_err *err)
{
  (void)st;
  (void)dir;            /* host memory either way */
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  if (n == 0) return 0;
  if (!dst || !src) return gj_err_set(err, "cpu: copy with a null pointer");
  memcpy(dst, src, n);
  return 0;
}

static int cpu_sync(gj_bstate *st, int dev, gj_err *err)
{
  (void)st;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  return 0;             /* launches are synchronous */
}

const gj_backend gj_backend_cpu = {
  .name = "cpu",
  .open = cpu_open, .close = cpu_close, .ndevices = cpu_ndevices,
  .device_info = cpu_device_info, .job = cpu_job, .target = cpu_target,
  .load = cpu_load, .unload = cpu_unload,
  .launch = cpu_launch_run, .wait = cpu_stream_wait, .default_finishes = 1,
  .stream_new = cpu_stream_new, .stream_free = cpu_stream_free,
  .copy_async = cpu_stream_copy,
  .event_record = cpu_event_record, .event_query = cpu_event_query,
  .event_sync = cpu_event_sync, .event_wait = cpu_event_wait,
  .event_elapsed = cpu_event_elapsed, .event_free = cpu_event_free,
  .alloc = cpu_alloc, .free = cpu_free, .copy = cpu_copy, .sync = cpu_sync,
  /* cache_save, cache_load: none, the cache keeps the object file that
  ** load takes; host_shares, host_register, host_release: none, host
  ** memory is device memory (host_shared) */
};
