/*
** Plugins in the pipeline (gj_plugin.h, gpujit_plugin.h).
**
** A C plugin's hooks are called directly.  A frontend's plugin (a Lua
** plugin: gj_plugin_lua.c) is called through its gj_plugops and sees text:
** the module printed as LLVM IR (what it returns is parsed back into the
** same context), the pass pipeline and the artifact as strings.  Either
** kind fails the compile with a message naming the kernel, the plugin and
** the stage, which this file words around what the hook said.
*/
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/IRReader.h>

#include "gj_job_int.h"
#include "gj_plugin.h"

static const char *const stage_names[] = { "job", "frontend", "ir",
                                           "optimize", "optimized", "emit",
                                           "key" };

/* --- C plugins ------------------------------------------------------------ */

static int valid_name(const char *s)
{
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

int gj_cplugin_load(gj_cplugin *cp, const char *path, gj_err *err)
{
  void *dl;
  gpujit_plugin_init_fn init;
  char msg[512] = "";
  int i;
  memset(cp, 0, sizeof(*cp));
  if (strlen(path) >= sizeof(cp->path))
    return gj_err_set(err, "plugin path too long: %s", path);
  snprintf(cp->path, sizeof(cp->path), "%s", path);
  /* the identity: a rebuilt plugin never finds what the old one left in
  ** the compile cache */
  if (gj_cache_file_hex(path, cp->identity))
    return gj_err_set(err, "cannot read plugin %s", path);
  /* Never closed: a plugin may have registered things with LLVM that
  ** must outlive it (see gj_cplugin_close). */
  dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return gj_err_set(err, "cannot load plugin %s: %s", path, dlerror());
  *(void **)&init = dlsym(dl, GPUJIT_PLUGIN_INIT);
  if (!init)
    return gj_err_set(err, "plugin %s has no %s function", path,
                      GPUJIT_PLUGIN_INIT);
  cp->p.abi = GPUJIT_PLUGIN_ABI;
  if (init(&cp->p, msg, sizeof(msg)) != 0)
    return gj_err_set(err, "plugin %s failed to initialize: %s", path,
                      msg[0] ? msg : "(no message)");
  if (cp->p.abi != GPUJIT_PLUGIN_ABI)
    return gj_err_set(err, "plugin %s changed the ABI version", path);
  if (!valid_name(cp->p.name))
    return gj_err_set(err, "plugin %s: its name must be letters, digits "
                      "and _", path);
  if (!cp->p.version) cp->p.version = "";
  if (cp->p.nbuffers < 0 || cp->p.nbuffers > GPUJIT_PLUGIN_MAXBUF)
    return gj_err_set(err, "plugin %s: at most %d buffers", cp->p.name,
                      GPUJIT_PLUGIN_MAXBUF);
  for (i = 0; i < cp->p.nbuffers; i++) {
    const gpujit_plugin_buffer *b = &cp->p.buffers[i];
    gj_scalar s;
    if (!valid_name(b->name) || !b->elem || gj_scalar_parse(b->elem, &s) ||
        s == GJ_BOOL || b->per_item < 0 || b->fixed < 0 ||
        b->per_item + b->fixed == 0)
      return gj_err_set(err, "plugin %s: buffer %d is malformed (name, a "
                        "numeric elem, per_item/fixed >= 0, not both 0)",
                        cp->p.name, i + 1);
  }
  return 0;
}

void gj_cplugin_close(gj_cplugin *cp)
{
  if (cp->p.close) cp->p.close(cp->p.ud);
  cp->p.close = NULL;
}

/* --- the plugins of one compile ------------------------------------------ */

void gj_plugset_init(gj_plugset *ps)
{
  memset(ps, 0, sizeof(*ps));
  ps->buf_base = -1;
  ps->emit_by = -1;
}

void gj_plugset_buffers(const gj_plugset *ps, gj_bufname *text,
                        const char **names, gj_scalar *elems)
{
  int i, j, k = 0;
  for (i = 0; i < ps->n; i++)
    for (j = 0; j < ps->p[i].nbuf; j++, k++) {
      snprintf(text[k], sizeof(text[k]), "%s.%s", ps->p[i].name,
               ps->p[i].bufname[j]);
      names[k] = text[k];
      elems[k] = ps->p[i].bufelem[j];
    }
}

void gj_plugset_key(const gj_plugset *ps, gj_cache_hasher *h)
{
  int i;
  for (i = 0; i < ps->n; i++) {
    gj_cache_key_str(h, ps->p[i].name);
    gj_cache_key_str(h, ps->p[i].identity);
    gj_cache_key_add(h, ps->p[i].key.b, ps->p[i].has_key ? GJ_CACHE_KEYLEN : 0);
  }
}

/* --- running hooks ------------------------------------------------------- */

static int hook_error(const gpujit_kernel_desc *kd, const struct gj_plugref *r,
                      gj_stage st, const char *msg, gj_err *err)
{
  char m[GJ_ERR_MSGMAX];   /* msg may be err's own */
  snprintf(m, sizeof(m), "%s", msg && *msg ? msg : "(no message)");
  return gj_err_set(err, "kernel %s: plugin %s, stage %s: %s", kd->name,
                    r->name, stage_names[st], m);
}

static void set_buffer_param(const gj_plugset *ps, int i,
                             gpujit_kernel_desc *kd)
{
  int j, k = ps->buf_base;
  for (j = 0; j < i; j++) k += 2 * ps->p[j].nbuf;
  kd->buffer_param = ps->buf_base >= 0 && ps->p[i].nbuf ? k : -1;
}

static void hash_key(struct gj_plugref *r, const char *s, size_t n)
{
  gj_cache_hasher h;
  gj_cache_key_begin(&h);
  gj_cache_key_add(&h, s, n);
  gj_cache_key_end(&h, &r->key);
  r->has_key = 1;
}

int gj_plugset_keys(gj_plugset *ps, gpujit_kernel_desc *kd, gj_err *err)
{
  int i;
  char msg[512], buf[4096];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *r = &ps->p[i];
    r->has_key = 0;
    set_buffer_param(ps, i, kd);
    if (r->c) {
      if (!r->c->p.key) continue;
      msg[0] = buf[0] = '\0';
      if (r->c->p.key(r->c->p.ud, kd, buf, sizeof(buf), msg, sizeof(msg)))
        return hook_error(kd, r, GJ_STAGE_KEY, msg, err);
      buf[sizeof(buf) - 1] = '\0';
      hash_key(r, buf, strlen(buf));
    } else {
      const char *s;
      size_t n;
      int k = r->ops->key(r->ud, r->slot, kd, &s, &n, err);
      if (k < 0) return hook_error(kd, r, GJ_STAGE_KEY, err->msg, err);
      if (k == 0) continue;
      hash_key(r, s, n);
      r->ops->done(r->ud);
    }
  }
  return 0;
}

