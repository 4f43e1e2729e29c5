/*
** Intrinsics: the Lua functions a kernel may call that the compiler
** replaces with code (gpu.*, math.*, bit.*, and Lua's print, assert and error).  The Lua side registers the
** gpu.* functions by identity (core.intrinsic); the core registers math.*
** and bit.* itself; `type` is known by its value while typing.  Names are "global_id", "math.sqrt", "bit.band", ...
*/
#ifndef GJ_INTR_H
#define GJ_INTR_H

#define GJ_INTRDEF(_) \
  _(GLOBAL_ID, "global_id") _(LOCAL_ID, "local_id") _(GROUP_ID, "group_id") \
  _(GROUP_SIZE, "group_size") _(NUM_GROUPS, "num_groups") \
  _(GLOBAL_SIZE, "global_size") \
  _(BARRIER, "barrier") _(SHARED, "shared") _(LOCAL_ARRAY, "local_array") \
  _(ATOMIC_ADD, "atomic_add") _(ATOMIC_SUB, "atomic_sub") \
  _(ATOMIC_MIN, "atomic_min") _(ATOMIC_MAX, "atomic_max") \
  _(ATOMIC_AND, "atomic_and") _(ATOMIC_OR, "atomic_or") \
  _(ATOMIC_XOR, "atomic_xor") _(ATOMIC_XCHG, "atomic_xchg") \
  _(ATOMIC_CAS, "atomic_cas") \
  _(M_ABS, "math.abs") _(M_CEIL, "math.ceil") _(M_FLOOR, "math.floor") \
  _(M_SQRT, "math.sqrt") _(M_EXP, "math.exp") _(M_LOG, "math.log") \
  _(M_LOG10, "math.log10") _(M_SIN, "math.sin") _(M_COS, "math.cos") \
  _(M_TAN, "math.tan") _(M_ASIN, "math.asin") _(M_ACOS, "math.acos") \
  _(M_ATAN, "math.atan") _(M_ATAN2, "math.atan2") _(M_SINH, "math.sinh") \
  _(M_COSH, "math.cosh") _(M_TANH, "math.tanh") _(M_POW, "math.pow") \
  _(M_FMOD, "math.fmod") _(M_MIN, "math.min") _(M_MAX, "math.max") \
  _(M_MODF, "math.modf") \
  _(B_BAND, "bit.band") _(B_BOR, "bit.bor") _(B_BXOR, "bit.bxor") \
  _(B_BNOT, "bit.bnot") _(B_LSHIFT, "bit.lshift") _(B_RSHIFT, "bit.rshift") \
  _(B_ARSHIFT, "bit.arshift") _(B_ROL, "bit.rol") _(B_ROR, "bit.ror") \
  _(B_TOBIT, "bit.tobit") \
  _(PRINT, "print") _(TYPE, "type") \
  _(DERIVATIVE, "derivative") _(GRADIENT, "gradient") \
  _(ASSERT, "assert") _(ERROR, "error")

typedef enum gj_intr {
#define GJ_INTRENUM(id, name) GJ_I_##id,
  GJ_INTRDEF(GJ_INTRENUM)
#undef GJ_INTRENUM
  GJ_I__MAX
} gj_intr;

extern const char *const gj_intr_names[GJ_I__MAX];

/* -1 when the name is no intrinsic. */
int gj_intr_lookup(const char *name);

#endif
