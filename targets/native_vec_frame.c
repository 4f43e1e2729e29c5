/*
** The work-item vectorizer, part four: kernels with barriers.
**
** The core compiles such a kernel into a resumable function (docs/backends.md,
** src/gj_cg_group.c): its Lua slots live in a frame per work item, its
** entry switches on the frame's resume point (the i32 at offset 0), and
** a barrier stores its number there and returns; gj_entry calls the body
** for every item of a group in passes.  Wrap marks the x loop of a pass
** (@gj.vec.bar(lx, frame)); here it becomes a site like the split's fast
** loop, lo 0 and hi the row's length, and the vectorizer runs W work items
** at a time through the resumable function as its lanes.
**
** The frame is what changes.  Every access to it is a load or store at
** frame + a constant (a slot; anything else, a callee's frame or a private
** array's index, leaves the kernel scalar).  For the W items of a vector
** iteration (lanes 0 .. W - 1, frames frame_0 .. frame_0 + (W-1) * F), the
** W frames' bytes are laid out by slots: lane l's copy of the slot at
** offset off, of size s, is at frame_0 + W * off + l * s, so that a slot
** that varies is one vector load or store.  A slot whose stores all store
** a uniform value, or linear ones of one stride, outside any mask keeps
** lane 0's value only, at frame_0 + W * off (lane l's is that + l *
** stride).  Slots of different offsets do not overlap (checked), so their
** columns do not either, and all of them lie within the W frames.
**
** Invariants that make this exact:
**   - the same work items are the lanes of the same vector iteration in
**     every pass of a group (the row's length does not change), so an item
**     whose frame is laid out by slots is only ever run by the vector loop;
**     the items after the last whole group of W (the fast loop) keep the
**     plain layout in their own frames;
**   - the resume point is a slot like any other: when it is uniform (every
**     barrier, and every return, in control flow that does not vary with
**     the work item, which the analysis proves from the stores), the entry
**     switch is uniform and all lanes stop at the same barrier; lane 0's
**     resume point is at frame_0, where wrap's check and the next pass read
**     the item's;
**   - stores to a varying slot under a mask (a varying if's arm) are masked
**     stores; loads of the frame are never masked (the frame is always
**     there, and masked lanes' values are never read).
** No frame address is visible to anything but these loads and stores, so
** in the vector code the frame accesses get an alias scope of their own
** and every other access `noalias` to it: LLVM may then keep a slot in a
** register across an inner loop (the tiled matmul's accumulator).
**
** A slot's kind is that of all its stores together, and the codegen reuses
** a slot for temporaries of different statements (a varying one under an
** if, a uniform one elsewhere).  So before the analysis (vx_frame_forward,
** on the loop both the vector code and the fast loop then run, where it
** changes nothing a work item computes): within a block a load of a slot
** just stored or loaded becomes that value, and the stores that every path
** overwrites before a read go, the paths running through a pass and from a
** suspension at barrier k to where the next pass resumes.  The resume
** dispatch is found from wrap's store of the resume point (a switch on it,
** or, for one barrier, a branch on it == 1).
*/
#include "native_vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#define VEC_MAX_SLOTS 4096

/* -- the site ------------------------------------------------------------ */

int cpu_bar_site(LLVMModuleRef m, cpu_split_site *s, gj_err *err)
{
  LLVMValueRef f = LLVMGetNamedFunction(m, "gj.vec.bar"), call, lx, t;
  LLVMUseRef u;
  memset(s, 0, sizeof(*s));
  if (!f) return 0;
  u = LLVMGetFirstUse(f);
  call = u ? LLVMGetUser(u) : NULL;
  if (!call || LLVMGetNextUse(u) || !LLVMIsACallInst(call)) {
    LLVMDeleteFunction(f);
    return 0;
  }
  lx = LLVMGetOperand(call, 0);
  s->frame = LLVMGetOperand(call, 1);
  LLVMInstructionEraseFromParent(call);
  LLVMDeleteFunction(f);
  /* wrap's shape (w_loop_begin, w_loop_end): lx = phi [0, pre], [lx + 1,
  ** latch]; the latch's branch on next < end */
  if (!LLVMIsAPHINode(lx) || LLVMCountIncoming(lx) != 2 ||
      !LLVMIsAGetElementPtrInst(s->frame))
    return 2;
  s->head = LLVMGetInstructionParent(lx);
  s->lo = LLVMGetIncomingValue(lx, 0);
  s->next = LLVMGetIncomingValue(lx, 1);
  t = LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(s->next));
  if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t) ||
      !LLVMIsAICmpInst(LLVMGetCondition(t)))
    return 2;
  s->done = LLVMGetSuccessor(t, 1);
  s->hi = LLVMGetOperand(LLVMGetCondition(t), 1);
  /* the body inlined, the work-item state in SSA values (as cpu_split) */
  if (cpu_inline_body(m, err)) return -1;
  return 1;
}

