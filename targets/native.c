/*
** The native target (the cpu backend's code): the intrinsics IR (the
** work-item ids and math functions the core's @gj_body calls) and `wrap`,
** which builds @gj_entry(args, launch) around the body with LLVM-C.  The
** execution model is described at the top of runtimes/cpu.c; the layouts
** both rely on (work-item state, launch block) are in native.h.
*/
#include "native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>   /* LLVMTemporaryMDNode */

#include "gj_target.h"

/* -- Intrinsics ---------------------------------------------------------- */

/* gj.<id>(ptr %wi, i32 %d): field `base + d` of the work-item state; for d
** outside 0..2 the value of an unused dimension (ids 0, sizes 1), as in
** OpenCL.  After inlining d is a constant and all of this folds away. */
#define GJ_IR_ID(name, base, unused)                                     \
  "define linkonce_odr i64 @gj." name "(ptr %wi, i32 %d) #0 {\n"         \
  "  %ok = icmp ult i32 %d, 3\n"                                         \
  "  %dd = select i1 %ok, i32 %d, i32 0\n"                               \
  "  %i = zext i32 %dd to i64\n"                                         \
  "  %j = add i64 %i, " #base "\n"                                       \
  "  %p = getelementptr inbounds i64, ptr %wi, i64 %j\n"                 \
  "  %v = load i64, ptr %p, align 8\n"                                   \
  "  %r = select i1 %ok, i64 %v, i64 " #unused "\n"                      \
  "  ret i64 %r\n}\n"

/* ptr gj.<name>(ptr %wi): the pointer in field `index` of the state. */
#define GJ_IR_PTR(name, index)                                           \
  "define linkonce_odr ptr @gj." name "(ptr %wi) #0 {\n"                 \
  "  %p = getelementptr inbounds i64, ptr %wi, i64 " #index "\n"        \
  "  %v = load ptr, ptr %p, align 8\n"                                   \
  "  ret ptr %v\n}\n"

/* gj.math.<fn>.<sfx>: a call of `impl` (an llvm.* intrinsic or libm). */
#define GJ_IR_M1(fn, T, sfx, impl)                                       \
  "define linkonce_odr " T " @gj.math." fn "." sfx "(" T " %x) #1 {\n"   \
  "  %r = call " T " @" impl "(" T " %x)\n  ret " T " %r\n}\n"
#define GJ_IR_M2(fn, T, sfx, impl)                                       \
  "define linkonce_odr " T " @gj.math." fn "." sfx "(" T " %x, " T       \
  " %y) #1 {\n"                                                          \
  "  %r = call " T " @" impl "(" T " %x, " T " %y)\n  ret " T " %r\n}\n"
#define GJ_IR_D1(T, impl) "declare " T " @" impl "(" T ") #2\n"
#define GJ_IR_D2(T, impl) "declare " T " @" impl "(" T ", " T ") #2\n"

