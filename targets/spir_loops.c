/*
** The SPIR target: loop metadata for SPIR programs.
**
** PoCL builds OpenCL C with loop unrolling off: clang gives every loop of
** the kernels it hands to PoCL's work-group compiler the metadata
** llvm.loop.unroll.disable (seen in PoCL 3.1's program.bc of an OpenCL C
** program).  PoCL then runs O3 over the single work-item kernel before it
** forms the work-group loops.  A SPIR program from gpujit had no such
** metadata, so that O3 fully unrolled short inner loops; in a kernel with
** barriers LICM then hoisted every unrolled iteration's invariant address
** out of the loop around the barriers, and each became a value live across
** a barrier, which PoCL keeps per work item in a context array (stored
** before the barrier, loaded after it: 43 such arrays, 34 of them
** addresses, in the 16x16 tiled matrix multiply, against 15 for the same
** kernel in OpenCL C and 12 with the metadata; 1.14-1.27x OpenCL C's time
** before, about 0.5x after).  So gpujit marks the loops of kernels with
** barriers as clang does for PoCL.  Kernels without barriers have no such
** context (PoCL makes one work-item loop around the whole body) and keep
** their loops unmarked: there unrolling pays (the 3x3 convolution's tap
** loops: 0.75x OpenCL C's time unrolled, 0.94x not).
**
** A loop is found by its retreating edges (to a block on the depth-first
** search's stack: in a reducible CFG, exactly the back edges); every
** branch into the same header gets the same loop ID, as LLVM requires of a
** loop's latches.  Metadata a branch already has is kept.
*/
#include "spir.h"

#include <stdlib.h>

#include <llvm-c/DebugInfo.h>   /* LLVMTemporaryMDNode */

typedef struct dfs_frame {
  unsigned bb;        /* index of the block in the order of bbs */
  unsigned next;      /* its next successor to visit */
} dfs_frame;

typedef struct loop_cfg {
  LLVMBasicBlockRef *bbs;   /* the function's blocks, sorted by address */
  unsigned char *state;     /* 0 unvisited, 1 on the stack, 2 finished */
  LLVMMetadataRef *id;      /* per header: its loop ID, made on demand */
  unsigned n;
} loop_cfg;

static int cmp_ptr(const void *a, const void *b)
{
  uintptr_t x = (uintptr_t)*(LLVMBasicBlockRef const *)a;
  uintptr_t y = (uintptr_t)*(LLVMBasicBlockRef const *)b;
  return x < y ? -1 : x > y;
}

static unsigned bb_index(const loop_cfg *g, LLVMBasicBlockRef bb)
{
  LLVMBasicBlockRef *p = bsearch(&bb, g->bbs, g->n, sizeof(*g->bbs), cmp_ptr);
  return (unsigned)(p - g->bbs);
}

/* The loop ID `!{!self, <old operands but the first>, !{unroll.disable}}`
** for a latch whose branch had `old` (or NULL); NULL when out of memory. */
static LLVMMetadataRef loop_id(LLVMContextRef c, LLVMValueRef old)
{
  static const char key[] = "llvm.loop.unroll.disable";
  unsigned i, nold = old ? LLVMGetMDNodeNumOperands(old) : 0, n = 1;
  LLVMValueRef *oldops = malloc((nold + 1) * sizeof(*oldops));
  LLVMMetadataRef *ops = malloc((nold + 2) * sizeof(*ops));
  LLVMMetadataRef tmp, str, disable, id = NULL;
  if (oldops && ops) {
    tmp = LLVMTemporaryMDNode(c, NULL, 0);
    str = LLVMMDStringInContext2(c, key, sizeof(key) - 1);
    disable = LLVMMDNodeInContext2(c, &str, 1);    /* uniqued */
    ops[0] = tmp;
    if (nold) LLVMGetMDNodeOperands(old, oldops);
    for (i = 1; i < nold; i++)
      if (LLVMValueAsMetadata(oldops[i]) != disable)   /* marked before */
        ops[n++] = LLVMValueAsMetadata(oldops[i]);
    ops[n++] = disable;
    id = LLVMMDNodeInContext2(c, ops, n);
    /* The first operand replaced by the node itself makes it distinct. */
    LLVMMetadataReplaceAllUsesWith(tmp, id);
  }
  free(oldops);
  free(ops);
  return id;
}

static int mark_latch(LLVMContextRef c, loop_cfg *g, LLVMValueRef br,
                      unsigned header, unsigned kind)
{
  if (!g->id[header])
    g->id[header] = loop_id(c, LLVMGetMetadata(br, kind));
  if (!g->id[header]) return -1;
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(c, g->id[header]));
  return 0;
}

static int mark_function(LLVMContextRef c, LLVMValueRef fn, unsigned kind)
{
  loop_cfg g;
  dfs_frame *stack;
  LLVMBasicBlockRef bb;
  unsigned i, top = 0;
  int rc = 0;
  g.n = LLVMCountBasicBlocks(fn);
  if (g.n == 0) return 0;
  g.bbs = malloc(g.n * sizeof(*g.bbs));
  g.state = calloc(g.n, 1);
  g.id = calloc(g.n, sizeof(*g.id));
  stack = malloc(g.n * sizeof(*stack));
  if (!g.bbs || !g.state || !g.id || !stack) {
    free(g.bbs); free(g.state); free(g.id); free(stack);
    return -1;
  }
  for (bb = LLVMGetFirstBasicBlock(fn), i = 0; bb;
       bb = LLVMGetNextBasicBlock(bb))
    g.bbs[i++] = bb;
  qsort(g.bbs, g.n, sizeof(*g.bbs), cmp_ptr);
  stack[top].bb = bb_index(&g, LLVMGetEntryBasicBlock(fn));
  stack[top++].next = 0;
  g.state[stack[0].bb] = 1;
  while (top && rc == 0) {
    dfs_frame *f = &stack[top - 1];
    LLVMValueRef term = LLVMGetBasicBlockTerminator(g.bbs[f->bb]);
    unsigned nsucc = term ? LLVMGetNumSuccessors(term) : 0, s;
    if (f->next == nsucc) {
      g.state[f->bb] = 2;
      top--;
      continue;
    }
    s = bb_index(&g, LLVMGetSuccessor(term, f->next++));
    if (g.state[s] == 1 && LLVMIsABranchInst(term))
      rc = mark_latch(c, &g, term, s, kind);
    else if (g.state[s] == 0) {
      g.state[s] = 1;
      stack[top].bb = s;
      stack[top++].next = 0;
    }
  }
  free(g.bbs); free(g.state); free(g.id); free(stack);
  return rc;
}

int ocl_loops_no_unroll(LLVMModuleRef m, gj_err *err)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  unsigned kind = LLVMGetMDKindIDInContext(c, "llvm.loop", 9);
  LLVMValueRef f, barrier = LLVMGetNamedFunction(m, OCL_SPIR_BARRIER);
  /* Everything is inlined into the entry points by now, and a kernel with
  ** barriers has only one. */
  if (!barrier || !LLVMGetFirstUse(barrier)) return 0;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && mark_function(c, f, kind) != 0)
      return gj_err_set(err, "opencl: out of memory (loop metadata)");
  return 0;
}
