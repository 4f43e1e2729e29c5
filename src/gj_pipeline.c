/*
** The compile pipeline.  gj_pipeline_compile reads as the list of stages:
** job, frontend + typer, codegen, disk cache lookup, link intrinsics and
** libraries, wrap, verify, optimize, emit, load, disk cache store.  The
** runtime (gj_backend) gives the job and chooses the compile target
** (gj_codegen) that wraps, finishes and emits.  Every
** stage returns an error instead of aborting; the LLVM module is verified
** before it is optimized.  Plugins (gj_plugin.c) run at the named stages
** job, frontend, ir (after codegen), optimize (the pass text), optimized
** and emit; what they do at ir is in the module the key hashes, and each
** one's identity is in the key, for what they do later.
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
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>   /* LLVM_VERSION_STRING */

#include "gj_ad.h"
#include "gj_cg.h"
#include "gj_job_int.h"
#include "gj_kv.h"
#include "gj_params.h"
#include "gj_pipeline.h"
#include "gj_pipeline_int.h"
#include "gj_plugin.h"
#include "gj_target.h"
#include "gj_typer.h"

/* The options of the kernel a derivative is taken of: o's arguments
** without the shadows (gj_ad.h); else o itself. */
static int primal_opts(const gj_compile_opts *o, gj_compile_opts *po,
                       gj_err *err)
{
  int j, n = 0;
  *po = *o;
  if (!o->derivative) return 0;
  if (o->boundscheck)
    return gj_err_set(err, "kernel %s: a derivative with boundscheck is not "
                      "supported yet", o->name);
  for (j = 0; j < o->nparams; j++) {
    if (strstr(o->types[j], "[][") && o->shadow[j] != '2')
      return gj_err_set(err, "kernel %s: argument %d%s%s%s: a multi-dimensional "
                        "array cannot be an argument of a derivative yet (pass it "
                        "flattened, as a one-dimensional array)", o->name, j + 1,
                        o->argnames[j] ? " '" : "",
                        o->argnames[j] ? o->argnames[j] : "",
                        o->argnames[j] ? "'" : "");
    if (o->shadow[j] == '1' || o->shadow[j] == '2') continue;   /* shadow, tape */
    po->types[n] = o->types[j];
    po->argnames[n++] = o->argnames[j];
  }
  po->nparams = n;
  return 0;
}

/* Link the job's bitcode (or IR text) libraries that m needs.  Before the
** entry point exists nothing in m is external, so whatever is external
** afterwards came from a library: it is made internal, and what the kernel
** does not call is dropped by the optimizer. */
static int link_libraries(LLVMModuleRef m, const gj_job *job, gj_err *err)
{
  int i, linked = 0;
  for (i = 0; i < job->nlibs; i++) {
    const gj_job_lib *lib = &job->libs[i];
    LLVMMemoryBufferRef buf;
    char *msg = NULL, what[sizeof(lib->path) + 16];
    if (!gj_job_lib_used(lib, m)) continue;
    if (LLVMCreateMemoryBufferWithContentsOfFile(lib->path, &buf, &msg)) {
      gj_err_set(err, "cannot read library %s: %s", lib->path, msg ? msg : "?");
      LLVMDisposeMessage(msg);
      return -1;
    }
    /* with the module's target: libdevice says nvptx64-nvidia-gpulibs */
    snprintf(what, sizeof(what), "library %s", lib->path);
    if (gj_link_ir(m, buf, what, err)) return -1;
    linked = 1;
  }
  if (linked) {
    LLVMValueRef v;
    for (v = LLVMGetFirstFunction(m); v; v = LLVMGetNextFunction(v))
      if (!LLVMIsDeclaration(v) && LLVMGetLinkage(v) == LLVMExternalLinkage)
        LLVMSetLinkage(v, LLVMInternalLinkage);
    for (v = LLVMGetFirstGlobal(m); v; v = LLVMGetNextGlobal(v))
      if (!LLVMIsDeclaration(v) && LLVMGetLinkage(v) == LLVMExternalLinkage)
        LLVMSetLinkage(v, LLVMInternalLinkage);
  }
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

const char *const gj_stage_names[GJ_ST__MAX] = {
  "job", "frontend", "codegen", "cache", "link", "finish", "optimize", "emit",
  "load", "store",
};

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Charge the time since *t0 to stage st; *t0 becomes now. */
static void lap(gj_compile_out *out, int st, double *t0)
{
  double t = now_ms();
  out->ms[st] += t - *t0;
  *t0 = t;
}

static void dump(const char *what, const char *name, const char *text)
{
  const char *env = getenv("GPUJIT_DUMP");
  if (env && strstr(env, what))
    fprintf(stderr, "; gpujit %s of kernel %s\n%s\n", what, name, text);
}

/* m's text for the key, without where the kernel was defined: the module's
** name and source file name, and the Lua lines of its conditional branches
** (!gj.line, src/gj_cg.c), which only the cpu vectorizer's note reads (a
** hit prints none) and which no code generator reads.  Both are put back.
** Out of memory, a line stays in: the key is still sound. */
static char *key_text(LLVMModuleRef m)
{
  unsigned kind = LLVMGetMDKindIDInContext(LLVMGetModuleContext(m),
                                           "gj.line", 7);
  struct { LLVMValueRef br, md; } *tag = NULL, *q;
  size_t n = 0, cap = 0, i, len = 0;
  const char *id = LLVMGetModuleIdentifier(m, &len);
  char *saved = dup_text(id, len), *ir;
  LLVMValueRef f;
  LLVMBasicBlockRef bb;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
      LLVMValueRef md = t ? LLVMGetMetadata(t, kind) : NULL;
      if (!md) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        if (!(q = realloc(tag, cap * sizeof(*tag)))) goto print;
        tag = q;
      }
      tag[n].br = t;
      tag[n++].md = md;
      LLVMSetMetadata(t, kind, NULL);
    }
