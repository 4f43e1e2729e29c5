/*
** LLVM helpers shared by the shipped plugins (plugin_ir.h).
*/
#include "plugin_ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Transforms/PassBuilder.h>

/* Values looked at by one gj_pir_global_arg query: a kernel's slots are
** few, so a walk that needs more gives up (0: not a kernel array). */
#define WALK_MAX 512

typedef struct walk {
  LLVMValueRef body;
  const gpujit_kernel_desc *k;
  int n;
  struct { LLVMValueRef v; int field; } seen[WALK_MAX];
} walk;

static int is_array_type(const char *t)
{
  size_t n = t ? strlen(t) : 0;
  return n > 2 && strcmp(t + n - 2, "[]") == 0;
}

/* 1-based kernel argument whose pointer is the LLVM parameter a, else 0.
** Parameter 0 is %wi; a scalar takes one parameter, an array two. */
static int param_arg(const walk *w, LLVMValueRef a)
{
  unsigned idx = 1;
  for (int j = 0; j < w->k->nparams; j++) {
    int arr = is_array_type(w->k->types[j]);
    if (arr && idx < LLVMCountParams(w->body) &&
        LLVMGetParam(w->body, idx) == a)
      return j + 1;
    idx += arr ? 2 : 1;
  }
  return 0;
}

static int visit(walk *w, LLVMValueRef v, int field)
{
  for (int i = 0; i < w->n; i++)
    if (w->seen[i].v == v && w->seen[i].field == field) return 0;
  if (w->n == WALK_MAX) return 0;
  w->seen[w->n].v = v;
  w->seen[w->n].field = field;
  w->n++;
  return 1;
}

/* The kernel argument v (field < 0) or field `field` of the aggregate v
** comes from; 0 when none. */
static int origin(walk *w, LLVMValueRef v, int field)
{
  if (!v || !visit(w, v, field)) return 0;
  if (LLVMIsAArgument(v)) return field < 0 ? param_arg(w, v) : 0;
  if (LLVMIsAConstantExpr(v)) {
    LLVMOpcode op = LLVMGetConstOpcode(v);
    if (op == LLVMGetElementPtr || op == LLVMBitCast ||
        op == LLVMAddrSpaceCast)
      return origin(w, LLVMGetOperand(v, 0), field);
    return 0;
  }
  if (!LLVMIsAInstruction(v)) return 0;
  switch (LLVMGetInstructionOpcode(v)) {
  case LLVMGetElementPtr:
  case LLVMBitCast:
  case LLVMAddrSpaceCast:
    return origin(w, LLVMGetOperand(v, 0), field);
  case LLVMExtractValue:
    if (field >= 0 || LLVMGetNumIndices(v) != 1) return 0;
    return origin(w, LLVMGetOperand(v, 0), (int)LLVMGetIndices(v)[0]);
  case LLVMInsertValue:
    if (field < 0 || LLVMGetNumIndices(v) != 1) return 0;
    if ((int)LLVMGetIndices(v)[0] == field)
      return origin(w, LLVMGetOperand(v, 1), -1);
    return origin(w, LLVMGetOperand(v, 0), field);
  case LLVMPHI:
    for (unsigned i = 0; i < LLVMCountIncoming(v); i++) {
      int r = origin(w, LLVMGetIncomingValue(v, i), field);
      if (r) return r;
    }
    return 0;
  case LLVMSelect: {
    int r = origin(w, LLVMGetOperand(v, 1), field);
    return r ? r : origin(w, LLVMGetOperand(v, 2), field);
  }
  case LLVMLoad: {
    /* a slot (alloca or frame field): whatever is stored through the same
    ** pointer value */
    LLVMValueRef slot = LLVMGetOperand(v, 0);
    for (LLVMUseRef u = LLVMGetFirstUse(slot); u; u = LLVMGetNextUse(u)) {
      LLVMValueRef st = LLVMGetUser(u);
      int r;
      if (!LLVMIsAStoreInst(st) || LLVMGetOperand(st, 1) != slot) continue;
      r = origin(w, LLVMGetOperand(st, 0), field);
      if (r) return r;
    }
    return 0;
  }
  default:
    return 0;
  }
}

