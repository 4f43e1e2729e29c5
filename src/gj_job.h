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

/* Every field of gj_job, once, in the struct's order (fields are only ever
** added at the end).  The struct, the job part of the cache key
** (gj_job_key), the Lua table (gj_job_lua.c) and the field list the
** specs check their FFI mirror against (gj_job_fields) are made from it.
**
**   _(kind, field, dim, lua name, key, access)
**
** kind    the C type: STR char[dim], TEXT const char *, UINT unsigned,
**         INT int, BOOL int (0 or 1), OPT LLVMCodeGenOptLevel, RELOC
**         LLVMRelocMode, CMODEL LLVMCodeModel; LIBS is two members,
**         int n<field> and gj_job_lib <field>[dim].
** key     KEY: hashed into the content key (src/gj_pipeline.c), since it
**         changes the artifact.  NOKEY: not, which must say why at the
**         field.  (Every field is keyed today.)
** access  RW: Lua job tables and plugins may change it.  RO: Lua sees it,
**         and a table that changes it is refused (it is what the
**         backend's entry point and intrinsics assume).  A field that is
**         RW and NOKEY does not compile (GJ_JOB_ACCESS_RW_NOKEY is not
**         defined): what changes code and is not keyed cannot be written.
**
** triple .. features: the LLVM target (cpu: sm_80 on cuda; features: on
**   SPIR-V the translator's --spirv-* options).
** target_id: whatever else decides the artifact and is not in the other
**   fields: driver, device and linked libraries' versions; a backend that
**   links a library puts its hash here.
** as_*: the address spaces of array arguments, gpu.shared arrays and
**   gpu.local_array arrays (the alloca space).
** serial_groups: 1 when a group's work items run one after another on one
**   thread (src/gj_backend.h).
** intrinsics_ir: how the gj.* intrinsics lower, LLVM IR text defining them
**   (and the entry convention in the backend's wrap).
** libs: bitcode libraries the core links into the module before the entry
**   point is added (libdevice on cuda; any library a user or plugin adds);
**   keyed by the path, prefix and contents of those the module calls.
** passes: the new-PM pipeline text, e.g. "default<O3>".
** codegen_opt, reloc, code_model: the target machine's.
** format: what `emit` makes: "object" (cpu), "ptx", "spir" (SPIR 1.2
**   bitcode) or "spirv" (the SPIR bitcode translated by llvm-spirv); the
**   device decides it (opencl: GPUJIT_OPENCL_FORMAT, docs/backends.md).
** join_barriers: 1 puts a barrier at the join of every branch whose paths
**   reach one (the control flow is uniform, so every work item gets
**   there): PoCL 3.1 runs the code after an `if` holding a barrier twice
**   for a work item when no work item enters the `if` and the group is 1
**   wide in x (docs/backends.md).
** vectorize: 1 lets the target run work items as the lanes of vector
**   registers (cpu: targets/native_vec.c); other targets ignore it.  The
**   core sets it from the kernel's `vectorize` option (default: on unless
**   GPUJIT_VECTORIZE=0) after the runtime's job and before the plugins'.
** block_by_address: 1 makes the entry point take its argument block
**   (opencl: targets/spir.h) as the block's address in host memory, where
**   0 passes it by value: a device that runs kernels in this process
**   (PoCL's CPU devices), for which each launch's by-value argument costs
**   an aligned allocation.  It changes the entry point after the key is
**   taken (stage 6), so it is keyed like the rest.
** narrow_ints: 1 holds a Lua number computed as an integer (and a work-item
**   id) in 32 bits wherever its range fits int32_t (docs/typing.md,
**   "32-bit integers"): counters and index math in 32-bit registers and
**   instructions, where 64-bit integer operations cost two or more (NVPTX,
**   SPIR devices).  The values are the same; only their LLVM type changes. */
#define GJ_JOBDEF(_) \
  _(STR,    triple,           [64],              "triple",     KEY, RO) \
  _(STR,    datalayout,       [256],             "datalayout", KEY, RO) \
  _(STR,    cpu,              [64],              "cpu",        KEY, RW) \
  _(STR,    features,         [1024],            "features",   KEY, RW) \
  _(STR,    target_id,        [256],             "target_id",  KEY, RO) \
  _(UINT,   as_global,        ,                  "address_spaces.global", KEY, RO) \
  _(UINT,   as_shared,        ,                  "address_spaces.shared", KEY, RO) \
  _(UINT,   as_local,         ,                  "address_spaces.local", KEY, RO) \
  _(BOOL,   serial_groups,    ,                  "serial_groups", KEY, RO) \
  _(TEXT,   intrinsics_ir,    ,                  "intrinsics", KEY, RO) \
  _(LIBS,   libs,             [GJ_JOB_MAXLIBS],  "libraries",  KEY, RW) \
  _(STR,    passes,           [1024],            "passes",     KEY, RW) \
  _(OPT,    codegen_opt,      ,                  "opt_level",  KEY, RW) \
  _(RELOC,  reloc,            ,                  "reloc",      KEY, RO) \
  _(CMODEL, code_model,       ,                  "code_model", KEY, RO) \
  _(STR,    format,           [16],              "format",     KEY, RO) \
  _(BOOL,   join_barriers,    ,                  "join_barriers", KEY, RO) \
  _(BOOL,   vectorize,        ,                  "vectorize",  KEY, RW) \
  _(BOOL,   block_by_address, ,                  "block_by_address", KEY, RO) \
  _(BOOL,   narrow_ints,      ,                  "narrow_ints", KEY, RW)

/* The members of each kind. */
#define GJ_JOB_MEMBER_STR(f, dim)    char f dim;
#define GJ_JOB_MEMBER_TEXT(f, dim)   const char *f;
#define GJ_JOB_MEMBER_UINT(f, dim)   unsigned f;
#define GJ_JOB_MEMBER_INT(f, dim)    int f;
#define GJ_JOB_MEMBER_BOOL(f, dim)   int f;
#define GJ_JOB_MEMBER_OPT(f, dim)    LLVMCodeGenOptLevel f;
#define GJ_JOB_MEMBER_RELOC(f, dim)  LLVMRelocMode f;
#define GJ_JOB_MEMBER_CMODEL(f, dim) LLVMCodeModel f;
#define GJ_JOB_MEMBER_LIBS(f, dim)   int n##f; gj_job_lib f dim;

/* The allowed (key, access) pairs, as flags (gj_job_field.flags). */
#define GJ_JOB_KEYED     1
#define GJ_JOB_WRITABLE  2
#define GJ_JOB_ACCESS_RO_KEY    GJ_JOB_KEYED
#define GJ_JOB_ACCESS_RW_KEY    (GJ_JOB_KEYED | GJ_JOB_WRITABLE)
#define GJ_JOB_ACCESS_RO_NOKEY  0
#define GJ_JOB_FLAGS(key, access) GJ_JOB_ACCESS_##access##_##key

typedef struct gj_job {
#define GJ_JOB_MEMBER(kind, f, dim, lua, key, access) \
  GJ_JOB_MEMBER_##kind(f, dim)
  GJ_JOBDEF(GJ_JOB_MEMBER)
#undef GJ_JOB_MEMBER
} gj_job;

/* One C member of gj_job (a LIBS field is two: n<field>, then <field>):
** its name, its name in the Lua job table (NULL for n<field>), where it
** is and GJ_JOB_* flags.  gj_job_fields (gpujit.h) lists them. */
typedef struct gj_job_field {
  const char *name;
  const char *lua;
  size_t offset;
  size_t size;
  int flags;
} gj_job_field;

#endif