/* -- the slots ----------------------------------------------------------- */

/* The frame offset of address p: 0 for the frame, c * size for a GEP of it
** by a constant; -1 when p is no frame address. */
static int64_t frame_off(const vctx *x, LLVMValueRef p)
{
  LLVMValueRef i;
  if (p == x->frame) return 0;
  if (!LLVMIsAGetElementPtrInst(p) || LLVMGetNumOperands(p) != 2 ||
      LLVMGetOperand(p, 0) != x->frame)
    return -1;
  i = LLVMGetOperand(p, 1);
  if (!LLVMIsAConstantInt(i) || LLVMConstIntGetSExtValue(i) < 0) return -1;
  return LLVMConstIntGetSExtValue(i) *
         (int64_t)LLVMABISizeOfType(x->td, LLVMGetGEPSourceElementType(p));
}

static vslot *find_slot(const vctx *x, int64_t off)
{
  size_t i;
  for (i = 0; i < x->nslots; i++)
    if (x->slots[i].off == off) return &x->slots[i];
  return NULL;
}

/* The access I of the frame at off, of its loaded or stored type. */
static int add_access(vctx *x, LLVMValueRef I, int64_t off)
{
  LLVMTypeRef t = LLVMIsAStoreInst(I) ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I);
  unsigned size = (unsigned)LLVMStoreSizeOfType(x->td, t);
  vslot *sl = find_slot(x, off);
  if (sl) return sl->size == size ? 0 : vx_refuse(x, "a frame slot of two sizes");
  if (x->nslots == VEC_MAX_SLOTS) return vx_refuse(x, "too many frame slots");
  if (!x->slots && !(x->slots = calloc(VEC_MAX_SLOTS, sizeof(vslot)))) return -2;
  sl = &x->slots[x->nslots++];
  sl->off = off;
  sl->size = size;
  return 0;
}

/* A use of a frame address p (at off) by I: a load or store of it. */
static int frame_use(vctx *x, LLVMValueRef I, LLVMValueRef p, int64_t off)
{
  if (LLVMIsALoadInst(I) && LLVMGetOperand(I, 0) == p) return add_access(x, I, off);
  if (LLVMIsAStoreInst(I) && LLVMGetOperand(I, 1) == p && LLVMGetOperand(I, 0) != p)
    return add_access(x, I, off);
  return vx_refuse(x, "a frame address used otherwise than by a load or store (a "
                      "device function with barriers, a private array)");
}

int vx_frame_slots(vctx *x)
{
  LLVMUseRef u, v;
  size_t i, j;
  x->frames = LLVMGetOperand(x->frame, 0);
  for (u = LLVMGetFirstUse(x->frame); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef I = LLVMGetUser(u);
    int64_t off = frame_off(x, I);
    int r;
    if (off < 0) {
      r = frame_use(x, I, x->frame, 0);
    } else {
      for (r = 0, v = LLVMGetFirstUse(I); v && !r; v = LLVMGetNextUse(v))
        r = frame_use(x, LLVMGetUser(v), I, off);
    }
    if (r == -2) return vx_refuse(x, "out of memory");
    if (r) return -1;
  }
  for (i = 0; i < x->nslots; i++)
    for (j = i + 1; j < x->nslots; j++) {
      const vslot *a = &x->slots[i], *b = &x->slots[j];
      if (a->off < b->off + (int64_t)b->size && b->off < a->off + (int64_t)a->size)
        return vx_refuse(x, "frame slots that overlap");
    }
  return 0;
}

