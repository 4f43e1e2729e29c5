/*
** Derivatives of kernels, the common part (src/gj_ad.h): the preparation
** of @gj_body (device functions inlined, slots in SSA), the new signature
** with the shadows, the value maps and the messages.  The rules of each
** mode are in gj_ad_fwd.c.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Transforms/PassBuilder.h>

#include "gj_ad_int.h"

int gj_ad_mode(const char *name)
{
  if (!name || !*name) return GJ_AD_NONE;
  if (strcmp(name, "forward") == 0) return GJ_AD_FORWARD;
  if (strcmp(name, "reverse") == 0) return GJ_AD_REVERSE;
  return -1;
}

/* --- value maps ----------------------------------------------------------- */

static size_t slot_of(const gj_admap *m, LLVMValueRef k)
{
  uintptr_t h = (uintptr_t)k;
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 7) & (m->cap - 1);
}

LLVMValueRef gj_admap_get(const gj_admap *m, LLVMValueRef k)
{
  size_t i;
  if (!m->cap) return NULL;
  for (i = slot_of(m, k); m->key[i]; i = (i + 1) & (m->cap - 1))
    if (m->key[i] == k) return m->val[i];
  return NULL;
}

int gj_admap_put(gj_admap *m, LLVMValueRef k, LLVMValueRef v)
{
  size_t i;
  if (2 * (m->n + 1) > m->cap) {
    gj_admap g = { NULL, NULL, m->cap ? 2 * m->cap : 64, 0 };
    g.key = calloc(g.cap, sizeof(LLVMValueRef));
    g.val = calloc(g.cap, sizeof(LLVMValueRef));
    if (!g.key || !g.val) {
      free(g.key);
      free(g.val);
      return -1;
    }
    for (i = 0; i < m->cap; i++)
      if (m->key[i]) gj_admap_put(&g, m->key[i], m->val[i]);
    gj_admap_free(m);
    *m = g;
  }
  for (i = slot_of(m, k); m->key[i] && m->key[i] != k; i = (i + 1) & (m->cap - 1)) {}
  if (!m->key[i]) m->n++;
  m->key[i] = k;
  m->val[i] = v;
  return 0;
}

void gj_admap_free(gj_admap *m)
{
  free(m->key);
  free(m->val);
  memset(m, 0, sizeof(*m));
}

void gj_ad_init(gj_ad *a, LLVMModuleRef m, const char *kname, gj_err *err)
{
  memset(a, 0, sizeof(*a));
  a->m = m;
  a->C = LLVMGetModuleContext(m);
  a->kname = kname ? kname : "?";
  a->err = err;
  a->line_kind = LLVMGetMDKindIDInContext(a->C, "gj.line", 7);
}

void gj_ad_free(gj_ad *a)
{
  if (a->B) LLVMDisposeBuilder(a->B);
  a->B = NULL;
  gj_admap_free(&a->tan);
  gj_admap_free(&a->sh);
  gj_admap_free(&a->roots);
  gj_admap_free(&a->sadj);
}

/* --- helpers -------------------------------------------------------------- */

int gj_ad_isfloat(LLVMTypeRef t)
{
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind;
}

LLVMValueRef gj_ad_root(gj_ad *a, LLVMValueRef p)
{
  while (p && !gj_admap_get(&a->roots, p)) {
    if (LLVMIsAGetElementPtrInst(p) || LLVMIsAConstantExpr(p))
      p = LLVMGetOperand(p, 0);
    else
      return NULL;
  }
  return p;
}

