/*
** The type table, scalar kinds and the argument-block layout.
*/
#include <stdio.h>
#include <stdlib.h>
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

/* --- Struct types -------------------------------------------------------- */

void gj_structs_free(gj_structs *tab)
{
  int i;
  for (i = 0; i < tab->n; i++) free(tab->texts[i]);
  tab->n = tab->nfields = 0;
}

/* The extent of the struct text at p: up to its matching '}', or NULL. */
static const char *struct_end(const char *p)
{
  int depth = 0;
  for (; *p; p++) {
    if (*p == '{') depth++;
    else if (*p == '}' && --depth == 0) return p + 1;
  }
  return NULL;
}

static int parse_u32(const char **p, uint32_t *out)
{
  char *e;
  unsigned long v = strtoul(*p, &e, 10);
  if (e == *p || v > 0x7fffffffUL) return -1;
  *out = (uint32_t)v;
  *p = e;
  return 0;
}

uint32_t gj_field_size(const gj_structs *tab, const gj_field *f)
{
  return f->scalar < GJ_SCALAR__MAX ? (uint32_t)gj_scalar_size((gj_scalar)f->scalar)
                                    : tab->s[f->sid].size;
}

#define BAD(...) (snprintf(msg, msgsize, __VA_ARGS__), -1)

/* One field's type at *p, up to its ',' or '}', into f. */
static int parse_ftype(gj_structs *tab, const char **p, gj_field *f,
                       char *msg, size_t msgsize)
{
  if (**p == '{') {
    int sid;
    if (gj_struct_parse(tab, p, &sid, msg, msgsize)) return -1;
    f->scalar = GJ_SCALAR__MAX;
    f->sid = (uint8_t)sid;
  } else {
    char nm[32];
    size_t n = strcspn(*p, "[,}");
    gj_scalar s;
    snprintf(nm, sizeof(nm), "%.*s", (int)(n < sizeof(nm) ? n : sizeof(nm) - 1), *p);
    if (n >= sizeof(nm) || gj_scalar_parse(nm, &s))
      return BAD("unsupported field type '%.*s'", (int)n, *p);
    f->scalar = (uint8_t)s;
    *p += n;
  }
  f->count = 0;
  if (**p == '[') {
    (*p)++;
    if (parse_u32(p, &f->count) || f->count == 0 || **p != ']')
      return BAD("bad array length in a field");
    (*p)++;
  }
  return 0;
}

int gj_struct_parse(gj_structs *tab, const char **p, int *sid, char *msg,
                    size_t msgsize)
{
  const char *s = *p, *e = s[0] == '{' ? struct_end(s) : NULL, *q;
  gj_struct *st;
  char *text;
  size_t len;
  int i, nf = 0;
  gj_field fl[GJ_MAXFIELDS];
  if (!e) return BAD("bad struct layout text");
  len = (size_t)(e - s);
  for (i = 0; i < tab->n; i++)
    if (strlen(tab->s[i].text) == len && memcmp(tab->s[i].text, s, len) == 0) {
      *sid = i;
      *p = e;
      return 0;
    }
  if (tab->n >= GJ_MAXSTRUCTS)
    return BAD("more than %d struct types in one kernel", GJ_MAXSTRUCTS);
  /* the copy holds the text, then the names cut out of a second copy */
  text = malloc(2 * len + 2);
  if (!text) return BAD("out of memory");
  memcpy(text, s, len);
  text[len] = '\0';
  memcpy(text + len + 1, s, len);
  text[2 * len + 1] = '\0';
  tab->texts[tab->n] = text;
  st = &tab->s[tab->n];
  memset(st, 0, sizeof(*st));
  st->text = text;
  q = text + len + 2;        /* the second copy, past its '{' */
  st->name = q;
  q += strcspn(q, ";");
  if (*q != ';') return BAD("bad struct layout text");
  *(char *)q++ = '\0';
  if (parse_u32(&q, &st->size) || *q++ != ';' || parse_u32(&q, &st->align) ||
      *q++ != ';')
    return BAD("bad size or alignment in struct %s", st->name);
  if (st->align == 0 || (st->align & (st->align - 1)) || st->size % st->align)
    return BAD("struct %s: size %u and alignment %u do not fit", st->name,
               (unsigned)st->size, (unsigned)st->align);
  /* nested structs parse into the table first (their fields go before
  ** this one's, which are gathered here): this entry is taken now so that
  ** their sids come after it */
  tab->n++;
  while (*q != '}') {
    gj_field *f;
    uint32_t end;
    if (nf >= GJ_MAXFIELDS) return BAD("too many fields in struct %s", st->name);
    f = &fl[nf];
    memset(f, 0, sizeof(*f));
    f->name = q;
    q += strcspn(q, ":,}");
    if (*q != ':') return BAD("bad field in struct %s", st->name);
    *(char *)q++ = '\0';
    msg[0] = '\0';
    if (parse_u32(&q, &f->offset) || *q++ != ':' ||
        parse_ftype(tab, &q, f, msg, msgsize))
      return msg[0] ? -1 : BAD("bad field '%s' in struct %s", f->name, st->name);
    end = f->offset + gj_field_size(tab, f) * (f->count ? f->count : 1);
    if (end > st->size)
      return BAD("struct %s: field '%s' ends at byte %u, beyond the struct's "
                 "%u", st->name, f->name, (unsigned)end, (unsigned)st->size);
    nf++;
    if (*q == ',') q++;
  }
  if (tab->nfields + nf > GJ_MAXFIELDS)
    return BAD("more than %d struct fields in one kernel", GJ_MAXFIELDS);
  memcpy(&tab->f[tab->nfields], fl, (size_t)nf * sizeof(gj_field));
  st->fields = &tab->f[tab->nfields];
  st->nfields = nf;
  tab->nfields += nf;
  *sid = (int)(st - tab->s);
  *p = e;
  return 0;
}

const gj_field *gj_struct_field(const gj_structs *tab, int sid,
                                const char *name)
{
  const gj_struct *st = &tab->s[sid];
  int i;
  for (i = 0; i < st->nfields; i++)
    if (strcmp(st->fields[i].name, name) == 0) return &st->fields[i];
  return NULL;
}

const char *gj_struct_word(const char *name)
{
  return strncmp(name, "struct ", 7) == 0 || strncmp(name, "union ", 6) == 0 ? ""
                                                                            : "struct ";
}
