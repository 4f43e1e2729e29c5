/*
** print in kernels: the site table (gj_print.h).
*/
#include "gj_print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gj_psites_add(gj_psites *s, const char *chunk, int line, int nargs,
                  const char *kinds, const char *const *strs, gj_err *err)
{
  gj_psite *p;
  int j;
  if (nargs > GJ_PRINT_MAXARGS)
    return gj_err_set(err, "%s:%d: print with more than %d arguments", chunk,
                      line, GJ_PRINT_MAXARGS);
  if (s->n == s->max) {
    int max = s->max ? 2 * s->max : 8;
    gj_psite *v = realloc(s->v, (size_t)max * sizeof(*v));
    if (!v) return gj_err_set(err, "out of memory");
    s->v = v;
    s->max = max;
  }
  p = &s->v[s->n];
  memset(p, 0, sizeof(*p));
  snprintf(p->where, sizeof(p->where), "%s:%d", chunk, line);
  p->nargs = nargs;
  for (j = 0; j < nargs; j++) {
    p->kinds[j] = kinds[j];
    if (kinds[j] == GJ_PK_STR) {
      size_t n = strlen(strs[j]) + 1;
      p->strs[j] = malloc(n);
      if (!p->strs[j]) {
        for (j--; j >= 0; j--) free(p->strs[j]);
        return gj_err_set(err, "out of memory");
      }
      memcpy(p->strs[j], strs[j], n);
    } else if (kinds[j] != GJ_PK_NIL) {
      p->nslots++;
    }
  }
  return s->n++;
}

void gj_psites_free(gj_psites *s)
{
  int i, j;
  for (i = 0; i < s->n; i++)
    for (j = 0; j < s->v[i].nargs; j++) free(s->v[i].strs[j]);
  free(s->v);
  s->v = NULL;
  s->n = s->max = 0;
}
