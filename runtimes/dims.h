/*
** The work-group shape of a launch, for the GPU backends: the launch's
** sizes checked against a device's limits, and the group chosen when the
** launch gives none.
*/
#ifndef GJ_DIMS_H
#define GJ_DIMS_H

#include <stdint.h>

#include "gj_err.h"
#include "gj_type.h"

/* Limits of one device and kernel. */
typedef struct gj_group_limits {
  int64_t max_dim[3];      /* per dimension */
  int64_t max_group;       /* work items in one group, for this kernel */
  int64_t default_group;   /* budget of a group the backend chooses */
  int64_t max_global;      /* work items per dimension (0: no limit) */
  int64_t max_groups;      /* work groups in all dimensions together
                           ** (0: no limit) */
} gj_group_limits;

/* Check dm (ndim 1..3, sizes not negative, a product that fits) and fill
** group[3] (1 beyond ndim) and *items (the global size's product; 0: the
** launch has nothing to run).  A given group must be positive and within
** lim.  Without one: with barriers (the group must divide the global
** size) per dimension the largest divisor within what is left of the
** budget; without, powers of two filled x first (the global size is then
** rounded up to a multiple, and the entry returns at once in the items
** beyond; when that makes more groups than lim allows, the group grows
** within lim).  Then the global size must be within max_global in every
** dimension, and the groups (the global size rounded up to the group)
** within max_groups.  0, or -1 with err naming the limit and the value. */
int gj_dims_group(const gj_dims *dm, int barrier, const gj_group_limits *lim,
                  int64_t group[3], int64_t *items, gj_err *err);

#endif