print:
  LLVMSetModuleIdentifier(m, "", 0);
  LLVMSetSourceFileName(m, "", 0);
  ir = LLVMPrintModuleToString(m);
  if (saved) {
    LLVMSetModuleIdentifier(m, saved, len);
    LLVMSetSourceFileName(m, saved, len);
    free(saved);
  }
  for (i = 0; i < n; i++) LLVMSetMetadata(tag[i].br, kind, tag[i].md);
  free(tag);
  return ir;
}

/* The content key: the build of gpujit (gj_cache_key_begin), LLVM, the
** backend, the job (every field GJ_JOBDEF marks KEY, in its order:
** gj_job_key), the compile options, the plugins and the module.
**
** Left out, and why (as GPUCompiler.jl's cache hash says what it leaves
** out):
** - where the kernel was defined and its name (the module's identifier,
**   the source file name, its branches' Lua lines: key_text; o->name,
**   o->line): not what it computes; the same code defined elsewhere, at
**   another line or under another name, finds the same entry.  (With
**   plugins, the !gj.loc of array accesses, file and line, stays: plugins
**   read it and may put it in the code.)  The check sites (file, line, argument names) are not in the
**   module either, only their numbers: a hit takes this compile's.
** - the device number: what of the device decides the artifact is in the
**   job (target_id, format, cpu).
** - options the module already shows: boundscheck and one-based arrays
**   (the checks are in it), vectorize (the job's, keyed there).
** - the print buffer's size (print_cap) and the timeout's seconds: the
**   loaded kernel's, taken from this compile's signature on a hit.
** - what a plugin does at the ir stage (it is in the module) and the
**   plugins' code (each one's identity and key callback: gj_plugset_key).
** - text dumps (GPUJIT_DUMP, want_llvm, want_asm): they skip the cache. */
static void content_key(const gj_backend *be, const gj_job *job,
                        const gj_compile_opts *o, const gj_plugset *ps,
                        LLVMModuleRef m, gj_cache_key *key)
{
  gj_cache_hasher h;
  int32_t v[2];
  int j;
  char *ir;
  gj_cache_key_begin(&h);
  gj_cache_key_str(&h, LLVM_VERSION_STRING);
  gj_cache_key_str(&h, be->name);
  gj_job_key(job, m, &h);
  /* the compile options (gj_compile_opts): written out here, one by one */
  v[0] = o->single;
  v[1] = o->fastmath;
  gj_cache_key_add(&h, v, sizeof(v));
  /* timeout: the checks are in the module already; said here too, and only
  ** then, so that the keys of kernels without one stay as they were */
  if (o->timeout > 0) gj_cache_key_str(&h, "cancel");
  if (o->lua) gj_cache_key_str(&h, "precision=lua");   /* likewise */
  if (o->derivative) {   /* likewise: only derivatives say so */
    gj_cache_key_str(&h, o->derivative == GJ_AD_FORWARD ? "forward" : "reverse");
    gj_cache_key_str(&h, o->shadow);
  }
  for (j = 0; j < o->nparams; j++) gj_cache_key_str(&h, o->types[j]);
  gj_plugset_key(ps, &h);
  ir = key_text(m);
  gj_cache_key_str(&h, ir);
  LLVMDisposeMessage(ir);
  gj_cache_key_end(&h, key);
}

