/*
** The native target, part two: index-set splitting of the x loop.
**
** A kernel written for a GPU tests its ids: `if i < n then ... end`,
** `if x >= 1 and x < w - 1 then ... end`.  Inside gj_entry's x loop such a
** test makes LLVM's loop vectorizer predicate the body with masked loads
** and stores, which some cores run several times slower than plain ones
** (AMD Zen 5: saxpy 3.5x slower, the same with clang on the C loop; see
** bench/README.md).  Nearly every work item passes such tests, so wrap
** (native.c) runs a row of a group as a fast loop over lx in [lo, hi)
** and a second loop over the other work items, each calling the body; here,
** once the body is inlined into both, tests in the fast loop whose outcome
** is known for every lx in [lo, hi) become constants, and lo and hi are
** computed before the loops.
**
** Invariant: every test made constant in the fast loop has that value, as
** the kernel computes it, for every work item of [lo, hi); the second loop
** runs the body unchanged.  So the split never changes results, whatever
** [lo, hi) is; the choices below only decide how fast it runs.
**
** Tests considered: conditions of branches in the fast loop with one
** successor that only jumps to the end of the work item (a guard); the
** value assumed is the one that does not skip the work item.  Of those:
**   - invariant ones (arguments, values from before the loop and pure
**     arithmetic on them, recomputed before the loop): the range is empty
**     unless the test has the assumed value;
**   - icmp of (gid + k) against an invariant: solved for the range of lx;
**   - fcmp <, <=, >, >= of sitofp(gid + k) against an invariant: monotone
**     in lx, so it holds on [lo, hi) iff it holds at lo and at hi - 1.
** Others stay as they are in the fast loop.
*/
#include "native.h"

#include <stdlib.h>
#include <string.h>

#include <llvm-c/Transforms/PassBuilder.h>

#define SPLIT_HOPS 4            /* jumps followed to find a guard's skip */
#define SPLIT_DEPTH 6           /* operand depth of a recomputed invariant */
#define SPLIT_KMAX 2147483647   /* |k| in gid + k (ids are below 2^53) */

typedef struct split_test {
  LLVMValueRef br;              /* the branch */
  int v;                        /* the outcome assumed in the fast loop */
} split_test;

typedef struct split_ctx {
  LLVMModuleRef m;
  LLVMBuilderRef b;             /* before the placeholders */
  LLVMTypeRef i64, i1;
  cpu_split_site *s;
  LLVMValueRef gid;             /* the fast loop's global x id */
  LLVMBasicBlockRef latch;
  LLVMBasicBlockRef *bbs;       /* the fast loop's blocks */
  size_t nbbs;
  split_test *tests;            /* the tests made constant */
  size_t ntests, captests;
  LLVMValueRef lo, hi, ok;
} split_ctx;

/* p, or p grown to room for element n (the array has *cap elements of esz
** bytes); NULL when out of memory, p then unchanged. */
static void *grow(void *p, size_t *cap, size_t n, size_t esz)
{
  size_t c;
  void *q;
  if (n < *cap) return p;
  c = *cap ? 2 * *cap : 16;
  q = realloc(p, c * esz);
  if (q) *cap = c;
  return q;
}

int cpu_block_in(LLVMBasicBlockRef const *bbs, size_t n,
                 LLVMBasicBlockRef bb)
{
  size_t i;
  for (i = 0; i < n; i++)
    if (bbs[i] == bb) return 1;
  return 0;
}

int cpu_loop_blocks(const cpu_split_site *s, LLVMBasicBlockRef **bbs,
                    size_t *n)
{
  size_t i, cap = 0;
  LLVMBasicBlockRef *v = grow(NULL, &cap, 0, sizeof(*v));
  *bbs = NULL;
  *n = 0;
  if (!v) return -1;
  v[0] = s->head;
  *n = 1;
  for (i = 0; i < *n; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(v[i]);
    unsigned j, ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (j = 0; j < ns; j++) {
      LLVMBasicBlockRef to = LLVMGetSuccessor(t, j), *q;
      if (to == s->done || cpu_block_in(v, *n, to)) continue;
      if (!(q = grow(v, &cap, *n, sizeof(*q)))) {
        free(v);
        *n = 0;
        return -1;
      }
      v = q;
      v[(*n)++] = to;
    }
  }
  *bbs = v;
  return 0;
}

