/*
** The opencl backend: kernels compiled to a program format the device
** accepts, built and run through the OpenCL API of whatever ICD loader the
** machine has (PoCL on a CPU-only machine).
**
** The API is loaded at run time: dlopen("libOpenCL.so.1") and dlsym of each
** entry point into a table (ocl_api in opencl_int.h), so the module loads
** and the cpu backend works where OpenCL is absent; `open` then fails with
** the reason.  Devices are every platform's devices, numbered in platform
** order.
**
** Program format, chosen per device from what it reports (ocl_device):
** - SPIR 1.2 bitcode where the device lists cl_khr_spir (PoCL): triple
**   spir64-unknown-unknown, global arrays in address space 1, shared
**   arrays in 3, private 0, a spir_kernel entry with clang's kernel-arg
**   metadata, built with "-x spir -spir-std=1.2".  LLVM 15 has no spir64
**   target: the pipeline optimizes without a target machine and the
**   bitcode is the artifact.
** - PTX text as the program binary where the platform is NVIDIA's.
** - SPIR-V where the device lists an IL version and not cl_khr_spir: the
**   SPIR module translated by llvm-spirv (targets/spirv.c), built with
**   clCreateProgramWithIL.
** - GPUJIT_OPENCL_FORMAT overrides the choice (choose_format).  A device
**   with none of them gets the reason from `job`.
** The code the backend generates (intrinsics, entry point, emit) is in
** targets/spir.c; programs and launches are in opencl_run.c.
**
** Memory.  The Lua side does pointer arithmetic on device pointers (a Lua
** table is passed as its buffer minus one element) and stores them in the
** argument block, so a device pointer must be a number, not a cl_mem.
** `alloc` returns a fake address ocl_addr(id) = (id << 40) + 2^39 for the
** allocation in slot id of st->bufs (slots are reused); any address within
** 2^39 bytes of it maps back to (cl_mem, byte offset), which is how launch
** and copy find their buffers.  Slot 0 is never used, so no valid address
** is near NULL; an address that maps to no live allocation is an error.
** A registration of host memory for a launch (opencl_host.c) is a slot
** too, so launch maps its address like an allocation's.
**
** Invariant: a gj_bstate belongs to one lua_State and is used by one thread
** at a time (launches are synchronous, API.md), so it needs no lock, except
** that `target`, `load` and the cache hooks may run on the context's
** compile worker (src/gj_bg.h, one at a time, ctx->compile_mu) while the
** owning thread launches: they use only the device's context (made ready
** under ocl_ready's lock) and the program they make.
*/
#include "opencl_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets/ptx.h"
#include "gj_target.h"

#define ADDR_SHIFT 40
#define ADDR_GUARD ((uint64_t)1 << 39)   /* also the largest allocation */
#define MAX_BUFS ((uint32_t)1 << 22)     /* ids stay below 2^23 */

/* -- Errors -------------------------------------------------------------- */

static const char *const errnames[] = {
  "CL_SUCCESS", "CL_DEVICE_NOT_FOUND", "CL_DEVICE_NOT_AVAILABLE",
  "CL_COMPILER_NOT_AVAILABLE", "CL_MEM_OBJECT_ALLOCATION_FAILURE",
  "CL_OUT_OF_RESOURCES", "CL_OUT_OF_HOST_MEMORY",
  "CL_PROFILING_INFO_NOT_AVAILABLE", "CL_MEM_COPY_OVERLAP",
  "CL_IMAGE_FORMAT_MISMATCH", "CL_IMAGE_FORMAT_NOT_SUPPORTED",
  "CL_BUILD_PROGRAM_FAILURE", "CL_MAP_FAILURE",
  "CL_MISALIGNED_SUB_BUFFER_OFFSET",
  "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
  "CL_COMPILE_PROGRAM_FAILURE", "CL_LINKER_NOT_AVAILABLE",
  "CL_LINK_PROGRAM_FAILURE", "CL_DEVICE_PARTITION_FAILED",
  "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
};