vslot *vx_frame_slot(const vctx *x, LLVMValueRef I)
{
  int64_t off;
  if (!x->frame || !(LLVMIsALoadInst(I) || LLVMIsAStoreInst(I))) return NULL;
  off = frame_off(x, LLVMGetOperand(I, LLVMIsAStoreInst(I) ? 1 : 0));
  return off < 0 ? NULL : find_slot(x, off);
}

/* Can lanes of type t be one vector access of W * its size bytes? */
static int lane_mem_type(const vctx *x, LLVMTypeRef t)
{
  switch (LLVMGetTypeKind(t)) {
  case LLVMFloatTypeKind: case LLVMDoubleTypeKind: case LLVMPointerTypeKind:
    return 1;
  case LLVMIntegerTypeKind:
    return LLVMGetIntTypeWidth(t) >= 8 &&
           LLVMABISizeOfType(x->td, t) == LLVMStoreSizeOfType(x->td, t);
  default:
    return 0;
  }
}

int vx_frame_kind(vctx *x, LLVMValueRef I, vslot *sl, int64_t *st)
{
  int store = LLVMIsAStoreInst(I) != NULL, k;
  LLVMTypeRef t = store ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I);
  int64_t s;
  if (LLVMGetVolatile(I) || LLVMGetOrdering(I) != LLVMAtomicOrderingNotAtomic)
    return vx_refuse(x, "an atomic or volatile access of the frame");
  if (sl->kind == V_VEC && !lane_mem_type(x, t))
    return vx_refuse(x, "a frame slot that varies, of a type not a vector's lane");
  if (!store) {
    *st = sl->stride;
    return sl->kind;
  }
  *st = 0;
  k = vx_kind_of(x, LLVMGetOperand(I, 0), &s);
  if (vx_arm_of(x, LLVMGetInstructionParent(I), NULL)) k = V_VEC;   /* masked */
  if (k == V_VEC) s = 0;
  if (!sl->nseen) {
    sl->nseen = 1;
    sl->nkind = k;
    sl->nstride = s;
  } else if (sl->nkind != k || sl->nstride != s) {
    /* a uniform value is linear of stride 0: two strides vary */
    sl->nkind = V_VEC;
    sl->nstride = 0;
  }
  return sl->kind == V_VEC ? V_VEC : V_UNI;
}

int vx_frame_round(vctx *x)
{
  size_t i;
  int changed = 0;
  for (i = 0; i < x->nslots; i++) {
    vslot *sl = &x->slots[i];
    int k = sl->nseen ? sl->nkind : V_UNI;
    int64_t s = sl->nseen ? sl->nstride : 0;
    if (sl->kind != V_VEC && (k != sl->kind || s != sl->stride)) {
      sl->kind = k;
      sl->stride = s;
      changed = 1;
    }
    sl->nseen = 0;
  }
  return changed;
}

/* -- building ------------------------------------------------------------ */

/* distinct !{!self, !name} */
static LLVMMetadataRef self_node(vctx *x, LLVMMetadataRef parent, const char *name)
{
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(x->c, NULL, 0), ops[3], n;
  unsigned k = 0;
  ops[k++] = tmp;
  if (parent) ops[k++] = parent;
  ops[k++] = LLVMMDStringInContext2(x->c, name, strlen(name));
  n = LLVMMDNodeInContext2(x->c, ops, k);
  LLVMMetadataReplaceAllUsesWith(tmp, n);
  return n;
}

static void make_scopes(vctx *x)
{
  LLVMMetadataRef dom, scope;
  if (x->md_scope) return;
  dom = self_node(x, NULL, "gj.frames");
  scope = self_node(x, dom, "gj.frame");
  x->md_scope = x->md_noalias = LLVMMetadataAsValue(x->c, LLVMMDNodeInContext2(x->c, &scope, 1));
}

static void set_md(vctx *x, LLVMValueRef I, const char *kind, LLVMValueRef md)
{
  LLVMSetMetadata(I, LLVMGetMDKindIDInContext(x->c, kind, (unsigned)strlen(kind)), md);
}