/* Does bb only jump (through empty blocks) to the end of the work item? */
static int skips_item(const split_ctx *x, LLVMBasicBlockRef bb)
{
  int hops;
  for (hops = 0; hops < SPLIT_HOPS; hops++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    if (bb == x->latch) return 1;
    if (!t || LLVMGetFirstInstruction(bb) != t || !LLVMIsABranchInst(t) ||
        LLVMIsConditional(t))
      return 0;
    bb = LLVMGetSuccessor(t, 0);
  }
  return 0;
}

static int pure_op(LLVMOpcode op)
{
  switch (op) {
  case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl: case LLVMLShr:
  case LLVMAShr: case LLVMAnd: case LLVMOr: case LLVMXor:
  case LLVMTrunc: case LLVMZExt: case LLVMSExt: case LLVMSIToFP:
  case LLVMUIToFP: case LLVMFPToSI: case LLVMFPToUI: case LLVMFPTrunc:
  case LLVMFPExt: case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv:
  case LLVMFNeg: case LLVMICmp: case LLVMFCmp: case LLVMSelect:
  case LLVMFreeze:
    return 1;
  default:         /* loads, calls, phis, integer division (may trap) */
    return 0;
  }
}

/* v computed before the loop: v itself when it is defined outside the
** loop, else a copy of its (pure) computation; NULL when it depends on
** something inside the loop. */
static LLVMValueRef hoist(split_ctx *x, LLVMValueRef v, int depth)
{
  LLVMValueRef c, ops[3];
  int i, n;
  if (!LLVMIsAInstruction(v) || !cpu_block_in(x->bbs, x->nbbs, LLVMGetInstructionParent(v)))
    return v;
  n = LLVMGetNumOperands(v);
  if (depth >= SPLIT_DEPTH || n > 3 || !pure_op(LLVMGetInstructionOpcode(v)))
    return NULL;
  for (i = 0; i < n; i++)
    if (!(ops[i] = hoist(x, LLVMGetOperand(v, (unsigned)i), depth + 1)))
      return NULL;
  c = LLVMInstructionClone(v);
  for (i = 0; i < n; i++) LLVMSetOperand(c, (unsigned)i, ops[i]);
  LLVMInsertIntoBuilder(x->b, c);
  return c;
}

/* Is v gid + k (k a small constant)? */
static int gid_form(const split_ctx *x, LLVMValueRef v, long long *k)
{
  LLVMOpcode op;
  LLVMValueRef a, c;
  long long kv;
  if (v == x->gid) {
    *k = 0;
    return 1;
  }
  if (!LLVMIsAInstruction(v)) return 0;
  op = LLVMGetInstructionOpcode(v);
  if (op != LLVMAdd && op != LLVMSub) return 0;
  a = LLVMGetOperand(v, 0);
  c = LLVMGetOperand(v, 1);
  if (op == LLVMAdd && c == x->gid) {
    c = a;
    a = x->gid;
  }
  if (a != x->gid || !LLVMIsAConstantInt(c)) return 0;
  kv = LLVMConstIntGetSExtValue(c);
  if (kv < -SPLIT_KMAX || kv > SPLIT_KMAX) return 0;
  *k = op == LLVMAdd ? kv : -kv;
  return 1;
}

static LLVMIntPredicate swap_pred(LLVMIntPredicate p)
{
  switch (p) {
  case LLVMIntSLT: return LLVMIntSGT;
  case LLVMIntSGT: return LLVMIntSLT;
  case LLVMIntSLE: return LLVMIntSGE;
  case LLVMIntSGE: return LLVMIntSLE;
  case LLVMIntULT: return LLVMIntUGT;
  case LLVMIntUGT: return LLVMIntULT;
  case LLVMIntULE: return LLVMIntUGE;
  case LLVMIntUGE: return LLVMIntULE;
  default: return p;
  }
}

static LLVMIntPredicate not_pred(LLVMIntPredicate p)
{
  switch (p) {
  case LLVMIntSLT: return LLVMIntSGE;
  case LLVMIntSGE: return LLVMIntSLT;
  case LLVMIntSGT: return LLVMIntSLE;
  case LLVMIntSLE: return LLVMIntSGT;
  case LLVMIntULT: return LLVMIntUGE;
  case LLVMIntUGE: return LLVMIntULT;
  case LLVMIntUGT: return LLVMIntULE;
  case LLVMIntULE: return LLVMIntUGT;
  case LLVMIntEQ: return LLVMIntNE;
  default: return LLVMIntEQ;
  }
}