/* -30 .. -72, in order. */
static const char *const errnames30[] = {
  "CL_INVALID_VALUE", "CL_INVALID_DEVICE_TYPE", "CL_INVALID_PLATFORM",
  "CL_INVALID_DEVICE", "CL_INVALID_CONTEXT", "CL_INVALID_QUEUE_PROPERTIES",
  "CL_INVALID_COMMAND_QUEUE", "CL_INVALID_HOST_PTR", "CL_INVALID_MEM_OBJECT",
  "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", "CL_INVALID_IMAGE_SIZE",
  "CL_INVALID_SAMPLER", "CL_INVALID_BINARY", "CL_INVALID_BUILD_OPTIONS",
  "CL_INVALID_PROGRAM", "CL_INVALID_PROGRAM_EXECUTABLE",
  "CL_INVALID_KERNEL_NAME", "CL_INVALID_KERNEL_DEFINITION",
  "CL_INVALID_KERNEL", "CL_INVALID_ARG_INDEX", "CL_INVALID_ARG_VALUE",
  "CL_INVALID_ARG_SIZE", "CL_INVALID_KERNEL_ARGS",
  "CL_INVALID_WORK_DIMENSION", "CL_INVALID_WORK_GROUP_SIZE",
  "CL_INVALID_WORK_ITEM_SIZE", "CL_INVALID_GLOBAL_OFFSET",
  "CL_INVALID_EVENT_WAIT_LIST", "CL_INVALID_EVENT", "CL_INVALID_OPERATION",
  "CL_INVALID_GL_OBJECT", "CL_INVALID_BUFFER_SIZE", "CL_INVALID_MIP_LEVEL",
  "CL_INVALID_GLOBAL_WORK_SIZE", "CL_INVALID_PROPERTY",
  "CL_INVALID_IMAGE_DESCRIPTOR", "CL_INVALID_COMPILER_OPTIONS",
  "CL_INVALID_LINKER_OPTIONS", "CL_INVALID_DEVICE_PARTITION_COUNT",
  "CL_INVALID_PIPE_SIZE", "CL_INVALID_DEVICE_QUEUE", "CL_INVALID_SPEC_ID",
  "CL_MAX_SIZE_RESTRICTION_EXCEEDED",
};

const char *ocl_errname(cl_int code, char buf[32])
{
  int n0 = (int)(sizeof(errnames) / sizeof(errnames[0]));
  int n30 = (int)(sizeof(errnames30) / sizeof(errnames30[0]));
  if (code <= 0 && -code < n0) return errnames[-code];
  if (code <= -30 && -code - 30 < n30) return errnames30[-code - 30];
  if (code == CL_PLATFORM_NOT_FOUND_KHR) return "CL_PLATFORM_NOT_FOUND_KHR";
  snprintf(buf, 32, "error %d", (int)code);
  return buf;
}

void ocl_sigs_save(ocl_sigs *s)
{
  int i;
  for (i = 1; i < 32; i++) sigaction(i, NULL, &s->a[i]);
}

void ocl_sigs_restore(const ocl_sigs *s)
{
  int i;
  for (i = 1; i < 32; i++) {
    struct sigaction now;
    if (i == SIGKILL || i == SIGSTOP || i == SIGFPE) continue;
    if (sigaction(i, NULL, &now) != 0) continue;
    if (now.sa_handler != s->a[i].sa_handler || now.sa_flags != s->a[i].sa_flags)
      sigaction(i, &s->a[i], NULL);
  }
}

int ocl_fail(gj_err *err, const char *what, cl_int code)
{
  char b[32];
  return gj_err_set(err, "opencl: %s: %s", what, ocl_errname(code, b));
}

/* -- The host libm, for devices that run kernels in this process --------- */

/* Resolved once per open from the process (LuaJIT links libm): the
** functions LuaJIT's math library calls, so results match bit for bit. */
static int load_libm(gj_bstate *st, gj_err *err)
{
  static const char *const names[LIBM__N1] = {
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "pow"
  };
  void **t = calloc(LIBM__N, sizeof(void *));
  int i;
  if (!t) return gj_err_set(err, "opencl: out of memory");
  for (i = 0; i < LIBM__N1; i++) {
    char fname[16];
    snprintf(fname, sizeof(fname), "%sf", names[i]);
    t[i] = dlsym(RTLD_DEFAULT, names[i]);
    t[LIBM__N1 + i] = dlsym(RTLD_DEFAULT, fname);
    if (!t[i] || !t[LIBM__N1 + i]) {
      free(t);
      return gj_err_set(err, "opencl: libm function %s not found in the "
                        "process", names[i]);
    }
  }
  st->libm = (void *const *)t;
  return 0;
}

