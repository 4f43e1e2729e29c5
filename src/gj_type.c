/*
** The type table, scalar kinds and the argument-block layout.
*/
#include <stdio.h>
#include <string.h>

#include "gj_type.h"

/* LP64, which the spellings below assume (gj_type.h). */
_Static_assert(sizeof(int) == 4 && sizeof(short) == 2 && sizeof(long) == 8 &&
               sizeof(long long) == 8 && sizeof(size_t) == 8 &&
               sizeof(ptrdiff_t) == 8 && sizeof(intptr_t) == 8,
               "gpujit's type names assume an LP64 host");

/* The facts of entry S, C type T: everything but the names comes from the
** compiler (sizeof, _Alignof) and from the enum's order (gj_type.h). */
#define TYPE_FACTS(S, T) \
  (S), sizeof(T), _Alignof(T), (S) == GJ_BOOL ? 1 : 8 * sizeof(T), \
  ((S) == GJ_BOOL ? GJ_TF_BOOL : 0) | (gj_scalar_isint(S) ? GJ_TF_INT : 0) | \
  (gj_scalar_isfloat(S) ? GJ_TF_FLOAT : 0) | \
  (gj_scalar_issigned(S) ? GJ_TF_SIGNED : 0) | \
  (gj_scalar_isint(S) && sizeof(T) == 8 ? GJ_TF_INT64 : 0)

const gj_typeinfo gj_types[GJ_SCALAR__MAX] = {
  { "bool", TYPE_FACTS(GJ_BOOL, _Bool), { "_Bool" } },
  { "int8_t", TYPE_FACTS(GJ_I8, int8_t), { "char", "signed char" } },
  { "uint8_t", TYPE_FACTS(GJ_U8, uint8_t), { "unsigned char" } },
  { "int16_t", TYPE_FACTS(GJ_I16, int16_t),
    { "short", "short int", "signed short" } },
  { "uint16_t", TYPE_FACTS(GJ_U16, uint16_t),
    { "unsigned short", "unsigned short int" } },
  { "int32_t", TYPE_FACTS(GJ_I32, int32_t), { "int", "signed", "signed int" } },
  { "uint32_t", TYPE_FACTS(GJ_U32, uint32_t), { "unsigned int", "unsigned" } },
  { "int64_t", TYPE_FACTS(GJ_I64, int64_t),
    { "long", "long int", "signed long", "long long", "long long int",
      "ssize_t", "ptrdiff_t", "intptr_t" } },
  { "uint64_t", TYPE_FACTS(GJ_U64, uint64_t),
    { "unsigned long", "unsigned long int", "unsigned long long",
      "unsigned long long int", "size_t", "uintptr_t" } },
  { "float", TYPE_FACTS(GJ_F32, float), { NULL } },
  { "double", TYPE_FACTS(GJ_F64, double), { NULL } },
};

#undef TYPE_FACTS

const char *gj_scalar_name(gj_scalar s)
{
  return (unsigned)s < GJ_SCALAR__MAX ? gj_types[s].name : "?";
}

int gj_scalar_size(gj_scalar s)
{
  return (unsigned)s < GJ_SCALAR__MAX ? gj_types[s].size : 0;
}

int gj_scalar_bits(gj_scalar s)
{
  return (unsigned)s < GJ_SCALAR__MAX ? gj_types[s].bits : 0;
}

int gj_scalar_parse(const char *name, gj_scalar *out)
{
  int i, j;
  for (i = 0; i < GJ_SCALAR__MAX; i++) {
    const gj_typeinfo *t = &gj_types[i];
    if (strcmp(name, t->name) == 0) { *out = (gj_scalar)i; return 0; }
    for (j = 0; j < GJ_TYPE_NSPELL && t->spell[j]; j++)
      if (strcmp(name, t->spell[j]) == 0) { *out = (gj_scalar)i; return 0; }
  }
  return -1;
}

const gj_lnum_class gj_lnum_classes[GJ_LNUM__MAX] = {
  { NULL, 0, 0 },
  { "lua_int", -2147483648.0, 2147483647.0 },
  { "lua_pos20", 1.0, 1048576.0 },
  { "lua_pos31", 1048577.0, 2147483647.0 },
  { "lua_zero", 0.0, 0.0 },
  { "lua_neg20", -1048576.0, -1.0 },
  { "lua_neg31", -2147483648.0, -1048577.0 },
};

gj_lnum gj_lnum_parse(const char *name)
{
  int i;
  for (i = 1; i < GJ_LNUM__MAX; i++)
    if (strcmp(name, gj_lnum_classes[i].name) == 0) return (gj_lnum)i;
  return GJ_LNUM_NONE;
}

gj_lnum gj_lnum_of(double lo, double hi)
{
  int i;
  for (i = 1; i < GJ_LNUM__MAX; i++)
    if (gj_lnum_classes[i].lo == lo && gj_lnum_classes[i].hi == hi) return (gj_lnum)i;
  return GJ_LNUM_NONE;
}

void gj_sig_layout(gj_sig *sig)
{
  uint32_t off = 0;
  int i;
  for (i = 0; i < sig->nparams; i++) {
    gj_param *p = &sig->params[i];
    uint32_t align;
    if (p->is_array) {
      p->size = 16;
      align = 8;
    } else {
      p->size = (uint32_t)gj_scalar_size((gj_scalar)p->elem);
      align = p->size;
    }
    off = (off + align - 1) & ~(align - 1);
    p->offset = off;
    off += p->size;
  }
  sig->argsize = (off + 7u) & ~7u;
}

const char *gj_dims_str(char *buf, size_t size, const int64_t *v, int n)
{
  size_t off = 0;
  int i;
  buf[0] = '\0';
  for (i = 0; i < n && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? "x" : "",
                            (long long)v[i]);
  return buf;
}