void gj_ad_where(gj_ad *a, LLVMValueRef at, char *chunk, size_t size, int *line)
{
  LLVMValueRef v, md = NULL;
  for (v = at; v && !md; v = LLVMGetPreviousInstruction(v))
    md = LLVMGetMetadata(v, a->line_kind);
  for (v = at; v && !md; v = LLVMGetNextInstruction(v))   /* a block's head */
    md = LLVMGetMetadata(v, a->line_kind);
  snprintf(chunk, size, "?");
  *line = 0;
  if (md && LLVMGetMDNodeNumOperands(md) == 2) {
    LLVMValueRef ops[2];
    unsigned len = 0;
    const char *src;
    LLVMGetMDNodeOperands(md, ops);
    src = LLVMGetMDString(ops[1], &len);
    snprintf(chunk, size, "%.*s", (int)len, src ? src : "?");
    *line = (int)LLVMConstIntGetZExtValue(ops[0]);
  }
}

int gj_ad_refuse(gj_ad *a, LLVMValueRef at, const char *what)
{
  char chunk[200];
  int line;
  gj_ad_where(a, at, chunk, sizeof(chunk), &line);
  if (line)
    return gj_err_set(a->err, "%s:%d: derivative: %s (in kernel %s)", chunk, line,
                      what, a->kname);
  return gj_err_set(a->err, "derivative: %s (in kernel %s)", what, a->kname);
}

/* --- shared rules --------------------------------------------------------- */

int gj_ad_call(gj_ad *a, LLVMValueRef I, char *fn, size_t fnsize)
{
  LLVMValueRef callee = LLVMGetCalledValue(I);
  size_t len = 0;
  const char *name = LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &len) : "";
  unsigned j, n = (unsigned)LLVMGetNumArgOperands(I);
  char what[160];
  if (len > 9 && !strncmp(name, "gj.math.", 8) && gj_ad_isfloat(LLVMTypeOf(I))) {
    const char *dot = strrchr(name, '.');
    snprintf(fn, fnsize, "%.*s", (int)(dot - name - 8), name + 8);
    return 1;
  }
  if (!LLVMIsAFunction(callee) || !LLVMIsDeclaration(callee)) {
    snprintf(what, sizeof(what), "a call of '%.*s' that could not be inlined",
             (int)len, name);
    return gj_ad_refuse(a, I, what);
  }
  for (j = 0; j < n; j++) {
    LLVMValueRef op = LLVMGetOperand(I, j), r;
    if (LLVMGetTypeKind(LLVMTypeOf(op)) != LLVMPointerTypeKind) continue;
    r = gj_ad_root(a, op);
    if (gj_admap_get(&a->sh, op) || (r && gj_admap_get(&a->sh, r))) {
      snprintf(what, sizeof(what), "'%.*s' on an array with a shadow", (int)len, name);
      return gj_ad_refuse(a, I, what);
    }
  }
  if (gj_ad_isfloat(LLVMTypeOf(I))) {
    snprintf(what, sizeof(what), "'%.*s' has no derivative rule", (int)len, name);
    return gj_ad_refuse(a, I, what);
  }
  return 0;
}

int gj_ad_atomic(gj_ad *a, LLVMValueRef I)
{
  LLVMValueRef r = gj_ad_root(a, LLVMGetOperand(I, 0));
  if (!r || !gj_admap_get(&a->sh, r)) return 0;   /* inactive: tangent 0 */
  if (LLVMGetInstructionOpcode(I) != LLVMAtomicRMW ||
      LLVMGetAtomicRMWBinOp(I) != LLVMAtomicRMWBinOpFAdd)
    return gj_ad_refuse(a, I, "an atomic operation other than atomic_add on an "
                        "array with a shadow has no derivative rule");
  if (LLVMGetFirstUse(I))
    return gj_ad_refuse(a, I, "the value atomic_add returns (the element before "
                        "the add, which depends on the order of the work items) "
                        "has no derivative");
  return 1;
}