/* -- Devices ------------------------------------------------------------- */

static int dev_str(gj_bstate *st, cl_device_id d, cl_device_info what,
                   char *buf, size_t n)
{
  buf[0] = '\0';
  if (st->cl.GetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) return -1;
  buf[n - 1] = '\0';
  return 0;
}

/* Does the space-separated list contain word? */
static int has_word(const char *list, const char *word)
{
  size_t n = strlen(word);
  const char *p = list;
  while ((p = strstr(p, word)) != NULL) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
    p += n;
  }
  return 0;
}

static const char *const format_names[] = { "spir", "spirv", "ptx", "" };

/* The newest SPIR-V 1.x in a CL_DEVICE_IL_VERSION ("SPIR-V_1.0 SPIR-V_1.2"),
** -1 when it names none. */
static int spirv_minor(const char *il)
{
  const char *p = il;
  int best = -1;
  while ((p = strstr(p, "SPIR-V_1.")) != NULL) {
    int v = atoi(p + 9);
    if (v > best) best = v;
    p += 9;
  }
  return best;
}

/* The program format for a device (the top of this file): NVIDIA's takes
** PTX; others SPIR where they list cl_khr_spir (it needs no external tool,
** and on PoCL's CPU devices math stays bit-identical to the host's libm,
** targets/spir.c), else SPIR-V where they list an IL version.
** GPUJIT_OPENCL_FORMAT=spir|spirv|ptx asks for one; spirv on a device that
** takes only SPIR is translated back for it (spirv_via_spir). */
static void choose_format(ocl_device *d, int nvidia, int spir, const char *il)
{
  const char *want = getenv("GPUJIT_OPENCL_FORMAT");
  int minor = spirv_minor(il);
  d->format = OCL_NONE;
  if (!want || !*want) {
    d->format = nvidia ? OCL_PTX : spir ? OCL_SPIR :
                minor >= 0 ? OCL_SPIRV : OCL_NONE;
    if (d->format == OCL_NONE)
      snprintf(d->why, sizeof(d->why), "it takes neither SPIR, SPIR-V nor "
               "PTX");
  } else if (strcmp(want, "spirv") == 0) {
    if (minor >= 0 || spir) d->format = OCL_SPIRV;
    d->spirv_via_spir = minor < 0;
    if (minor < 0) minor = 0;
    if (d->format == OCL_NONE)
      snprintf(d->why, sizeof(d->why), "GPUJIT_OPENCL_FORMAT=spirv, and it "
               "lists no SPIR-V version (CL_DEVICE_IL_VERSION)");
  } else if (strcmp(want, "spir") == 0 || strcmp(want, "ptx") == 0) {
    int ptx = want[0] == 'p';
    if (ptx ? nvidia : spir) d->format = ptx ? OCL_PTX : OCL_SPIR;
    else
      snprintf(d->why, sizeof(d->why), "GPUJIT_OPENCL_FORMAT=%s, and it %s",
               want, ptx ? "is not NVIDIA's" : "does not list cl_khr_spir");
  } else {
    snprintf(d->why, sizeof(d->why), "GPUJIT_OPENCL_FORMAT=%.40s is not spir, "
             "spirv or ptx", want);
  }
  d->spirv_minor = minor;
}

