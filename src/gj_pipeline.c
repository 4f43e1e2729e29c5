/*
** The compile pipeline.  gj_pipeline_compile reads as the list of stages:
** job, frontend + typer, codegen, disk cache lookup, link intrinsics, wrap,
** verify, optimize, emit, load, disk cache store.  Every stage returns an
** error instead of aborting; the LLVM module is verified before it is
** optimized.
**
** The content key is taken over the module as codegen left it, not over
** the bytecode: that module is a function of the bytecode of the kernel and
** of every device function it reaches, of the constants read from upvalues
** and globals, of the argument types and of the options, so a change in any
** of them changes the key, while what is cheap (typing and codegen, well
** under a millisecond for most kernels) is not skipped on a hit, and what
** is costly (optimization, code generation, the device's build) is.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>   /* LLVM_VERSION_STRING */

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

/* The content key (DESIGN.md): the build of gpujit (gj_cache_key_begin),
** LLVM, the target, the options and the module. */
static void content_key(const gj_backend *be, const gj_job *job,
                        const gj_compile_opts *o, LLVMModuleRef m,
                        gj_cache_key *key)
{
  gj_cache_hasher h;
  int32_t v[9];
  int j;
  char *ir;
  gj_cache_key_begin(&h);
  gj_cache_key_str(&h, LLVM_VERSION_STRING);
  gj_cache_key_str(&h, be->name);
  gj_cache_key_str(&h, job->triple);
  gj_cache_key_str(&h, job->datalayout);
  gj_cache_key_str(&h, job->cpu);
  gj_cache_key_str(&h, job->features);
  gj_cache_key_str(&h, job->target_id);
  gj_cache_key_str(&h, job->passes);
  gj_cache_key_str(&h, job->intrinsics_ir);
  v[0] = (int32_t)job->as_global;
  v[1] = (int32_t)job->as_shared;
  v[2] = (int32_t)job->as_local;
  v[3] = job->serial_groups;
  v[4] = (int32_t)job->codegen_opt;
  v[5] = (int32_t)job->reloc;
  v[6] = (int32_t)job->code_model;
  v[7] = o->single;
  v[8] = o->fastmath;
  gj_cache_key_add(&h, v, sizeof(v));
  for (j = 0; j < o->nparams; j++) gj_cache_key_str(&h, o->types[j]);
  /* The module's name is where the kernel was defined (a file name): not
  ** part of what it computes, and left out so that the same code defined
  ** elsewhere, or under another name, finds the same entry. */
  {
    size_t n = 0;
    const char *id = LLVMGetModuleIdentifier(m, &n);
    char *saved = dup_text(id, n);
    LLVMSetModuleIdentifier(m, "", 0);
    LLVMSetSourceFileName(m, "", 0);
    ir = LLVMPrintModuleToString(m);
    if (saved) {
      LLVMSetModuleIdentifier(m, saved, n);
      LLVMSetSourceFileName(m, saved, n);
      free(saved);
    }
  }
  gj_cache_key_str(&h, ir);
  LLVMDisposeMessage(ir);
  gj_cache_key_end(&h, key);
}

static gj_kernel *kernel_new(gj_ctx *ctx, const gj_backend *be,
                             const gj_compile_opts *o, const gj_sig *sig,
                             gj_err *err)
{
  gj_kernel *k = calloc(1, sizeof(gj_kernel));
  if (!k) {
    gj_err_set(err, "out of memory");
    return NULL;
  }
  k->ctx = ctx;
  k->be = be;
  k->bst = ctx->bst[o->bk];
  k->bk = o->bk;
  k->dev = o->dev;
  k->sig = *sig;
  return k;
}

