/*
** The two interfaces every backend implements: the core's contract with
** its backends, a public header of the core.  A device runtime
** (gj_backend) opens devices, gives the compile job for one, chooses the
** compile target (gj_codegen) for the job, and loads and launches what the
** target emitted.
**
** The core never asks which backend it talks to: what differs between
** targets is data in the compile job (gj_job) and the functions below.
** A backend lives outside src/, in two rooms:
**   targets/   what compiles: the gj_codegen tables (`wrap`, the optional
**              `finish_module` and `finish_ir`, `emit`), the job's
**              intrinsics IR, and their helpers (native, native_split,
**              native_vec*: cpu; spir, spir_loops, spirv: opencl;
**              ptx: NVPTX for cuda and NVIDIA's OpenCL, ptx_cuda; tool:
**              the external-tool runner)
**   runtimes/  what runs: drivers, devices, memory, copies, launches (cpu
**              with its thread pool, opencl, cuda, the shared launch-shape
**              check dims), and registry.c
** Both include only the core's headers (src/, by bare name: this one,
** gj_err.h, gj_job.h, gj_type.h, gj_target.h, gj_cache.h); the core
** includes neither.  A runtime includes its targets' headers (those in targets/:
** the entry convention its launches follow, the target's state it keeps);
** a target never includes a runtime's header and never sees gj_bstate: what
** it needs besides the job is its own state (the SPIR-V translator found,
** libdevice's path), which the runtime that chose it keeps and hands over
** with the choice (gj_backend.target).
** Adding a backend is adding its files there (runtimes/NAME.c defining a
** gj_backend, targets/NAME.c defining the gj_codegen its `target` returns,
** both filled by field name) and one line in runtimes/registry.c.
**
** Conventions between the core and a backend (see docs/backends.md):
**
** - The core emits `define internal void @gj_body(ptr %wi, <params>)`.
**   %wi is an opaque pointer to the backend's per-work-item state (GPU
**   backends may pass null).  A scalar parameter is one LLVM argument of its
**   type (bool is i1); an array parameter is two: `ptr addrspace(G)` (G is
**   job->as_global) and `i64` length.
** - Target-neutral intrinsics are calls to declared functions that the
**   job's `intrinsics_ir` defines (as alwaysinline functions):
**     i64 @gj.global_id(ptr %wi, i32 %d)   and likewise gj.local_id,
**     gj.group_id, gj.group_size, gj.num_groups, gj.global_size
**     <T> @gj.math.<fn>.<f32|f64>(<T> ...)  math functions, see gj_cg_ops.c
**   The core links that IR into the module before optimization.
** - `wrap` adds the target's entry point that calls @gj_body.
** - Work groups (docs/backends.md).  Atomics are LLVM `atomicrmw` and
**   `cmpxchg` instructions (monotonic) on the element pointer; LLVM expands
**   what the target lacks (a float add becomes a compare-and-swap loop).
**   gpu.local_array is an alloca.  The rest depends on job->serial_groups:
**   0 (GPUs: the device runs the work items of a group concurrently)
**     gpu.barrier() is `call void @gj.barrier(ptr %wi)`, which the
**     intrinsics IR defines (convergent); each gpu.shared call site is an
**     internal global `[n x T]` in address space as_shared, undef-initialized.
**   1 (cpu: one thread runs a group's work items one after another)
**     shared arrays are slices of `ptr @gj.shared_base(ptr %wi)` (at
**     offsets below sig->shared_bytes).  A kernel with barriers is compiled
**     as a resumable function: its slots live in the work item's frame,
**     `ptr @gj.frame(ptr %wi)` (sig->frame_bytes, zeroed before the first
**     call), whose first i32 is the resume point: @gj_body returns with it
**     nonzero at a barrier, and called again it resumes there; it returns
**     with it 0 when the work item has finished.
** - Bounds checks (gpu.kernel's boundscheck; sig->faults is 1): the core
**   compares each array index with the array's length and, on failure,
**   claims the launch's fault record (gj_fault below) with a cmpxchg of
**   its `site` from 0 (the first fault wins), fills the other fields and
**   skips the access (a load gives 0).  The record is at
**     ptr addrspace(G) @gj.fault_record(ptr %wi)
**   which the intrinsics IR defines.  `launch` then gets a host gj_fault,
**   zeroed by the core, and must leave the device record's final content
**   in it (cpu: the record itself; a GPU: a small device buffer zeroed
**   before the launch and read back after it).  With sig->faults 0 the
**   kernel has no checks, launch gets NULL and nothing may change.
** - assert and error in kernels (gj_cg_assert.c; sig->faults is 1): a
**   work item that fails does an atomic umax (monotonic) of the 64-bit
**   word ~(item << 16 | site) into the record's `fail` (item: the linear
**   global id, below 2^48; site: the call's index in the kernel's table,
**   below 2^16), so the smallest failing work item wins whatever the order
**   the items ran in, and returns.  After a call of a device function the
**   caller returns too when `fail` names a work item at or below its own
**   (its own failure, or a smaller one that is reported anyway).  Other
**   work items go on.  Nothing else is asked of a backend: the record is
**   zeroed and read back as for the bounds checks.
** - Cancellation (gpu.kernel's timeout; sig->cancel is 1, and then
**   sig->faults is 1 too): at every loop back-edge, and after every call
**   of a device function, the core loads the record's `cancel` word
**   (monotonic, i32 at offset 12) and, when it is nonzero, returns from
**   the function at once (a device function's result is then undefined,
**   and its caller returns too).  The host sets fault->cancel while launch
**   runs (from another thread): the backend must make the device's record
**   see it soon (cpu: the record is the host struct; opencl on a device
**   that shares host memory, cuda with mapped pinned memory: a write to
**   the record where the device reads it; elsewhere it may be ignored, and
**   the launch runs to its end).  With the kernel stopped early the
**   launch returns 0 as usual: the core knows it asked and reports it.
** - print (sig->prints is 1, and then sig->faults is 1 too): the record is
**   followed by a print area: a gj_print_head, then sig->print_cap bytes
**   of records, gj_record_size(sig) bytes in all (a backend allocates its
**   record so at load).  The host fills the head
**   (cap, the rest 0) before `launch`; the core appends records (a
**   gj_print_rec and its values) at @gj.fault_record(%wi) + sizeof(gj_fault)
**   + sizeof(gj_print_head) + an atomic add to `used`, counting them in
**   `written` (one that does not fit adds 1 to `dropped` instead).  A backend
**   whose record lives in device memory copies the whole area to the device
**   before the launch and back after it, where it copies the record.
*/
#ifndef GJ_BACKEND_H
#define GJ_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "gj_err.h"
#include "gj_job.h"
#include "gj_type.h"