int gj_plugset_job(gj_plugset *ps, gpujit_kernel_desc *kd, gj_job *job,
                   gj_err *err)
{
  int i;
  char msg[512];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *r = &ps->p[i];
    set_buffer_param(ps, i, kd);
    kd->job = job;
    if (r->c) {
      gj_job before = *job;
      const char *f;
      msg[0] = '\0';
      if (r->c->p.job && r->c->p.job(r->c->p.ud, kd, job, msg, sizeof(msg)))
        return hook_error(kd, r, GJ_STAGE_JOB, msg, err);
      /* what GJ_JOBDEF marks RO is the backend's: refused, as from Lua */
      if ((f = gj_job_ro_changed(&before, job))) {
        snprintf(msg, sizeof(msg), "job.%s cannot be changed (it is what the "
                 "backend's entry point and intrinsics assume)", f);
        return hook_error(kd, r, GJ_STAGE_JOB, msg, err);
      }
    } else if (r->ops->job(r->ud, r->slot, kd, job, err)) {
      return hook_error(kd, r, GJ_STAGE_JOB, err->msg, err);
    }
  }
  return 0;
}

int gj_plugset_frontend(gj_plugset *ps, gpujit_kernel_desc *kd, gj_err *err)
{
  int i;
  char msg[512];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *r = &ps->p[i];
    set_buffer_param(ps, i, kd);
    if (r->c) {
      msg[0] = '\0';
      if (r->c->p.frontend && r->c->p.frontend(r->c->p.ud, kd, msg,
                                               sizeof(msg)))
        return hook_error(kd, r, GJ_STAGE_FRONTEND, msg, err);
    } else if (r->ops->frontend(r->ud, r->slot, kd, err)) {
      return hook_error(kd, r, GJ_STAGE_FRONTEND, err->msg, err);
    }
  }
  return 0;
}