int gj_ad_mem(gj_ad *a, LLVMValueRef I, LLVMValueRef p)
{
  LLVMValueRef b = p;
  if (gj_ad_root(a, p)) return 0;
  /* constant data (a constant table's global, gj_cg_const.c): no
  ** derivative, and nothing stores there */
  while (b && (LLVMIsAGetElementPtrInst(b) || LLVMIsAConstantExpr(b)))
    b = LLVMGetOperand(b, 0);
  if (b && LLVMIsAGlobalVariable(b) && LLVMIsGlobalConstant(b)) return 0;
  return gj_ad_refuse(a, I, "a float kept in local or shared memory "
                      "(gpu.local_array, gpu.shared, a struct copy) is not "
                      "supported yet");
}

int gj_ad_seed(gj_ad *a, LLVMValueRef I, LLVMValueRef p, int store, LLVMValueRef *t)
{
  LLVMValueRef b = p;
  LLVMTargetDataRef td;
  long off = 0;
  int ok = 1;
  *t = NULL;
  if (!a->seed_par) return 0;
  while (b && LLVMIsAGetElementPtrInst(b)) b = LLVMGetOperand(b, 0);
  if (!b || !LLVMIsAExtractValueInst(b) || LLVMGetOperand(b, 0) != a->seed_par) return 0;
  if (store)
    return gj_ad_refuse(a, I, "a store into the struct that is differentiated (an "
                        "active argument of gpu.gradient or gpu.derivative)");
  td = LLVMCreateTargetData(LLVMGetDataLayoutStr(a->m));
  for (b = p; ok && LLVMIsAGetElementPtrInst(b); b = LLVMGetOperand(b, 0)) {
    LLVMTypeRef ty = LLVMGetGEPSourceElementType(b);
    unsigned j, n = (unsigned)LLVMGetNumOperands(b);
    for (j = 1; j < n && ok; j++) {
      LLVMValueRef ix = LLVMGetOperand(b, j);
      long k;
      if (!LLVMIsAConstantInt(ix)) {
        ok = 0;
        break;
      }
      k = (long)LLVMConstIntGetSExtValue(ix);
      if (j == 1) {
        off += k * (long)LLVMABISizeOfType(td, ty);
      } else if (LLVMGetTypeKind(ty) == LLVMStructTypeKind) {
        off += (long)LLVMOffsetOfElement(td, ty, (unsigned)k);
        ty = LLVMStructGetTypeAtIndex(ty, (unsigned)k);
      } else if (LLVMGetTypeKind(ty) == LLVMArrayTypeKind) {
        ty = LLVMGetElementType(ty);
        off += k * (long)LLVMABISizeOfType(td, ty);
      } else {
        ok = 0;
      }
    }
  }
  LLVMDisposeTargetData(td);
  if (!ok)
    return gj_ad_refuse(a, I, "a field of the struct that is differentiated at an "
                        "index that is not a constant");
  if (off == a->seed_off) *t = LLVMConstReal(LLVMTypeOf(I), 1.0);
  return 0;
}

int gj_ad_gep(gj_ad *a, LLVMValueRef I)
{
  LLVMValueRef sp = gj_admap_get(&a->sh, LLVMGetOperand(I, 0)), g;
  unsigned n = (unsigned)LLVMGetNumOperands(I), j;
  LLVMValueRef idx[8];
  if (!sp) return 0;
  if (n - 1 > 8) return gj_ad_refuse(a, I, "an address with more than 8 indices");
  for (j = 1; j < n; j++) idx[j - 1] = LLVMGetOperand(I, j);
  g = LLVMBuildGEP2(a->B, LLVMGetGEPSourceElementType(I), sp, idx, n - 1, "");
  LLVMSetIsInBounds(g, LLVMIsInBounds(I));
  return gj_admap_put(&a->sh, I, g);
}