/* What plugins see of the kernel (gpujit_plugin.h). */
static void kernel_desc(const gj_compile_opts *o, gpujit_kernel_desc *kd)
{
  memset(kd, 0, sizeof(*kd));
  kd->name = o->name;
  kd->backend = gj_backends[o->bk]->name;
  kd->device = o->dev;
  kd->nparams = o->nparams;
  kd->types = o->types;
  kd->argnames = o->argnames;
  kd->single = o->single;
  kd->lua = o->lua;
  kd->fastmath = o->fastmath;
  kd->boundscheck = o->boundscheck;
  kd->buffer_param = -1;
  kd->source = o->source ? o->source : "";
  kd->line = o->line;
}

/* 1. the backend's compile job, then the plugins' */
static int stage_job(gj_ctx *ctx, const gj_compile_opts *o, gj_plugset *ps,
                     gpujit_kernel_desc *kd, gj_job *job, gj_err *err)
{
  const gj_backend *be = gj_backends[o->bk];
  /* no compile_mu: a back half on the worker reads only an opened
  ** backend's state, and the runtimes' job hooks only read (cpu: locked) */
  if (gj_ctx_backend(ctx, o->bk, err)) return -1;
  memset(job, 0, sizeof(*job));
  if (be->job(ctx->bst[o->bk], o->dev, job, err)) return -1;
  job->vectorize = o->vectorize;
  return gj_plugset_job(ps, kd, job, err);
}

int gj_pipeline_job(gj_ctx *ctx, const gj_compile_opts *o, gj_job *job,
                    gj_err *err)
{
  gj_plugset none, *ps = o->plugins;
  gpujit_kernel_desc kd;
  kernel_desc(o, &kd);
  if (!ps) gj_plugset_init(ps = &none);
  return stage_job(ctx, o, ps, &kd, job, err);
}

/* A type as API.md names it ("float", "int32_t[]", "float[][4]"), else as
** messages do. */
static void type_name(gj_cs *cs, gj_ty t, char *buf, size_t n)
{
  gj_scalar s = t.k == GJ_T_ARR ? (gj_scalar)t.s : gj_ty_scalar(cs, t);
  if (t.k == GJ_T_ARR && t.shp) {   /* "float[][4]", a row "float[4]" */
    const gj_shape *sh = &cs->shapes[t.shp - 1];
    size_t o = (size_t)snprintf(buf, n, "%s", gj_ty_struct(cs, t) ? gj_ty_struct(cs, t)->name
                                                                 : gj_scalar_name(s));
    int k;
    if (o < n && sh->level > 0)
      o += (size_t)snprintf(buf + o, n - o, "[%lld]", (long long)cs->shapes[t.shp - 2].dims[0]);
    else if (o < n)
      o += (size_t)snprintf(buf + o, n - o, "[]");
    for (k = 0; k < sh->n && o < n; k++)
      o += (size_t)snprintf(buf + o, n - o, "[%lld]", (long long)sh->dims[k]);
    return;
  }
  if (gj_ty_struct(cs, t))   /* "particle[]", or "particle" for a reference */
    snprintf(buf, n, "%s%s", gj_ty_struct(cs, t)->name, t.k == GJ_T_ARR ? "[]" : "");
  else if (t.k == GJ_T_NUM && t.lnum)   /* a parameter's class, else any lnum */
    snprintf(buf, n, "%s", gj_lnum_of(t.lo, t.hi) ? gj_lnum_classes[gj_lnum_of(t.lo, t.hi)].name
                                                   : "lua_int");
  else if (s < GJ_SCALAR__MAX)
    snprintf(buf, n, "%s%s", gj_scalar_name(s), t.k == GJ_T_ARR ? "[]" : "");
  else
    gj_ty_str(cs, t, buf, n);
}

