/*
** The compile pipeline.  gj_pipeline_compile reads as the list of stages:
** job, frontend + typer, codegen, link intrinsics, wrap, verify, optimize,
** emit, load.  Every stage returns an error instead of aborting; the LLVM
** module is verified before it is optimized.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "gj_cg.h"
#include "gj_pipeline.h"
#include "gj_target.h"
#include "gj_typer.h"

/* Type names of the signature -> parameter types. */
static int param_types(const gj_compile_opts *o, gj_ty *params, gj_err *err)
{
  int j;
  for (j = 0; j < o->nparams; j++) {
    char nm[64];
    size_t n = strlen(o->types[j]);
    int arr = n > 2 && strcmp(o->types[j] + n - 2, "[]") == 0;
    gj_scalar s;
    snprintf(nm, sizeof(nm), "%.*s", (int)(arr ? n - 2 : n), o->types[j]);
    if (gj_scalar_parse(nm, &s))
      return gj_err_set(err, "kernel %s: unsupported type '%s' for argument %d",
                        o->name, o->types[j], j + 1);
    params[j] = gj_ty_num(s);
    if (arr) {
      params[j].k = GJ_T_ARR;
      params[j].space = GJ_SPACE_GLOBAL;
      if (o->boundscheck)
        params[j].aux = GJ_ARR_TAG(j, (int)((o->one_based >> j) & 1));
    }
  }
  return 0;
}

