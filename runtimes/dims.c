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

/* The work groups of a launch: the global size rounded up to the group,
** all dimensions together (saturating: far above any limit). */
static int64_t count_groups(const gj_dims *dm, const int64_t group[3])
{
  int64_t n = 1;
  int i;
  for (i = 0; i < dm->ndim; i++) {
    int64_t g = (dm->global[i] + group[i] - 1) / group[i];
    if (__builtin_mul_overflow(n, g, &n)) return INT64_MAX;
  }
  return n;
}

/* A chosen group (no barrier: any size will do) doubled, x first, while
** the launch has more groups than lim allows and the group stays within
** lim. */
static void grow_group(const gj_dims *dm, const gj_group_limits *lim,
                       int64_t group[3])
{
  int i, grew = 1;
  while (lim->max_groups > 0 && grew &&
         count_groups(dm, group) > lim->max_groups) {
    grew = 0;
    for (i = 0; i < dm->ndim && !grew; i++) {
      int64_t total = group[0] * group[1] * group[2] * 2;
      if (group[i] < dm->global[i] && group[i] * 2 <= lim->max_dim[i] &&
          total <= lim->max_group) {
        group[i] *= 2;
        grew = 1;
      }
    }
  }
}

static int check_groups(const gj_dims *dm, const gj_group_limits *lim,
                        const int64_t group[3], gj_err *err)
{
  char b1[96], b2[96];
  int64_t n;
  if (lim->max_groups <= 0) return 0;
  n = count_groups(dm, group);
  if (n <= lim->max_groups) return 0;
  return gj_err_set(err, "launch: global size %s in groups of %s makes "
                    "%s%lld work groups, beyond the device's limit of %lld "
                    "work groups in a launch",
                    gj_dims_str(b1, sizeof(b1), dm->global, dm->ndim),
                    gj_dims_str(b2, sizeof(b2), group, dm->ndim),
                    n == INT64_MAX ? "more than " : "", (long long)n,
                    (long long)lim->max_groups);
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
  for (i = 0; i < nd; i++)
    if (lim->max_global > 0 && dm->global[i] > lim->max_global)
      return gj_err_set(err, "launch: global size %s is beyond the device's "
                        "limit of %lld work items per dimension",
                        gj_dims_str(b1, sizeof(b1), dm->global, nd),
                        (long long)lim->max_global);
  if (dm->group[0] == 0) {
    int64_t budget = lim->default_group;
    if (budget > lim->max_group) budget = lim->max_group;
    default_group(dm, barrier, budget, group);
    if (!barrier) grow_group(dm, lim, group);
    return check_groups(dm, lim, group, err);
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
  return check_groups(dm, lim, group, err);
}