static LLVMValueRef c64(const split_ctx *x, long long v)
{
  return LLVMConstInt(x->i64, (unsigned long long)v, 1);
}

static LLVMValueRef sat(split_ctx *x, const char *name, LLVMValueRef a,
                        LLVMValueRef b)
{
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(x->m, id, &x->i64, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(LLVMGetModuleContext(x->m), id,
                                        &x->i64, 1);
  LLVMValueRef args[2] = { a, b };
  return LLVMBuildCall2(x->b, ft, f, args, 2, "");
}

static LLVMValueRef smin(split_ctx *x, LLVMValueRef a, LLVMValueRef b)
{
  return LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntSLT, a, b, ""), a,
                         b, "");
}

static LLVMValueRef smax(split_ctx *x, LLVMValueRef a, LLVMValueRef b)
{
  return LLVMBuildSelect(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, a, b, ""), a,
                         b, "");
}

/* gid + k PRED y must hold: narrow [lo, hi).  lx PRED y - base - k. */
static int solve_icmp(split_ctx *x, LLVMIntPredicate p, long long k,
                      LLVMValueRef y)
{
  LLVMValueRef K, K1, neg;
  int unsig = p == LLVMIntULT || p == LLVMIntULE || p == LLVMIntUGT ||
              p == LLVMIntUGE;
  if (p == LLVMIntEQ || p == LLVMIntNE || (unsig && k < 0)) return 0;
  K = sat(x, "llvm.ssub.sat",
          y, LLVMBuildNSWAdd(x->b, x->s->base, c64(x, k), ""));
  K1 = sat(x, "llvm.sadd.sat", K, c64(x, 1));
  /* gid + k >= 0: unsigned compares against y < 0 (huge) are always
  ** true for < and <=, never for > and >=. */
  neg = LLVMBuildICmp(x->b, LLVMIntSLT, y, c64(x, 0), "");
  switch (p) {
  case LLVMIntSLT: x->hi = smin(x, x->hi, K); break;
  case LLVMIntSLE: x->hi = smin(x, x->hi, K1); break;
  case LLVMIntSGT: x->lo = smax(x, x->lo, K1); break;
  case LLVMIntSGE: x->lo = smax(x, x->lo, K); break;
  case LLVMIntULT: case LLVMIntULE:
    x->hi = smin(x, x->hi, LLVMBuildSelect(x->b, neg, c64(x, INT64_MAX),
                                           p == LLVMIntULT ? K : K1, ""));
    break;
  default:
    x->lo = smax(x, x->lo, LLVMBuildSelect(x->b, neg, c64(x, INT64_MAX),
                                           p == LLVMIntUGE ? K : K1, ""));
    break;
  }
  return 1;
}

static int monotone_fpred(LLVMRealPredicate p)
{
  return p == LLVMRealOLT || p == LLVMRealOLE || p == LLVMRealOGT ||
         p == LLVMRealOGE || p == LLVMRealULT || p == LLVMRealULE ||
         p == LLVMRealUGT || p == LLVMRealUGE;
}

/* The fcmp c (one operand sitofp(gid + k), at index gi) at work item lx,
** compared with the assumed outcome v. */
static LLVMValueRef fcmp_at(split_ctx *x, LLVMValueRef c, unsigned gi,
                            long long k, LLVMValueRef lx, int v)
{
  LLVMValueRef conv = LLVMGetOperand(c, gi), t, r;
  LLVMValueRef y = hoist(x, LLVMGetOperand(c, 1 - gi), 0);
  t = LLVMBuildNSWAdd(x->b, LLVMBuildNSWAdd(x->b, x->s->base, lx, ""),
                      c64(x, k), "");
  t = LLVMBuildSIToFP(x->b, t, LLVMTypeOf(conv), "");
  r = LLVMBuildFCmp(x->b, LLVMGetFCmpPredicate(c), gi == 0 ? t : y,
                    gi == 0 ? y : t, "");
  return v ? r : LLVMBuildNot(x->b, r, "");
}