static void describe(gj_bstate *st, ocl_device *d)
{
  gj_device_info *i = &d->info;
  cl_device_type type = 0;
  cl_ulong mem = 0;
  cl_uint cu = 0, bits = 64, ccmaj = 0, ccmin = 0;
  cl_ulong lmem = 0;
  size_t wg = 0, wi[3] = { 0, 0, 0 };
  char ext[4096], pname[128], il[256], pver[64], dver[64], drv[64];
  cl_device_id id = d->id;
  dev_str(st, id, CL_DEVICE_NAME, i->name, sizeof(i->name));
  dev_str(st, id, CL_DEVICE_VENDOR, i->vendor, sizeof(i->vendor));
  st->cl.GetDeviceInfo(id, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
  snprintf(i->type, sizeof(i->type), "%s",
           type & CL_DEVICE_TYPE_GPU ? "gpu" :
           type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "cpu");
  st->cl.GetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem), &mem, NULL);
  st->cl.GetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cu), &cu, NULL);
  st->cl.GetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(wg), &wg,
                       NULL);
  st->cl.GetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(wi), wi,
                       NULL);
  st->cl.GetDeviceInfo(id, CL_DEVICE_ADDRESS_BITS, sizeof(bits), &bits, NULL);
  st->cl.GetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(lmem), &lmem,
                       NULL);
  i->memory = (int64_t)mem;
  i->compute_units = (int)cu;
  i->max_group = (int64_t)wg;
  for (int k = 0; k < 3; k++) i->max_group_dim[k] = (int64_t)wi[k];
  d->addr_bits = (int)bits;
  d->local_mem = (uint64_t)lmem;
  pname[0] = '\0';
  st->cl.GetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof(pname), pname,
                         NULL);
  pname[sizeof(pname) - 1] = '\0';
  pver[0] = '\0';
  st->cl.GetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof(pver), pver,
                         NULL);
  pver[sizeof(pver) - 1] = '\0';
  dev_str(st, id, CL_DEVICE_VERSION, dver, sizeof(dver));
  dev_str(st, id, CL_DRIVER_VERSION, drv, sizeof(drv));
  /* A device compiler of another version may build other binaries. */
  snprintf(d->target_id, sizeof(d->target_id), "%s|%s|%s|%s|%s", pname, pver,
           i->name, dver, drv);
  dev_str(st, id, CL_DEVICE_EXTENSIONS, ext, sizeof(ext));
  il[0] = '\0';
  dev_str(st, id, CL_DEVICE_IL_VERSION, il, sizeof(il));
  if (strstr(pname, "NVIDIA")) {
    st->cl.GetDeviceInfo(id, 0x4000 /* COMPUTE_CAPABILITY_MAJOR_NV */,
                         sizeof(ccmaj), &ccmaj, NULL);
    st->cl.GetDeviceInfo(id, 0x4001 /* COMPUTE_CAPABILITY_MINOR_NV */,
                         sizeof(ccmin), &ccmin, NULL);
    d->sm = (int)(ccmaj * 10 + ccmin);
  }
  choose_format(d, strstr(pname, "NVIDIA") != NULL,
                has_word(ext, "cl_khr_spir"), il);
  snprintf(i->format, sizeof(i->format), "%s", format_names[d->format]);
  /* PoCL's CPU devices run kernels on threads of this process and link
  ** them against its libraries. */
  d->is_pocl = strstr(pname, "Portable Computing Language") != NULL;
  d->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  d->in_process = d->is_cpu && d->is_pocl;
  d->host_libm = d->format == OCL_SPIR && d->in_process;
  i->host_math = d->host_libm;
  d->starts_on_enqueue = d->in_process;
  /* a GPU is preferred to the cpu backend, which beats OpenCL's CPUs */
  i->rank = (type & CL_DEVICE_TYPE_GPU) ? GJ_RANK_OPENCL_GPU : 0;
}

static int list_devices(gj_bstate *st, gj_err *err)
{
  cl_platform_id plats[16];
  cl_uint np = 0, p;
  cl_int rc = st->cl.GetPlatformIDs(16, plats, &np);
  if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && np == 0))
    return gj_err_set(err, "opencl: no OpenCL platform is installed (an ICD "
                      "such as pocl-opencl-icd)");
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetPlatformIDs", rc);
  if (np > 16) np = 16;
  for (p = 0; p < np; p++) {
    cl_device_id ids[64];
    cl_uint nd = 0, k;
    if (st->cl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, ids, &nd) !=
        CL_SUCCESS)
      continue;          /* CL_DEVICE_NOT_FOUND: a platform without devices */
    if (nd > 64) nd = 64;
    for (k = 0; k < nd; k++) {
      ocl_device *n = realloc(st->devs, (size_t)(st->ndevs + 1) * sizeof(*n));
      if (!n) return gj_err_set(err, "opencl: out of memory");
      st->devs = n;
      n = &st->devs[st->ndevs++];
      memset(n, 0, sizeof(*n));
      n->platform = plats[p];
      n->id = ids[k];
      describe(st, n);
    }
  }
  if (st->ndevs == 0)
    return gj_err_set(err, "opencl: the OpenCL platforms have no device");
  return 0;
}

static void ocl_close(gj_bstate *st);