/* 2b. the frontend hooks see every typed function. */
static int frontend_hooks(gj_plugset *ps, gpujit_kernel_desc *kd, gj_cs *cs,
                          gj_err *err)
{
  enum { PER = GJ_MAXPARAMS + GJ_MAXRET, LEN = 48 };
  int i, j, nf = cs->nfns, r;
  gpujit_fn_desc *fd;
  char (*text)[LEN];
  const char **ptr;
  if (!ps->n) return 0;
  fd = calloc((size_t)nf, sizeof(*fd));
  text = calloc((size_t)nf * PER, LEN);
  ptr = calloc((size_t)nf * PER, sizeof(*ptr));
  if (!fd || !text || !ptr) {
    r = gj_err_set(err, "out of memory");
    goto done;
  }
  for (i = 0; i < nf; i++) {
    gj_fn *f = cs->fns[i];
    const char **pt = ptr + (size_t)i * PER;
    char (*tx)[LEN] = text + (size_t)i * PER;
    fd[i].name = f->kv < 0 ? "kernel" : cs->kv[f->kv].name;
    fd[i].source = f->proto->chunk;
    fd[i].line = f->proto->linedefined;
    fd[i].nparams = f->nparams;
    fd[i].nret = f->nret > 0 ? f->nret : 0;
    fd[i].uses_barrier = f->uses_barrier;
    for (j = 0; j < f->nparams; j++) {
      type_name(cs, f->params[j], tx[j], LEN);
      pt[j] = tx[j];
    }
    for (j = 0; j < fd[i].nret; j++) {
      type_name(cs, f->ret[j], tx[GJ_MAXPARAMS + j], LEN);
      pt[GJ_MAXPARAMS + j] = tx[GJ_MAXPARAMS + j];
    }
    fd[i].param_types = pt;
    fd[i].ret_types = pt + GJ_MAXPARAMS;
  }
  kd->nfunctions = nf;
  kd->functions = fd;
  r = gj_plugset_frontend(ps, kd, err);
  kd->nfunctions = 0;
  kd->functions = NULL;
done:
  free(fd);
  free(text);
  free(ptr);
  return r;
}

/* 8. optimize with the job's pipeline, as the plugins extended it. */
static int optimize(LLVMModuleRef m, const gj_job *job, gj_plugset *ps,
                    gpujit_kernel_desc *kd, LLVMTargetMachineRef tm,
                    gj_err *err)
{
  char passes[sizeof(job->passes)];
  LLVMPassBuilderOptionsRef po;
  LLVMErrorRef e;
  memcpy(passes, job->passes, sizeof(passes));
  if (gj_plugset_passes(ps, kd, passes, sizeof(passes), err)) return -1;
  po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  e = LLVMRunPasses(m, passes, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *em = LLVMGetErrorMessage(e);
    gj_err_set(err, "optimizing kernel %s with \"%s\": %s", kd->name, passes,
               em);
    LLVMDisposeErrorMessage(em);
    return -1;
  }
  return 0;
}

/* A compile between its halves (gj_pipeline.h). */
struct gj_pmid {
  gj_ctx *ctx;
  const gj_compile_opts *o;   /* the caller's, alive until back returns */
  gj_cache_stats *stats;      /* where the disk cache's counts go */
  gj_plugset none, *ps;
  gpujit_kernel_desc kd;      /* kd.job is &job */
  gj_job job;
  gj_sig sig;
  gj_sites sites;             /* the kernel takes them at load */
  gj_psites prints;
  gj_asites asserts;
  LLVMContextRef C;           /* this compile's own; m is in it */
  LLVMModuleRef m;
};

void gj_pipeline_mid_free(gj_pmid *mid)
{
  if (!mid) return;
  if (mid->m) LLVMDisposeModule(mid->m);
  if (mid->C) LLVMContextDispose(mid->C);
  gj_sites_free(&mid->sites);
  gj_psites_free(&mid->prints);
  gj_asites_free(&mid->asserts);
  free(mid);
}

void gj_pipeline_mid_stats(gj_pmid *mid, gj_cache_stats *stats)
{
  mid->stats = stats;
}

