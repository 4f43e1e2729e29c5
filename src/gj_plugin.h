/*
** Plugins in the pipeline (gpujit_plugin.h is the public side): loading C
** plugins, and running the hooks of the plugins that apply to one compile
** at each stage: a C plugin's through its gpujit_plugin table, a
** frontend's plugin's (a Lua plugin, gj_plugin_lua.c) through gj_plugops.
** The frontend reads the set (gj_plugin_lua.c for Lua); nothing here needs a
** Lua stack.
*/
#ifndef GJ_PLUGIN_H
#define GJ_PLUGIN_H

#include "gj_cache.h"
#include "gj_err.h"
#include "gj_type.h"
#include "gpujit_plugin.h"

#define GJ_MAXPLUGINS 8

/* A loaded C plugin (core.load_plugin). */
typedef struct gj_cplugin {
  gpujit_plugin p;
  char path[512];
  char identity[65];     /* hex BLAKE3 of the shared object */
} gj_cplugin;

int gj_cplugin_load(gj_cplugin *cp, const char *path, gj_err *err);
void gj_cplugin_close(gj_cplugin *cp);

typedef enum gj_stage {
  GJ_STAGE_JOB, GJ_STAGE_FRONTEND, GJ_STAGE_IR, GJ_STAGE_OPTIMIZE,
  GJ_STAGE_OPTIMIZED, GJ_STAGE_EMIT,
  GJ_STAGE_KEY            /* the plugin's cache key contribution (not a
                          ** pipeline stage: named in errors) */
} gj_stage;

/* The hooks of a plugin that lives in the frontend (a Lua plugin).  ud and
** slot are the plugin's (gj_plugref).  Each returns -1 with the hook's own
** message in err (a Lua error, "must return ... or nil"), which the caller
** words as "kernel K: plugin P, stage S: <message>".  A text or key a call
** returns stays valid until done(ud), which the caller calls before the
** next call. */
typedef struct gj_plugops {
  /* Its cache key: 1 with the bytes in *s, *n; 0: none. */
  int (*key)(void *ud, int slot, const gpujit_kernel_desc *kd,
             const char **s, size_t *n, gj_err *err);
  /* The job hook, which may change job (kd->job is job); 0 without one. */
  int (*job)(void *ud, int slot, const gpujit_kernel_desc *kd, gj_job *job,
             gj_err *err);
  int (*frontend)(void *ud, int slot, const gpujit_kernel_desc *kd,
                  gj_err *err);
  /* The hook of a text stage (ir, optimized: IR text; optimize: the pass
  ** pipeline; emit: the artifact) given in/inlen: 1 with the text it
  ** returned in *out, *outlen; 0: no hook, or it returned nil.  want says
  ** what it must return, for the message when it returns something else. */
  int (*text)(void *ud, int slot, gj_stage st, const gpujit_kernel_desc *kd,
              const char *in, size_t inlen, const char *want,
              const char **out, size_t *outlen, gj_err *err);
  void (*done)(void *ud);
} gj_plugops;

/* The plugins that apply to one compile, in order.  Strings and ud are the
** reader's, valid while the set is used. */
typedef struct gj_plugset {
  int n;
  struct gj_plugref {
    gj_cplugin *c;       /* a C plugin, or NULL: */
    const gj_plugops *ops;   /* a frontend's plugin, its hooks */
    void *ud;
    int slot;
    const char *name;
    const char *identity;
    int nbuf;
    const char *bufname[GPUJIT_PLUGIN_MAXBUF];
    gj_scalar bufelem[GPUJIT_PLUGIN_MAXBUF];
    int has_key;         /* gj_plugset_keys found a key: its hash in key */
    gj_cache_key key;
  } p[GJ_MAXPLUGINS];
  int nbuf;              /* buffers of all of them together */
  int buf_base;          /* @gj_body's LLVM parameter index of the first
                         ** buffer (set once codegen has run), else -1 */
  int emit_by;           /* the last plugin whose emit hook gave the
                         ** artifact (gj_plugset_emit), else -1 */
} gj_plugset;

/* An empty set: no plugins.  A reader fills p[] and n, nbuf as the sum
** of the plugins' nbuf. */
void gj_plugset_init(gj_plugset *ps);

/* Each buffer, in order, as @gj_body's extra array parameters: its name
** "<plugin>.<buffer>" (written into text[k], pointed to by names[k]) and
** element type. */
typedef char gj_bufname[80];
void gj_plugset_buffers(const gj_plugset *ps, gj_bufname *text,
                        const char **names, gj_scalar *elems);

/* Each plugin's own key (C: its key callback; Lua: its `key` string, or
** the string its `key` function returns), hashed and kept in ps.  Called
** once per compile before gj_plugset_key; fails with the plugin's name. */
int gj_plugset_keys(gj_plugset *ps, gpujit_kernel_desc *kd, gj_err *err);

/* Hash every plugin's name, version, identity and key into h. */
void gj_plugset_key(const gj_plugset *ps, gj_cache_hasher *h);

/* The hooks of one stage, for every plugin in order.  kd is the kernel's
** description (its buffer_param is set per plugin here).  Each returns 0,
** or -1 with "kernel K: plugin P, stage S: <message>" in err. */
int gj_plugset_job(gj_plugset *ps, gpujit_kernel_desc *kd, gj_job *job,
                   gj_err *err);
int gj_plugset_frontend(gj_plugset *ps, gpujit_kernel_desc *kd, gj_err *err);
/* ir and optimized: a frontend's plugin may return new IR text, which
** replaces *m (in m's context). */
int gj_plugset_module(gj_plugset *ps, gj_stage st, gpujit_kernel_desc *kd,
                      LLVMModuleRef *m, gj_err *err);
int gj_plugset_passes(gj_plugset *ps, gpujit_kernel_desc *kd, char *passes,
                      size_t cap, gj_err *err);
/* emit: an artifact a hook leaves empty fails the compile there. */
int gj_plugset_emit(gj_plugset *ps, gpujit_kernel_desc *kd, char **art,
                    size_t *len, gj_err *err);
/* The backend could not load the artifact: when an emit hook gave it,
** prefix err with that plugin's "kernel K: plugin P, stage emit: ".
** Returns -1. */
int gj_plugset_emit_blame(const gj_plugset *ps, const gpujit_kernel_desc *kd,
                          gj_err *err);

#endif