/* Is the fcmp c monotone in gid, with an invariant other side?  Sets the
** operand index of sitofp(gid + k) and k. */
static int fcmp_form(split_ctx *x, LLVMValueRef c, unsigned *gi, long long *k)
{
  unsigned i;
  if (!monotone_fpred(LLVMGetFCmpPredicate(c))) return 0;
  for (i = 0; i < 2; i++) {
    LLVMValueRef o = LLVMGetOperand(c, i);
    if (LLVMIsAInstruction(o) && LLVMGetInstructionOpcode(o) == LLVMSIToFP &&
        gid_form(x, LLVMGetOperand(o, 0), k) &&
        hoist(x, LLVMGetOperand(c, 1 - i), 0)) {
      *gi = i;
      return 1;
    }
  }
  return 0;
}

static int add_test(split_ctx *x, LLVMValueRef br, int v)
{
  split_test *q = grow(x->tests, &x->captests, x->ntests, sizeof(*q));
  if (!q) return -1;
  x->tests = q;
  x->tests[x->ntests].br = br;
  x->tests[x->ntests++].v = v;
  return 0;
}

/* Integer and invariant tests; fcmp tests are only recorded (they need the
** final range). */
static int scan_tests(split_ctx *x)
{
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef br = LLVMGetBasicBlockTerminator(x->bbs[i]), c, y, inv;
    long long k;
    unsigned gi;
    int v, ok = 0;
    if (!br || !LLVMIsABranchInst(br) || !LLVMIsConditional(br)) continue;
    if (skips_item(x, LLVMGetSuccessor(br, 1))) v = 1;
    else if (skips_item(x, LLVMGetSuccessor(br, 0))) v = 0;
    else continue;
    c = LLVMGetCondition(br);
    if (LLVMIsAICmpInst(c)) {
      LLVMIntPredicate p = LLVMGetICmpPredicate(c);
      LLVMValueRef a = LLVMGetOperand(c, 0), b = LLVMGetOperand(c, 1);
      if (!gid_form(x, a, &k)) {
        LLVMValueRef t = a;
        a = b;
        b = t;
        p = swap_pred(p);
      }
      if (gid_form(x, a, &k) && (y = hoist(x, b, 0)) != NULL)
        ok = solve_icmp(x, v ? p : not_pred(p), k, y);
    } else if (LLVMIsAFCmpInst(c) && fcmp_form(x, c, &gi, &k)) {
      ok = 1;          /* checked at the ends of the range, below */
    }
    if (!ok && (inv = hoist(x, c, 0)) != NULL) {
      x->ok = LLVMBuildAnd(x->b, x->ok,
                           v ? inv : LLVMBuildNot(x->b, inv, ""), "");
      ok = 1;
    }
    if (ok && add_test(x, br, v)) return -1;
  }
  return 0;
}

static void end_tests(split_ctx *x)
{
  LLVMValueRef last = LLVMBuildSub(x->b, x->hi, c64(x, 1), "");
  size_t i;
  for (i = 0; i < x->ntests; i++) {
    LLVMValueRef c = LLVMGetCondition(x->tests[i].br);
    unsigned gi;
    long long k;
    int v = x->tests[i].v;
    if (!LLVMIsAFCmpInst(c) || !fcmp_form(x, c, &gi, &k)) continue;
    x->ok = LLVMBuildAnd(x->b, x->ok, fcmp_at(x, c, gi, k, x->lo, v), "");
    x->ok = LLVMBuildAnd(x->b, x->ok, fcmp_at(x, c, gi, k, last, v), "");
  }
}

static int split_run(split_ctx *x, gj_err *err)
{
  cpu_split_site *s = x->s;
  LLVMValueRef lo_fn = LLVMGetCalledValue(s->lo);
  LLVMValueRef hi_fn = LLVMGetCalledValue(s->hi);
  size_t i;
  x->gid = LLVMGetOperand(s->mark, 0);
  x->latch = LLVMGetInstructionParent(s->next);
  if (cpu_loop_blocks(s, &x->bbs, &x->nbbs))
    return gj_err_set(err, "cpu: out of memory");
  LLVMPositionBuilderBefore(x->b, s->lo);
  x->lo = c64(x, 0);
  x->hi = s->end;
  x->ok = LLVMConstInt(x->i1, 1, 0);
  if (scan_tests(x)) return gj_err_set(err, "cpu: out of memory");
  /* 0 <= lo <= hi <= end; then the fcmp tests at both ends */
  x->lo = smin(x, x->lo, s->end);
  x->hi = smax(x, x->hi, x->lo);
  end_tests(x);
  x->hi = LLVMBuildSelect(x->b, x->ok, x->hi, x->lo, "");
  x->lo = LLVMBuildFreeze(x->b, x->lo, "xa.lo");
  x->hi = LLVMBuildFreeze(x->b, x->hi, "xa.hi");
  for (i = 0; i < x->ntests; i++)
    LLVMSetCondition(x->tests[i].br, LLVMConstInt(x->i1,
                                                  (unsigned)x->tests[i].v, 0));
  LLVMReplaceAllUsesWith(s->lo, x->lo);
  LLVMReplaceAllUsesWith(s->hi, x->hi);
  LLVMInstructionEraseFromParent(s->lo);
  LLVMInstructionEraseFromParent(s->hi);
  LLVMInstructionEraseFromParent(s->mark);
  s->lo = x->lo;      /* for the vectorizer (native_vec.c) */
  s->hi = x->hi;
  s->mark = NULL;
  LLVMDeleteFunction(lo_fn);
  LLVMDeleteFunction(hi_fn);
  LLVMDeleteFunction(LLVMGetNamedFunction(x->m, "gj.split.mark"));
  return 0;
}

