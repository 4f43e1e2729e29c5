/*
** Check and assert sites, and the message of a launch's fault.
*/
#include "gj_fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gj_sites_add(gj_sites *s, const char *chunk, int line, const char *what,
                 int base, gj_err *err)
{
  gj_site *site;
  if (s->n == s->max) {
    int m = s->max ? s->max * 2 : 16;
    gj_site *v = realloc(s->v, (size_t)m * sizeof(gj_site));
    if (!v) return gj_err_set(err, "out of memory");
    s->v = v;
    s->max = m;
  }
  site = &s->v[s->n];
  snprintf(site->where, sizeof(site->where), "%s:%d", chunk, line);
  snprintf(site->what, sizeof(site->what), "%s", what);
  site->base = base;
  return s->n++;
}

void gj_sites_free(gj_sites *s)
{
  free(s->v);
  s->v = NULL;
  s->n = s->max = 0;
}

int gj_fault_error(const gj_sites *s, const gj_fault *f, gj_err *err)
{
  const gj_site *site;
  long long len = (long long)f->length;
  if (f->site < 1 || f->site > s->n)   /* not from our code: say what we have */
    return gj_err_set(err, "line %d: array index %lld out of bounds (length %lld, "
                      "argument %d)", (int)f->line, (long long)f->index, len,
                      (int)f->arg);
  site = &s->v[f->site - 1];
  if (len <= 0)   /* empty, or -1: an FFI pointer (no length) */
    return gj_err_set(err, "%s: index %lld is out of bounds for %s (length %lld)", site->where, (long long)f->index, site->what, len);
  return gj_err_set(err, "%s: index %lld is out of bounds for %s (length %lld, "
                    "valid indices %d..%lld)", site->where,
                    (long long)f->index, site->what, len, site->base,
                    len - 1 + site->base);
}

int gj_asites_add(gj_asites *s, const char *chunk, int line, const char *text,
                  gj_err *err)
{
  gj_asite *site;
  if (s->n >= GJ_ASITES_MAX)
    return gj_err_set(err, "%s:%d: more than %d assert and error calls in one "
                      "kernel", chunk, line, GJ_ASITES_MAX);
  if (s->n == s->max) {
    int m = s->max ? s->max * 2 : 8;
    gj_asite *v = realloc(s->v, (size_t)m * sizeof(gj_asite));
    if (!v) return gj_err_set(err, "out of memory");
    s->v = v;
    s->max = m;
  }
  site = &s->v[s->n];
  site->text = strdup(text);
  if (!site->text) return gj_err_set(err, "out of memory");
  snprintf(site->where, sizeof(site->where), "%s:%d", chunk, line);
  return s->n++;
}

void gj_asites_free(gj_asites *s)
{
  int i;
  for (i = 0; i < s->n; i++) free(s->v[i].text);
  free(s->v);
  s->v = NULL;
  s->n = s->max = 0;
}

int gj_launch_fault(const gj_sites *s, const gj_asites *as, const gj_fault *f,
                    gj_err *err)
{
  uint64_t w;
  unsigned site;
  if (f->site) return gj_fault_error(s, f, err);
  if (!f->fail) return 0;
  w = ~f->fail;
  site = (unsigned)(w & 0xffff);
  if (!as || (int)site >= as->n)   /* not from our code */
    return gj_err_set(err, "assertion failed (site %u, work item %llu)", site,
                      (unsigned long long)(w >> 16));
  return gj_err_set(err, "%s: %s (work item %llu)", as->v[site].where,
                    as->v[site].text, (unsigned long long)(w >> 16));
}
