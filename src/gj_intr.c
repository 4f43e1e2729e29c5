/*
** Intrinsic names (see gj_intr.h).
*/
#include "gj_intr.h"

#include <string.h>

const char *const gj_intr_names[GJ_I__MAX] = {
#define GJ_INTRNAME(id, name) name,
  GJ_INTRDEF(GJ_INTRNAME)
#undef GJ_INTRNAME
};

int gj_intr_lookup(const char *name)
{
  int i;
  for (i = 0; i < GJ_I__MAX; i++)
    if (strcmp(name, gj_intr_names[i]) == 0) return i;
  return -1;
}