int gj_pipeline_front(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                      gj_compile_out *out, gj_pmid **midp, gj_err *err)
{
  gj_pmid *mid = calloc(1, sizeof(gj_pmid));
  gj_plugset *ps;
  gj_cs cs;
  gj_fn *kfn;
  gj_ty params[GJ_MAXPARAMS];
  gj_cgopts cgo;
  gj_compile_opts po;         /* o, or the primal arguments of a derivative */
  const char *xnames[GJ_MAXPARAMS];
  gj_bufname xbuf[GJ_MAXPARAMS];
  gj_scalar xelems[GJ_MAXPARAMS];
  LLVMValueRef body;
  int rc = -1;
  double t0 = now_ms();

  memset(out, 0, sizeof(*out));
  *midp = NULL;
  /* the session owns src from here: gj_cs_free closes it, below */
  gj_cs_init(&cs, src, &ctx->bcmap, o->single, o->name, err);
  cs.lua = o->lua;
  if (!mid) {
    gj_err_set(err, "out of memory");
    goto done;
  }
  mid->ctx = ctx;
  mid->o = o;
  mid->stats = &ctx->cache;
  ps = mid->ps = o->plugins;
  if (!ps) gj_plugset_init(ps = mid->ps = &mid->none);
  kernel_desc(o, &mid->kd);
  if (o->nparams + ps->nbuf > GJ_MAXPARAMS) {
    gj_err_set(err, "kernel %s: its %d parameters and the plugins' %d "
               "buffers are more than %d", o->name, o->nparams, ps->nbuf,
               GJ_MAXPARAMS);
    goto done;
  }
  /* 1. the compile job */
  if (stage_job(ctx, o, ps, &mid->kd, &mid->job, err)) goto done;
  mid->kd.job = &mid->job;
  cs.narrow32 = mid->job.narrow_ints;
  if (primal_opts(o, &po, err)) goto done;
  if (gj_param_types(&cs, &po, params, err)) goto done;
  lap(out, GJ_ST_JOB, &t0);

  /* 2. frontend and typer */
  {
    int bad = gj_typer_kernel(&cs, po.nparams, params, &kfn) ||
              frontend_hooks(ps, &mid->kd, &cs, err);
    /* a lookup that raised an error (gj_kv.h) wins over what the typer
    ** made of the nil it gave */
    if (src && src->failed) {
      *err = src->why;
      goto done;
    }
    if (bad) goto done;
  }
  lap(out, GJ_ST_FRONTEND, &t0);

  /* 3. codegen (it types instructions again: the source is still asked),
  ** then the plugins' ir hooks and keys */
  mid->C = LLVMContextCreate();
  LLVMContextSetOpaquePointers(mid->C, 1);
  memset(&cgo, 0, sizeof(cgo));
  cgo.fastmath = o->fastmath;
  cgo.sites = o->boundscheck ? &mid->sites : NULL;
  cgo.cancel = o->timeout > 0;
  cgo.prints = &mid->prints;
  cgo.asserts = &mid->asserts;
  cgo.argnames = po.argnames;
  cgo.ad = o->derivative != 0 || cs.derivs > 0;
  if (o->derivative && cs.derivs) {
    gj_err_set(err, "%s:%d: gpu.derivative or gpu.gradient in a kernel that "
               "is itself differentiated (gpu.jvp, gpu.grad, a tape) is not "
               "supported yet (in kernel %s)", cs.deriv_chunk, cs.deriv_line,
               o->name);
    goto done;
  }
  gj_plugset_buffers(ps, xbuf, xnames, xelems);
  cgo.nextra = ps->nbuf;
  cgo.extra_names = xnames;
  cgo.extra_elems = xelems;
  cgo.locs = ps->n > 0;
  if (gj_cg_module(&cs, kfn, &mid->job, &cgo, mid->C, &mid->m, &body,
                   &mid->sig))
    goto done;
  /* not in the module (the record's size is the program's, at load) */
  mid->sig.print_cap = mid->sig.prints ?
      (o->print_cap ? o->print_cap : GJ_PRINT_DEFAULT_CAP) : 0;
  /* 3a. the derivative (gj_ad.h), before the plugins see the module; or
  ** those the kernel takes inside */
  if (cs.derivs && gj_ad_inner(mid->m, body, o->name, err)) goto done;
  if (o->derivative &&
      gj_ad_transform(mid->m, &body, &mid->sig, o->derivative, o->shadow,
                      o->nparams, mid->job.as_global, &mid->sites, o->name,
                      err))
    goto done;
  ps->buf_base = (int)LLVMCountParams(body) - 2 * ps->nbuf;
  if (gj_plugset_module(ps, GJ_STAGE_IR, &mid->kd, &mid->m, err)) goto done;
  if (gj_plugset_keys(ps, &mid->kd, err)) goto done;   /* on every compile */
  lap(out, GJ_ST_CODEGEN, &t0);
  rc = 0;
done:
  gj_cs_free(&cs);   /* the source is closed on this thread */
  if (rc) {
    gj_pipeline_mid_free(mid);
    return -1;
  }
  *midp = mid;
  return 0;
}

