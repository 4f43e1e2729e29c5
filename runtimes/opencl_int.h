/*
** Internal to the opencl runtime: what opencl.c, opencl_host.c and
** opencl_run.c share (its targets' side of the contract is
** targets/spir.h).  The design is described at the top of opencl.c.
*/
#ifndef GJ_OPENCL_INT_H
#define GJ_OPENCL_INT_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS   /* clCreateCommandQueue */
#include <CL/cl.h>
#include <CL/cl_ext.h>      /* CL_PLATFORM_NOT_FOUND_KHR */

#include <signal.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "gj_backend.h"
#include "gj_fork.h"
#include "../targets/spir.h"

/* -- The OpenCL API, loaded at run time ----------------------------------- */

/* Every entry point the backend calls.  The table's fields get the types
** that <CL/cl.h> declares, so a call through it is checked like a direct
** call; the module never links libOpenCL. */
#define OCL_FUNCS(X)                                                     \
  X(GetPlatformIDs) X(GetPlatformInfo) X(GetDeviceIDs) X(GetDeviceInfo)  \
  X(CreateContext) X(ReleaseContext) X(CreateCommandQueue)               \
  X(ReleaseCommandQueue) X(CreateBuffer) X(ReleaseMemObject)             \
  X(EnqueueReadBuffer) X(EnqueueWriteBuffer) X(CreateProgramWithBinary)  \
  X(BuildProgram) X(GetProgramBuildInfo) X(GetProgramInfo)               \
  X(ReleaseProgram) X(CreateKernel) X(ReleaseKernel) X(SetKernelArg)     \
  X(GetKernelInfo) X(GetKernelWorkGroupInfo) X(EnqueueNDRangeKernel)     \
  X(Finish) X(Flush) X(GetEventInfo) X(ReleaseEvent)                    \
  X(EnqueueMapBuffer) X(EnqueueUnmapMemObject)                          \
  X(EnqueueMarkerWithWaitList) X(EnqueueBarrierWithWaitList)             \
  X(WaitForEvents) X(GetEventProfilingInfo)

typedef struct ocl_api {
#define OCL_FIELD(n) __typeof__(cl##n) *n;
  OCL_FUNCS(OCL_FIELD)
#undef OCL_FIELD
} ocl_api;

/* -- Devices and the program formats they take ---------------------------- */

typedef enum ocl_format {
  OCL_SPIR,          /* SPIR 1.2 LLVM bitcode (cl_khr_spir), e.g. PoCL */
  OCL_SPIRV,         /* SPIR-V through clCreateProgramWithIL */
  OCL_PTX,           /* PTX text as the program binary (NVIDIA's OpenCL) */
  OCL_NONE           /* none of them (OpenCL C only): unsupported */
} ocl_format;

typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  gj_device_info info;
  ocl_format format;
  char why[160];           /* OCL_NONE: what the device would need */
  int addr_bits;           /* CL_DEVICE_ADDRESS_BITS */
  uint64_t local_mem;      /* CL_DEVICE_LOCAL_MEM_SIZE, bytes (0: unknown) */
  /* The device runs kernels on threads of this process (PoCL's CPU
  ** devices): kernels take their argument block by its host address
  ** (gj_job.block_by_address), the launch keeps the block until the
  ** kernel has run (`block`, streams' arenas in opencl_run.c). */
  int in_process;
  /* in_process, and the format is SPIR: its kernels may call the host's
  ** libm, which makes math bit-identical to LuaJIT's (targets/spir.c). */
  int host_libm;
  int is_pocl;             /* the platform is PoCL (Portable Computing
                           ** Language): gj_job.join_barriers */
  int is_cpu;              /* CL_DEVICE_TYPE_CPU: gj_job.narrow_ints off */
  /* Commands start as they are enqueued, without a clFlush: PoCL's CPU
  ** devices submit each command to their workers in clEnqueue* (checked on
  ** PoCL 3.1: a stream launch of a 2 s kernel had finished after 3 s of
  ** host sleep with no clFlush; streams_spec's overlap spec relies on it).
  ** Launches and copies on a stream flush only on other devices; a clFlush
  ** there cost as much as the enqueue itself (bench/stream_overhead.lua). */
  int starts_on_enqueue;
  int sm;                  /* OCL_PTX: compute capability, e.g. 86 */
  int spirv_minor;         /* OCL_SPIRV: the newest SPIR-V 1.x it takes */
  /* OCL_SPIRV chosen by GPUJIT_OPENCL_FORMAT for a device that takes SPIR
  ** and not SPIR-V: the translator turns the SPIR-V back into SPIR for it
  ** (targets/spirv.c), which is how the SPIR-V path is tested on PoCL. */
  int spirv_via_spir;
  char target_id[256];     /* the job's: platform, device, driver versions */
  /* CL_DEVICE_HOST_UNIFIED_MEMORY, asked on first use (opencl_host.c):
  ** 0 not asked yet, 1 no, 2 yes. */
  int host_unified;
  cl_context ctx;          /* made on first use, with queue */
  cl_command_queue queue;  /* the default stream */
  /* in_process: the argument block of the launch on queue (one at a time,
  ** see pending), which the kernel reads while it runs */
  uint64_t block[OCL_BLOCK_MAX];
  /* The launch on queue that ocl_wait finishes and whose record it reads
  ** back (p NULL: none).  One at a time: ocl_launch waits for a pending
  ** one before it enqueues. */
  struct {
    gj_program *p;
    gj_fault *fault;       /* the host record, or NULL */
    cl_event ev;           /* a cancellable launch's event, or NULL */
  } pending;
} ocl_device;