void vx_frame_noalias(vctx *x, LLVMValueRef I)
{
  LLVMValueRef p;
  if (!x->frame || !I || !LLVMIsAInstruction(I)) return;
  make_scopes(x);
  if (LLVMIsALoadInst(I) || LLVMIsAStoreInst(I)) {
    p = LLVMGetOperand(I, LLVMIsAStoreInst(I) ? 1 : 0);
    /* the first item's resume point (wrap's check) is lane 0's */
    if (p == x->frames || frame_off(x, p) >= 0) return;
  } else if (!LLVMIsACallInst(I) || !LLVMGetIntrinsicID(LLVMGetCalledValue(I))) {
    return;
  }
  set_md(x, I, "noalias", x->md_noalias);
}

LLVMValueRef vx_frame_emit(vctx *x, LLVMValueRef I, vslot *sl)
{
  int store = LLVMIsAStoreInst(I) != NULL;
  LLVMTypeRef t = store ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I);
  LLVMValueRef idx = LLVMConstInt(x->i64, (unsigned long long)(x->W * sl->off), 0), p, r;
  unsigned al = LLVMGetAlignment(I);
  int vec = sl->kind == V_VEC;
  make_scopes(x);
  p = LLVMBuildInBoundsGEP2(x->b, x->i8, vx_scal(x, x->frame), &idx, 1, "slot");
  if (!store) {
    r = LLVMBuildLoad2(x->b, vec ? vx_vty(x, t) : t, p, "");
  } else if (!vec) {
    r = LLVMBuildStore(x->b, vx_scal(x, LLVMGetOperand(I, 0)), p);
  } else if (x->curmask) {
    static const char name[] = "llvm.masked.store";
    unsigned id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
    LLVMTypeRef tys[2];
    LLVMValueRef a[4];
    tys[0] = vx_vty(x, t);
    tys[1] = LLVMTypeOf(p);
    a[0] = vx_vec(x, LLVMGetOperand(I, 0));
    a[1] = p;
    a[2] = LLVMConstInt(x->i32, al ? al : 1, 0);
    a[3] = x->curmask;
    r = LLVMBuildCall2(x->b, LLVMIntrinsicGetType(x->c, id, tys, 2),
                       LLVMGetIntrinsicDeclaration(x->m, id, tys, 2), a, 4, "");
    set_md(x, r, "alias.scope", x->md_scope);
    return r;
  } else {
    r = LLVMBuildStore(x->b, vx_vec(x, LLVMGetOperand(I, 0)), p);
  }
  if (al) LLVMSetAlignment(r, al);
  set_md(x, r, "alias.scope", x->md_scope);
  return r;
}

/* -- before the analysis ------------------------------------------------- */

#define VEC_MAX_KNOWN 64

/* A frame access's slot number among offs[0 .. n) (sorted), or -1. */
static long slot_no(const vctx *x, LLVMValueRef in, const int64_t *offs, size_t n)
{
  int store = LLVMIsAStoreInst(in) != NULL;
  int64_t o;
  size_t lo = 0, hi = n;
  if ((!store && !LLVMIsALoadInst(in)) || LLVMGetVolatile(in) ||
      (o = frame_off(x, LLVMGetOperand(in, store ? 1 : 0))) < 0)
    return -1;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (offs[mid] < o) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && offs[lo] == o ? (long)lo : -1;
}

typedef struct span { int64_t off, end; } span;

static int cmp_off(const void *a, const void *b)
{
  int64_t u = ((const span *)a)->off, v = ((const span *)b)->off;
  return u < v ? -1 : u > v;
}

/* One block backwards: live (bits per slot) from its live-out; with
** erase, the stores of slots not live after them go. */
static void live_block(const vctx *x, LLVMBasicBlockRef bb, const int64_t *offs,
                       size_t n, unsigned char *live, int erase)
{
  LLVMValueRef in, prev;
  for (in = LLVMGetLastInstruction(bb); in; in = prev) {
    long k = slot_no(x, in, offs, n);
    prev = LLVMGetPreviousInstruction(in);
    if (k < 0) continue;
    if (LLVMIsALoadInst(in)) {
      live[k] = 1;
    } else if (live[k] || offs[k] == 0 || !erase) {
      live[k] = 0;
    } else {
      LLVMInstructionEraseFromParent(in);
    }
  }
}

