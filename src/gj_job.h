/*
** The compile job: everything about the target that code generation,
** linking and optimization need.  A backend proposes it (gj_backend.job),
** the kernel's `job` option and plugins adjust it (docs/plugins.md), and
** the core follows it; the core never asks which backend it compiles for.
** Public: plugins (gpujit_plugin.h) and embedders read and change it.
*/
#ifndef GJ_JOB_H
#define GJ_JOB_H

#include <llvm-c/TargetMachine.h>

#define GJ_JOB_MAXLIBS 4

/* A bitcode library the core links into the module before the entry point
** is added (libdevice on cuda; any library a user or plugin adds). */
typedef struct gj_job_lib {
  char path[512];
  /* Link only when the module calls a declared function whose name starts
  ** with this ("" : always).  Linked definitions are internalized, so that
  ** what the kernel does not use is dropped. */
  char prefix[32];
} gj_job_lib;

typedef struct gj_job {
  char triple[64];
  char datalayout[256];
  char cpu[64];
  char features[1024];
  /* Whatever else decides the artifact and is not in the fields above:
  ** driver, device and linked libraries' versions.  Part of the cache key
  ** (src/gj_cache.h); a backend that links a library puts its hash here. */
  char target_id[256];
  unsigned as_global;      /* address space of array arguments */
  unsigned as_shared;      /* gpu.shared arrays */
  unsigned as_local;       /* gpu.local_array arrays (the alloca space) */
  int serial_groups;       /* 1: a group's work items run one after another
                           ** on one thread (src/gj_backend.h) */
  /* How the gj.* intrinsics lower: LLVM IR text defining them (and the
  ** entry convention in the backend's wrap). */
  const char *intrinsics_ir;
  int nlibs;
  gj_job_lib libs[GJ_JOB_MAXLIBS];
  char passes[1024];       /* new-PM pipeline text, e.g. "default<O3>" */
  LLVMCodeGenOptLevel codegen_opt;
  LLVMRelocMode reloc;
  LLVMCodeModel code_model;
  /* What `emit` makes: "object" (cpu), "ptx", "spir" (SPIR 1.2 bitcode) or
  ** "spirv" (the SPIR bitcode translated by llvm-spirv).  Read-only: the
  ** device decides it (opencl: GPUJIT_OPENCL_FORMAT, docs/backends.md). */
  char format[16];
  /* 1: a barrier at the join of every branch whose paths reach one (the
  ** control flow is uniform, so every work item gets there): PoCL 3.1 runs
  ** the code after an `if` holding a barrier twice for a work item when no
  ** work item enters the `if` and the group is 1 wide in x (docs/backends.md) */
  int join_barriers;
  /* 1: the target may run work items as the lanes of vector registers
  ** (cpu: targets/native_vec.c); other targets ignore it.  The core sets it
  ** from the kernel's `vectorize` option (default: on unless
  ** GPUJIT_VECTORIZE=0) after the runtime's job and before the plugins'. */
  int vectorize;
  /* 1: the entry point takes its argument block (opencl: targets/spir.h)
  ** as the block's address in host memory, where 0 passes it by value: a
  ** device that runs kernels in this process (PoCL's CPU devices), for
  ** which each launch's by-value argument costs an aligned allocation */
  int block_by_address;   /* (fields are only ever added at the end) */
} gj_job;

#endif