/* One allocation, or one registration of host memory (opencl_host.c):
** its fake device address is ocl_addr(id) (opencl.c). */
typedef struct ocl_buf {
  cl_mem mem;              /* NULL: the slot is free */
  size_t size;
  int dev;
  uint32_t next_free;      /* free slots form a list through this */
  /* Registrations only (reg != 0): the host memory (NULL for 0 bytes),
  ** how many registrations share the buffer, and whether a launch may
  ** write it (host_release then maps it to make the writes visible). */
  int reg, written;
  void *host;
  uint32_t refs;
} ocl_buf;

struct gj_bstate {
  void *lib;               /* dlopen("libOpenCL.so.1") */
  ocl_api cl;
  ocl_device *devs;
  int ndevs;
  ocl_buf *bufs;           /* by id; slot 0 is never used */
  uint32_t nbufs, capbufs, free_head;
  void **regs;             /* addresses of the live registrations */
  uint32_t nregs, capregs;
  void *const *libm;       /* the host libm table (LIBM_* order) */
  /* clCreateProgramWithIL (OpenCL 2.1): NULL where the loader lacks it. */
  __typeof__(clCreateProgramWithIL) *CreateProgramWithIL;
  /* The SPIR-V translator, found on first use: the SPIR-V target's state
  ** (targets/spir.h), which ocl_load also runs for spirv_via_spir. */
  ocl_spirv_tool spirv;
  /* gj_fork_gen() at open: in a fork() child of the process that opened
  ** the platform, PoCL's threads are gone (gj_fork.h), and every call
  ** that would use them fails with ocl_forked's error instead of waiting
  ** for ever; what would release OpenCL objects leaves them. */
  unsigned gen;
};

/* -- opencl.c --------------------------------------------------------------- */

/* "CL_INVALID_WORK_GROUP_SIZE" for -54, "error -1234" when unknown (buf). */
const char *ocl_errname(cl_int code, char buf[32]);
/* err = "opencl: <what>: <name of code>"; returns -1. */
int ocl_fail(gj_err *err, const char *what, cl_int code);
/* The process's signal actions (1..31), kept across a call into the
** OpenCL platform: PoCL sets LLVM up when it finds its devices and builds
** a program, and LLVM installs its crash, interrupt and info handlers over
** the host's (SIGINT: LuaJIT's Ctrl-C, or whatever the host set).
** ocl_sigs_restore puts back every action that changed but SIGFPE's, which
** is PoCL's own, for its kernels.  A host thread that changes an action
** while the call runs may see it put back. */
typedef struct ocl_sigs { struct sigaction a[32]; } ocl_sigs;
void ocl_sigs_save(ocl_sigs *s);
void ocl_sigs_restore(const ocl_sigs *s);
/* 1 when this process is a fork() child of the one that opened st. */
#define OCL_IN_CHILD(st) ((st)->gen != gj_fork_gen())
/* 0, or -1 with err saying that OpenCL cannot be used in this fork()
** child (OCL_IN_CHILD). */
int ocl_forked(gj_bstate *st, gj_err *err);
/* The device's context and queue, made on first use (ocl_forked first). */
int ocl_ready(gj_bstate *st, int dev, gj_err *err);
/* A device address -> its allocation and the byte offset into it (which
** may be negative: a Lua table is passed as its buffer minus one element).
** p == NULL gives *mem = NULL.  -1 with err when p maps to no live
** allocation of device dev. */
int ocl_map(gj_bstate *st, int dev, const void *p, cl_mem *mem,
            int64_t *off, size_t *size, gj_err *err);

