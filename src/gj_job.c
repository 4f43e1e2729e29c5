/*
** What GJ_JOBDEF (gj_job.h) makes outside the Lua binding: the job's part
** of the content key, the check of its read-only fields, and the list of
** gj_job's members that code declaring the struct itself (the specs' FFI
** mirror) checks its declaration against.
*/
#include <stdint.h>
#include <string.h>

#include "gj_job_int.h"
#include "gpujit.h"

int gj_job_lib_used(const gj_job_lib *lib, LLVMModuleRef m)
{
  LLVMValueRef f;
  size_t n = strlen(lib->prefix);
  if (!n || !m) return 1;   /* no module: as if it called every library */
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && len >= n &&
        strncmp(name, lib->prefix, n) == 0 && LLVMGetFirstUse(f))
      return 1;
  }
  return 0;
}

static void key_int(gj_cache_hasher *h, int32_t v)
{
  gj_cache_key_add(h, &v, sizeof(v));
}

/* The libraries the module calls, path and contents: a rebuilt library is
** another key; one the kernel does not call changes nothing and costs no
** read. */
static void key_libs(gj_cache_hasher *h, int n, const gj_job_lib *libs,
                     LLVMModuleRef m)
{
  int i;
  for (i = 0; i < n; i++) {
    if (!gj_job_lib_used(&libs[i], m)) continue;
    gj_cache_key_str(h, libs[i].path);
    gj_cache_key_str(h, libs[i].prefix);
    gj_cache_key_file(h, libs[i].path);   /* unreadable: linking fails */
  }
}

#define KEY_STR(f)    gj_cache_key_str(h, job->f);
#define KEY_TEXT(f)   gj_cache_key_str(h, job->f);
#define KEY_UINT(f)   key_int(h, (int32_t)job->f);
#define KEY_INT(f)    key_int(h, (int32_t)job->f);
#define KEY_BOOL(f)   key_int(h, job->f != 0);
#define KEY_OPT(f)    key_int(h, (int32_t)job->f);
#define KEY_RELOC(f)  key_int(h, (int32_t)job->f);
#define KEY_CMODEL(f) key_int(h, (int32_t)job->f);
#define KEY_LIBS(f)   key_libs(h, job->n##f, job->f, m);
#define KEY_KEY(kind, f)   KEY_##kind(f)
#define KEY_NOKEY(kind, f)
#define KEY_FIELD(kind, f, dim, lua, key, access) KEY_##key(kind, f)

void gj_job_key(const gj_job *job, LLVMModuleRef m, gj_cache_hasher *h)
{
  GJ_JOBDEF(KEY_FIELD)
}

#define SAME_STR(f)    if (strcmp(a->f, b->f)) return #f;
#define SAME_TEXT(f)   if (strcmp(a->f ? a->f : "", b->f ? b->f : "")) return #f;
#define SAME_UINT(f)   if (a->f != b->f) return #f;
#define SAME_INT(f)    if (a->f != b->f) return #f;
#define SAME_BOOL(f)   if ((a->f != 0) != (b->f != 0)) return #f;
#define SAME_OPT(f)    if (a->f != b->f) return #f;
#define SAME_RELOC(f)  if (a->f != b->f) return #f;
#define SAME_CMODEL(f) if (a->f != b->f) return #f;
#define SAME_RO(kind, f) SAME_##kind(f)
#define SAME_RW(kind, f)
#define SAME(kind, f, dim, lua, key, access) SAME_##access(kind, f)

const char *gj_job_ro_changed(const gj_job *a, const gj_job *b)
{
  GJ_JOBDEF(SAME)
  return NULL;
}

/* The members, with the (key, access) pair checked: GJ_JOB_FLAGS has no
** RW NOKEY. */
#define ONE(f, lua, fl) { #f, lua, offsetof(gj_job, f), \
                          sizeof(((gj_job *)0)->f), fl },
#define FIELD_STR(f, lua, fl)    ONE(f, lua, fl)
#define FIELD_TEXT(f, lua, fl)   ONE(f, lua, fl)
#define FIELD_UINT(f, lua, fl)   ONE(f, lua, fl)
#define FIELD_INT(f, lua, fl)    ONE(f, lua, fl)
#define FIELD_BOOL(f, lua, fl)   ONE(f, lua, fl)
#define FIELD_OPT(f, lua, fl)    ONE(f, lua, fl)
#define FIELD_RELOC(f, lua, fl)  ONE(f, lua, fl)
#define FIELD_CMODEL(f, lua, fl) ONE(f, lua, fl)
#define FIELD_LIBS(f, lua, fl)   ONE(n##f, NULL, fl) ONE(f, lua, fl)
#define FIELD(kind, f, dim, lua, key, access) \
  FIELD_##kind(f, lua, GJ_JOB_FLAGS(key, access))

static const gj_job_field fields[] = { GJ_JOBDEF(FIELD) };

GJ_API const gj_job_field *gj_job_fields(int *n)
{
  *n = (int)(sizeof(fields) / sizeof(fields[0]));
  return fields;
}

GJ_API void gj_job_key_hex(const gj_job *job, char *hex)
{
  gj_cache_hasher h;
  gj_cache_key key;
  gj_cache_key_begin(&h);
  gj_job_key(job, NULL, &h);
  gj_cache_key_end(&h, &key);
  gj_cache_key_hex(&key, hex);
}

GJ_API size_t gj_job_size(void)
{
  return sizeof(gj_job);
}
