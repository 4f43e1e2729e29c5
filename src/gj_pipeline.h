/*
** The compile pipeline: the list of stages from a Lua function to a
** launchable kernel (docs/architecture.md, "One compile, stage by stage").
**
** It takes what a frontend prepared (gj_pipeline_lua.c for a Lua
** function): the function as a known-values source (gj_kv.h), where it was
** defined, and the plugins that apply, already read; it needs no Lua stack.
*/
#ifndef GJ_PIPELINE_H
#define GJ_PIPELINE_H

#include "gj_ctx.h"
#include "gj_fault.h"
#include "gj_kv.h"
#include "gj_plugin.h"
#include "gj_print.h"
#include "gpujit.h"

typedef struct gj_compile_opts {
  int bk;                 /* backend index (gj_backends) */
  int dev;
  const char *name;       /* kernel name for messages */
  int single;             /* precision = "single" */
  int lua;                /* precision = "lua" (gj_cs.lua) */
  int fastmath;
  int vectorize;          /* the job's vectorize (gj_job.h) */
  int boundscheck;        /* check array indices (gj_cg_check.c) */
  uint64_t one_based;     /* boundscheck: bit j set when array argument j is
                          ** a Lua table (indexed from 1) */
  const char *argnames[GJ_MAXPARAMS];   /* boundscheck: for messages, or NULL */
  double timeout;         /* seconds > 0: compile with cancellation checks
                          ** (gj_cg_cancel.c) and stop a launch running
                          ** longer; 0: none.  Only "> 0" is in the cache
                          ** key: the seconds are the loaded kernel's. */
  uint32_t print_cap;     /* bytes for print records per launch (the
                          ** print_buffer option; 0: the default) */
  int nparams;
  const char *types[GJ_MAXPARAMS];   /* type names: "float", "int32_t[]" */
  const char *cache_dir;  /* the disk cache's directory; NULL: not used */
  const char *source;     /* where the kernel was defined, for plugins
                          ** ("file.lua"); NULL: "" */
  int line;               /* the line it was defined at, or 0 */
  gj_plugset *plugins;    /* the plugins that apply, in order (the compile
                          ** writes its per-compile fields); NULL: none */
  /* A derivative (src/gj_ad.h): GJ_AD_FORWARD or GJ_AD_REVERSE, or 0 for
  ** the kernel itself.  shadow[j] is '1' when types[j] is the shadow of
  ** types[j-1], '2' for reverse mode's tape (the last): the kernel is
  ** typed from the other arguments, and the derivative takes them all in
  ** this order. */
  int derivative;
  char shadow[GJ_MAXPARAMS + 1];
  /* what to produce: a loaded kernel and/or text dumps */
  int want_kernel;
  int want_llvm;          /* optimized IR text */
  int want_asm;           /* target assembly text */
} gj_compile_opts;

/* The stages of a compile that are timed (GPUJIT_VERBOSE, gpu.on_compile):
** gj_stage_names[i] names stage i.  link: intrinsics, libraries, the
** target's entry point and the first verify; finish: the target's
** finish_module and the verify after it (cpu: the split of the x loop, the
** work-item vectorizer, the AoS rewrite), 0 for a target without one. */
enum {
  GJ_ST_JOB, GJ_ST_FRONTEND, GJ_ST_CODEGEN, GJ_ST_CACHE, GJ_ST_LINK,
  GJ_ST_FINISH, GJ_ST_OPTIMIZE, GJ_ST_EMIT, GJ_ST_LOAD, GJ_ST_STORE,
  GJ_ST__MAX
};
extern const char *const gj_stage_names[GJ_ST__MAX];

/* What the disk cache did for a compile. */
enum {
  GJ_CACHE_OFF,           /* not used (no directory, or a text dump asked) */
  GJ_CACHE_HIT,           /* loaded from the cache: nothing compiled */
  GJ_CACHE_MISS,          /* compiled; storing it failed */
  GJ_CACHE_WRITTEN        /* compiled and stored */
};