/* IR text from a Lua hook into a module of m's context, replacing m. */
static int reparse(LLVMModuleRef *m, const char *text, size_t len,
                   gj_err *err)
{
  LLVMContextRef C = LLVMGetModuleContext(*m);
  LLVMMemoryBufferRef buf =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(text, len, "plugin");
  LLVMModuleRef nm;
  char *msg = NULL;
  size_t idlen;
  const char *id = LLVMGetModuleIdentifier(*m, &idlen);
  if (LLVMParseIRInContext(C, buf, &nm, &msg)) {  /* takes buf */
    gj_err_set(err, "the IR it returned does not parse: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMSetModuleIdentifier(nm, id, idlen);
  LLVMDisposeModule(*m);
  *m = nm;
  return 0;
}

/* Plugin i's text hook for st (gj_plugops.text): 1 with the text it
** returned in *out and *outlen (until done()); 0: none; -1: it failed, with
** the message worded. */
static int text_hook(gj_plugset *ps, int i, gj_stage st,
                     const gpujit_kernel_desc *kd, const char *in,
                     size_t inlen, const char *want, const char **out,
                     size_t *outlen, gj_err *err)
{
  struct gj_plugref *r = &ps->p[i];
  int k = r->ops->text(r->ud, r->slot, st, kd, in, inlen, want, out, outlen,
                       err);
  if (k < 0) return hook_error(kd, r, st, err->msg, err);
  return k;
}

int gj_plugset_module(gj_plugset *ps, gj_stage st, gpujit_kernel_desc *kd,
                      LLVMModuleRef *m, gj_err *err)
{
  int i, r;
  char msg[512];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *p = &ps->p[i];
    set_buffer_param(ps, i, kd);
    if (p->c) {
      int (*h)(void *, const gpujit_kernel_desc *, LLVMModuleRef, char *,
               size_t) = st == GJ_STAGE_IR ? p->c->p.ir : p->c->p.optimized;
      msg[0] = '\0';
      if (h && h(p->c->p.ud, kd, *m, msg, sizeof(msg)))
        return hook_error(kd, p, st, msg, err);
    } else {
      const char *text;
      size_t len;
      char *ir = LLVMPrintModuleToString(*m);
      r = text_hook(ps, i, st, kd, ir, strlen(ir), "IR text", &text, &len, err);
      LLVMDisposeMessage(ir);
      if (r < 0) return -1;
      if (r == 0) continue;
      r = reparse(m, text, len, err);
      p->ops->done(p->ud);
      if (r) return hook_error(kd, p, st, err->msg, err);
    }
  }
  return 0;
}

int gj_plugset_passes(gj_plugset *ps, gpujit_kernel_desc *kd, char *passes,
                      size_t cap, gj_err *err)
{
  int i, r;
  char msg[512];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *p = &ps->p[i];
    set_buffer_param(ps, i, kd);
    if (p->c) {
      msg[0] = '\0';
      if (p->c->p.optimize &&
          p->c->p.optimize(p->c->p.ud, kd, passes, cap, msg, sizeof(msg)))
        return hook_error(kd, p, GJ_STAGE_OPTIMIZE, msg, err);
      passes[cap - 1] = '\0';
    } else {
      const char *text;
      size_t len;
      r = text_hook(ps, i, GJ_STAGE_OPTIMIZE, kd, passes, strlen(passes),
                    "the pass pipeline text", &text, &len, err);
      if (r < 0) return -1;
      if (r == 0) continue;
      if (len < cap) {
        memcpy(passes, text, len);
        passes[len] = '\0';
      }
      p->ops->done(p->ud);
      if (len >= cap)
        return hook_error(kd, p, GJ_STAGE_OPTIMIZE,
                          "the pass pipeline it returned is too long", err);
    }
  }
  return 0;
}

int gj_plugset_emit(gj_plugset *ps, gpujit_kernel_desc *kd, char **art,
                    size_t *len, gj_err *err)
{
  int i, r;
  char msg[512];
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *p = &ps->p[i];
    set_buffer_param(ps, i, kd);
    if (p->c) {
      msg[0] = '\0';
      if (!p->c->p.emit) continue;
      if (p->c->p.emit(p->c->p.ud, kd, art, len, msg, sizeof(msg)))
        return hook_error(kd, p, GJ_STAGE_EMIT, msg, err);
    } else {
      const char *text;
      size_t n;
      char *c;
      r = text_hook(ps, i, GJ_STAGE_EMIT, kd, *art, *len,
                    "the artifact as a string", &text, &n, err);
      if (r < 0) return -1;
      if (r == 0) continue;
      c = malloc(n + 1);     /* with a NUL: PTX is read as a C string */
      if (c) {
        memcpy(c, text, n);
        c[n] = '\0';
        free(*art);
        *art = c;
        *len = n;
      }
      p->ops->done(p->ud);
      if (!c) return gj_err_set(err, "out of memory");
    }
    ps->emit_by = i;
    if (!*art || *len == 0)
      return hook_error(kd, p, GJ_STAGE_EMIT, "the artifact it returned is "
                        "empty", err);
  }
  return 0;
}

int gj_plugset_emit_blame(const gj_plugset *ps, const gpujit_kernel_desc *kd,
                          gj_err *err)
{
  char m[GJ_ERR_MSGMAX];
  if (ps->emit_by < 0) return -1;
  snprintf(m, sizeof(m), "the artifact it returned does not load: %.3900s",
           err->msg);
  return hook_error(kd, &ps->p[ps->emit_by], GJ_STAGE_EMIT, m, err);
}