/* Do frame addresses reach only loads and stores (of the frame, at a
** constant offset)?  A resumable callee's frame, a private array, do not. */
static int frame_private(const vctx *x)
{
  LLVMUseRef u, v;
  for (u = LLVMGetFirstUse(x->frame); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef I = LLVMGetUser(u);
    if (frame_off(x, I) < 0) {
      if (!(LLVMIsALoadInst(I) && LLVMGetOperand(I, 0) == x->frame) &&
          !(LLVMIsAStoreInst(I) && LLVMGetOperand(I, 1) == x->frame &&
            LLVMGetOperand(I, 0) != x->frame))
        return 0;
      continue;
    }
    for (v = LLVMGetFirstUse(I); v; v = LLVMGetNextUse(v)) {
      LLVMValueRef J = LLVMGetUser(v);
      if (!(LLVMIsALoadInst(J) && LLVMGetOperand(J, 0) == I) &&
          !(LLVMIsAStoreInst(J) && LLVMGetOperand(J, 1) == I && LLVMGetOperand(J, 0) != I))
        return 0;
    }
  }
  return 1;
}

/* The blocks of the x loop (from its head, not through it again nor past
** its exit), head first; -1 on no memory. */
static long loop_blocks(const vctx *x, LLVMBasicBlockRef **out)
{
  size_t n = 1, cap = 64, i, j;
  LLVMBasicBlockRef *q = malloc(cap * sizeof(*q));
  if (!q) return -1;
  q[0] = x->s->head;
  for (i = 0; i < n; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(q[i]);
    unsigned s, ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (s = 0; s < ns; s++) {
      LLVMBasicBlockRef to = LLVMGetSuccessor(t, s);
      if (to == x->s->done) continue;
      for (j = 0; j < n && q[j] != to; j++) {}
      if (j < n) continue;
      if (n == cap) {
        LLVMBasicBlockRef *r = realloc(q, (cap *= 2) * sizeof(*q));
        if (!r) {
          free(q);
          return -1;
        }
        q = r;
      }
      q[n++] = to;
    }
  }
  *out = q;
  return (long)n;
}

static long block_no(LLVMBasicBlockRef const *bbs, size_t nb, LLVMBasicBlockRef bb)
{
  size_t j;
  for (j = 0; j < nb && bbs[j] != bb; j++) {}
  return j < nb ? (long)j : -1;
}

/* The resume point the body dispatches on: what wrap stores at the frame in
** the loop's head (the select of 0 on the first pass), or NULL. */
static LLVMValueRef dispatch_value(const vctx *x)
{
  LLVMValueRef in;
  for (in = LLVMGetFirstInstruction(x->s->head); in; in = LLVMGetNextInstruction(in))
    if (LLVMIsAStoreInst(in) && LLVMGetOperand(in, 1) == x->frame)
      return LLVMGetOperand(in, 0);
  return NULL;
}

/* Where a pass resumes at point k: the case k of the switch on d, or the
** true side of a branch on d == k (the inliner turns a switch of one case
** into that); NULL when neither is found. */
static LLVMBasicBlockRef resume_block(LLVMValueRef d, unsigned long long k)
{
  LLVMUseRef u, v;
  for (u = LLVMGetFirstUse(d); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef I = LLVMGetUser(u);
    if (LLVMIsASwitchInst(I) && LLVMGetOperand(I, 0) == d) {
      unsigned j;
      for (j = 1; j < LLVMGetNumSuccessors(I); j++)
        if (LLVMConstIntGetZExtValue(LLVMGetOperand(I, 2 * j)) == k)
          return LLVMGetSuccessor(I, j);
    } else if (LLVMIsAICmpInst(I) && LLVMGetICmpPredicate(I) == LLVMIntEQ &&
               LLVMIsAConstantInt(LLVMGetOperand(I, 1)) &&
               LLVMConstIntGetZExtValue(LLVMGetOperand(I, 1)) == k) {
      for (v = LLVMGetFirstUse(I); v; v = LLVMGetNextUse(v)) {
        LLVMValueRef br = LLVMGetUser(v);
        if (LLVMIsABranchInst(br) && LLVMIsConditional(br) && LLVMGetCondition(br) == I)
          return LLVMGetSuccessor(br, 0);
      }
    }
  }
  return NULL;
}