/* A new buffer of `bytes` (at least 1) on device dev, made with
** clCreateBuffer(flags, host), in a free slot: its address, or NULL with
** err. */
void *ocl_buf_add(gj_bstate *st, int dev, cl_mem_flags flags, void *host,
                  size_t bytes, gj_err *err);
/* The slot whose address is exactly p (what ocl_buf_add returned), of
** device dev, live; or NULL. */
ocl_buf *ocl_buf_at(gj_bstate *st, int dev, const void *p);
/* Release b's buffer and free its slot. */
void ocl_buf_drop(gj_bstate *st, ocl_buf *b);

/* -- opencl_host.c ---------------------------------------------------------- */

int ocl_host_shares(gj_bstate *st, int dev);
void *ocl_host_register(gj_bstate *st, int dev, void *host, size_t bytes,
                        int written, gj_err *err);
int ocl_host_release(gj_bstate *st, int dev, void *addr, gj_err *err);

/* -- opencl_run.c ----------------------------------------------------------- */

int ocl_load(gj_bstate *st, int dev, const char *art, size_t len,
             const gj_sig *sig, gj_program **out, gj_err *err);
void ocl_unload(gj_bstate *st, gj_program *p);
/* Enqueues on the default stream (the device's queue) and returns;
** ocl_wait finishes the queue and reads the record back. */
int ocl_launch(gj_bstate *st, gj_program *p, gj_bstream *s, const gj_dims *dims,
               void *args, gj_fault *fault, gj_err *err);
int ocl_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed, gj_err *err);
/* A copy (gj_backend.copy) on queue q (NULL: the device's default one),
** blocking or not (then src or dst must stay valid until q finishes). */
int ocl_copy_on(gj_bstate *st, int dev, cl_command_queue q, int blocking,
                void *dst, const void *src, size_t n, int dir, gj_err *err);
/* gj_backend.copy_async: ocl_copy_on the stream's queue, not blocking. */
int ocl_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                    const void *src, size_t n, int dir, gj_err *err);
/* Events: a marker on the stream's queue (queues of streams profile, for
** event_elapsed). */
int ocl_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                     gj_err *err);
int ocl_event_query(gj_bstate *st, gj_bevent *e, gj_err *err);
int ocl_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err);
int ocl_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                   gj_err *err);
int ocl_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                      gj_err *err);
void ocl_event_free(gj_bstate *st, gj_bevent *e);
/* A stream: a command queue of its own on the device's context
** (opencl_stream.c).  The stream's queue is made without profiling, which
** cost a stream launch about 0.3 us of PoCL's time on each enqueue
** (bench/stream_overhead.lua); the stream's first event moves it to a
** queue with profiling (events time the work between them), which starts
** after everything on the first. */
/* in_process devices: the argument blocks of a stream's launches, which
** the kernels read while they run, in chunks that never move, kept until
** the stream's wait and then reused. */
#define OCL_BLK_CHUNK (4 * OCL_BLOCK_MAX)
typedef struct ocl_blk_chunk {
  struct ocl_blk_chunk *next;
  unsigned used;           /* slots taken since the wait */
  uint64_t v[OCL_BLK_CHUNK];
} ocl_blk_chunk;

struct gj_bstream {
  int dev;
  int profiling;           /* q has CL_QUEUE_PROFILING_ENABLE */
  cl_command_queue q;
  ocl_blk_chunk *chunks, *cur; /* all, and the one blocks are taken from */
  const uint64_t *last;    /* the last launch's block since the wait */
  unsigned last_n;         /* its slots */
};
int ocl_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err);
void ocl_stream_free(gj_bstate *st, int dev, gj_bstream *s);
/* Where a launch on s finds block blk (n slots): the last launch's when it
** is the same, else a copy in s's chunks; NULL: out of memory. */
const uint64_t *ocl_stream_block(gj_bstream *s, const uint64_t *blk,
                                 unsigned n);
/* Every launch on s has finished (ocl_wait): its chunks are free again. */
void ocl_stream_blocks_reset(gj_bstream *s);
/* The disk cache keeps a program's device binary (CL_PROGRAM_BINARIES),
** so that the next process skips the device compiler's build. */
int ocl_cache_save(gj_bstate *st, gj_program *p, char **out, size_t *len,
                   gj_err *err);
int ocl_cache_load(gj_bstate *st, int dev, const char *bin, size_t len,
                   const gj_sig *sig, gj_program **out, gj_err *err);

#endif