typedef struct gj_compile_out {
  gj_kernel *kernel;      /* when want_kernel */
  char *llvm;             /* malloc'ed text, when asked */
  char *asm_text;
  double ms[GJ_ST__MAX];  /* milliseconds spent in each stage */
  int cache;              /* GJ_CACHE_* */
  char note[160];         /* the target's finish_module's line, or "" */
} gj_compile_out;

/* The job the kernel would be compiled with: the backend's, after the
** plugins' job hooks (gpu.job).  0, or -1 with err set. */
int gj_pipeline_job(gj_ctx *ctx, const gj_compile_opts *o, gj_job *job,
                    gj_err *err);

/* Compile the kernel src->kernel of source src, which the compile takes
** over: src is closed before it returns, whatever it returns (NULL: memory
** ran out, reported as an error).  0, or -1 with err set. */
int gj_pipeline_compile(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                        gj_compile_out *out, gj_err *err);

/* A compile in two halves, for compiling in the background (gj_bg.h).
** gj_pipeline_front runs stages 1-3 (job, frontend and typer, codegen, the
** plugins' ir hooks and keys): every question to the source is asked there
** (codegen types instructions again, so it asks too), and src is closed
** before it returns; so it runs on the thread that owns the frontend (a
** lua_State's).  It leaves the LLVM module, in an LLVM context of its own,
** in *mid.  gj_pipeline_back runs stages 4-11 (disk cache, link, wrap,
** verify, optimize, emit, load, store) on *mid alone, no source and no
** Lua: another thread may run it, one back half of a context at a time
** (ctx->compile_mu), and it frees mid.  o must stay unchanged and alive
** until then.  The back half calls the plugins' optimize, optimized and
** emit hooks: a frontend's plugin (Lua) allows only the owning thread.
** Each returns 0, or -1 with err set (front: *mid NULL). */
typedef struct gj_pmid gj_pmid;
int gj_pipeline_front(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                      gj_compile_out *out, gj_pmid **mid, gj_err *err);
int gj_pipeline_back(gj_pmid *mid, gj_compile_out *out, gj_err *err);
/* Where the back half counts what the disk cache did (default:
** &ctx->cache, which only the owning thread may write). */
void gj_pipeline_mid_stats(gj_pmid *mid, gj_cache_stats *stats);
/* Free a front half's result that will not go on (NULL: nothing). */
void gj_pipeline_mid_free(gj_pmid *mid);

struct gj_kernel {
  gj_ctx *ctx;
  const gj_backend *be;
  gj_bstate *bst;
  int bk, dev;
  gj_program *prog;
  gj_sig sig;
  gj_sites sites;         /* sig.faults: the bounds checks */
  double timeout;         /* sig.cancel: seconds a launch may run */
  char name[64];          /* for the timeout's message */
  gj_psites prints;       /* sig.prints: the print calls */
  gj_asites asserts;      /* sig.faults: the assert and error calls */
  gj_fault *rec;          /* sig.prints: the launch's record and print
                          ** area (gj_record_size), reused by launches */
};

/* Run k; a bounds-check fault becomes the error, and so does a launch of a
** kernel with a timeout that ran too long or got SIGINT (gj_watch.h).  0,
** or -1 with the message in k->ctx->err.  A kernel that prints leaves its
** records in k->rec (gj_kernel_prints), also when it fails. */
int gj_kernel_launch(gj_kernel *k, const gj_dims *dims, void *args);

/* 0 when every dimension of dims is in the range k's ids were typed for
** (docs/typing.md: below 2^51, 2^31 with an lnum parameter); else -1 with
** the message in k->ctx->err. */
int gj_kernel_check_dims(gj_kernel *k, const gj_dims *dims);

/* The print records of k's last launch (sig.prints; else NULL and 0s):
** the first *written records from the returned address (src/gj_backend.h,
** gj_print_rec), and how many did not fit. */
const void *gj_kernel_prints(const gj_kernel *k, uint64_t *written,
                             uint64_t *dropped);

void gj_kernel_free(gj_kernel *k);

#endif