/* After a block that suspends (stores a constant k > 0 as the resume
** point), the next pass resumes at resume_block(k): 1 and *to, or 1 and
** NULL when it cannot be found; 0 for other blocks. */
static int resumes_at(const vctx *x, LLVMBasicBlockRef bb, LLVMValueRef d,
                      LLVMBasicBlockRef *to)
{
  LLVMValueRef in;
  for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
    LLVMValueRef k;
    if (!LLVMIsAStoreInst(in) || LLVMGetOperand(in, 1) != x->frame) continue;
    k = LLVMGetOperand(in, 0);
    if (!LLVMIsAConstantInt(k) || !LLVMConstIntGetZExtValue(k)) continue;
    *to = resume_block(d, LLVMConstIntGetZExtValue(k));
    return 1;
  }
  *to = NULL;
  return 0;
}

/* Stores of a slot that every path overwrites before reading it go.  The
** paths: within a pass, the x loop's blocks (an item's frame is not read
** by the next item's run of the loop); from a pass to the next, from a
** block that suspends at barrier k to where the dispatch on the resume
** point goes for k, where the next pass resumes (wrap resets the resume
** point to 0 only on the first pass, where the function starts).  Offset
** 0, the resume point, which wrap and the next pass read, is kept.
** Nothing goes when slots overlap (which vx_frame_slots refuses later) or
** a resume point's block is not found. */
static int dead_stores(vctx *x)
{
  LLVMBasicBlockRef *bbs = NULL;
  LLVMValueRef d = dispatch_value(x);
  int64_t *offs = NULL;
  span *sp = NULL;
  size_t *first = NULL, *succ = NULL;
  unsigned char *in = NULL, *tmp = NULL;
  size_t n = 0, cap = 0, nb, ns, i, j, k;
  long nbl = loop_blocks(x, &bbs);
  int changed = 1, r = -1;
  if (nbl < 0) return -1;
  nb = (size_t)nbl;
  for (i = 0; i < nb; i++) {
    LLVMValueRef I;
    for (I = LLVMGetFirstInstruction(bbs[i]); I; I = LLVMGetNextInstruction(I)) {
      int store = LLVMIsAStoreInst(I) != NULL;
      int64_t o;
      if ((!store && !LLVMIsALoadInst(I)) ||
          (o = frame_off(x, LLVMGetOperand(I, store ? 1 : 0))) < 0)
        continue;
      if (n == cap) {
        span *q = realloc(sp, (cap = cap ? 2 * cap : 64) * sizeof(*q));
        if (!q) goto done;
        sp = q;
      }
      sp[n].off = o;
      sp[n++].end = o + (int64_t)LLVMStoreSizeOfType(
                            x->td, store ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I));
    }
  }
  if (!d) {
    r = 0;
    goto done;
  }
  if (n) qsort(sp, n, sizeof(*sp), cmp_off);
  for (i = j = 0; i < n; i++) {
    if (j && sp[j - 1].off == sp[i].off) {
      if (sp[i].end > sp[j - 1].end) sp[j - 1].end = sp[i].end;
    } else {
      sp[j++] = sp[i];
    }
  }
  n = j;
  for (i = 0; i + 1 < n; i++)
    if (sp[i].end > sp[i + 1].off) {     /* slots that overlap: none go */
      r = 0;
      goto done;
    }
  offs = malloc((n ? n : 1) * sizeof(*offs));
  in = calloc((nb ? nb : 1) * (n ? n : 1), 1);
  tmp = malloc(n ? n : 1);
  if (!offs || !in || !tmp) goto done;
  for (i = 0; i < n; i++) offs[i] = sp[i].off;
  /* each block's successors in the loop (past the head: the next item),
  ** and the block where the next pass resumes after it suspends */
  for (i = 0, ns = 0; i < nb; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bbs[i]);
    ns += (t ? LLVMGetNumSuccessors(t) : 0) + 1;
  }
  first = malloc((nb + 1) * sizeof(*first));
  succ = malloc(ns * sizeof(*succ));
  if (!first || !succ) goto done;
  for (i = 0, ns = 0; i < nb; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bbs[i]);
    LLVMBasicBlockRef to;
    unsigned s, nsu = t ? LLVMGetNumSuccessors(t) : 0;
    long b;
    first[i] = ns;
    for (s = 0; s < nsu; s++)
      if ((b = block_no(bbs, nb, LLVMGetSuccessor(t, s))) > 0) succ[ns++] = (size_t)b;
    if (resumes_at(x, bbs[i], d, &to)) {
      if (!to || (b = block_no(bbs, nb, to)) <= 0) {
        r = 0;                         /* a resume point not found: nothing goes */
        goto done;
      }
      succ[ns++] = (size_t)b;
    }
  }
  first[nb] = ns;
  for (;;) {
    int erase = !changed;
    changed = 0;
    for (i = nb; i-- > 0;) {
      memset(tmp, 0, n);
      for (j = first[i]; j < first[i + 1]; j++)
        for (k = 0; k < n; k++) tmp[k] |= in[succ[j] * n + k];
      live_block(x, bbs[i], offs, n, tmp, erase);
      if (memcmp(tmp, in + i * n, n)) {
        memcpy(in + i * n, tmp, n);
        changed = 1;
      }
    }
    if (erase) break;
  }
  r = 0;