/* Both precisions of one function; `i` means the llvm.* intrinsic, `c` the
** C library (f32: the `f`-suffixed name). */
#define GJ_IR_I1(fn)                                                     \
  GJ_IR_M1(#fn, "float", "f32", "llvm." #fn ".f32")                      \
  GJ_IR_M1(#fn, "double", "f64", "llvm." #fn ".f64")                     \
  GJ_IR_D1("float", "llvm." #fn ".f32") GJ_IR_D1("double", "llvm." #fn ".f64")
#define GJ_IR_C1(fn)                                                     \
  GJ_IR_M1(#fn, "float", "f32", #fn "f")                                 \
  GJ_IR_M1(#fn, "double", "f64", #fn)                                    \
  GJ_IR_D1("float", #fn "f") GJ_IR_D1("double", #fn)
#define GJ_IR_I2(fn)                                                     \
  GJ_IR_M2(#fn, "float", "f32", "llvm." #fn ".f32")                      \
  GJ_IR_M2(#fn, "double", "f64", "llvm." #fn ".f64")                     \
  GJ_IR_D2("float", "llvm." #fn ".f32") GJ_IR_D2("double", "llvm." #fn ".f64")
#define GJ_IR_C2(fn)                                                     \
  GJ_IR_M2(#fn, "float", "f32", #fn "f")                                 \
  GJ_IR_M2(#fn, "double", "f64", #fn)                                    \
  GJ_IR_D2("float", #fn "f") GJ_IR_D2("double", #fn)

/* The intrinsics, linked into every module.  Notes:
** - linkonce_odr, not internal: the linker binds the core's declarations
**   only to definitions with external-ish linkage (an internal definition
**   in the linked-in module would be a different, renamed symbol).  wrap
**   internalizes them, and they disappear once inlined.
** - No triple or datalayout, so linking into any host module is silent.
** - llvm.* intrinsics where LLVM has them: sqrt/floor/ceil/fabs/trunc
**   become instructions (sqrtsd, roundsd, as LuaJIT uses), the others
**   calls of the same libm functions LuaJIT calls, so doubles match bit
**   for bit.  libm functions are declared readnone (errno is never read),
**   which lets LLVM hoist and combine them. */
const char cpu_intrinsics_ir[] =
  GJ_IR_ID("global_id", 0, 0)
  GJ_IR_ID("local_id", 3, 0)
  GJ_IR_ID("group_id", 6, 0)
  GJ_IR_ID("group_size", 9, 1)
  GJ_IR_ID("num_groups", 12, 1)
  GJ_IR_ID("global_size", 15, 1)
  GJ_IR_PTR("frame", 18)
  GJ_IR_PTR("shared_base", 19)
  GJ_IR_PTR("fault_record", 20)
  GJ_IR_I1(sqrt) GJ_IR_I1(floor) GJ_IR_I1(ceil) GJ_IR_I1(fabs)
  GJ_IR_I1(trunc) GJ_IR_I1(exp) GJ_IR_I1(log) GJ_IR_I1(log2)
  GJ_IR_I1(log10) GJ_IR_I1(sin) GJ_IR_I1(cos)
  GJ_IR_C1(tan) GJ_IR_C1(asin) GJ_IR_C1(acos) GJ_IR_C1(atan)
  GJ_IR_C1(sinh) GJ_IR_C1(cosh) GJ_IR_C1(tanh)
  GJ_IR_I2(pow) GJ_IR_C2(atan2) GJ_IR_C2(fmod)
  "attributes #0 = { alwaysinline nounwind willreturn readonly argmemonly }\n"
  "attributes #1 = { alwaysinline nounwind willreturn readnone }\n"
  "attributes #2 = { nounwind willreturn readnone }\n";

/* -- wrap: the entry point ----------------------------------------------- */

static void add_fn_attr(LLVMContextRef c, LLVMValueRef f, const char *name)
{
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(c, k, 0));
}

static void remove_fn_attr(LLVMValueRef f, const char *name)
{
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, k);
}

static void add_param_attr(LLVMContextRef c, LLVMValueRef f, unsigned i,
                           const char *name)
{
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, i + 1, LLVMCreateEnumAttribute(c, k, 0));
}

static void add_str_attr(LLVMContextRef c, LLVMValueRef f, const char *k,
                         const char *v)
{
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(c, k, (unsigned)strlen(k),
                                                    v, (unsigned)strlen(v)));
}

/* Build helpers for the entry function. */
typedef struct wrap_ctx {
  LLVMContextRef c;
  LLVMBuilderRef b;
  LLVMTypeRef i8, i32, i64, ptr;
  LLVMValueRef fn;        /* gj_entry */
  LLVMValueRef wi;        /* the work-item state alloca */
  LLVMValueRef L[13];     /* the launch block's fields */
  LLVMValueRef body;
  LLVMTypeRef bodyty;
  LLVMValueRef *bargs;
  unsigned nbargs;
  /* kernels with barriers */
  uint32_t frame_bytes;
  LLVMValueRef frames;    /* the first work item's frame */
  LLVMValueRef phase;     /* 0 on the first pass over a group */
  LLVMTypeRef vbarty;     /* @gj.vec.bar(lx, frame): the vectorizer's mark */
  LLVMValueRef vbar;      /* (native_vec_frame.c), or NULL */
  /* kernels without barriers: the split x loop (native_split.c) */
  LLVMTypeRef splitty, markty;
  LLVMValueRef split_lo, split_hi, split_mark;
  cpu_split_site split;
  int nosplit;            /* a huge body: one x loop (CPU_SPLIT_MAX_INSNS) */
} wrap_ctx;

static LLVMValueRef w_const(wrap_ctx *w, int64_t v)
{
  return LLVMConstInt(w->i64, (unsigned long long)v, 1);
}

/* Load an i64 from ptr[index] (i64 elements). */
static LLVMValueRef w_load64(wrap_ctx *w, LLVMValueRef ptr, int index,
                             const char *name)
{
  LLVMValueRef idx = w_const(w, index);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(w->b, w->i64, ptr, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(w->b, w->i64, p, name);
  LLVMSetAlignment(v, 8);
  return v;
}

/* Store v into field `index` of the work-item state. */
static void w_setwi(wrap_ctx *w, int index, LLVMValueRef v)
{
  LLVMValueRef idx = w_const(w, index);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(w->b, w->i64, w->wi, &idx, 1, "");
  LLVMSetAlignment(LLVMBuildStore(w->b, v, p), 8);
}

/* Load a value of type t from byte offset off of the argument block. */
static LLVMValueRef w_arg(wrap_ctx *w, LLVMValueRef args, uint32_t off,
                          LLVMTypeRef t, unsigned align)
{
  LLVMValueRef idx = w_const(w, off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(w->b, w->i8, args, &idx, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(w->b, t, p, "");
  LLVMSetAlignment(v, align);
  return v;
}

/* min(a, b), signed. */
static LLVMValueRef w_min(wrap_ctx *w, LLVMValueRef a, LLVMValueRef b,
                          const char *name)
{
  LLVMValueRef lt = LLVMBuildICmp(w->b, LLVMIntSLT, a, b, "");
  return LLVMBuildSelect(w->b, lt, a, b, name);
}

/* A counted loop's header: phi i = [start, from]; the back edge is added
** by w_loop_end. */
static LLVMValueRef w_loop_begin(wrap_ctx *w, LLVMValueRef fn,
                                 LLVMValueRef start, const char *name,
                                 LLVMBasicBlockRef *head)
{
  LLVMBasicBlockRef from = LLVMGetInsertBlock(w->b);
  LLVMValueRef phi;
  *head = LLVMAppendBasicBlockInContext(w->c, fn, name);
  LLVMBuildBr(w->b, *head);
  LLVMPositionBuilderAtEnd(w->b, *head);
  phi = LLVMBuildPhi(w->b, w->i64, name);
  LLVMAddIncoming(phi, &start, &from, 1);
  return phi;
}

/* i += 1; continue while i < end (signed; the loops are do-while since
** every trip count is at least one).  Returns i + 1. */
static LLVMValueRef w_loop_end(wrap_ctx *w, LLVMValueRef fn, LLVMValueRef phi,
                               LLVMBasicBlockRef head, LLVMValueRef end,
                               const char *name)
{
  LLVMValueRef one = w_const(w, 1);
  LLVMValueRef next = LLVMBuildNSWAdd(w->b, phi, one, "");
  LLVMValueRef more = LLVMBuildICmp(w->b, LLVMIntSLT, next, end, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(w->b);
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(w->c, fn, name);
  LLVMBuildCondBr(w->b, more, head, after);
  LLVMAddIncoming(phi, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(w->b, after);
  return next;
}

/* The call of the body for one work item of a group with barriers: its
** frame, its resume point reset on the first pass, and the check that it
** stopped where the group's first work item stopped. */
static void w_resumable_item(wrap_ctx *w, LLVMValueRef lx, LLVMValueRef ly,
                             LLVMValueRef lz)
{
  LLVMValueRef item, fr, st, s0, idx;
  LLVMBasicBlockRef bad, ok;
  item = LLVMBuildNSWMul(w->b, lz, w->L[LAUNCH_GROUP + 1], "");
  item = LLVMBuildNSWAdd(w->b, item, ly, "");
  item = LLVMBuildNSWMul(w->b, item, w->L[LAUNCH_GROUP + 0], "");
  item = LLVMBuildNSWAdd(w->b, item, lx, "item");
  idx = LLVMBuildNSWMul(w->b, item, w_const(w, w->frame_bytes), "");
  fr = LLVMBuildInBoundsGEP2(w->b, w->i8, w->frames, &idx, 1, "frame");
  if (w->vbar) {
    LLVMValueRef a[2] = { lx, fr };
    LLVMBuildCall2(w->b, w->vbarty, w->vbar, a, 2, "");
  }
  w_setwi(w, WI_FRAME, fr);
  st = LLVMBuildLoad2(w->b, w->i32, fr, "");
  st = LLVMBuildSelect(w->b, LLVMBuildICmp(w->b, LLVMIntEQ, w->phase, w_const(w, 0), ""),
                       LLVMConstNull(w->i32), st, "");
  LLVMBuildStore(w->b, st, fr);
  LLVMBuildCall2(w->b, w->bodyty, w->body, w->bargs, w->nbargs, "");
  st = LLVMBuildLoad2(w->b, w->i32, fr, "");
  s0 = LLVMBuildLoad2(w->b, w->i32, w->frames, "");
  bad = LLVMAppendBasicBlockInContext(w->c, w->fn, "diverged");
  ok = LLVMAppendBasicBlockInContext(w->c, w->fn, "item.done");
  LLVMBuildCondBr(w->b, LLVMBuildICmp(w->b, LLVMIntNE, st, s0, ""), bad, ok);
  LLVMPositionBuilderAtEnd(w->b, bad);
  LLVMSetOrdering(LLVMBuildStore(w->b, w_const(w, 1), w->L[LAUNCH_FAULT]),
                  LLVMAtomicOrderingMonotonic);
  LLVMBuildBr(w->b, ok);
  LLVMPositionBuilderAtEnd(w->b, ok);
}

/* A body (with the device functions it calls) of more IR instructions than
** this runs in one x loop, not split (native_split.c): the split inlines it
** twice, and LLVM's time grows faster than the function's size (issue 23:
** a 2000-line kernel took 2.5 s of cpu time to compile, 1.3 s unsplit).
** Such a body does not loop-vectorize, which is what the split is for; a
** 500-line kernel is about 10000 instructions, the kernels of bench/ and
** spec/ fewer than 2000. */
#define CPU_SPLIT_MAX_INSNS 8000

static size_t defined_insns(LLVMModuleRef m)
{
  size_t n = 0;
  LLVMValueRef f;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    LLVMBasicBlockRef bb;
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef in;
      for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) n++;
    }
  }
  return n;
}

/* Set the x ids to lx (global: base + lx) and call the body; returns the
** global id. */
static LLVMValueRef w_xitem(wrap_ctx *w, LLVMValueRef base, LLVMValueRef lx)
{
  LLVMValueRef gid = LLVMBuildNSWAdd(w->b, base, lx, "gid.x");
  w_setwi(w, WI_LOCAL_ID + 0, lx);
  w_setwi(w, WI_GLOBAL_ID + 0, gid);
  LLVMBuildCall2(w->b, w->bodyty, w->body, w->bargs, w->nbargs, "");
  return gid;
}

/* An empty `asm sideeffect` call marked convergent: it emits nothing, and
** LLVM 15 does not unswitch non-trivially a loop that contains a convergent
** call (SimpleLoopUnswitch) nor unroll it with a remainder.  In the row
** loop (y) it keeps O3 from cloning the y, z and group loops on the split's
** tests (lo < hi, any rest), which are the same for every row: each clone
** held another vectorized copy of the body, and saxpy's cold compile took
** 2.5-3x as long (issue 23; bench/cache.lua). */
static void w_no_unswitch(wrap_ctx *w)
{
  static const char *const attrs[] = { "convergent", "inaccessiblememonly",
                                       "nounwind", "willreturn" };
  LLVMTypeRef vt = LLVMFunctionType(LLVMVoidTypeInContext(w->c), NULL, 0, 0);
  LLVMValueRef a = LLVMGetInlineAsm(vt, (char *)"", 0, (char *)"", 0, 1, 0,
                                    LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(w->b, vt, a, NULL, 0, "");
  size_t i;
  for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
    unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(w->c, k, 0));
  }
}

/* Loop metadata on the latch branch br: neither vectorize nor unroll the
** loop.  For the split's second loop, whose items (but for a failed fcmp
** range, native_split.c) all skip their work: compiling it as a vector loop
** with masked accesses cost as much as the fast loop, for nothing; and for
** the vectorizer's loops (native_vec.c). */
void cpu_plain_loop(LLVMContextRef c, LLVMValueRef br)
{
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0), ops[3], kv[2], id;
  kv[0] = LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", 26);
  kv[1] = LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0));
  ops[0] = tmp;
  ops[1] = LLVMMDNodeInContext2(c, kv, 2);
  kv[0] = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
  ops[2] = LLVMMDNodeInContext2(c, kv, 1);
  id = LLVMMDNodeInContext2(c, ops, 3);
  /* the first operand replaced by the node itself makes it distinct */
  LLVMMetadataReplaceAllUsesWith(tmp, id);
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                  LLVMMetadataAsValue(c, id));
}

/* The x loop of one row of a group without barriers, in two loops (see
** native_split.c): the fast loop over lx in [lo, hi), then the rest, idx in
** [0, end - (hi - lo)) with lx = idx < lo ? idx : idx + (hi - lo).  lo and
** hi are placeholders that cpu_split replaces once the body is inlined. */
static void w_xloops(wrap_ctx *w, LLVMValueRef base, LLVMValueRef end)
{
  cpu_split_site *s = &w->split;
  LLVMValueRef pa[2] = { base, end }, lx, idx, width, cnt, nx, zero = w_const(w, 0);
  LLVMBasicBlockRef pre, skip, rest, done, head;
  s->base = base;
  s->end = end;
  w_no_unswitch(w);
  s->lo = LLVMBuildCall2(w->b, w->splitty, w->split_lo, pa, 2, "split.lo");
  s->hi = LLVMBuildCall2(w->b, w->splitty, w->split_hi, pa, 2, "split.hi");
  pre = LLVMAppendBasicBlockInContext(w->c, w->fn, "xa.pre");
  skip = LLVMAppendBasicBlockInContext(w->c, w->fn, "xa.skip");
  LLVMBuildCondBr(w->b, LLVMBuildICmp(w->b, LLVMIntSLT, s->lo, s->hi, ""), pre, skip);
  LLVMPositionBuilderAtEnd(w->b, pre);
  lx = w_loop_begin(w, w->fn, s->lo, "xa", &s->head);
  {
    LLVMValueRef gid = w_xitem(w, base, lx);
    s->mark = LLVMBuildCall2(w->b, w->markty, w->split_mark, &gid, 1, "");
  }
  s->next = w_loop_end(w, w->fn, lx, s->head, s->hi, "xa.done");
  s->done = LLVMGetInsertBlock(w->b);
  LLVMBuildBr(w->b, skip);
  LLVMPositionBuilderAtEnd(w->b, skip);
  width = LLVMBuildSub(w->b, s->hi, s->lo, "");
  width = LLVMBuildSelect(w->b, LLVMBuildICmp(w->b, LLVMIntSLT, s->lo, s->hi, ""),
                          width, zero, "xa.width");
  cnt = LLVMBuildSub(w->b, end, width, "xb.count");
  rest = LLVMAppendBasicBlockInContext(w->c, w->fn, "xb.pre");
  done = LLVMAppendBasicBlockInContext(w->c, w->fn, "x.done");
  LLVMBuildCondBr(w->b, LLVMBuildICmp(w->b, LLVMIntSGT, cnt, zero, ""), rest, done);
  LLVMPositionBuilderAtEnd(w->b, rest);
  idx = w_loop_begin(w, w->fn, zero, "xb", &head);
  lx = LLVMBuildSelect(w->b, LLVMBuildICmp(w->b, LLVMIntSLT, idx, s->lo, ""), idx,
                       LLVMBuildAdd(w->b, idx, width, ""), "lx");
  w_xitem(w, base, lx);
  nx = w_loop_end(w, w->fn, idx, head, cnt, "xb.done");
  cpu_plain_loop(w->c, LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(nx)));
  LLVMBuildBr(w->b, done);
  LLVMPositionBuilderAtEnd(w->b, done);
}

/* The z, y, x loops over the work items of one group (bounds end[]). */
static void w_items(wrap_ctx *w, LLVMValueRef *base, LLVMValueRef *end)
{
  LLVMValueRef lz, ly, lx;
  LLVMBasicBlockRef zh, yh, xh;
  lz = w_loop_begin(w, w->fn, w_const(w, 0), "lz", &zh);
  w_setwi(w, WI_LOCAL_ID + 2, lz);
  w_setwi(w, WI_GLOBAL_ID + 2, LLVMBuildNSWAdd(w->b, base[2], lz, ""));
  ly = w_loop_begin(w, w->fn, w_const(w, 0), "ly", &yh);
  w_setwi(w, WI_LOCAL_ID + 1, ly);
  w_setwi(w, WI_GLOBAL_ID + 1, LLVMBuildNSWAdd(w->b, base[1], ly, ""));
  if (w->frames) {
    lx = w_loop_begin(w, w->fn, w_const(w, 0), "lx", &xh);
    w_setwi(w, WI_LOCAL_ID + 0, lx);
    w_setwi(w, WI_GLOBAL_ID + 0, LLVMBuildNSWAdd(w->b, base[0], lx, ""));
    w_resumable_item(w, lx, ly, lz);
    w_loop_end(w, w->fn, lx, xh, end[0], "x.done");
  } else if (w->nosplit) {
    lx = w_loop_begin(w, w->fn, w_const(w, 0), "lx", &xh);
    w_xitem(w, base[0], lx);
    w_loop_end(w, w->fn, lx, xh, end[0], "x.done");
  } else {
    w_xloops(w, base[0], end[0]);
  }
  w_loop_end(w, w->fn, ly, yh, end[1], "y.done");
  w_loop_end(w, w->fn, lz, zh, end[2], "z.done");
}

/* A group with barriers: passes over its work items until the first one
** has finished (each pass runs every item to its next barrier); a group
** whose items diverged ends the call (the launch reports the fault). */
static void w_phases(wrap_ctx *w, LLVMValueRef *base, LLVMValueRef *end,
                     LLVMBasicBlockRef exit)
{
  LLVMBasicBlockRef head, from = LLVMGetInsertBlock(w->b), latch, more, after;
  LLVMValueRef zero = w_const(w, 0), next, s0, fault;
  head = LLVMAppendBasicBlockInContext(w->c, w->fn, "phase");
  LLVMBuildBr(w->b, head);
  LLVMPositionBuilderAtEnd(w->b, head);
  w->phase = LLVMBuildPhi(w->b, w->i64, "phase");
  LLVMAddIncoming(w->phase, &zero, &from, 1);
  w_items(w, base, end);
  fault = LLVMBuildLoad2(w->b, w->i64, w->L[LAUNCH_FAULT], "");
  LLVMSetOrdering(fault, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(fault, 8);
  more = LLVMAppendBasicBlockInContext(w->c, w->fn, "phase.check");
  LLVMBuildCondBr(w->b, LLVMBuildICmp(w->b, LLVMIntNE, fault, zero, ""), exit, more);
  LLVMPositionBuilderAtEnd(w->b, more);
  s0 = LLVMBuildLoad2(w->b, w->i32, w->frames, "");
  next = LLVMBuildNSWAdd(w->b, w->phase, w_const(w, 1), "");
  latch = LLVMGetInsertBlock(w->b);
  after = LLVMAppendBasicBlockInContext(w->c, w->fn, "group.done");
  LLVMBuildCondBr(w->b, LLVMBuildICmp(w->b, LLVMIntNE, s0, LLVMConstNull(w->i32), ""),
                  head, after);
  LLVMAddIncoming(w->phase, &next, &latch, 1);
  LLVMPositionBuilderAtEnd(w->b, after);
}

static int cpu_wrap(void *ts, const gj_job *job, LLVMModuleRef m,
                    LLVMValueRef body, const gj_sig *sig, gj_err *err)
{
  wrap_ctx w;
  LLVMTypeRef bodyty, ptr, voidt, entryty, wity, ptypes[2];
  LLVMTypeRef btypes[1 + 2 * GJ_MAXPARAMS];
  LLVMValueRef bargs[1 + 2 * GJ_MAXPARAMS];
  LLVMValueRef entry, args, launch, f, *L = w.L, first, last, g;
  LLVMValueRef gid[3], gid0[3], base[3], end[3];
  LLVMBasicBlockRef bb, exit, gh, pre;
  unsigned need, k;
  int i;
  (void)ts;
  if (LLVMGetNamedFunction(m, "gj_entry"))
    return gj_err_set(err, "cpu: the module already has a gj_entry");
  memset(&w, 0, sizeof(w));
  w.c = LLVMGetModuleContext(m);
  w.i8 = LLVMInt8TypeInContext(w.c);
  w.i32 = LLVMInt32TypeInContext(w.c);
  w.i64 = LLVMInt64TypeInContext(w.c);
  ptr = w.ptr = LLVMPointerTypeInContext(w.c, 0);
  voidt = LLVMVoidTypeInContext(w.c);

  if (gj_body_check(body, job, sig, "cpu", err)) return -1;
  bodyty = LLVMGlobalGetValueType(body);
  need = LLVMCountParamTypes(bodyty);
  LLVMGetParamTypes(bodyty, btypes);

  /* The body is inlined into the loops, whatever the core asked for. */
  LLVMSetLinkage(body, LLVMInternalLinkage);
  remove_fn_attr(body, "noinline");
  remove_fn_attr(body, "optnone");
  add_fn_attr(w.c, body, "alwaysinline");
  /* Only gj_entry is exported: the intrinsics linked in so far become
  ** internal so that they vanish once inlined. */
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (!LLVMIsDeclaration(f) && len > 3 && strncmp(name, "gj.", 3) == 0)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }

  ptypes[0] = ptypes[1] = ptr;
  entryty = LLVMFunctionType(voidt, ptypes, 2, 0);
  entry = w.fn = LLVMAddFunction(m, "gj_entry", entryty);
  add_fn_attr(w.c, entry, "nounwind");
  for (k = 0; k < 2; k++) {
    add_param_attr(w.c, entry, k, "noalias");
    add_param_attr(w.c, entry, k, "nocapture");
    add_param_attr(w.c, entry, k, "readonly");
  }
  if (job->cpu[0]) add_str_attr(w.c, entry, "target-cpu", job->cpu);
  if (job->features[0])
    add_str_attr(w.c, entry, "target-features", job->features);
  args = LLVMGetParam(entry, 0);
  launch = LLVMGetParam(entry, 1);
  LLVMSetValueName2(args, "args", 4);
  LLVMSetValueName2(launch, "launch", 6);

  w.b = LLVMCreateBuilderInContext(w.c);
  bb = LLVMAppendBasicBlockInContext(w.c, entry, "entry");
  LLVMPositionBuilderAtEnd(w.b, bb);
  wity = LLVMArrayType(w.i64, WI__N);
  w.wi = LLVMBuildAlloca(w.b, wity, "wi");
  LLVMSetAlignment(w.wi, 16);

  /* Parameters: loaded once, before any loop. */
  bargs[0] = w.wi;
  for (i = 0, k = 1; i < sig->nparams; i++) {
    const gj_param *p = &sig->params[i];
    if (p->is_array) {
      bargs[k] = w_arg(&w, args, p->offset, btypes[k], 8);
      bargs[k + 1] = w_arg(&w, args, p->offset + 8, w.i64, 8);
      k += 2;
    } else if (p->elem == GJ_BOOL) {
      LLVMValueRef v = w_arg(&w, args, p->offset, w.i8, 1);
      bargs[k++] = LLVMBuildICmp(w.b, LLVMIntNE, v, LLVMConstInt(w.i8, 0, 0),
                                 "");
    } else {
      bargs[k] = w_arg(&w, args, p->offset, btypes[k],
                       (unsigned)gj_scalar_size((gj_scalar)p->elem));
      k++;
    }
  }

  /* The launch block, and the parts of the state fixed for the launch. */
  for (k = 0; k < LAUNCH_SCRATCH; k++) L[k] = w_load64(&w, launch, (int)k, "");
  for (; k <= LAUNCH_FAULT; k++) {
    LLVMValueRef idx = w_const(&w, k);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(w.b, w.i64, launch, &idx, 1, "");
    L[k] = LLVMBuildLoad2(w.b, ptr, p, k == LAUNCH_SCRATCH ? "scratch" : "fault");
    LLVMSetAlignment(L[k], 8);
  }
  w_setwi(&w, WI_SHARED, L[LAUNCH_SCRATCH]);
  if (sig->faults) {
    LLVMValueRef idx = w_const(&w, LAUNCH_RECORD);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(w.b, w.i64, launch, &idx, 1, "");
    LLVMValueRef rec = LLVMBuildLoad2(w.b, ptr, p, "record");
    LLVMSetAlignment(rec, 8);
    w_setwi(&w, WI_FAULT_RECORD, rec);
  }
  if (sig->uses_barrier) {
    LLVMValueRef off = w_const(&w, (int64_t)CPU_SHARED_ROUND(sig->shared_bytes));
    w.frame_bytes = (sig->frame_bytes + 15) / 16 * 16;
    w.frames = LLVMBuildInBoundsGEP2(w.b, w.i8, L[LAUNCH_SCRATCH], &off, 1, "frames");
  }
  for (k = 0; k < 3; k++) {
    w_setwi(&w, WI_GROUP_SIZE + k, L[LAUNCH_GROUP + k]);
    w_setwi(&w, WI_NUM_GROUPS + k, L[LAUNCH_NGROUPS + k]);
    w_setwi(&w, WI_GLOBAL_SIZE + k, L[LAUNCH_GLOBAL + k]);
  }
  first = L[LAUNCH_FIRST];
  last = L[LAUNCH_LAST];
  exit = LLVMAppendBasicBlockInContext(w.c, entry, "exit");
  {
    LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(w.c, entry, "go");
    LLVMBuildCondBr(w.b, LLVMBuildICmp(w.b, LLVMIntSLT, first, last, ""),
                    go, exit);
    LLVMPositionBuilderAtEnd(w.b, go);
  }

  /* for g in [first, last): the group ids of `first` from the linear
  ** index (divisions once per call), then counted up (x fastest) from one
  ** group to the next; clamped bounds end[d] = min(group[d], global[d] -
  ** base[d]) >= 1. */
  {
    LLVMValueRef t = LLVMBuildUDiv(w.b, first, L[LAUNCH_NGROUPS + 0], "");
    gid0[0] = LLVMBuildURem(w.b, first, L[LAUNCH_NGROUPS + 0], "");
    gid0[1] = LLVMBuildURem(w.b, t, L[LAUNCH_NGROUPS + 1], "");
    gid0[2] = LLVMBuildUDiv(w.b, t, L[LAUNCH_NGROUPS + 1], "");
  }
  pre = LLVMGetInsertBlock(w.b);
  g = w_loop_begin(&w, entry, first, "g", &gh);
  for (k = 0; k < 3; k++) {
    gid[k] = LLVMBuildPhi(w.b, w.i64, k == 0 ? "gx" : k == 1 ? "gy" : "gz");
    LLVMAddIncoming(gid[k], &gid0[k], &pre, 1);
  }
  for (k = 0; k < 3; k++) {
    w_setwi(&w, WI_GROUP_ID + k, gid[k]);
    base[k] = LLVMBuildNSWMul(w.b, gid[k], L[LAUNCH_GROUP + k], "");
    end[k] = w_min(&w, L[LAUNCH_GROUP + k],
                   LLVMBuildNSWSub(w.b, L[LAUNCH_GLOBAL + k], base[k], ""),
                   "");
  }
  w.nosplit = defined_insns(m) > CPU_SPLIT_MAX_INSNS;
  if (w.frames && job->vectorize && !w.nosplit) {
    /* the x loop of a pass, for the vectorizer (native_vec_frame.c) */
    LLVMTypeRef two[2] = { w.i64, ptr };
    w.vbarty = LLVMFunctionType(voidt, two, 2, 0);
    w.vbar = LLVMAddFunction(m, "gj.vec.bar", w.vbarty);
  }
  w.nosplit = w.nosplit && !w.frames;
  if (!w.frames && !w.nosplit) {
    LLVMTypeRef two[2] = { w.i64, w.i64 };
    w.splitty = LLVMFunctionType(w.i64, two, 2, 0);
    w.split_lo = LLVMAddFunction(m, "gj.split.lo", w.splitty);
    w.split_hi = LLVMAddFunction(m, "gj.split.hi", w.splitty);
    w.markty = LLVMFunctionType(voidt, &w.i64, 1, 0);
    w.split_mark = LLVMAddFunction(m, "gj.split.mark", w.markty);
  }
  w.body = body;
  w.bodyty = bodyty;
  w.bargs = bargs;
  w.nbargs = need;
  if (w.frames) w_phases(&w, base, end, exit);
  else w_items(&w, base, end);
  {
    /* the next group's ids: x + 1, carried into y and z */
    LLVMValueRef one = w_const(&w, 1), zero = w_const(&w, 0), nx, ny, nz, wx, wy;
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(w.b);
    nx = LLVMBuildNSWAdd(w.b, gid[0], one, "");
    wx = LLVMBuildICmp(w.b, LLVMIntEQ, nx, L[LAUNCH_NGROUPS + 0], "");
    nx = LLVMBuildSelect(w.b, wx, zero, nx, "");
    ny = LLVMBuildNSWAdd(w.b, gid[1], LLVMBuildZExt(w.b, wx, w.i64, ""), "");
    wy = LLVMBuildICmp(w.b, LLVMIntEQ, ny, L[LAUNCH_NGROUPS + 1], "");
    ny = LLVMBuildSelect(w.b, wy, zero, ny, "");
    nz = LLVMBuildNSWAdd(w.b, gid[2], LLVMBuildZExt(w.b, wy, w.i64, ""), "");
    LLVMAddIncoming(gid[0], &nx, &latch, 1);
    LLVMAddIncoming(gid[1], &ny, &latch, 1);
    LLVMAddIncoming(gid[2], &nz, &latch, 1);
  }
  w_loop_end(&w, entry, g, gh, last, "g.done");
  LLVMBuildBr(w.b, exit);
  LLVMPositionBuilderAtEnd(w.b, exit);
  LLVMBuildRetVoid(w.b);
  LLVMDisposeBuilder(w.b);
  return 0;
}

/* Stage 7: the split of the fast x loop (wrap left its placeholders), then
** the work-item vectorizer on it; a kernel with barriers has no split, and
** the vectorizer runs on the x loop of its passes (wrap's mark).  A huge
** body has neither: one x loop, as wrap built it. */
static int cpu_finish_module(void *ts, const gj_job *job,
                             LLVMModuleRef m, char *note, size_t notesz,
                             gj_err *err)
{
  cpu_split_site s;
  (void)ts;
  if (!cpu_split_find(m, &s)) {
    int r = cpu_bar_site(m, &s, err);
    if (r == 1) return cpu_vectorize(m, job, &s, note, notesz, err) ? -1 : cpu_adj_cache(m);
    if (r < 0) return -1;
    if (r == 2)
      snprintf(note, notesz, "not vectorized: an unexpected loop shape");
    else if (job->vectorize)
      snprintf(note, notesz, "not vectorized: a huge body (one x loop)");
    return cpu_adj_cache(m);
  }
  if (cpu_split(m, &s, err)) return -1;
  if (cpu_vectorize(m, job, &s, note, notesz, err)) return -1;
  return cpu_aos(m, &s, note, notesz) ? -1 : cpu_adj_cache(m);
}

static int cpu_emit(void *ts, const gj_job *job, LLVMTargetMachineRef tm,
                    LLVMModuleRef m, int asm, char **out, size_t *len,
                    gj_err *err)
{
  char *obj = NULL;
  size_t objlen = 0;
  int r;
  (void)ts;
  (void)job;
  if (asm) return gj_target_emit(tm, m, asm, "cpu", out, len, err);
  if (gj_target_emit(tm, m, 0, "cpu", &obj, &objlen, err) != 0) return -1;
  r = gj_native_link(obj, objlen, out, len, err);   /* native_link.c */
  free(obj);
  return r;
}

const gj_codegen gj_codegen_native = {
  .name = "native", .wrap = cpu_wrap, .finish_module = cpu_finish_module,
  .emit = cpu_emit,
  /* finish_ir: none */
};
