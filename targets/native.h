/*
** The native target's interface to the cpu runtime: what runtimes/cpu.c,
** native.c and native_split.c share (the runtime fills the launch block
** that the generated @gj_entry reads).
*/
#ifndef GJ_CPU_INT_H
#define GJ_CPU_INT_H

#include <stdint.h>

#include <llvm-c/Core.h>

#include "gj_backend.h"

/* -- Work-item state and launch block ----------------------------------- */

/* The work-item state %wi points to: 8-byte fields, three i64 per id
** quantity, then three pointers (the work item's frame, the group's shared
** memory, the launch's fault record; each set only when the kernel needs
** it).  The intrinsics and the stores in gj_entry (native.c) must
** agree on these. */
enum {
  WI_GLOBAL_ID = 0, WI_LOCAL_ID = 3, WI_GROUP_ID = 6,
  WI_GROUP_SIZE = 9, WI_NUM_GROUPS = 12, WI_GLOBAL_SIZE = 15,
  WI_FRAME = 18, WI_SHARED = 19, WI_FAULT_RECORD = 20,
  WI__N = 21
};

/* What gj_entry's second argument points to.  Unused dimensions are 1.
** A call runs the groups whose linear index g = gx + ngx*(gy + ngy*gz)
** lies in [first, last).  Field order is fixed: gj_entry loads them by
** index (LAUNCH_*). */
typedef struct cpu_launch {
  int64_t global[3];       /* work items per dimension */
  int64_t group[3];        /* work items per group per dimension */
  int64_t ngroups[3];      /* ceil(global / group) */
  int64_t first, last;     /* linear group range of this call */
  /* kernels with shared arrays or barriers: the calling thread's scratch,
  ** the group's shared block (sig.shared_bytes rounded up to 64) followed
  ** by one frame (sig.frame_bytes) per work item of the group */
  void *scratch;
  /* set to 1 by gj_entry when the work items of a group stop at different
  ** barriers (or some finish while others wait); gj_entry then returns */
  int64_t *fault;
  /* bounds-checked kernels (sig.faults): the launch's fault record, which
  ** the work items claim with a cmpxchg (src/gj_backend.h) */
  gj_fault *record;
} cpu_launch;

enum { LAUNCH_GLOBAL = 0, LAUNCH_GROUP = 3, LAUNCH_NGROUPS = 6,
       LAUNCH_FIRST = 9, LAUNCH_LAST = 10, LAUNCH_SCRATCH = 11,
       LAUNCH_FAULT = 12, LAUNCH_RECORD = 13 };
_Static_assert(sizeof(cpu_launch) == 14 * sizeof(int64_t),
               "gj_entry reads cpu_launch as 14 packed 8-byte fields");

/* Bytes before the first frame in the scratch block. */
#define CPU_SHARED_ROUND(n) (((uint64_t)(n) + 63) / 64 * 64)

/* The intrinsics IR, the job's intrinsics_ir (native.c). */
extern const char cpu_intrinsics_ir[];

/* The x loop of a group without barriers as wrap builds it (native.c):
** the fast loop runs lx over [lo, hi), the values of the placeholder calls
** @gj.split.lo/hi(base, end); a second loop runs the other work items. */
typedef struct cpu_split_site {
  LLVMValueRef lo, hi;           /* the placeholder calls */
  LLVMValueRef base, end;        /* the row's first global x id, its length */
  LLVMValueRef mark;             /* @gj.split.mark(gid) in the fast loop:
                                 ** keeps its global x id alive and known */
  LLVMValueRef next;             /* lx + 1 in the fast loop's latch */
  LLVMBasicBlockRef head, done;  /* the fast loop's header and exit */
  LLVMValueRef frame;            /* barriers: the item's frame (else NULL) */
} cpu_split_site;

/* The site wrap left in m (its placeholder calls, the fast loop): 1, or 0
** when m has none (a kernel with barriers, a huge body: one x loop). */
int cpu_split_find(LLVMModuleRef m, cpu_split_site *s);

/* The fast loop's blocks: those reachable from s->head without passing
** s->done, head first, breadth first, in a malloc'ed *bbs (the caller frees
** it), *n of them; the split, the vectorizer and the AoS rewrite walk them
** (native_split.c).  0, or -1 when out of memory (*bbs NULL). */
int cpu_loop_blocks(const cpu_split_site *s, LLVMBasicBlockRef **bbs,
                    size_t *n);

/* Is bb one of bbs[0..n)? */
int cpu_block_in(LLVMBasicBlockRef const *bbs, size_t n,
                 LLVMBasicBlockRef bb);

/* Inline the body (and the intrinsics) into gj_entry and turn the
** work-item state into SSA values (native_split.c). */
int cpu_inline_body(LLVMModuleRef m, gj_err *err);

/* Inline the body and choose [lo, hi): the work items for which the
** body's tests of its global x id have a known outcome, which the fast
** loop then assumes (native_split.c).  Removes the placeholders: s->lo and
** s->hi become the computed bounds (frozen i64 values before the loops),
** s->mark NULL; head, next and done stay the fast loop's. */
int cpu_split(LLVMModuleRef m, cpu_split_site *s, gj_err *err);

/* Loop metadata on the latch branch br: neither vectorize nor unroll the
** loop (native.c). */
void cpu_plain_loop(LLVMContextRef c, LLVMValueRef br);

/* The work-item vectorizer (native_vec.c): after cpu_split, when
** job->vectorize, the fast loop runs W work items at a time as the lanes
** of vector registers, the fast loop itself running the rest; a kernel it
** cannot handle is left as it was.  note gets a line saying which. */
int cpu_vectorize(LLVMModuleRef m, const gj_job *job, cpu_split_site *s,
                  char *note, size_t notesz, gj_err *err);

/* A kernel with barriers (native_vec_frame.c): the x loop of its items
** that wrap marked (@gj.vec.bar(lx, frame), removed here) as a site for
** cpu_vectorize, lo 0 and hi the row's length, s->frame the item's frame;
** the body inlined.  1; 0 when m has no mark, 2 when its loop is not of
** wrap's shape (the mark is gone: no site), -1 on an error. */
int cpu_bar_site(LLVMModuleRef m, cpu_split_site *s, gj_err *err);

/* Whole store groups for arrays of structs (native_aos.c): after
** cpu_vectorize, when the fast loop is left to LLVM's loop vectorizer,
** stores under a triangle's if are sunk to its join and the fields of an
** array element that a block stores to and the work item read unchanged
** are stored back, so that the vectorizer sees complete interleaved store
** groups.  Never fails (a loop it cannot prove safe stays as it is); adds a
** line to note when it changed something. */
int cpu_aos(LLVMModuleRef m, const cpu_split_site *s, char *note,
            size_t notesz);

/* Reverse mode's marked adjoint adds ("gj.adj", src/gj_ad_rev.h) in
** gj_entry summed per call in a small table and added atomically once per
** element (native_adj.c).  Never fails: a module without them is left as
** it is.  After the vectorizer (it sees the atomic adds as they were). */
int cpu_adj_cache(LLVMModuleRef m);

/* The native target (native.c): wrap adds @gj_entry around @gj_body, emit
** gives a shared object that defines gj_entry (or the assembly), which
** the cpu runtime dlopens. */
extern const gj_codegen gj_codegen_native;

/* The object code obj[0..len) linked into a shared object (native_link.c,
** by the system's linker): *out malloc'ed.  0, or -1 with err naming the
** linker or what it said. */
int gj_native_link(const char *obj, size_t len, char **out, size_t *outlen,
                   gj_err *err);

#endif