/* Blocks of fn in reverse postorder from the entry (iterative DFS). */
int gj_ad_rpo(LLVMValueRef fn, LLVMBasicBlockRef **out, unsigned *nout,
              LLVMValueRef *back)
{
  unsigned n = LLVMCountBasicBlocks(fn), sp = 0, k = n;
  LLVMBasicBlockRef *all = malloc(sizeof(*all) * (n + 1));
  LLVMBasicBlockRef *order = malloc(sizeof(*order) * (n + 1));
  LLVMBasicBlockRef *stack = malloc(sizeof(*stack) * (n + 1));
  unsigned *next = calloc(n + 1, sizeof(unsigned));
  char *seen = calloc(n + 1, 1);
  unsigned i;
  if (back) *back = NULL;
  if (!all || !order || !stack || !next || !seen) goto fail;
  LLVMGetBasicBlocks(fn, all);
  stack[sp++] = all[0];
  seen[0] = 1;
  while (sp) {
    LLVMBasicBlockRef bb = stack[sp - 1];
    unsigned bi = 0, ns;
    LLVMValueRef term;
    while (all[bi] != bb) bi++;
    term = LLVMGetBasicBlockTerminator(bb);
    ns = term ? LLVMGetNumSuccessors(term) : 0;
    if (next[bi] < ns) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(term, next[bi]++);
      unsigned si = 0;
      while (all[si] != s) si++;
      if (!seen[si]) {
        seen[si] = 1;
        stack[sp++] = s;
      } else if (back && !*back) {   /* s on the stack: a back edge */
        unsigned q;
        for (q = 0; q < sp; q++)
          if (stack[q] == s) *back = LLVMGetFirstInstruction(s);
      }
    } else {
      order[--k] = bb;
      sp--;
    }
  }
  /* unreachable blocks (none after codegen) are left out */
  for (i = 0; i < n - k; i++) order[i] = order[k + i];
  *nout = n - k;
  *out = order;
  free(all);
  free(stack);
  free(next);
  free(seen);
  return 0;
fail:
  free(all);
  free(order);
  free(stack);
  free(next);
  free(seen);
  return -1;
}

/* --- preparation ---------------------------------------------------------- */

/* The element an extractvalue with one index reads, found through a chain
** of one-index insertvalues down to the inserted value or to a constant
** aggregate's element; NULL where the chain ends elsewhere.  (instsimplify
** folds extractvalue(insertvalue) only where the indices are equal: the two
** results of a device function whose first is a constant stay an aggregate
** { 3.375, undef } with the second inserted.) */
static LLVMValueRef extracted(LLVMValueRef I)
{
  unsigned idx = LLVMGetIndices(I)[0];
  LLVMValueRef agg = LLVMGetOperand(I, 0);
  for (;;) {
    if (LLVMIsAInsertValueInst(agg) && LLVMGetNumIndices(agg) == 1) {
      if (LLVMGetIndices(agg)[0] == idx) return LLVMGetOperand(agg, 1);
      agg = LLVMGetOperand(agg, 0);
    } else if (LLVMIsAConstant(agg) && !LLVMIsAConstantExpr(agg)) {
      return LLVMGetAggregateElement(agg, idx);
    } else {
      return NULL;
    }
  }
}

/* Each float extractvalue that extracted() resolves is replaced by what it
** reads (forwarding only: no new operation), and the insertvalues left
** without a use are removed. */
void gj_ad_forward_extracts(LLVMValueRef body)
{
  LLVMBasicBlockRef bb;
  int changed = 1;
  for (bb = LLVMGetFirstBasicBlock(body); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef I = LLVMGetFirstInstruction(bb), next;
    for (; I; I = next) {
      LLVMValueRef v;
      next = LLVMGetNextInstruction(I);
      if (LLVMGetInstructionOpcode(I) != LLVMExtractValue || LLVMGetNumIndices(I) != 1 ||
          !gj_ad_isfloat(LLVMTypeOf(I)))
        continue;
      v = extracted(I);
      if (v == NULL || LLVMTypeOf(v) != LLVMTypeOf(I)) continue;
      LLVMReplaceAllUsesWith(I, v);
      LLVMInstructionEraseFromParent(I);
    }
  }
  while (changed) {   /* a chain goes from its last insertvalue back */
    changed = 0;
    for (bb = LLVMGetFirstBasicBlock(body); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef I = LLVMGetFirstInstruction(bb), next;
      for (; I; I = next) {
        next = LLVMGetNextInstruction(I);
        if (LLVMGetInstructionOpcode(I) == LLVMInsertValue && !LLVMGetFirstUse(I)) {
          LLVMInstructionEraseFromParent(I);
          changed = 1;
        }
      }
    }
  }
}