/* Link the target's definitions of the gj.* intrinsics into m.  They are
** linkonce_odr in the target's text (the linker does not bind a declaration
** to an internal definition); the backend's wrap makes them internal, and
** once inlined they disappear. */
static int link_intrinsics(LLVMContextRef C, LLVMModuleRef m, const gj_job *job,
                           gj_err *err)
{
  LLVMMemoryBufferRef buf;
  LLVMModuleRef im;
  char *msg = NULL;
  if (!job->intrinsics_ir) return 0;
  buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(job->intrinsics_ir,
                                                  strlen(job->intrinsics_ir),
                                                  "gj_intrinsics");
  if (LLVMParseIRInContext(C, buf, &im, &msg)) {
    gj_err_set(err, "internal error: target intrinsics do not parse: %s",
               msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMSetTarget(im, LLVMGetTarget(m));
  LLVMSetDataLayout(im, LLVMGetDataLayoutStr(m));
  if (LLVMLinkModules2(m, im))
    return gj_err_set(err, "internal error: cannot link target intrinsics");
  return 0;
}

static char *dup_text(const char *s, size_t n)
{
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static void dump(const char *what, const char *name, const char *text)
{
  const char *env = getenv("GPUJIT_DUMP");
  if (env && strstr(env, what))
    fprintf(stderr, "; gpujit %s of kernel %s\n%s\n", what, name, text);
}

int gj_pipeline_compile(gj_ctx *ctx, lua_State *L, int fidx,
                        const gj_compile_opts *o, gj_compile_out *out,
                        gj_err *err)
{
  const gj_backend *be = gj_backends[o->bk];
  gj_job job;
  gj_cs cs;
  gj_fn *kfn;
  gj_ty params[GJ_MAXPARAMS];
  gj_cgopts cgo;
  gj_sig sig;
  gj_sites sites = { 0, 0, NULL };
  LLVMContextRef C = NULL;
  LLVMModuleRef m = NULL;
  LLVMValueRef body;
  LLVMTargetMachineRef tm = NULL;
  char *msg = NULL, *art = NULL;
  size_t artlen = 0;
  int rc = -1;

  memset(out, 0, sizeof(*out));
  /* 1. the backend's compile job */
  if (gj_ctx_backend(ctx, o->bk, err)) return -1;
  memset(&job, 0, sizeof(job));
  if (be->job(ctx->bst[o->bk], o->dev, &job, err)) return -1;
  if (param_types(o, params, err)) return -1;

  /* 2. frontend and typer */
  gj_cs_init(&cs, L, ctx, &ctx->bcmap, o->single, o->name, err);
  if (gj_typer_kernel(&cs, fidx, o->nparams, params, &kfn)) goto done;

  /* 3. codegen, 4. target intrinsics, 5. the target's entry point */
  C = LLVMContextCreate();
  LLVMContextSetOpaquePointers(C, 1);
  cgo.fastmath = o->fastmath;
  cgo.sites = o->boundscheck ? &sites : NULL;
  cgo.argnames = o->argnames;
  if (gj_cg_module(&cs, kfn, &job, &cgo, C, &m, &body, &sig)) goto done;
  if (link_intrinsics(C, m, &job, err)) goto done;
  body = LLVMGetNamedFunction(m, "gj_body");
  if (be->wrap(ctx->bst[o->bk], &job, m, body, &sig, err)) goto done;

  /* 6. verify, 7. optimize */
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    gj_err_set(err, "internal error: invalid IR for kernel %s: %s", o->name,
               msg ? msg : "?");
    goto done;
  }
  if (gj_target_machine(&job, &tm, err)) goto done;
  {
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e;
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    e = LLVMRunPasses(m, job.passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char *em = LLVMGetErrorMessage(e);
      gj_err_set(err, "internal error: optimizing kernel %s: %s", o->name, em);
      LLVMDisposeErrorMessage(em);
      goto done;
    }
  }
  {
    char *ir = LLVMPrintModuleToString(m);
    dump("llvm", o->name, ir);
    if (o->want_llvm) out->llvm = dup_text(ir, strlen(ir));
    LLVMDisposeMessage(ir);
  }

  /* 8. emit */
  if (o->want_asm || (getenv("GPUJIT_DUMP") && strstr(getenv("GPUJIT_DUMP"), "asm"))) {
    char *as = NULL;
    size_t aslen = 0;
    if (be->emit(ctx->bst[o->bk], &job, tm, m, 1, &as, &aslen, err)) goto done;
    out->asm_text = dup_text(as, aslen);
    free(as);
    dump("asm", o->name, out->asm_text ? out->asm_text : "");
    if (!o->want_asm) {
      free(out->asm_text);
      out->asm_text = NULL;
    }
  }
  if (!o->want_kernel) {
    rc = 0;
    goto done;
  }
  if (be->emit(ctx->bst[o->bk], &job, tm, m, 0, &art, &artlen, err)) goto done;

  /* 9. load */
  {
    gj_kernel *k = calloc(1, sizeof(gj_kernel));
    if (!k) {
      gj_err_set(err, "out of memory");
      goto done;
    }
    k->ctx = ctx;
    k->be = be;
    k->bst = ctx->bst[o->bk];
    k->bk = o->bk;
    k->dev = o->dev;
    k->sig = sig;
    if (be->load(k->bst, o->dev, art, artlen, &sig, &k->prog, err)) {
      free(k);
      goto done;
    }
    k->sites = sites;     /* the kernel owns them now */
    sites.v = NULL;
    out->kernel = k;
  }
  rc = 0;
done:
  if (rc) {
    free(out->llvm);
    free(out->asm_text);
    out->llvm = out->asm_text = NULL;
  }
  free(art);
  if (msg) LLVMDisposeMessage(msg);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (m) LLVMDisposeModule(m);
  if (C) LLVMContextDispose(C);
  gj_cs_free(&cs);
  gj_sites_free(&sites);
  return rc;
}

int gj_kernel_launch(gj_kernel *k, const gj_dims *dims, void *args)
{
  gj_fault f;
  if (!k->sig.faults)
    return k->be->launch(k->bst, k->prog, dims, args, NULL, &k->ctx->err);
  memset(&f, 0, sizeof(f));
  if (k->be->launch(k->bst, k->prog, dims, args, &f, &k->ctx->err)) return -1;
  if (f.site) return gj_fault_error(&k->sites, &f, &k->ctx->err);
  return 0;
}

void gj_kernel_free(gj_kernel *k)
{
  if (!k) return;
  if (k->prog && k->bst) k->be->unload(k->bst, k->prog);
  gj_sites_free(&k->sites);
  free(k);
}