/* Stages 4-11 on mid (gj_pipeline_back), with ctx->compile_mu held. */
static int back(gj_pmid *mid, gj_compile_out *out, gj_err *err)
{
  gj_ctx *ctx = mid->ctx;
  const gj_compile_opts *o = mid->o;
  const gj_backend *be = gj_backends[o->bk];
  const gj_codegen *cg;
  void *ts = NULL;           /* the target's state (gj_backend.target) */
  gj_plugset *ps = mid->ps;
  gpujit_kernel_desc *kd = &mid->kd;
  gj_job *job = &mid->job;
  LLVMValueRef body;
  LLVMTargetMachineRef tm = NULL;
  char *msg = NULL, *art = NULL;
  size_t artlen = 0;
  gj_cache_key key;
  int use_cache = o->cache_dir && o->want_kernel && !o->want_llvm &&
                  !o->want_asm;
  int rc = -1, lockfd = -1;
  double t0 = now_ms();

  /* 4. the disk cache: a hit is loaded, and the stages below are skipped
  ** (unless GPUJIT_DUMP asks to see them).  On a miss the entry's compile
  ** lock is taken, waiting for another process compiling the same kernel
  ** (an MPI job's ranks, say), and the entry looked up again; the lock is
  ** held until this compile has stored it (gj_cache_lock). */
  if (use_cache) {
    content_key(be, job, o, ps, mid->m, &key);
    if (!getenv("GPUJIT_DUMP") &&
        gj_pipeline_cache_get(ctx, mid->stats, o, &key, &mid->sig,
                              &out->kernel, &lockfd)) {
      /* The check sites (file, line, argument names) are not in the
      ** module, only their numbers: this compile's describe the code. */
      out->kernel->sites = mid->sites;
      mid->sites.v = NULL;
      out->kernel->prints = mid->prints;
      memset(&mid->prints, 0, sizeof(mid->prints));
      out->kernel->asserts = mid->asserts;
      memset(&mid->asserts, 0, sizeof(mid->asserts));
      out->cache = GJ_CACHE_HIT;
      lap(out, GJ_ST_CACHE, &t0);
      return 0;
    }
    out->cache = GJ_CACHE_MISS;
    lap(out, GJ_ST_CACHE, &t0);
  }

  /* 5. target intrinsics and libraries, 6. the target's entry point */
  if (gj_link_intrinsics(mid->m, job, err) || link_libraries(mid->m, job, err))
    goto done;
  body = LLVMGetNamedFunction(mid->m, "gj_body");
  cg = be->target(ctx->bst[o->bk], job, &ts);
  if (cg->wrap(ts, job, mid->m, body, &mid->sig, err)) {
    size_t used = strlen(err->msg);
    snprintf(err->msg + used, sizeof(err->msg) - used, " (in kernel %s)",
             o->name);
    goto done;
  }

  /* 7. verify, 8. optimize, then the plugins' optimized hooks */
  if (LLVMVerifyModule(mid->m, LLVMReturnStatusAction, &msg)) {
    gj_err_set(err, "%s: invalid IR for kernel %s: %s",
               ps->n ? "after the plugins' ir stage" : "internal error", o->name,
               msg ? msg : "?");
    goto done;
  }
  lap(out, GJ_ST_LINK, &t0);
  /* 7b. the target's finish_module, verified again */
  if (cg->finish_module) {
    if (cg->finish_module(ts, job, mid->m, out->note,
                          sizeof(out->note), err)) {
      size_t used = strlen(err->msg);
      snprintf(err->msg + used, sizeof(err->msg) - used, " (in kernel %s)",
               o->name);
      goto done;
    }
    if (msg) LLVMDisposeMessage(msg);
    msg = NULL;
    if (LLVMVerifyModule(mid->m, LLVMReturnStatusAction, &msg)) {
      gj_err_set(err, "internal error: invalid IR for kernel %s after the "
                 "target's finish_module: %s", o->name, msg ? msg : "?");
      goto done;
    }
    if (getenv("GPUJIT_DUMP") && strstr(getenv("GPUJIT_DUMP"), "module")) {
      char *ir = LLVMPrintModuleToString(mid->m);
      dump("module", o->name, ir);
      LLVMDisposeMessage(ir);
    }
  }
  lap(out, GJ_ST_FINISH, &t0);
  if (gj_target_machine(job, &tm, err)) goto done;
  if (optimize(mid->m, job, ps, kd, tm, err)) goto done;
  if (gj_plugset_module(ps, GJ_STAGE_OPTIMIZED, kd, &mid->m, err)) goto done;
  {
    char *ir = LLVMPrintModuleToString(mid->m);
    dump("llvm", o->name, ir);
    if (o->want_llvm) out->llvm = dup_text(ir, strlen(ir));
    LLVMDisposeMessage(ir);
  }
  lap(out, GJ_ST_OPTIMIZE, &t0);

  /* 9. the target's finish_ir, emit, then the plugins' emit hooks */
  if (cg->finish_ir && cg->finish_ir(ts, job, mid->m, err))
    goto done;
  if (o->want_asm || (getenv("GPUJIT_DUMP") && strstr(getenv("GPUJIT_DUMP"), "asm"))) {
    char *as = NULL;
    size_t aslen = 0;
    if (cg->emit(ts, job, tm, mid->m, 1, &as, &aslen, err)) goto done;
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
  if (cg->emit(ts, job, tm, mid->m, 0, &art, &artlen, err)) {
    gj_err_prefix(err, "kernel %s: ", o->name);   /* e.g. a tool missing */
    goto done;
  }
  if (gj_plugset_emit(ps, kd, &art, &artlen, err)) goto done;
  mid->stats->compiles++;
  lap(out, GJ_ST_EMIT, &t0);

  /* 10. load, 11. store in the disk cache */
  {
    gj_kernel *k = gj_pipeline_kernel_new(ctx, o, &mid->sig, err);
    if (!k) goto done;
    if (be->load(k->bst, o->dev, art, artlen, &mid->sig, &k->prog, err)) {
      free(k);
      gj_plugset_emit_blame(ps, kd, err);
      goto done;
    }
    k->sites = mid->sites;     /* the kernel owns them now */
    mid->sites.v = NULL;
    k->prints = mid->prints;
    memset(&mid->prints, 0, sizeof(mid->prints));
    k->asserts = mid->asserts;
    memset(&mid->asserts, 0, sizeof(mid->asserts));
    out->kernel = k;
    lap(out, GJ_ST_LOAD, &t0);
    if (use_cache && gj_pipeline_cache_put(mid->stats, o, &key, k, art, artlen))
      out->cache = GJ_CACHE_WRITTEN;
    lap(out, GJ_ST_STORE, &t0);
  }
  rc = 0;
done:
  if (lockfd >= 0) gj_cache_unlock(o->cache_dir, &key, lockfd);
  free(art);
  if (msg) LLVMDisposeMessage(msg);
  if (tm) LLVMDisposeTargetMachine(tm);
  return rc;
}

int gj_pipeline_back(gj_pmid *mid, gj_compile_out *out, gj_err *err)
{
  int rc;
  pthread_mutex_lock(&mid->ctx->compile_mu);
  rc = back(mid, out, err);
  pthread_mutex_unlock(&mid->ctx->compile_mu);
  if (rc) {
    free(out->llvm);
    free(out->asm_text);
    out->llvm = out->asm_text = NULL;
  }
  gj_pipeline_mid_free(mid);
  return rc;
}

int gj_pipeline_compile(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                        gj_compile_out *out, gj_err *err)
{
  gj_pmid *mid;
  if (gj_pipeline_front(ctx, src, o, out, &mid, err)) return -1;
  return gj_pipeline_back(mid, out, err);
}