int gj_ad_prepare(gj_ad *a, LLVMValueRef body, int mark)
{
  LLVMValueRef f;
  LLVMPassBuilderOptionsRef po;
  LLVMErrorRef e;
  LLVMLinkage link;
  unsigned ai = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  unsigned ni = LLVMGetEnumAttributeKindForName("noinline", 8);
  for (f = LLVMGetFirstFunction(a->m); f && mark; f = LLVMGetNextFunction(f)) {
    if (f == body || LLVMIsDeclaration(f)) continue;
    LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, ni);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(a->C, ai, 0));
  }
  /* internal and unused, @gj_body itself would go: kept external meanwhile */
  link = LLVMGetLinkage(body);
  LLVMSetLinkage(body, LLVMExternalLinkage);
  po = LLVMCreatePassBuilderOptions();
  e = LLVMRunPasses(a->m, "always-inline,function(sroa,instsimplify,sroa,instsimplify)", NULL, po);
  LLVMDisposePassBuilderOptions(po);
  LLVMSetLinkage(body, link);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    gj_err_set(a->err, "internal error: preparing the derivative of kernel %s: %s",
               a->kname, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
  }
  gj_ad_forward_extracts(body);
  return 0;
}

/* LLVM parameters of sig parameter p (after %wi): 2 for an array, else 1. */
static unsigned nll(const gj_param *p)
{
  return p->is_array ? 2u : 1u;
}

/* from[] of the tape's parameters (no old parameter, no primal) */
#define TAPE (-1000000)