int gj_pir_global_arg(LLVMValueRef body, const gpujit_kernel_desc *k,
                      LLVMValueRef ptr)
{
  walk *w;
  int r;
  if (LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) != k->job->as_global)
    return 0;
  w = malloc(sizeof(*w));
  if (!w) return 0;
  w->body = body;
  w->k = k;
  w->n = 0;
  r = origin(w, ptr, -1);
  free(w);
  return r;
}

static unsigned attr_kind(const char *name)
{
  return LLVMGetEnumAttributeKindForName(name, strlen(name));
}

LLVMValueRef gj_pir_inline(LLVMModuleRef m, const gpujit_kernel_desc *k,
                           LLVMValueRef *buf, char *err, size_t errlen)
{
  LLVMValueRef body = LLVMGetNamedFunction(m, "gj_body");
  unsigned ai = attr_kind("alwaysinline");
  LLVMAttributeRef a;
  LLVMPassBuilderOptionsRef po;
  LLVMErrorRef e;
  if (!body || LLVMIsDeclaration(body)) {
    snprintf(err, errlen, "the module has no @gj_body");
    return NULL;
  }
  if (k->buffer_param < 0 ||
      (unsigned)k->buffer_param >= LLVMCountParams(body)) {
    snprintf(err, errlen, "@gj_body has no parameter for the plugin's buffer");
    return NULL;
  }
  *buf = LLVMGetParam(body, (unsigned)k->buffer_param);
  /* always-inline deletes an alwaysinline internal function nobody calls:
  ** @gj_body has no caller until the backend adds the entry point */
  a = LLVMGetEnumAttributeAtIndex(body, LLVMAttributeFunctionIndex, ai);
  if (a) LLVMRemoveEnumAttributeAtIndex(body, LLVMAttributeFunctionIndex, ai);
  po = LLVMCreatePassBuilderOptions();
  e = LLVMRunPasses(m, "always-inline", NULL, po);
  LLVMDisposePassBuilderOptions(po);
  if (a) LLVMAddAttributeAtIndex(body, LLVMAttributeFunctionIndex, a);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "inlining device functions: %s", msg);
    LLVMDisposeErrorMessage(msg);
    return NULL;
  }
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(body); bb;
       bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;
         i = LLVMGetNextInstruction(i)) {
      LLVMValueRef f = LLVMIsACallInst(i) ? LLVMGetCalledValue(i) : NULL;
      if (f && LLVMIsAFunction(f) && !LLVMIsDeclaration(f)) {
        size_t len;
        snprintf(err, errlen, "@gj_body still calls @%s after inlining",
                 LLVMGetValueName2(f, &len));
        return NULL;
      }
    }
  return body;
}

static LLVMValueRef intrinsic(LLVMModuleRef m, LLVMValueRef body,
                              const char *name, LLVMTypeRef *fty)
{
  LLVMContextRef C = LLVMGetModuleContext(m);
  LLVMTypeRef ps[2] = { LLVMTypeOf(LLVMGetParam(body, 0)),
                        LLVMInt32TypeInContext(C) };
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  *fty = LLVMFunctionType(LLVMInt64TypeInContext(C), ps, 2, 0);
  return f ? f : LLVMAddFunction(m, name, *fty);
}

LLVMValueRef gj_pir_linear_id(LLVMBuilderRef b, LLVMModuleRef m,
                              LLVMValueRef body)
{
  LLVMContextRef C = LLVMGetModuleContext(m);
  LLVMTypeRef idt, szt;
  LLVMValueRef idf = intrinsic(m, body, "gj.global_id", &idt);
  LLVMValueRef szf = intrinsic(m, body, "gj.global_size", &szt);
  LLVMValueRef wi = LLVMGetParam(body, 0), id = NULL;
  /* from dimension 2 down: id = gid_d + gs_d * id */
  for (int d = 2; d >= 0; d--) {
    LLVMValueRef args[2] = { wi, LLVMConstInt(LLVMInt32TypeInContext(C), d, 0) };
    LLVMValueRef g = LLVMBuildCall2(b, idt, idf, args, 2, "");
    if (id) {
      LLVMValueRef s = LLVMBuildCall2(b, szt, szf, args, 2, "");
      g = LLVMBuildAdd(b, g, LLVMBuildMul(b, s, id, ""), "");
    }
    id = g;
  }
  return id;
}