/* The only use of the placeholder function `name`, or NULL. */
static LLVMValueRef placeholder(LLVMModuleRef m, const char *name)
{
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  LLVMUseRef u = f ? LLVMGetFirstUse(f) : NULL;
  if (!u || LLVMGetNextUse(u)) return NULL;
  return LLVMGetUser(u);
}

int cpu_split_find(LLVMModuleRef m, cpu_split_site *s)
{
  LLVMValueRef gid, lx;
  memset(s, 0, sizeof(*s));
  s->lo = placeholder(m, "gj.split.lo");
  s->hi = placeholder(m, "gj.split.hi");
  s->mark = placeholder(m, "gj.split.mark");
  if (!s->lo || !s->hi || !s->mark) return 0;
  s->base = LLVMGetOperand(s->lo, 0);
  s->end = LLVMGetOperand(s->lo, 1);
  /* wrap's shapes (w_xloops, w_xitem, w_loop_end): gid = base + lx, lx the
  ** header's phi [lo, pre], [lx + 1, latch] */
  gid = LLVMGetOperand(s->mark, 0);
  lx = LLVMGetOperand(gid, 1);
  if (!LLVMIsAPHINode(lx) || LLVMCountIncoming(lx) != 2) return 0;
  s->head = LLVMGetInstructionParent(lx);
  s->next = LLVMGetIncomingValue(lx, 1);
  s->done = LLVMGetSuccessor(
      LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(s->next)), 1);
  return 1;
}

/* Allocas left in the module's functions. */
static int count_allocas(LLVMModuleRef m)
{
  LLVMValueRef f;
  int n = 0;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    LLVMBasicBlockRef bb;
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef in;
      for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
        n += LLVMIsAAllocaInst(in) != NULL;
    }
  }
  return n;
}

int cpu_inline_body(LLVMModuleRef m, gj_err *err)
{
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m, "always-inline,function(sroa,instsimplify)", NULL, po);
  /* Struct values (docs/typing.md, "Struct values") live in allocas that
  ** one SROA run leaves where a variable holds either of two objects (a
  ** metatype's `acc = acc + d` in a loop: a phi of two allocas): each
  ** further run promotes what the previous one exposed.  The vectorizer
  ** refuses a loop with an alloca, so this runs while allocas go away. */
  {
    int n = count_allocas(m), k;
    for (k = 0; !e && n > 0 && k < 4; k++) {
      int before = n;
      e = LLVMRunPasses(m, "function(sroa)", NULL, po);
      n = count_allocas(m);
      if (n >= before) break;
    }
  }
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    gj_err_set(err, "cpu: inlining the kernel: %s", msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return -1;
  }
  return 0;
}

int cpu_split(LLVMModuleRef m, cpu_split_site *s, gj_err *err)
{
  split_ctx x;
  LLVMContextRef c = LLVMGetModuleContext(m);
  int r;
  /* Inline the body into both loops and turn the work-item state into
  ** SSA values, so that the ids are plain values in the tests. */
  if (cpu_inline_body(m, err)) return -1;
  memset(&x, 0, sizeof(x));
  x.m = m;
  x.b = LLVMCreateBuilderInContext(c);
  x.i64 = LLVMInt64TypeInContext(c);
  x.i1 = LLVMInt1TypeInContext(c);
  x.s = s;
  r = split_run(&x, err);
  LLVMDisposeBuilder(x.b);
  free(x.bbs);
  free(x.tests);
  return r;
}