done:
  free(sp);
  free(offs);
  free(first);
  free(succ);
  free(bbs);
  free(in);
  free(tmp);
  return r;
}

/* The codegen reuses a slot for temporaries of different statements, some
** varying and some not; within a block, a load of a slot just stored (or
** loaded) is that value, so it goes, and the slot's other uses do not make
** it vary.  Then stores to slots that nothing loads go.  Both hold for the
** scalar code as well (the fast loop keeps this form): frame addresses
** reach only these loads and stores (vx_frame_slots checks it before
** anything is built; until then this only drops redundant accesses), so no
** other access or call can change a slot. */
int vx_frame_forward(vctx *x)
{
  LLVMBasicBlockRef bb;
  size_t i;
  if (!frame_private(x)) return 0;    /* vx_frame_slots refuses it */
  for (bb = LLVMGetFirstBasicBlock(x->fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    int64_t off[VEC_MAX_KNOWN];
    LLVMValueRef val[VEC_MAX_KNOWN], in, next;
    size_t n = 0;
    for (in = LLVMGetFirstInstruction(bb); in; in = next) {
      int store = LLVMIsAStoreInst(in) != NULL;
      int64_t o;
      LLVMValueRef v;
      next = LLVMGetNextInstruction(in);
      if ((!store && !LLVMIsALoadInst(in)) || LLVMGetVolatile(in) ||
          LLVMGetOrdering(in) != LLVMAtomicOrderingNotAtomic)
        continue;
      o = frame_off(x, LLVMGetOperand(in, store ? 1 : 0));
      if (o < 0) continue;
      v = store ? LLVMGetOperand(in, 0) : in;
      for (i = 0; i < n && off[i] != o; i++) {}
      if (!store && i < n && LLVMTypeOf(val[i]) == LLVMTypeOf(in)) {
        LLVMReplaceAllUsesWith(in, val[i]);
        LLVMInstructionEraseFromParent(in);
        continue;
      }
      if (store) {
        /* forget what the stored bytes overlap (other slots' bytes may,
        ** which vx_frame_slots refuses later; this must stay exact) */
        int64_t end = o + (int64_t)LLVMStoreSizeOfType(x->td, LLVMTypeOf(v));
        size_t j, k;
        for (j = k = 0; j < n; j++) {
          int64_t e2 = off[j] + (int64_t)LLVMStoreSizeOfType(x->td, LLVMTypeOf(val[j]));
          if (off[j] != o && off[j] < end && o < e2) continue;
          off[k] = off[j];
          val[k++] = val[j];
        }
        n = k;
        for (i = 0; i < n && off[i] != o; i++) {}
      }
      if (i == n && n == VEC_MAX_KNOWN) n = 0, i = 0;
      off[i] = o;
      val[i] = v;
      if (i == n) n++;
    }
  }
  return dead_stores(x);
}

