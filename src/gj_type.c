/*
** Scalar kinds and the argument-block layout.
*/
#include <stdio.h>
#include <string.h>

#include "gj_type.h"

static const char *const scalar_names[GJ_SCALAR__MAX] = {
  "bool", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
  "int64_t", "uint64_t", "float", "double"
};

static const uint8_t scalar_sizes[GJ_SCALAR__MAX] = {
  1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8
};

const char *gj_scalar_name(gj_scalar s)
{
  return (unsigned)s < GJ_SCALAR__MAX ? scalar_names[s] : "?";
}

int gj_scalar_size(gj_scalar s)
{
  return (unsigned)s < GJ_SCALAR__MAX ? scalar_sizes[s] : 0;
}

int gj_scalar_bits(gj_scalar s)
{
  return s == GJ_BOOL ? 1 : 8 * gj_scalar_size(s);
}

/* C spellings accepted besides the canonical names; int is 32 bits and
** long 64 bits, as on every LP64 host LuaJIT runs on. */
static const struct { const char *name; gj_scalar s; } scalar_aliases[] = {
  { "_Bool", GJ_BOOL },
  { "char", GJ_I8 }, { "signed char", GJ_I8 }, { "unsigned char", GJ_U8 },
  { "short", GJ_I16 }, { "unsigned short", GJ_U16 },
  { "int", GJ_I32 }, { "unsigned int", GJ_U32 }, { "unsigned", GJ_U32 },
  { "long", GJ_I64 }, { "unsigned long", GJ_U64 },
  { "long long", GJ_I64 }, { "unsigned long long", GJ_U64 },
  { "size_t", GJ_U64 }, { "ssize_t", GJ_I64 }, { "ptrdiff_t", GJ_I64 },
  { "intptr_t", GJ_I64 }, { "uintptr_t", GJ_U64 },
};

int gj_scalar_parse(const char *name, gj_scalar *out)
{
  size_t i;
  for (i = 0; i < GJ_SCALAR__MAX; i++)
    if (strcmp(name, scalar_names[i]) == 0) { *out = (gj_scalar)i; return 0; }
  for (i = 0; i < sizeof(scalar_aliases) / sizeof(scalar_aliases[0]); i++)
    if (strcmp(name, scalar_aliases[i].name) == 0) {
      *out = scalar_aliases[i].s;
      return 0;
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