/* gj_device_info.rank of each kind of device: the default device is a CUDA
** GPU, else an OpenCL GPU, else the cpu backend (else sim). */
enum { GJ_RANK_CPU = 10, GJ_RANK_OPENCL_GPU = 20, GJ_RANK_CUDA = 30 };

typedef struct gj_device_info {
  char name[128];
  char vendor[128];
  char type[16];           /* "cpu", "gpu", "accelerator" */
  int64_t memory;          /* bytes of global memory */
  int compute_units;
  int64_t max_group;       /* work items in one group, all dims together */
  int64_t max_group_dim[3];
  char arch[16];           /* GPUs: the architecture, e.g. "sm_90"; or "" */
  char format[16];         /* the program format: the job's (gj_job.h), or
                           ** "" where the device can take none */
  int host_math;           /* math.* calls the host's libm: results are
                           ** bit-identical to LuaJIT's */
  int host_shared;         /* kernels address host memory directly (the
                           ** Lua face passes host arrays as they are) */
  int rank;                /* preference for the default device: the
                           ** highest wins; 0: never the default */
  int64_t parallel_items;  /* a launch of fewer work items runs on one
                           ** thread (the cpu backend's pool is not woken);
                           ** 0: the device runs any launch in parallel */
} gj_device_info;


/* The fault record of a launch of a bounds-checked kernel (see the top of
** this file); the field offsets are part of the convention. */
typedef struct gj_fault {
  int32_t site;      /* 0: no fault; else 1 + the check's index in the
                     ** kernel's site table (core) */
  int32_t line;      /* Lua source line of the access */
  int32_t arg;       /* 1-based kernel argument, 0: a shared/local array
                     ** or one the core could not attribute */
  int32_t cancel;    /* host-written while the launch runs: nonzero
                     ** stops the work items (see the top of this file) */
  int64_t index;     /* the index used */
  int64_t length;    /* the array's length */
  uint64_t fail;     /* assert/error: 0, or the largest ~(item << 16 |
                     ** site) that failing work items wrote (an atomic
                     ** max): the smallest failing work item (see the
                     ** top of this file) */
} gj_fault;