/* The new signature, and @gj_body with it: old's blocks moved over. */
static int resign(gj_ad *a, LLVMValueRef old, gj_sig *sig, int mode,
                  const char *shadow, int nfull)
{
  gj_sig ns;
  LLVMTypeRef oty = LLVMGlobalGetValueType(old);
  unsigned nold = LLVMCountParamTypes(oty), k, n = 0;
  LLVMTypeRef *ot = malloc(sizeof(LLVMTypeRef) * (nold + 1));
  LLVMTypeRef *nt = malloc(sizeof(LLVMTypeRef) * (2 * nold + 2));
  int *from = malloc(sizeof(int) * (2 * nold + 2));   /* old index, or -1-old
                                                     ** of the primal */
  int nprim = 0, nextra, f, j, rc = -1;
  LLVMValueRef nf;
  unsigned cnt, i;
  if (!ot || !nt || !from) {
    gj_err_set(a->err, "out of memory");
    goto done;
  }
  for (f = 0; f < nfull; f++) nprim += shadow[f] == '0' || !shadow[f];
  nextra = sig->nparams - nprim;
  LLVMGetParamTypes(oty, ot);
  memset(&ns, 0, sizeof(ns));
  ns = *sig;
  ns.nparams = nfull + nextra;
  if (ns.nparams > GJ_MAXPARAMS) {
    gj_err_set(a->err, "kernel %s: %d arguments with the shadows are more than %d",
               a->kname, ns.nparams, GJ_MAXPARAMS);
    goto done;
  }
  nt[n] = ot[0];
  from[n++] = 0;
  k = 1;   /* the old LLVM index of primal j */
  for (f = 0, j = 0; f < nfull; f++) {
    if (shadow[f] == '2') {   /* the tape: bytes, read and written with loops */
      memset(&ns.params[f], 0, sizeof(ns.params[f]));
      ns.params[f].is_array = 1;
      ns.params[f].elem = GJ_U8;
      ns.params[f].read = ns.params[f].written = (uint8_t)(a->loops != 0);
      nt[n] = LLVMPointerTypeInContext(a->C, a->as_global);
      from[n++] = TAPE;
      nt[n] = LLVMInt64TypeInContext(a->C);
      from[n++] = TAPE;
      continue;
    }
    if (shadow[f] == '1') {   /* the shadow of primal j-1, at k - its size */
      const gj_param *p = &sig->params[j - 1];
      unsigned base = k - nll(p), q;
      ns.params[f] = *p;
      if (mode == GJ_AD_REVERSE && !p->is_array) {
        /* a scalar's adjoint: added into a 1-element array */
        ns.params[f].is_array = ns.params[f].read = ns.params[f].written = 1;
        nt[n] = LLVMPointerTypeInContext(a->C, a->as_global);
        from[n++] = -1 - (int)base;
        nt[n] = LLVMInt64TypeInContext(a->C);
        from[n++] = -1 - (int)base;
        continue;
      }
      if (mode == GJ_AD_REVERSE) {   /* adjoints: read where written */
        ns.params[f].read = p->written;
        ns.params[f].written = p->read;
      }
      for (q = 0; q < nll(p); q++) {
        nt[n] = ot[base + q];
        from[n++] = -1 - (int)(base + q);
      }
    } else {
      const gj_param *p = &sig->params[j++];
      unsigned q;
      ns.params[f] = *p;
      for (q = 0; q < nll(p); q++) {
        nt[n] = ot[k];
        from[n++] = (int)k++;
      }
    }
  }
  for (j = 0; j < nextra; j++) {   /* plugin buffers */
    const gj_param *p = &sig->params[nprim + j];
    unsigned q;
    ns.params[nfull + j] = *p;
    for (q = 0; q < nll(p); q++) {
      nt[n] = ot[k];
      from[n++] = (int)k++;
    }
  }
  if (k != nold) {
    gj_err_set(a->err, "internal error: kernel %s: @gj_body has %u parameters, "
               "the signature %u", a->kname, nold, k);
    goto done;
  }
  gj_sig_layout(&ns);
  nf = LLVMAddFunction(a->m, "gj_body.ad",
                       LLVMFunctionType(LLVMVoidTypeInContext(a->C), nt, n, 0));
  LLVMSetLinkage(nf, LLVMGetLinkage(old));
  cnt = LLVMGetAttributeCountAtIndex(old, LLVMAttributeFunctionIndex);
  if (cnt) {
    LLVMAttributeRef *at = malloc(sizeof(LLVMAttributeRef) * cnt);
    if (!at) {
      gj_err_set(a->err, "out of memory");
      goto done;
    }
    LLVMGetAttributesAtIndex(old, LLVMAttributeFunctionIndex, at);
    for (i = 0; i < cnt; i++)
      LLVMAddAttributeAtIndex(nf, LLVMAttributeFunctionIndex, at[i]);
    free(at);
  }
  {
    LLVMBasicBlockRef bb;
    while ((bb = LLVMGetFirstBasicBlock(old)) != NULL) {
      LLVMRemoveBasicBlockFromParent(bb);
      LLVMAppendExistingBasicBlock(nf, bb);
    }
  }
  for (i = 0; i < n; i++) {
    LLVMValueRef np = LLVMGetParam(nf, i);
    if (from[i] == TAPE) {
      if (LLVMGetTypeKind(LLVMTypeOf(np)) == LLVMPointerTypeKind)
        a->tape = np;
      else
        a->tape_len = np;
      continue;
    }
    if (from[i] >= 0) {
      LLVMReplaceAllUsesWith(LLVMGetParam(old, (unsigned)from[i]), np);
    } else {
      /* a shadow: its primal's new parameter is the one that replaced
      ** old parameter -1-from[i]; find it by the old index */
      unsigned q;
      for (q = 0; q < n; q++)
        if (from[q] == -1 - from[i]) break;
      {
        LLVMValueRef pp = LLVMGetParam(nf, q);
        if (gj_ad_isfloat(LLVMTypeOf(pp)) &&
            LLVMGetTypeKind(LLVMTypeOf(np)) == LLVMPointerTypeKind) {
          if (gj_admap_put(&a->sadj, pp, np)) goto oom;   /* reverse scalar */
        } else if (gj_ad_isfloat(LLVMTypeOf(np))) {
          if (gj_admap_put(&a->tan, pp, np)) goto oom;
        } else if (LLVMGetTypeKind(LLVMTypeOf(np)) == LLVMPointerTypeKind) {
          if (gj_admap_put(&a->sh, pp, np)) goto oom;
        }
      }
    }
    if (LLVMGetTypeKind(LLVMTypeOf(np)) == LLVMPointerTypeKind && i > 0 &&
        from[i] >= 0 && gj_admap_put(&a->roots, np, np))
      goto oom;
  }
  LLVMDeleteFunction(old);
  LLVMSetValueName2(nf, "gj_body", 7);
  a->fn = nf;
  *sig = ns;
  rc = 0;
  goto done;
oom:
  gj_err_set(a->err, "out of memory");
done:
  free(ot);
  free(nt);
  free(from);
  return rc;
}