/* Device discovery is serialized process-wide: PoCL sets its devices up
** lazily in the first clGetPlatformIDs/clGetDeviceIDs, and a second
** thread's clGetDeviceInfo during that setup read a half-made device name
** (a crash in strlen; spec/c/multistate.c with several states opening the
** backend at once).  Once a state has its devices, OpenCL calls are
** thread-safe (OpenCL 1.2, appendix A.2); each state has its own contexts,
** queues and kernels. */
static pthread_mutex_t ocl_discovery_mu = PTHREAD_MUTEX_INITIALIZER;

static int ocl_open(gj_bstate **out, gj_err *err)
{
  int rc;
  gj_bstate *st;
  *out = NULL;
  st = calloc(1, sizeof(*st));
  if (!st) return gj_err_set(err, "opencl: out of memory");
  st->lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!st->lib) {
    const char *why = dlerror();
    gj_err_set(err, "opencl: cannot load libOpenCL.so.1 (install an OpenCL "
               "ICD loader, e.g. ocl-icd-libopencl1): %s", why ? why : "");
    ocl_close(st);
    return -1;
  }
#define OCL_LOAD(n)                                                      \
  if (!(st->cl.n = (__typeof__(cl##n) *)dlsym(st->lib, "cl" #n))) {      \
    gj_err_set(err, "opencl: libOpenCL.so.1 has no cl" #n);              \
    ocl_close(st);                                                       \
    return -1;                                                           \
  }
  OCL_FUNCS(OCL_LOAD)
#undef OCL_LOAD
  st->CreateProgramWithIL = (__typeof__(clCreateProgramWithIL) *)dlsym(
    st->lib, "clCreateProgramWithIL");
  pthread_mutex_lock(&ocl_discovery_mu);
  {
    ocl_sigs sigs;
    ocl_sigs_save(&sigs);
    rc = list_devices(st, err);
    ocl_sigs_restore(&sigs);
  }
  pthread_mutex_unlock(&ocl_discovery_mu);
  /* no gj_target_init: LLVM's targets are the compile's (gj_target_machine
  ** initializes them), not the runtime's */
  if (rc != 0 || load_libm(st, err) != 0) {
    ocl_close(st);
    return -1;
  }
  st->nbufs = 1;         /* slot 0 is never handed out */
  st->gen = gj_fork_gen();
  *out = st;
  return 0;
}

/* Programs must have been unloaded before (the core unloads every kernel
** before it closes a backend). */
static void ocl_close(gj_bstate *st)
{
  uint32_t i;
  int d;
  if (!st) return;
  if (OCL_IN_CHILD(st)) {     /* the parent's objects: PoCL cannot run here */
    free(st);
    return;
  }
  for (i = 1; i < st->nbufs; i++)
    if (st->bufs[i].mem) st->cl.ReleaseMemObject(st->bufs[i].mem);
  for (d = 0; d < st->ndevs; d++) {
    if (st->devs[d].queue) st->cl.ReleaseCommandQueue(st->devs[d].queue);
    if (st->devs[d].ctx) st->cl.ReleaseContext(st->devs[d].ctx);
  }
  free(st->bufs);
  free(st->regs);
  free(st->devs);
  free((void *)st->libm);
  /* The library stays loaded: ICDs (PoCL included) keep threads and
  ** atexit handlers that must not outlive their code. */
  free(st);
}

static int ocl_ndevices(gj_bstate *st)
{
  return st->ndevs;
}

static int ocl_device_info(gj_bstate *st, int dev, gj_device_info *out)
{
  if (dev < 0 || dev >= st->ndevs) return -1;
  *out = st->devs[dev].info;
  return 0;
}

/* load runs on the compile worker (gj_bg.h) while the owning thread may
** launch or allocate: the device is made ready once, under this lock, and
** d->queue is published last (release; the fast path acquires it). */
static pthread_mutex_t ocl_ready_mu = PTHREAD_MUTEX_INITIALIZER;

int ocl_forked(gj_bstate *st, gj_err *err)
{
  if (!OCL_IN_CHILD(st)) return 0;
  return gj_err_set(err, "opencl: this process is a fork() child of the "
                    "process that opened the OpenCL platform, and PoCL's "
                    "threads do not survive fork(): use opencl in the parent, "
                    "or in a new process (fork and exec), or the cpu backend "
                    "in the child");
}

int ocl_ready(gj_bstate *st, int dev, gj_err *err)
{
  ocl_device *d;
  cl_command_queue q;
  cl_int rc = CL_SUCCESS;
  const char *what = NULL;
  if (ocl_forked(st, err)) return -1;
  if (dev < 0 || dev >= st->ndevs)
    return gj_err_set(err, "opencl: no device %d", dev);
  d = &st->devs[dev];
  if (__atomic_load_n(&d->queue, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_lock(&ocl_ready_mu);
  if (!d->queue) {
    if (!d->ctx) {
      d->ctx = st->cl.CreateContext(NULL, 1, &d->id, NULL, NULL, &rc);
      if (!d->ctx) what = "clCreateContext";
    }
    if (d->ctx) {
      q = st->cl.CreateCommandQueue(d->ctx, d->id, 0, &rc);
      if (q) __atomic_store_n(&d->queue, q, __ATOMIC_RELEASE);
      else what = "clCreateCommandQueue";
    }
  }
  pthread_mutex_unlock(&ocl_ready_mu);
  return what ? ocl_fail(err, what, rc) : 0;
}

/* -- Compile job --------------------------------------------------------- */

static int ocl_job(gj_bstate *st, int dev, gj_job *j, gj_err *err)
{
  ocl_device *d;
  if (dev < 0 || dev >= st->ndevs)
    return gj_err_set(err, "opencl: no device %d", dev);
  d = &st->devs[dev];
  memset(j, 0, sizeof(*j));
  snprintf(j->target_id, sizeof(j->target_id), "%s", d->target_id);
  j->as_global = 1;
  j->as_shared = 3;
  j->as_local = 0;
  j->serial_groups = 0;
  j->join_barriers = d->is_pocl;   /* a PoCL bug's workaround (gj_job.h) */
  j->block_by_address = d->in_process;
  /* A GPU's 64-bit integer ops are two instructions or more.  PoCL's CPU
  ** device was not faster with 32-bit indices (bench/lnum.lua: the blur
  ** 1.5x slower, matmul 1.5x faster; each load's index is widened per
  ** lane), so CPU devices keep 64 bits. */
  j->narrow_ints = !d->is_cpu;
  j->codegen_opt = LLVMCodeGenLevelDefault;
  j->reloc = LLVMRelocDefault;
  j->code_model = LLVMCodeModelDefault;
  switch (d->format) {
  case OCL_SPIR:
  case OCL_SPIRV:
    /* The device's compiler optimizes again for its own target (PoCL:
    ** O3 and vectorization across work items), so this only inlines and
    ** cleans up, plus indvars, which turns `%` of indices the ids' !range
    ** proves non-negative into masks and remainders without the floored
    ** modulo's sign fix-up (targets/spir.c).  No vectorizer: without a
    ** target the SLP vectorizer turns scalar code (the entry's bounds test)
    ** into short vectors, which PoCL's work-item loop vectorizer then fails
    ** on (saxpy ran 1.9x slower). */
    snprintf(j->triple, sizeof(j->triple), "%s",
             d->addr_bits == 32 ? "spir-unknown-unknown"
                                : "spir64-unknown-unknown");
    snprintf(j->datalayout, sizeof(j->datalayout), "%s%s",
             d->addr_bits == 32 ? "e-p:32:32-i64:64" : "e-i64:64",
             "-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256"
             "-v512:512-v1024:1024");
    j->intrinsics_ir = d->host_libm ? ocl_spir_hostlibm_ir
                                    : ocl_spir_intrinsics_ir;
    snprintf(j->passes, sizeof(j->passes), "always-inline,function(sroa,"
             "early-cse<memssa>,instcombine,simplifycfg,gvn,sccp,instcombine,"
             "simplifycfg,%sinstcombine,adce),globaldce",
             d->format == OCL_SPIR ? "loop(indvars)," : "");
    snprintf(j->format, sizeof(j->format), "%s", format_names[d->format]);
    if (d->format == OCL_SPIR) return 0;
    /* SPIR-V: no indvars, whose closed forms of loop sums compute in
    ** integers of odd widths (i65), which SPIR-V has not; the translator's
    ** options in features (targets/spirv.c), and the translator itself in
    ** the key. */
    if (ocl_spirv_find(&st->spirv, err) != 0)
      return gj_err_prefix(err, "device %d (%s): ", dev, d->info.name);
    snprintf(j->features, sizeof(j->features), "--spirv-max-version=1.%d",
             d->spirv_minor);
    snprintf(j->target_id, sizeof(j->target_id), "%.200s|llvm-spirv %s%s",
             d->target_id, st->spirv.id, d->spirv_via_spir ? "|via SPIR" : "");
    return 0;
  case OCL_PTX:
    j->intrinsics_ir = gj_ptx_ir_base;
    return gj_ptx_job(j, d->sm, err);
  case OCL_NONE:
    break;
  }
  return gj_err_set(err, "opencl: device %d (%s) is not supported: %s",
                    dev, d->info.name, d->why);
}

/* -- Memory -------------------------------------------------------------- */

static void *ocl_addr(uint32_t id)
{
  return (void *)(uintptr_t)(((uint64_t)id << ADDR_SHIFT) + ADDR_GUARD);
}

int ocl_map(gj_bstate *st, int dev, const void *p, cl_mem *mem,
            int64_t *off, size_t *size, gj_err *err)
{
  uint64_t a = (uint64_t)(uintptr_t)p;
  uint64_t id = a >> ADDR_SHIFT;
  const ocl_buf *b;
  *mem = NULL;
  *off = 0;
  *size = 0;
  if (!p) return 0;
  b = id > 0 && id < st->nbufs ? &st->bufs[id] : NULL;
  if (!b || !b->mem)
    return gj_err_set(err, "opencl: %p is not the address of a live device "
                      "allocation", p);
  if (b->dev != dev)
    return gj_err_set(err, "opencl: %p is memory of device %d, not of device "
                      "%d", p, b->dev, dev);
  *mem = b->mem;
  *off = (int64_t)(a - (id << ADDR_SHIFT)) - (int64_t)ADDR_GUARD;
  *size = b->size;
  return 0;
}

void *ocl_buf_add(gj_bstate *st, int dev, cl_mem_flags flags, void *host,
                  size_t bytes, gj_err *err)
{
  ocl_device *d;
  cl_mem mem;
  cl_int rc;
  uint32_t id;
  if (ocl_ready(st, dev, err) != 0) return NULL;
  d = &st->devs[dev];
  if (bytes >= ADDR_GUARD ||
      (d->info.memory > 0 && bytes > (uint64_t)d->info.memory)) {
    gj_err_set(err, "opencl: cannot allocate %zu bytes: device %d has %lld "
               "bytes of memory", bytes, dev, (long long)d->info.memory);
    return NULL;
  }
  if (st->free_head == 0 && st->nbufs >= st->capbufs) {
    uint32_t cap = st->capbufs ? 2 * st->capbufs : 64;
    ocl_buf *n;
    if (cap > MAX_BUFS) {
      gj_err_set(err, "opencl: too many live allocations (%u)", MAX_BUFS);
      return NULL;
    }
    n = realloc(st->bufs, cap * sizeof(*n));
    if (!n) {
      gj_err_set(err, "opencl: out of memory");
      return NULL;
    }
    st->bufs = n;
    st->capbufs = cap;
  }
  mem = st->cl.CreateBuffer(d->ctx, flags, bytes ? bytes : 1, host, &rc);
  if (!mem) {
    char b[32];
    gj_err_set(err, "opencl: clCreateBuffer of %zu bytes: %s", bytes,
               ocl_errname(rc, b));
    return NULL;
  }
  if (st->free_head) {
    id = st->free_head;
    st->free_head = st->bufs[id].next_free;
  } else {
    id = st->nbufs++;
  }
  memset(&st->bufs[id], 0, sizeof(st->bufs[id]));
  st->bufs[id].mem = mem;
  st->bufs[id].size = bytes;
  st->bufs[id].dev = dev;
  return ocl_addr(id);
}

ocl_buf *ocl_buf_at(gj_bstate *st, int dev, const void *p)
{
  uint64_t id = (uint64_t)(uintptr_t)p >> ADDR_SHIFT;
  ocl_buf *b;
  if (id == 0 || id >= st->nbufs || p != ocl_addr((uint32_t)id)) return NULL;
  b = &st->bufs[id];
  return b->mem && b->dev == dev ? b : NULL;
}

void ocl_buf_drop(gj_bstate *st, ocl_buf *b)
{
  st->cl.ReleaseMemObject(b->mem);
  b->mem = NULL;
  b->next_free = st->free_head;
  st->free_head = (uint32_t)(b - st->bufs);
}

static void *ocl_alloc(gj_bstate *st, int dev, size_t bytes, gj_err *err)
{
  return ocl_buf_add(st, dev, CL_MEM_READ_WRITE, NULL, bytes, err);
}

static void ocl_free(gj_bstate *st, int dev, void *ptr)
{
  /* Only an address that alloc returned frees anything: free cannot
  ** report an error, so anything else is ignored (a registration of host
  ** memory included: host_release releases it). */
  ocl_buf *b;
  if (OCL_IN_CHILD(st)) return;   /* left to the parent (ocl_forked) */
  b = ocl_buf_at(st, dev, ptr);
  if (b && !b->reg) ocl_buf_drop(st, b);
}

int ocl_copy_on(gj_bstate *st, int dev, cl_command_queue q, int blocking,
                void *dst, const void *src, size_t n, int dir, gj_err *err)
{
  const void *dptr = dir == GJ_COPY_TO_DEVICE ? dst : src;
  cl_mem mem;
  int64_t off;
  size_t size;
  cl_int rc;
  if (ocl_ready(st, dev, err) != 0) return -1;
  if (n == 0) return 0;
  if (!dst || !src) return gj_err_set(err, "opencl: copy with a null pointer");
  if (ocl_map(st, dev, dptr, &mem, &off, &size, err) != 0) return -1;
  if (off < 0 || (uint64_t)off > size || n > size - (uint64_t)off)
    return gj_err_set(err, "opencl: copy of %zu bytes at offset %lld is "
                      "outside the allocation of %zu bytes", n,
                      (long long)off, size);
  if (!q) q = st->devs[dev].queue;
  if (dir == GJ_COPY_TO_DEVICE)
    rc = st->cl.EnqueueWriteBuffer(q, mem, blocking ? CL_TRUE : CL_FALSE,
                                   (size_t)off, n, src, 0, NULL, NULL);
  else
    rc = st->cl.EnqueueReadBuffer(q, mem, blocking ? CL_TRUE : CL_FALSE,
                                  (size_t)off, n, dst, 0, NULL, NULL);
  if (rc != CL_SUCCESS)
    return ocl_fail(err, dir == GJ_COPY_TO_DEVICE ? "clEnqueueWriteBuffer"
                                                  : "clEnqueueReadBuffer", rc);
  return 0;
}

static int ocl_copy(gj_bstate *st, int dev, void *dst, const void *src,
                    size_t n, int dir, gj_err *err)
{
  return ocl_copy_on(st, dev, NULL, 1, dst, src, n, dir, err);
}

static int ocl_sync(gj_bstate *st, int dev, gj_err *err)
{
  cl_int rc;
  if (ocl_ready(st, dev, err) != 0) return -1;
  rc = st->cl.Finish(st->devs[dev].queue);
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, "clFinish", rc);
}

/* The job's program format (ocl_job, from the device, GPUJIT_OPENCL_FORMAT)
** and its triple (a plugin may retarget it) choose the target. */
static const gj_codegen *ocl_target(gj_bstate *st, const gj_job *job,
                                    void **ts)
{
  *ts = NULL;
  if (strncmp(job->triple, "nvptx", 5) == 0) return &gj_codegen_ocl_ptx;
  if (strcmp(job->format, "spirv") == 0) {
    *ts = &st->spirv;
    return &gj_codegen_spirv;
  }
  return &gj_codegen_spir;
}

const gj_backend gj_backend_opencl = {
  .name = "opencl",
  .open = ocl_open, .close = ocl_close, .ndevices = ocl_ndevices,
  .device_info = ocl_device_info, .job = ocl_job,
  .target = ocl_target, .load = ocl_load, .unload = ocl_unload,
  .launch = ocl_launch, .wait = ocl_wait,
  .stream_new = ocl_stream_new, .stream_free = ocl_stream_free,
  .copy_async = ocl_stream_copy,
  .event_record = ocl_event_record, .event_query = ocl_event_query,
  .event_sync = ocl_event_sync, .event_wait = ocl_event_wait,
  .event_elapsed = ocl_event_elapsed, .event_free = ocl_event_free,
  .alloc = ocl_alloc, .free = ocl_free, .copy = ocl_copy, .sync = ocl_sync,
  .cache_save = ocl_cache_save, .cache_load = ocl_cache_load,
  .host_shares = ocl_host_shares, .host_register = ocl_host_register,
  .host_release = ocl_host_release,
};