/* The head of a print area (sig->prints; see the top of this file); the
** field offsets are part of the convention. */
typedef struct gj_print_head {
  uint64_t used;     /* bytes reserved by records (may pass cap) */
  uint64_t cap;      /* bytes for records after this head */
  uint64_t dropped;  /* records that did not fit */
  uint64_t written;  /* records that did: they are the first `written`
                     ** from offset 0 (a reservation that does not fit
                     ** ends past cap, and so does every later one) */
} gj_print_head;

/* One print record: this head, then nslots 8-byte values (a double, or an
** int64_t: integers and booleans) as the site's table says (core). */
typedef struct gj_print_rec {
  int64_t item;      /* the work item's linear global id */
  int32_t site;      /* the print call's index in the kernel's table */
  int32_t nslots;
} gj_print_rec;

/* Bytes of the record a launch of sig passes: the fault record, and for a
** kernel that prints the print area after it. */
static inline size_t gj_record_size(const gj_sig *sig)
{
  return sizeof(gj_fault) +
         (sig->prints ? sizeof(gj_print_head) + (size_t)sig->print_cap : 0);
}

typedef struct gj_bstate gj_bstate;    /* a backend's state in one context */
/* A stream: a runtime's ordered queue of work on one device (a CUDA stream,
** an OpenCL command queue, the cpu backend's worker thread).  The b is for
** backend, as in gj_bstate: the public gj_stream and gj_event (gpujit.h,
** src/gj_stream.c) are the core's handles around one of these.  NULL is the
** device's default stream; others are made by stream_new (gpu.stream).
** Launches on one stream run in the order they were made; launches on
** different streams (the default one included) may overlap. */
typedef struct gj_bstream gj_bstream;
typedef struct gj_program gj_program;  /* a loaded, launchable kernel */
/* An event: a point in a stream's work (gpu.stream's s:record()). */
typedef struct gj_bevent gj_bevent;

/* Direction for gj_backend.copy. */
enum { GJ_COPY_TO_DEVICE = 0, GJ_COPY_TO_HOST = 1 };

/* A compile target (targets/): the code generated for one kind of device
** around the core's @gj_body, called at the numbered stages of
** gj_pipeline_compile.  A runtime chooses one for each compile job
** (gj_backend.target); one runtime may have several (opencl: SPIR, SPIR-V,
** PTX).  ts is the target's state as the runtime handed it over with the
** choice (NULL for a target that keeps none); the target defines its type
** in its header and the runtime keeps it (e.g. in its gj_bstate), for the
** life of the runtime's state.  Filled by field name. */
typedef struct gj_codegen {
  const char *name;        /* "native", "spir", "spirv", "ptx" */
  /* 6. Add the target's entry point to m around `body` (@gj_body). */
  int (*wrap)(void *ts, const gj_job *job, LLVMModuleRef m,
              LLVMValueRef body, const gj_sig *sig, gj_err *err);
  /* 7. Optional (NULL: nothing to do): the wrapped module, once, after it
  ** was verified and before the job's pass pipeline (stage 8) and the
  ** plugins' optimize hooks: the target's own transformations of the
  ** module as its wrap built it (native: the split of the x loop and the
  ** work-item vectorizer).  The core verifies the module again after it,
  ** so a hook's bad IR is an error, not a crash.  What it does depends only
  ** on the module and the job (both in the cache key).
  ** note (notesz bytes, "" on entry) may get one line, no newline, for
  ** GPUJIT_VERBOSE and gpu.on_compile's `note` (native: what the
  ** vectorizer did, or why not). */
  int (*finish_module)(void *ts, const gj_job *job, LLVMModuleRef m,
                       char *note, size_t notesz, gj_err *err);
  /* 9. Optional (NULL: nothing to do): the optimized module, once, after
  ** the plugins' `optimized` hooks (and after the text k:inspect_llvm
  ** shows), before emit: what the target's format needs that is not
  ** optimization (SPIR's loop metadata, SPIR-V's lowering for the
  ** translator).  It shows in the artifact and the assembly only. */
  int (*finish_ir)(void *ts, const gj_job *job, LLVMModuleRef m,
                   gj_err *err);
  /* 9. Optimized module -> artifact (asm != 0: the readable assembly
  ** text), possibly twice (the assembly, then the artifact).  *out is
  ** malloc'ed and owned by the caller. */
  int (*emit)(void *ts, const gj_job *job, LLVMTargetMachineRef tm,
              LLVMModuleRef m, int asm, char **out, size_t *len, gj_err *err);
} gj_codegen;