/* A sound entry for key, loaded: 1 and *out.  0 on a miss, which includes
** an entry the backend no longer takes (a new driver, say): the compile
** goes on and replaces it. */
static int cache_lookup(gj_ctx *ctx, const gj_backend *be,
                        const gj_compile_opts *o, const gj_cache_key *key,
                        const gj_sig *sig, gj_kernel **out)
{
  char *bin = NULL;
  size_t len = 0;
  int bad = 0, r;
  gj_err e;
  gj_kernel *k;
  if (!gj_cache_get(o->cache_dir, key, &bin, &len, &bad)) {
    ctx->cache.misses++;
    ctx->cache.rejected += bad != 0;
    return 0;
  }
  k = kernel_new(ctx, be, o, sig, &e);
  r = !k ? -1 : (be->cache_load ? be->cache_load : be->load)(
                    k->bst, o->dev, bin, len, sig, &k->prog, &e);
  free(bin);
  if (r) {
    free(k);
    ctx->cache.misses++;
    ctx->cache.rejected++;
    return 0;
  }
  ctx->cache.hits++;
  *out = k;
  return 1;
}

/* Keep what the backend wants kept for k (else the emitted artifact).  A
** failure is counted, never fatal: the kernel is compiled and loaded. */
static void cache_store(gj_ctx *ctx, const gj_compile_opts *o,
                        const gj_cache_key *key, gj_kernel *k,
                        const char *art, size_t artlen)
{
  char *bin = NULL;
  size_t len = 0;
  gj_err e;
  if (k->be->cache_save) {
    if (k->be->cache_save(k->bst, k->prog, &bin, &len, &e)) {
      ctx->cache.write_errors++;
      return;
    }
    art = bin;
    artlen = len;
  }
  if (gj_cache_put(o->cache_dir, key, art, artlen, &e) == 0)
    ctx->cache.writes++;
  else
    ctx->cache.write_errors++;
  free(bin);
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
  gj_cache_key key;
  int use_cache = o->cache_dir && o->want_kernel && !o->want_llvm &&
                  !o->want_asm;
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

  /* 3. codegen */
  C = LLVMContextCreate();
  LLVMContextSetOpaquePointers(C, 1);
  cgo.fastmath = o->fastmath;
  cgo.sites = o->boundscheck ? &sites : NULL;
  cgo.argnames = o->argnames;
  if (gj_cg_module(&cs, kfn, &job, &cgo, C, &m, &body, &sig)) goto done;

  /* 4. the disk cache: a hit is loaded, and the stages below are skipped
  ** (unless GPUJIT_DUMP asks to see them) */
  if (use_cache) {
    content_key(be, &job, o, m, &key);
    if (!getenv("GPUJIT_DUMP") &&
        cache_lookup(ctx, be, o, &key, &sig, &out->kernel)) {
      /* The check sites (file, line, argument names) are not in the
      ** module, only their numbers: this compile's describe the code. */
      out->kernel->sites = sites;
      sites.v = NULL;
      rc = 0;
      goto done;
    }
  }

  /* 5. target intrinsics, 6. the target's entry point */
  if (link_intrinsics(C, m, &job, err)) goto done;
  body = LLVMGetNamedFunction(m, "gj_body");
  if (be->wrap(ctx->bst[o->bk], &job, m, body, &sig, err)) {
    size_t used = strlen(err->msg);
    snprintf(err->msg + used, sizeof(err->msg) - used, " (in kernel %s)",
             o->name);
    goto done;
  }

  /* 7. verify, 8. optimize */
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

  /* 9. emit */
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
  ctx->cache.compiles++;

  /* 10. load, 11. store in the disk cache */
  {
    gj_kernel *k = kernel_new(ctx, be, o, &sig, err);
    if (!k) goto done;
    if (be->load(k->bst, o->dev, art, artlen, &sig, &k->prog, err)) {
      free(k);
      goto done;
    }
    k->sites = sites;     /* the kernel owns them now */
    sites.v = NULL;
    out->kernel = k;
    if (use_cache) cache_store(ctx, o, &key, k, art, artlen);
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