/* Each shadow follows a float primal (an array of float or double, or a
** float or double number). */
static int check_shadows(gj_ad *a, const gj_sig *sig, const char *shadow,
                         int nfull)
{
  int f, j;
  for (f = 0, j = 0; f < nfull; f++) {
    if (shadow[f] == '2') {
      if (f != nfull - 1)
        return gj_err_set(a->err, "kernel %s: argument %d: the tape must be the "
                          "last argument", a->kname, f + 1);
      continue;
    }
    if (shadow[f] != '1') {
      j++;
      continue;
    }
    if (j == 0 || (f > 0 && shadow[f - 1] == '1'))
      return gj_err_set(a->err, "kernel %s: argument %d: a shadow must follow "
                        "its primal argument", a->kname, f + 1);
    {
      const gj_param *p = &sig->params[j - 1];
      if (!(p->is_array && p->esize) &&   /* arrays of structs: their floats */
          (p->lnum || (p->elem != GJ_F32 && p->elem != GJ_F64)))
        return gj_err_set(a->err, "kernel %s: argument %d: only arrays of "
                          "float, double or structs and float or double "
                          "numbers have a derivative", a->kname, f);
    }
  }
  return 0;
}

int gj_ad_transform(LLVMModuleRef m, LLVMValueRef *body, gj_sig *sig,
                    int mode, const char *shadow, int nfull,
                    unsigned as_global, gj_sites *sites, const char *kname,
                    gj_err *err)
{
  gj_ad a;
  int rc = -1;
  gj_ad_init(&a, m, kname, err);
  a.as_global = as_global;
  a.sites = sites;
  if (sig->uses_barrier)
    return gj_err_set(err, "kernel %s: derivative: gpu.barrier (shared memory "
                      "phases) is not supported yet", a.kname);
  if (check_shadows(&a, sig, shadow, nfull)) return -1;
  if (gj_ad_prepare(&a, *body, 1)) return -1;
  {
    LLVMBasicBlockRef *order = NULL;
    LLVMValueRef back = NULL;
    unsigned nb = 0;
    if (gj_ad_rpo(*body, &order, &nb, &back))
      return gj_err_set(err, "out of memory");
    free(order);
    a.loops = back != NULL;
  }
  a.B = LLVMCreateBuilderInContext(a.C);
  if (resign(&a, *body, sig, mode, shadow, nfull))
    goto done;
  if (mode == GJ_AD_FORWARD ? gj_ad_forward(&a) : gj_ad_reverse(&a)) goto done;
  *body = a.fn;
  if (a.used_faults) sig->faults = 1;
  rc = 0;
done:
  gj_ad_free(&a);
  return rc;
}