/* A device runtime (runtimes/): devices, the compile job for one, memory,
** copies, programs and launches.  Filled by field name.
**
** Threads: a gj_bstate belongs to one context, used by its owning thread,
** except that `target`, `load`, `cache_load` and `cache_save` (stages
** 4-11) may run on the context's compile worker (src/gj_bg.h) while the
** owning thread launches, allocates, copies and unloads other programs.
** The core runs those four for one context one compile at a time
** (ctx->compile_mu); a runtime makes them safe beside its launch path
** (the cpu locks its JIT, opencl makes a device ready under a lock). */
typedef struct gj_backend {
  const char *name;
  /* Open the backend in one context.  -1 (with err) when its driver or
  ** device is absent; the core then lists it as unavailable.  A backend
  ** that can compile without its device (cuda) may instead return 0 with
  ** zero devices and err saying why: the core lists it as unavailable for
  ** launching, with that reason, and still compiles for it (inspect). */
  int (*open)(gj_bstate **st, gj_err *err);
  void (*close)(gj_bstate *st);
  int (*ndevices)(gj_bstate *st);
  int (*device_info)(gj_bstate *st, int dev, gj_device_info *out);
  /* 1. The compile job for device dev (the plugins may change it). */
  int (*job)(gj_bstate *st, int dev, gj_job *job, gj_err *err);
  /* 6. The compile target for job, this runtime's job after the plugins'
  ** (chosen by its fields: opencl's format and triple); never NULL.  *ts:
  ** the target's state (gj_codegen above), or NULL. */
  const gj_codegen *(*target)(gj_bstate *st, const gj_job *job, void **ts);
  int (*load)(gj_bstate *st, int dev, const char *art, size_t len,
              const gj_sig *sig, gj_program **out, gj_err *err);
  void (*unload)(gj_bstate *st, gj_program *p);
  /* Enqueue the kernel on stream s (NULL: the default stream).  dims and
  ** args (the argument block laid out by gj_sig_layout) are read before
  ** launch returns; fault: the host record of a bounds-checked kernel
  ** (sig->faults), NULL otherwise.  A runtime with `wait` may return before
  ** the kernel has finished: the record (and a print area after it) is
  ** final only when `wait` on s returns, and the core reads it, and the
  ** Lua face copies arrays back, only then.  A runtime without `wait`
  ** returns when the kernel has finished, the record final (it can have
  ** no streams but the default one).
  ** On a stream of stream_new: each launch gets a record of its own
  ** (gj_record_size bytes, the head set, alive until wait returns), never
  ** a kernel with a timeout (sig->cancel), and launch returns at once:
  ** what it finds wrong before enqueueing is its error; what goes wrong
  ** while the kernel runs is wait's.  The arrays in args stay valid until
  ** wait returns (the core's caller keeps them). */
  int (*launch)(gj_bstate *st, gj_program *p, gj_bstream *s,
                const gj_dims *dims, void *args, gj_fault *fault, gj_err *err);
  /* Optional: wait until what was launched on stream s (NULL: the default
  ** stream) of device dev has finished, with the records of those launches
  ** final in the host memory given to launch.  The core calls it right
  ** after each launch on the default stream, and a timed launch's watchdog
  ** runs through it (the host's fault->cancel must reach the device
  ** meanwhile).  -1 with err when a launch failed while it ran; *failed
  ** is then its index among the launches on s since the previous wait
  ** (0-based), or -1 when the runtime cannot tell.  Launches made after a
  ** failed one, up to the wait, may not have run. */
  int (*wait)(gj_bstate *st, int dev, gj_bstream *s, int *failed, gj_err *err);
  /* 1: launch on the default stream returns when the kernel has finished
  ** (its record final), so the core calls wait only for other streams
  ** (the cpu backend: one indirect call less per launch). */
  int default_finishes;
  /* Optional, all three or none (NULL: the backend has the default stream
  ** only): a new stream on device dev, and its end (stream_free first
  ** waits for what was enqueued on s, errors dropped); copy_async is copy
  ** enqueued on s after what is there: it counts as one of s's launches
  ** for wait's *failed, and the host memory stays valid until wait. */
  int (*stream_new)(gj_bstate *st, int dev, gj_bstream **out, gj_err *err);
  void (*stream_free)(gj_bstate *st, int dev, gj_bstream *s);
  int (*copy_async)(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                    const void *src, size_t n, int dir, gj_err *err);
  /* Optional, all or none (a backend with streams): events, which are not
  ** launches (wait's *failed does not count them).  event_record: a new
  ** event that finishes when what was enqueued on s so far has finished.
  ** event_query: 1 finished, 0 not yet (-1 with err: the device failed).
  ** event_sync: the host waits for it.  event_wait: what is enqueued on s
  ** from now on waits for e (an event of this backend; of another device
  ** of it, the runtime may wait on the host).  event_elapsed: *ms from a to
  ** b, both finished, on the device's clock.  event_free: the event goes
  ** (what was enqueued keeps working). */
  int (*event_record)(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                      gj_err *err);
  int (*event_query)(gj_bstate *st, gj_bevent *e, gj_err *err);
  int (*event_sync)(gj_bstate *st, gj_bevent *e, gj_err *err);
  int (*event_wait)(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                    gj_err *err);
  int (*event_elapsed)(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                       gj_err *err);
  void (*event_free)(gj_bstate *st, gj_bevent *e);
  void *(*alloc)(gj_bstate *st, int dev, size_t bytes, gj_err *err);
  void (*free)(gj_bstate *st, int dev, void *ptr);
  int (*copy)(gj_bstate *st, int dev, void *dst, const void *src, size_t n,
              int dir, gj_err *err);
  int (*sync)(gj_bstate *st, int dev, gj_err *err);
  /* Optional, for the disk cache.  NULL: the cache keeps what emit gave
  ** and hands it to load.  Otherwise cache_save gives the bytes to keep
  ** for a loaded program (a device binary: no build on the next run;
  ** *out malloc'ed) and cache_load loads a program from them. */
  int (*cache_save)(gj_bstate *st, gj_program *p, char **out, size_t *len,
                    gj_err *err);
  int (*cache_load)(gj_bstate *st, int dev, const char *bin, size_t len,
                    const gj_sig *sig, gj_program **out, gj_err *err);
  /* Optional, all three or none: host memory as a launch's array argument,
  ** for devices that share the host's memory but address it through their
  ** own handles (OpenCL's CL_DEVICE_HOST_UNIFIED_MEMORY; CUDA's
  ** cuMemHostRegister would fit too).  NULL, or host_shares(dev) 0: the
  ** launcher stages FFI arrays and tables through alloc and copy.
  ** host_register gives a device address, usable in the argument block
  ** like one from alloc, for the `bytes` (0 allowed) of host memory at
  ** `host`; written: a launch may write them.  The launcher registers just
  ** before a launch and releases right after it, also when the launch
  ** failed.  The same (host, bytes) registered again before its release
  ** gives the same address and counts one more release.  host_release
  ** leaves what launches wrote in the host memory (when it was registered
  ** written) and frees the registration even when it returns -1. */
  int (*host_shares)(gj_bstate *st, int dev);
  void *(*host_register)(gj_bstate *st, int dev, void *host, size_t bytes,
                         int written, gj_err *err);
  int (*host_release)(gj_bstate *st, int dev, void *addr, gj_err *err);
} gj_backend;

/* Parse buf (LLVM IR text or bitcode; taken) in m's context and link it
** into m, with m's target and data layout (a library's own would only make
** the linker warn).  `what` names it in messages: "cannot parse <what>: ..."
** and "cannot link <what>".  0, or -1 with err.  The core links the job's
** intrinsics and libraries with it; a wrap may link more. */
int gj_link_ir(LLVMModuleRef m, LLVMMemoryBufferRef buf, const char *what,
               gj_err *err);

/* The job's intrinsics IR (job->intrinsics_ir) into m, by gj_link_ir. */
int gj_link_intrinsics(LLVMModuleRef m, const gj_job *job, gj_err *err);

/* For wrap: is body (@gj_body) shaped as sig says, by the conventions above
** (arrays in job->as_global)?  0, or -1 with err naming backend bk. */
int gj_body_check(LLVMValueRef body, const gj_job *job, const gj_sig *sig,
                  const char *bk, gj_err *err);

/* runtimes/registry.c: every backend compiled in, in default order. */
extern const gj_backend *const gj_backends[];
extern const int gj_nbackends;

#endif
