/*
** Work-group shapes of GPU launches (dims.h).
*/
#include "dims.h"

static void default_group(const gj_dims *dm, int barrier, int64_t budget,
                          int64_t group[3])
{
  int i;
  for (i = 0; i < 3; i++) {
    int64_t n = i < dm->ndim ? dm->global[i] : 1, g = 1;
    if (barrier) {
      for (g = n < budget ? n : budget; g > 1 && n % g != 0; g--) ;
    } else {
      while (g < n && g * 2 <= budget) g *= 2;
    }
    if (g < 1) g = 1;
    group[i] = g;
    budget /= g;
  }
}

int gj_dims_group(const gj_dims *dm, int barrier, const gj_group_limits *lim,
                  int64_t group[3], int64_t *items, gj_err *err)
{
  char b1[96], b2[96];
  int64_t gsize = 1;
  int i, nd = dm->ndim;
  *items = 1;
  if (nd < 1 || nd > 3)
    return gj_err_set(err, "launch: ndim must be 1, 2 or 3 (got %d)", nd);
  for (i = 0; i < nd; i++) {
    if (dm->global[i] < 0)
      return gj_err_set(err, "launch: global size %s has a negative "
                        "dimension", gj_dims_str(b1, sizeof(b1), dm->global, nd));
    if (__builtin_mul_overflow(*items, dm->global[i], items))
      return gj_err_set(err, "launch: global size %s is too large",
                        gj_dims_str(b1, sizeof(b1), dm->global, nd));
  }
  if (dm->group[0] == 0) {
    int64_t budget = lim->default_group;
    if (budget > lim->max_group) budget = lim->max_group;
    default_group(dm, barrier, budget, group);
    return 0;
  }
  for (i = 0; i < 3; i++) group[i] = i < nd ? dm->group[i] : 1;
  for (i = 0; i < nd; i++) {
    if (group[i] <= 0)
      return gj_err_set(err, "launch: work-group size %s must be positive "
                        "in every dimension",
                        gj_dims_str(b1, sizeof(b1), dm->group, nd));
    if (group[i] > lim->max_dim[i] || (gsize *= group[i]) > lim->max_group)
      return gj_err_set(err, "launch: work-group size %s exceeds the device "
                        "maximum (%s, %lld work items in all for this "
                        "kernel)", gj_dims_str(b1, sizeof(b1), dm->group, nd),
                        gj_dims_str(b2, sizeof(b2), lim->max_dim, nd),
                        (long long)lim->max_group);
  }
  return 0;
}
